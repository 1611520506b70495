//! `run` as a drop-in for `ffmpeg -vf convolution`: FFmpeg's whole option table read as FFmpeg
//! reads it (every option honoured or refused by its full name), its global options and
//! stream specifiers, and its convolution-family filters compared with Debian's `ffmpeg`
//! itself: `convolution` byte for byte, the others within the levels measured here.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{make_clip, Clip, Y4m};
use convstream_testkit::tempdir;

/// FFmpeg 5.1's `ffmpeg -h full` (Debian's 5.1.9), as printed.
const FFMPEG_HELP: &str = include_str!("data/ffmpeg-5.1-h-full.txt");

/// Options that take a value though FFmpeg's help shows no argument name for them
/// (`HAS_ARG` in FFmpeg 5.1's `fftools/ffmpeg_opt.c`), and one that shows a name but is a
/// switch (`OPT_BOOL`).
const VALUED_WITHOUT_NAME: &[&str] = &[
    "filter_threads",
    "filter_complex_threads",
    "vsync",
    "frame_drop_threshold",
    "async",
    "vstats_version",
    "seek_timestamp",
    "apad",
    "reinit_filter",
    "discard",
    "disposition",
    "copypriorss",
    "thread_queue_size",
    "top",
    "fps_mode",
    "guess_layout_max",
];
const SWITCH_WITH_NAME: &[&str] = &["hide_banner"];

/// Options FFmpeg 6.0 to 7.1 added: the command line's own list.
#[path = "../../src/cli/ffmpeg_6_and_7.rs"]
mod ffmpeg_6_and_7;
use ffmpeg_6_and_7::FFMPEG_6_AND_7;

/// Values that mean something for the options convstream honours (others get `1`).
const VALUES: &[(&str, &str)] = &[
    ("b", "300k"),
    ("c", "ffv1"),
    ("codec", "ffv1"),
    ("vcodec", "ffv1"),
    ("f", "matroska"),
    ("ss", "0"),
    ("t", "1"),
    ("frames", "2"),
    ("vframes", "2"),
    ("loglevel", "error"),
    ("v", "warning"),
    ("map", "0"),
    ("stream_loop", "0"),
    ("vf", "sobel"),
    ("filter", "sobel"),
    ("filter_complex", "sobel"),
    ("lavfi", "sobel"),
    ("r", "25"),
];

/// Every option of FFmpeg's command line in the help's option tables (before its
/// AVOptions), with whether it takes a value, then FFmpeg 6 and 7's.
fn ffmpeg_options() -> Vec<(String, bool)> {
    let mut options: Vec<(String, bool)> = Vec::new();
    for line in FFMPEG_HELP
        .lines()
        .take_while(|l| !l.starts_with("AVCodecContext AVOptions"))
    {
        let Some(rest) = line.strip_prefix('-') else { continue };
        if rest.starts_with('-') || rest.is_empty() {
            continue; // `--help`, clap's own
        }
        let name = rest.split_whitespace().next().unwrap_or_default();
        // An argument name follows the option after one space; the description after two.
        let after = &rest[name.len()..];
        let shows_argument = after.starts_with(' ') && !after.starts_with("  ") && !after.trim().is_empty();
        let takes_value = (shows_argument || VALUED_WITHOUT_NAME.contains(&name)) && !SWITCH_WITH_NAME.contains(&name);
        if !options.iter().any(|(known, _)| known == name) {
            options.push((name.to_string(), takes_value));
        }
    }
    options.extend(FFMPEG_6_AND_7.iter().map(|(name, value)| (name.to_string(), *value)));
    options
}

/// Runs `convstream ARGS` in `dir`, failing the test if it is not over within `limit`.
fn bounded(dir: &Path, args: &[&str], limit: Duration) -> common::Run {
    common::run_bounded(dir, args, limit)
}

#[test]
fn every_ffmpeg_option_is_honoured_or_refused_by_its_full_name() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 3);
    let options = ffmpeg_options();
    assert!(options.len() > 180, "the table has {} options", options.len());
    let mut wrong = Vec::new();
    for (at, (name, takes_value)) in options.iter().enumerate() {
        let flag = format!("-{name}");
        let output = format!("out{at}.mkv");
        let value = VALUES.iter().find(|(n, _)| n == name).map_or("1", |(_, v)| *v);
        let mut args = vec!["run", "--device", "cpu", "--no-progress", "-i", "in.mkv", &flag];
        if *takes_value {
            args.push(value);
        }
        args.push(&output);
        let run = bounded(dir.path(), &args, Duration::from_secs(60));
        run.assert_no_panic();
        let honoured = run.code == Some(0);
        let refused_by_name = run.code == Some(2)
            && (run.stderr.contains(&format!("error: {flag}:")) || run.stderr.contains(&format!("error: {flag} ")));
        // A cluster of one-letter flags is what clap's messages would name instead.
        let as_cluster = run.stderr.contains("unexpected argument") || run.stderr.contains("Usage:");
        if !(honoured || refused_by_name) || (as_cluster && name != "h") {
            wrong.push(format!("{flag} -> exit {:?}: {}", run.code, run.stderr.trim()));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} options are neither honoured nor refused by name:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn global_options_and_stream_specifiers_are_read_as_ffmpeg_reads_them() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 3);
    // Before, -hide_banner was read as -h: help printed, exit 0, nothing written.
    common::run_on_cpu(dir.path(), &["-hide_banner", "-i", "in.mkv", "a.mkv"]).success();
    assert!(dir.path().join("a.mkv").exists(), "-hide_banner runs the command");
    let run = common::run_on_cpu(
        dir.path(),
        &[
            "-hide_banner",
            "-nostdin",
            "-loglevel",
            "error",
            "-nostats",
            "-y",
            "-threads",
            "2",
            "-i",
            "in.mkv",
            "-map",
            "0",
            "-c:v",
            "ffv1",
            "-c:a",
            "copy",
            "-g",
            "1",
            "-frames:v:0",
            "2",
            "a.mkv",
        ],
    )
    .success();
    assert!(!run.stderr.contains("INFO"), "-loglevel error:\n{}", run.stderr);
    assert_eq!(common::video_pts(&dir.path().join("a.mkv")).len(), 2, "-frames:v:0 2");
    assert_eq!(
        common::stream_types(&dir.path().join("a.mkv")),
        vec!["video", "audio"],
        "-c:a copy"
    );
    common::run_on_cpu(dir.path(), &["-i", "in.mkv", "-map", "0:v", "-y", "v.mkv"]).success();
    assert_eq!(
        common::stream_types(&dir.path().join("v.mkv")),
        vec!["video"],
        "-map 0:v"
    );
    // -n never overwrites, as convstream never does without -y.
    let run = common::run_on_cpu(dir.path(), &["-n", "-i", "in.mkv", "a.mkv"]);
    assert_ne!(run.code, Some(0), "-n keeps a.mkv");
    for (args, named) in [
        (&["-i", "in.mkv", "-c:s", "mov_text", "b.mkv"][..], "-c:s:"),
        (&["-i", "in.mkv", "-aq", "2", "b.mkv"][..], "-aq:"),
        (&["-i", "in.mkv", "-c:0", "ffv1", "b.mkv"][..], "-c:0:"),
        (&["-i", "in.mkv", "-q:a", "2", "b.mkv"][..], "-q:a:"),
        (
            &["-i", "in.mkv", "-framerate", "10", "b.mkv"][..],
            "-framerate applies to the input only",
        ),
        (
            &["-i", "in.mkv", "-no_such_option", "1", "b.mkv"][..],
            "-no_such_option:",
        ),
    ] {
        let run = common::run_on_cpu(dir.path(), args);
        assert_eq!(run.code, Some(2), "{args:?}:\n{}", run.stderr);
        assert!(run.stderr.contains(named), "{args:?} names {named}:\n{}", run.stderr);
    }
    // Every problem of the command line at once.
    let run = common::run_on_cpu(dir.path(), &["-i", "in.mkv", "-vn", "-dn", "-af", "volume=2", "b.mkv"]);
    assert_eq!(run.code, Some(2));
    for named in ["-vn:", "-dn:", "-af:"] {
        assert!(run.stderr.contains(named), "names {named}:\n{}", run.stderr);
    }
}

/// The decoded frames of `path` as raw YUV4MPEG2.
fn frames_of(dir: &Path, path: &str, y4m: &str) -> Y4m {
    common::ffmpeg(dir, &["-i", path, "-f", "yuv4mpegpipe", "-pix_fmt", "yuv420p", y4m]);
    Y4m::read(&dir.join(y4m))
}

/// The largest difference between the two outputs, in levels, over every sample.
fn max_difference(a: &Y4m, b: &Y4m) -> u8 {
    assert_eq!(a.frames.len(), b.frames.len(), "frame counts");
    let samples = |y: &Y4m| -> Vec<u8> { y.frames.iter().flatten().flatten().copied().collect() };
    samples(a)
        .iter()
        .zip(samples(b))
        .map(|(x, y)| x.abs_diff(y))
        .max()
        .unwrap_or(0)
}

/// `ffmpeg -i IN -vf CHAIN` and `convstream run -i IN -vf CHAIN`, both decoded.
fn both(dir: &Path, chain: &str, at: usize) -> (Y4m, Y4m) {
    let (theirs, ours) = (format!("ffmpeg{at}.mkv"), format!("convstream{at}.mkv"));
    common::ffmpeg(dir, &["-i", "in.mkv", "-vf", chain, "-c:v", "ffv1", &theirs]);
    let run = bounded(
        dir,
        &[
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "in.mkv",
            "-vf",
            chain,
            "-c:v",
            "ffv1",
            &ours,
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "-vf {chain:?}:\n{}", run.stderr);
    (
        frames_of(dir, &theirs, &format!("ffmpeg{at}.y4m")),
        frames_of(dir, &ours, &format!("convstream{at}.y4m")),
    )
}

#[test]
fn vf_convolution_is_ffmpegs_own_byte_for_byte() {
    let dir = tempdir();
    // Odd sizes, so that every edge case of both borders and of chroma planes is met.
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 97, 61, 3);
    let seven: Vec<String> = (0..49).map(|i| ((i * 7) % 5 - 1).to_string()).collect();
    let chains = [
        "convolution=0m=1 2 1 2 4 2 1 2 1:0bias=3".to_string(),
        "convolution=0m=0 -1 0 -1 5 -1 0 -1 0:1m=1 1 1 1 1 1 1 1 1:1rdiv=0.09:2m=1 2 1 2 4 2 1 2 1:2bias=7".into(),
        "convolution=0m=1 4 6 4 1 4 16 24 16 4 6 24 36 24 6 4 16 24 16 4 1 4 6 4 1:0rdiv=1/256:0bias=2".into(),
        format!("convolution=0m={}:0bias=40:1m={}", seven.join(" "), seven.join(" ")),
        "convolution=0m=1 2 3 2 1:0mode=row:1m=1 0 -1 3 5 2 1:1mode=column:1bias=128:2m=1 2 1:2mode=column".into(),
        "convolution=0m=-1 -1 -1 -1 8 -1 -1 -1 -1:0bias=128:0rdiv=1:1m=-1 0 1 -2 0 2 -1 0 1:2m=1 1 1 1 -7 1 1 1 1".into(),
        "convolution='1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1':'0 0 0 0 1 0 0 0 0':'-1 -2 -1 0 0 0 1 2 1':'0 0 0 0 1 0 0 0 0':0:0:0:0:10:0:0:0".into(),
        "sobel".into(),
        // FFmpeg's documented examples: four matrices, the fourth (alpha) set aside.
        "convolution='0 -1 0 -1 5 -1 0 -1 0:0 -1 0 -1 5 -1 0 -1 0:0 -1 0 -1 5 -1 0 -1 0:0 -1 0 -1 5 -1 0 -1 0'".into(),
        "convolution=-2 -1 0 -1 1 1 0 1 2:-2 -1 0 -1 1 1 0 1 2:-2 -1 0 -1 1 1 0 1 2:-2 -1 0 -1 1 1 0 1 2".into(),
        "[in]prewitt[out]".into(),
        "prewitt=planes=1:scale=0.5:delta=10".into(),
        "roberts".into(),
        "roberts=planes=5:scale=2:delta=3".into(),
    ];
    for (at, chain) in chains.iter().enumerate() {
        let (theirs, ours) = both(dir.path(), chain, at);
        assert!(
            theirs.frames == ours.frames,
            "-vf {chain:?} differs by up to {} levels",
            max_difference(&theirs, &ours)
        );
    } // Grey and full-resolution chroma, whose planes FFmpeg sizes otherwise.
    for (at, pix_fmt) in ["gray", "yuv444p"].into_iter().enumerate() {
        let sub = dir.path().join(pix_fmt);
        std::fs::create_dir(&sub).unwrap();
        common::make_clip_as(&sub, "in.mkv", Clip::Ffv1Mkv, 67, 45, 2, pix_fmt);
        let (theirs, ours) = both(&sub, &chains[at], at);
        let differs = max_difference(&theirs, &ours);
        assert!(
            theirs.frames == ours.frames,
            "{pix_fmt}: -vf {:?} differs by up to {differs} levels",
            chains[at]
        );
    }
}

/// The most each filter's output may differ from FFmpeg's, in 8-bit levels, as measured
/// on `testsrc2` at 97x61 (Debian's FFmpeg 5.1). FFmpeg's blurs (`boxblur` with running sums,
/// `unsharp` in 16-bit fixed point, `gblur` recursively) run as FFmpeg's own filters: 0.
const LEVELS: &[(&str, u8)] = &[
    ("boxblur", 0),
    ("boxblur=2:1", 0),
    ("boxblur=3:2:1:1", 0),
    ("unsharp", 0),
    ("unsharp=3:3:1.5:5:5:1", 0),
    ("unsharp=7:3:-1", 0),
    ("gblur", 0),
    ("gblur=sigma=2", 0),
    ("sobel=scale=0.25", 0),
    // A scale that is no power of two: the magnitude times `rdiv` plus the bias in single
    // precision, truncated, as FFmpeg's own arithmetic.
    ("roberts=scale=0.7:delta=3", 0),
];

#[test]
fn vf_blurs_and_unsharp_stay_within_the_levels_measured() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 97, 61, 3);
    for (at, (chain, levels)) in LEVELS.iter().enumerate() {
        let (theirs, ours) = both(dir.path(), chain, at);
        let difference = max_difference(&theirs, &ours);
        eprintln!("-vf {chain:?}: {difference} levels from FFmpeg's");
        assert!(
            difference <= *levels,
            "-vf {chain:?}: {difference} levels from FFmpeg's, {levels} promised"
        );
    }
}

#[test]
fn chains_convstream_cannot_run_are_refused_naming_why() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 2);
    for (chain, named) in [
        (
            "sobel,scale=64:32,prewitt",
            "`scale` stands between `sobel` and `prewitt`",
        ),
        ("sobel,convolution=0m=1 1 1 1 1 1 1 1 1", "two filters"),
        ("fps=10,sobel", "timing"),
        (
            "crop=100:100,sobel",
            "FFmpeg cannot set up `crop=100:100,(the convolution filters)`: Invalid too big",
        ),
        ("[in]split[a][b]", "open outputs"),
        ("gblur=sigma=-3", "Value -3.000000 for parameter 'sigma' out of range"),
        ("sobel=::::", "No option name"),
        (",sobel,", "No such filter"),
        ("convolution=0m=1 2 3 4", "9, 25 or 49"),
    ] {
        let run = common::run_on_cpu(dir.path(), &["-i", "in.mkv", "-vf", chain, "out.mkv"]);
        assert_eq!(run.code, Some(2), "-vf {chain:?}:\n{}", run.stderr);
        // What libavfilter refuses in the text is said of -vf; what it refuses for this input
        // (a crop larger than the picture) when the input is open, of the pipeline's filter.
        assert!(
            run.stderr.contains(named) && (run.stderr.contains("-vf:") || run.stderr.contains("filter:")),
            "-vf {chain:?} names {named}:\n{}",
            run.stderr
        );
        assert!(!dir.path().join("out.mkv").exists());
    }
}

//! FFmpeg's own command lines with filter graphs, run by FFmpeg and by `convstream run` with
//! the same words: the convolution filters on convstream's engine, every other filter of the
//! chain as FFmpeg's own, before or after them. Both outputs are lossless (FFV1) and their
//! decoded frames, with their timestamps, are compared byte for byte (`-f framemd5`).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{make_clip, Clip};
use convstream_testkit::tempdir;

/// The decoded video of `path`, frame by frame with timestamps, as `-f framemd5` prints it.
fn video_md5(dir: &Path, path: &str) -> String {
    common::framemd5(dir, path, "v").join("\n")
}

/// The words after `-i in.mkv`, before the encoder and the output's name.
pub(crate) const COMMAND_LINES: &[&[&str]] = &[
    &["-vf", "scale=64:-2,sobel"],
    &["-vf", "sobel,format=gray"],
    &["-vf", "crop=40:30:5:3,convolution=0m=1 2 1 2 4 2 1 2 1:0bias=3"],
    &["-filter_complex", "[0:v]prewitt[v]", "-map", "[v]"],
    &["-filter:v", "boxblur=2:1,format=yuv444p"],
    &["-vf", "roberts,fps=10"],
    &["-vf", "gblur=sigma=2"],
    &["-vf", "unsharp=5:5:1.5,sobel"],
    &["-vf", "transpose=1,sobel,setsar=2"],
    &["-vf", "sobel,scale=48:-2,fps=30"],
    // FFmpeg negotiates one pixel format over the whole graph: here the scale gives gray
    // and sobel runs on gray; and 4:4:4 for the convolution.
    &["-vf", "scale=64:-2,sobel,format=gray"],
    &["-vf", "scale=48:-2,convolution=0m=1 2 1 2 4 2 1 2 1,format=yuv444p"],
    // The output's size and pixel format: FFmpeg's scale and format after the chain.
    &["-vf", "sobel", "-pix_fmt", "gray"],
    &["-s", "48x32"],
    &["-vf", "sobel", "-s", "64x40", "-pix_fmt", "yuv444p"],
    // Timestamps passed through, the video and the audio mapped.
    &["-map", "0:v:0", "-map", "0:a?", "-vf", "sobel", "-vsync", "0"],
    &["-vf", "sobel", "-fps_mode", "passthrough"],
    // FFmpeg's documented sharpen: four matrices, the fourth (alpha) set aside.
    &[
        "-vf",
        "convolution='0 -1 0 -1 5 -1 0 -1 0:0 -1 0 -1 5 -1 0 -1 0:0 -1 0 -1 5 -1 0 -1 0:0 -1 0 -1 5 -1 0 -1 0'",
    ],
];

#[test]
fn ffmpeg_command_lines_with_graphs_give_ffmpegs_frames_byte_for_byte() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 97, 61, 12);
    let mut differ = Vec::new();
    for (at, words) in COMMAND_LINES.iter().enumerate() {
        let (theirs, ours) = (format!("ffmpeg{at}.mkv"), format!("convstream{at}.mkv"));
        let mut ffmpeg_args = vec!["-i", "in.mkv"];
        ffmpeg_args.extend_from_slice(words);
        ffmpeg_args.extend_from_slice(&["-c:v", "ffv1", &theirs]);
        common::ffmpeg(dir.path(), &ffmpeg_args);
        let mut args = vec!["run", "--device", "cpu", "--no-progress", "-i", "in.mkv"];
        args.extend_from_slice(words);
        args.extend_from_slice(&["-c:v", "ffv1", &ours]);
        let run = common::run_bounded(dir.path(), &args, Duration::from_secs(120));
        assert_eq!(run.code, Some(0), "{words:?}:\n{}", run.stderr);
        let (expected, got) = (video_md5(dir.path(), &theirs), video_md5(dir.path(), &ours));
        assert!(!expected.is_empty(), "{words:?}: FFmpeg wrote no frame");
        if expected != got {
            differ.push(format!("{words:?}:\nffmpeg:\n{expected}\nconvstream:\n{got}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
}

/// `-f null -` is FFmpeg's way to run the filters and keep nothing: every frame is filtered
/// (FFmpeg's filters after the convolution too: `fps=50` makes 12 of 6), none is encoded,
/// nothing is written to standard output, and the summary says so.
#[test]
fn format_null_filters_every_frame_and_encodes_nothing() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 64, 48, 6);
    let run = common::run_on_cpu(dir.path(), &["-i", "in.mkv", "-vf", "sobel,fps=50", "-f", "null", "-"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{} bytes on stdout", run.stdout.len());
    assert!(
        run.stderr.contains("6 frames in, 12 out") && run.stderr.contains("output: null, nothing encoded"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("libx264"), "{}", run.stderr);
}

/// `-q:v N` is FFmpeg's fixed quantiser (the QSCALE flag, global_quality N lambdas): MPEG-4
/// Part 2 at `-q:v 2` gives FFmpeg's frames.
#[test]
fn q_v_is_ffmpegs_fixed_quantiser() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 96, 64, 6);
    let words = ["-vf", "sobel", "-c:v", "mpeg4", "-q:v", "2"];
    let mut ffmpeg_args = vec!["-i", "in.mkv"];
    ffmpeg_args.extend_from_slice(&words);
    ffmpeg_args.push("ffmpeg_q.mkv");
    common::ffmpeg(dir.path(), &ffmpeg_args);
    let mut args = vec!["-i", "in.mkv"];
    args.extend_from_slice(&words);
    args.push("convstream_q.mkv");
    let run = common::run_on_cpu(dir.path(), &args);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        video_md5(dir.path(), "convstream_q.mkv"),
        video_md5(dir.path(), "ffmpeg_q.mkv")
    );
}

/// `-r RATE` after `-i` gives the frames FFmpeg's fps filter gives, and says so: ffmpeg's own
/// `-r` picks frames by its own rule, which can be a frame apart.
#[test]
fn output_rate_is_ffmpegs_fps_filter_and_says_so() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 64, 48, 12);
    common::ffmpeg(
        dir.path(),
        &["-i", "in.mkv", "-vf", "sobel,fps=10", "-c:v", "ffv1", "ffmpeg.mkv"],
    );
    let run = common::run_on_cpu(
        dir.path(),
        &[
            "-i",
            "in.mkv",
            "-vf",
            "sobel",
            "-r",
            "10",
            "-c:v",
            "ffv1",
            "convstream.mkv",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("-r 10: frames are repeated or dropped as FFmpeg's fps filter does"),
        "{}",
        run.stderr
    );
    assert_eq!(
        video_md5(dir.path(), "convstream.mkv"),
        video_md5(dir.path(), "ffmpeg.mkv")
    );
}

/// What the output options cannot be is refused, naming the option as typed.
#[test]
fn output_option_values_ffmpeg_refuses_are_refused_by_name() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 2);
    for (words, named) in [
        (&["-s", "12xq"][..], "-s \"12xq\""),
        (&["-pix_fmt", "grey9"][..], "-pix_fmt \"grey9\""),
        (&["-vsync", "cfr"][..], "-vsync: a constant rate needs one"),
        (&["-q:v", "fast"][..], "q=fast (sink.options.q) is not a quantiser"),
    ] {
        let mut args = vec!["-i", "in.mkv"];
        args.extend_from_slice(words);
        args.push("out.mkv");
        let run = common::run_on_cpu(dir.path(), &args);
        assert_eq!(run.code, Some(2), "{words:?}: {}", run.stderr);
        assert!(run.stderr.contains(named), "{words:?} names {named}: {}", run.stderr);
        assert!(!dir.path().join("out.mkv").exists());
    }
}

/// `-stream_loop N` plays the input N + 1 times, its timestamps going on as FFmpeg's do.
#[test]
fn stream_loop_n_plays_the_input_n_plus_one_times() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 64, 48, 5);
    for loops in ["1", "2"] {
        let (theirs, ours) = (format!("ffmpeg{loops}.mkv"), format!("convstream{loops}.mkv"));
        let words = ["-stream_loop", loops, "-i", "in.mkv", "-vf", "sobel", "-c:v", "ffv1"];
        let mut ffmpeg_args = words.to_vec();
        ffmpeg_args.push(&theirs);
        common::ffmpeg(dir.path(), &ffmpeg_args);
        let mut args = words.to_vec();
        args.push(&ours);
        let run = common::run_on_cpu(dir.path(), &args);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let frames = video_md5(dir.path(), &ours);
        assert_eq!(frames.lines().count(), 5 * (loops.parse::<usize>().unwrap() + 1));
        assert_eq!(frames, video_md5(dir.path(), &theirs), "-stream_loop {loops}");
    }
}

/// A config's FFmpeg chains (`filter.ffmpeg_before`, `filter.ffmpeg_after`) are read by
/// libavfilter when the config is checked, each problem in FFmpeg's words under its field;
/// a good config runs them as `-vf` would.
#[test]
fn config_chains_are_checked_in_ffmpegs_words_and_run_as_its_own() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 97, 61, 4);
    let config = |before: &str, after: &str| {
        format!(
            "[[pipeline]]\nname = \"cam1\"\nsource = {{ url = \"in.mkv\" }}\nsink = {{ url = \"convstream.mkv\", codec = \"ffv1\" }}\n[pipeline.filter]\nmask = \"identity\"\ndevice = \"cpu\"\nffmpeg_before = \"{before}\"\nffmpeg_after = \"{after}\"\n"
        )
    };
    std::fs::write(
        dir.path().join("bad.toml"),
        config("scale=64:-2,gblur=sigma=-3", "nosuch"),
    )
    .unwrap();
    let run = common::run_in(dir.path(), &["check", "--config", "bad.toml"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    for said in [
        "filter.ffmpeg_before: FFmpeg refuses the filter graph: Value -3.000000 for parameter 'sigma' out of range",
        "filter.ffmpeg_after: FFmpeg refuses the filter graph: No such filter: 'nosuch'",
    ] {
        assert!(run.stderr.contains(said), "{said}:\n{}", run.stderr);
    }
    std::fs::write(dir.path().join("good.toml"), config("scale=64:-2", "format=gray")).unwrap();
    let run = common::run_in(dir.path(), &["run", "--no-progress", "--config", "good.toml"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    common::ffmpeg(
        dir.path(),
        &[
            "-i",
            "in.mkv",
            "-vf",
            "scale=64:-2,format=gray",
            "-c:v",
            "ffv1",
            "ffmpeg.mkv",
        ],
    );
    assert_eq!(
        video_md5(dir.path(), "convstream.mkv"),
        video_md5(dir.path(), "ffmpeg.mkv")
    );
}

/// `-c:a aac -b:a 128k -ar 48000 -ac 2` encodes the audio again, resampled as FFmpeg
/// resamples it: the decoded samples equal FFmpeg's output's, frame by frame (their
/// timestamps run on by whole frames, where FFmpeg's wander within a millisecond).
#[test]
fn audio_is_encoded_again_with_ffmpegs_encoder_and_resampler() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 64, 48, 10);
    let words = [
        "-vf", "sobel", "-c:v", "ffv1", "-c:a", "aac", "-b:a", "128k", "-ar", "48000", "-ac", "2",
    ];
    let mut ffmpeg_args = vec!["-i", "in.mkv"];
    ffmpeg_args.extend_from_slice(&words);
    ffmpeg_args.push("ffmpeg.mkv");
    common::ffmpeg(dir.path(), &ffmpeg_args);
    let mut args = vec!["-i", "in.mkv"];
    args.extend_from_slice(&words);
    args.push("convstream.mkv");
    let run = common::run_on_cpu(dir.path(), &args);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let audio = common::streams(&dir.path().join("convstream.mkv"))
        .into_iter()
        .find(|s| s["codec_type"] == "audio")
        .expect("an audio stream");
    assert_eq!(
        (audio["codec_name"].as_str(), audio["channels"].as_i64()),
        (Some("aac"), Some(2))
    );
    assert_eq!(audio["sample_rate"].as_str(), Some("48000"));
    let samples = |name: &str| -> Vec<String> {
        let output = Command::new("ffmpeg")
            .args([
                "-hide_banner",
                "-loglevel",
                "error",
                "-nostdin",
                "-i",
                name,
                "-map",
                "0:a",
                "-f",
                "framemd5",
                "-",
            ])
            .current_dir(dir.path())
            .output()
            .expect("ffmpeg is installed");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| line.rsplit(',').next().map(|hash| hash.trim().to_string()))
            .collect()
    };
    let ours = samples("convstream.mkv");
    assert!(!ours.is_empty());
    assert_eq!(ours, samples("ffmpeg.mkv"));
    assert_eq!(
        video_md5(dir.path(), "convstream.mkv"),
        video_md5(dir.path(), "ffmpeg.mkv")
    );
}

/// Audio whose sample rate changes mid-stream (two MPEG-TS segments joined, 44.1 then 22.05
/// kHz) while it is encoded again: the frames the resampling graph was not built for are
/// skipped and said so, the video and the file are finished (the output plays to its end).
#[test]
fn audio_that_changes_mid_stream_is_skipped_not_fatal() {
    let dir = tempdir();
    for (name, rate) in [("a.ts", "44100"), ("b.ts", "22050")] {
        common::ffmpeg(
            dir.path(),
            &[
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=64x48:rate=10",
                "-f",
                "lavfi",
                "-i",
                &format!("sine=frequency=440:sample_rate={rate}"),
                "-t",
                "1",
                "-c:v",
                "mpeg2video",
                "-c:a",
                "mp2",
                name,
            ],
        );
    }
    let joined = [
        std::fs::read(dir.path().join("a.ts")).unwrap(),
        std::fs::read(dir.path().join("b.ts")).unwrap(),
    ]
    .concat();
    std::fs::write(dir.path().join("ab.ts"), joined).unwrap();
    let run = common::run_on_cpu(
        dir.path(),
        &["-i", "ab.ts", "-vf", "sobel", "-c:v", "ffv1", "-c:a", "aac", "out.mkv"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("audio frame skipped"), "{}", run.stderr);
    let streams = common::streams(&dir.path().join("out.mkv"));
    assert!(streams.iter().any(|s| s["codec_type"] == "audio"), "{streams:?}");
    assert!(streams.iter().any(|s| s["codec_type"] == "video"), "{streams:?}");
    let decoded = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-nostdin",
            "-i",
            "out.mkv",
            "-f",
            "null",
            "-",
        ])
        .current_dir(dir.path())
        .output()
        .expect("ffmpeg is installed");
    assert!(
        decoded.status.success() && decoded.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&decoded.stderr)
    );
}

//! The FFmpeg-style flags of `run`: encoder control (`--crf`, `--bitrate`, `--preset`,
//! `--encoder-opt`), `-an`, trimming (`--ss`, `-t`, `--frames`), demuxer options
//! (`--input-opt`, `[pipeline.source] options`) and raw video input.

use crate::common;

use std::path::Path;

use common::{make_clip, run_in, stats, stream_types, video_stream, Clip, Y4m};
use convstream_testkit::tempdir;

const W: u32 = 96;
const H: u32 = 64;

fn filter(dir: &Path, args: &[&str]) -> common::Run {
    common::run_on_cpu(dir, args)
}

fn y4m(path: &Path) -> Y4m {
    Y4m::parse(&std::fs::read(path).expect("the output exists"))
}

#[test]
fn start_duration_and_frames_keep_the_part_asked_for() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 50);
    let input = y4m(&dir.path().join("in.y4m"));

    // --ss 1 -t 0.4 at 25 fps: frames 25..35.
    filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "part.y4m", "--ss", "1", "-t", "0.4"],
    )
    .success();
    let part = y4m(&dir.path().join("part.y4m"));
    assert_eq!(part.frames.len(), 10, "0.4 s at 25 fps");
    assert_eq!(part.frames, input.frames[25..35], "the frames from 1 s on, untouched");

    // FFmpeg's spellings and a clock time: -ss 00:00:01.2 --frames 3.
    filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "three.y4m", "-ss", "00:00:01.2", "--frames", "3"],
    )
    .success();
    let three = y4m(&dir.path().join("three.y4m"));
    assert_eq!(three.frames, input.frames[30..33]);
}

#[test]
fn trimmed_mp4_keeps_audio_of_the_same_part_and_starts_at_zero() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, 50);
    let run = filter(
        dir.path(),
        &[
            "-i",
            "in.mkv",
            "-o",
            "out.mkv",
            "--ss",
            "0.8",
            "-t",
            "1",
            "--stats-json",
            "s.json",
        ],
    )
    .success();
    assert_eq!(stats(&dir.path().join("s.json"))["frames_out"], 25, "{}", run.stderr);
    let output = dir.path().join("out.mkv");
    assert_eq!(stream_types(&output), stream_types(&input), "audio is kept");
    let first_pts: f64 = common::video_pts(&output)[0].parse().expect("a number");
    assert!(first_pts.abs() < 0.001, "output starts at 0, not {first_pts}");
    let audio_seconds = audio_duration(&output);
    assert!(
        (0.9..=1.1).contains(&audio_seconds),
        "audio of the kept second only, got {audio_seconds} s"
    );
}

/// The summed duration of the first audio stream's packets, in seconds.
fn audio_duration(path: &Path) -> f64 {
    let output = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "a:0",
            "-show_entries",
            "packet=duration_time",
            "-of",
            "csv=p=0",
        ])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.trim().trim_end_matches(',').parse::<f64>().ok())
        .sum()
}

#[test]
fn no_audio_leaves_audio_out() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, 10);
    filter(dir.path(), &["-i", "in.mkv", "-o", "out.mkv", "-an"]).success();
    assert_eq!(stream_types(&dir.path().join("out.mkv")), vec!["video".to_string()]);
}

#[test]
fn bitrate_and_encoder_options_reach_the_encoder_and_the_summary() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 25);
    let run = filter(
        dir.path(),
        &[
            "-i",
            "in.y4m",
            "-o",
            "out.avi",
            "--codec",
            "mpeg4",
            "--bitrate",
            "300k",
            "--encoder-opt",
            "g=5",
            "--stats-json",
            "s.json",
        ],
    )
    .success();
    let report = &stats(&dir.path().join("s.json"));
    let encoder = report["output_encoder"].as_str().expect("the encoder is reported");
    assert!(
        encoder.starts_with("mpeg4 (") && encoder.contains("b=300k") && encoder.contains("g=5"),
        "{encoder}"
    );
    assert!(report["output_kbps"].as_f64().expect("a bitrate") > 0.0);
    assert!(
        run.stderr.contains("output: mpeg4 ("),
        "the summary names the encoder:\n{}",
        run.stderr
    );
    let stream = video_stream(&dir.path().join("out.avi"));
    assert_eq!(stream["codec_name"], "mpeg4");
}

#[test]
fn an_option_the_encoder_does_not_take_is_a_usage_error() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 5);
    let run = filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "out.avi", "--codec", "mpeg4", "--crf", "18"],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("the mpeg4 encoder has no option `crf`"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("out.avi").exists(), "nothing is written");
    let run = filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "out.avi", "--encoder-opt", "nonsense"],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("is not KEY=VALUE"), "{}", run.stderr);
}

#[test]
fn raw_video_input_takes_size_format_and_rate() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 8);
    let input = y4m(&dir.path().join("in.y4m"));
    let raw: Vec<u8> = input.frames.iter().flatten().flatten().copied().collect();
    std::fs::write(dir.path().join("in.yuv"), &raw).expect("writes the raw file");
    let size = format!("{W}x{H}");
    filter(
        dir.path(),
        &[
            "-i",
            "in.yuv",
            "--input-format",
            "rawvideo",
            "--size",
            &size,
            "--pix-fmt",
            "yuv420p",
            "--framerate",
            "25",
            "-o",
            "out.y4m",
        ],
    )
    .success();
    assert_eq!(y4m(&dir.path().join("out.y4m")).frames, input.frames);
}

#[test]
fn an_input_option_nothing_takes_is_named_in_the_error() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 3);
    let run = filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "out.y4m", "--input-opt", "rtsp_transprot=tcp"],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`rtsp_transprot`: neither the demuxer nor the protocol takes it"),
        "{}",
        run.stderr
    );
    // The config's options table, with an option every input takes.
    std::fs::write(
        dir.path().join("c.toml"),
        "[[pipeline]]\nname = \"p\"\n[pipeline.source]\nurl = \"in.y4m\"\noptions = { probesize = \"100000\" }\n[pipeline.filter]\ndevice = \"cpu\"\n[pipeline.sink]\nurl = \"out.y4m\"\n",
    )
    .expect("writes the config");
    run_in(dir.path(), &["run", "--config", "c.toml", "--no-progress"]).success();
}

#[test]
fn bad_times_and_trims_are_refused_with_every_problem() {
    let dir = tempdir();
    let run = filter(dir.path(), &["-i", "x.y4m", "-o", "y.y4m", "--ss", "1:75"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("`1:75` is not a time"), "{}", run.stderr);
    std::fs::write(
        dir.path().join("c.toml"),
        "[[pipeline]]\nname = \"p\"\n[pipeline.source]\nurl = \"udp://127.0.0.1:9\"\nstart = 2.0\nduration = -1.0\nframes = 0\n[pipeline.sink]\nurl = \"null\"\n",
    )
    .expect("writes the config");
    let run = run_in(dir.path(), &["check", "--config", "c.toml"]);
    assert_eq!(run.code, Some(2));
    for problem in [
        "source.duration: -1",
        "source.frames: 0",
        "source.start: a live input cannot be sought",
    ] {
        assert!(run.stderr.contains(problem), "missing {problem:?} in:\n{}", run.stderr);
    }
}

/// The average PSNR (dB) of `distorted` against `reference`, from FFmpeg's psnr filter.
fn psnr(dir: &Path, distorted: &str, reference: &str) -> f64 {
    let output = std::process::Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-nostdin",
            "-i",
            distorted,
            "-i",
            reference,
            "-lavfi",
            "psnr",
            "-f",
            "null",
            "-",
        ])
        .current_dir(dir)
        .output()
        .expect("ffmpeg runs");
    let log = String::from_utf8_lossy(&output.stderr);
    let average = log
        .lines()
        .find_map(|line| line.split("average:").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok());
    average.unwrap_or_else(|| panic!("no PSNR in:\n{log}"))
}

#[test]
fn default_h264_quality_matches_ffmpegs_own_defaults() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 320, 240, 25);
    common::ffmpeg(dir.path(), &["-i", "in.y4m", "-c:v", "libx264", "ffmpeg.mp4"]);
    let run = filter(dir.path(), &["-i", "in.y4m", "-o", "ours.mp4"]).success();
    assert!(run.stderr.contains("output: libx264"), "{}", run.stderr);
    let (ours, theirs) = (
        psnr(dir.path(), "ours.mp4", "in.y4m"),
        psnr(dir.path(), "ffmpeg.mp4", "in.y4m"),
    );
    assert!(
        ours >= theirs - 0.2,
        "identity through convstream: {ours:.2} dB; plain ffmpeg: {theirs:.2} dB"
    );
}

#[test]
fn plane_masks_make_a_grey_scale_edge_map() {
    use convstream_core::BorderMode;
    use convstream_core::Mask;
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 3);
    let input = y4m(&dir.path().join("in.y4m"));
    let run = filter(
        dir.path(),
        &[
            "-i",
            "in.y4m",
            "-o",
            "out.y4m",
            "--plane-mask",
            "y=edge:size=5",
            "--plane-mask",
            "uv=neutral",
        ],
    )
    .success();
    assert!(
        !run.stderr.contains("turns green"),
        "no warning for a neutral chroma:\n{}",
        run.stderr
    );
    let output = y4m(&dir.path().join("out.y4m"));
    let edge = Mask::from_spec("edge:size=5").unwrap();
    for (inp, out) in input.frames.iter().zip(&output.frames) {
        let luma = common::plane_of(&inp[0], W as usize, H as usize);
        assert_eq!(
            out[0],
            convstream_testkit::oracle::oracle(&luma, &edge, BorderMode::Reflect),
            "y is the edge map"
        );
        assert!(out[1].iter().chain(&out[2]).all(|&s| s == 128), "u and v are mid-grey");
    }
    // The one-mask form warns, once, and names the fix.
    let run = filter(dir.path(), &["-i", "in.y4m", "-o", "green.y4m", "--mask", "edge"]).success();
    assert_eq!(run.stderr.matches("turns green").count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("--plane-mask uv=neutral"), "{}", run.stderr);
}

#[test]
fn plane_mask_mistakes_are_listed_together() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("c.toml"),
        "[[pipeline]]\nname = \"p\"\n[pipeline.source]\nurl = \"in.y4m\"\n[pipeline.filter]\nplane_masks = { y = \"edge:size=4\", w = \"box\", u = \"box\", uv = \"neutral\" }\n[pipeline.sink]\nurl = \"null\"\n",
    )
    .expect("writes the config");
    let run = run_in(dir.path(), &["check", "--config", "c.toml"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    for problem in [
        "filter.plane_masks.y: size: 4 is even",
        "filter.plane_masks.w: not a plane; use y, u, v, uv, r, g, b",
        "plane u is given twice, by `u` and by `uv`",
    ] {
        assert!(run.stderr.contains(problem), "missing {problem:?} in:\n{}", run.stderr);
    }
}

#[test]
fn a_plane_mask_the_input_lacks_is_a_usage_error() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 2);
    let run = filter(dir.path(), &["-i", "in.y4m", "-o", "out.y4m", "--plane-mask", "r=box"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("names r, which yuv420p frames do not have"),
        "{}",
        run.stderr
    );
}

#[test]
fn nv12_input_with_two_chroma_masks_is_filtered_as_planar_yuv() {
    use convstream_core::BorderMode;
    use convstream_core::Mask;
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 3);
    let input = y4m(&dir.path().join("in.y4m"));
    // The same frames as raw NV12: Y, then U and V interleaved.
    let mut raw = Vec::new();
    for frame in &input.frames {
        raw.extend_from_slice(&frame[0]);
        for (u, v) in frame[1].iter().zip(&frame[2]) {
            raw.extend_from_slice(&[*u, *v]);
        }
    }
    std::fs::write(dir.path().join("in.nv12"), &raw).unwrap();
    let size = format!("{W}x{H}");
    let run = filter(
        dir.path(),
        &[
            "-i",
            "in.nv12",
            "--input-format",
            "rawvideo",
            "--size",
            &size,
            "--pix-fmt",
            "nv12",
            "--framerate",
            "25",
            "-o",
            "out.y4m",
            "--plane-mask",
            "u=edge:bias=128",
            "--plane-mask",
            "v=box:size=5",
        ],
    )
    .success();
    assert!(
        run.stderr.contains("nv12 pictures are converted to yuv420p"),
        "{}",
        run.stderr
    );
    let output = y4m(&dir.path().join("out.y4m"));
    assert_eq!(output.frames.len(), 3);
    let (edge, boxed) = (
        Mask::from_spec("edge:bias=128").unwrap(),
        Mask::from_spec("box:size=5").unwrap(),
    );
    let (cw, ch) = ((W / 2) as usize, (H / 2) as usize);
    for (inp, out) in input.frames.iter().zip(&output.frames) {
        assert_eq!(out[0], inp[0], "y is copied (identity)");
        let oracle = |plane: &[u8], mask: &Mask| {
            convstream_testkit::oracle::oracle(&common::plane_of(plane, cw, ch), mask, BorderMode::Reflect)
        };
        assert_eq!(out[1], oracle(&inp[1], &edge));
        assert_eq!(out[2], oracle(&inp[2], &boxed));
    }
}

/// `--trace` on the CPU engine writes each frame's filtering, one box per frame on one row
/// (it used to write an empty trace without a word).
#[test]
fn trace_on_the_cpu_engine_holds_every_frame() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 12);
    filter(
        dir.path(),
        &[
            "-i",
            "in.y4m",
            "-o",
            "out.y4m",
            "--mask",
            "box:size=5",
            "--trace",
            "trace.json",
        ],
    )
    .success();
    let text = std::fs::read_to_string(dir.path().join("trace.json")).expect("the trace is written");
    let trace: serde_json::Value = serde_json::from_str(&text).expect("the trace is JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let boxes: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let frames: Vec<u64> = boxes.iter().map(|e| e["args"]["frame"].as_u64().unwrap()).collect();
    assert_eq!(
        frames,
        (0..12).collect::<Vec<u64>>(),
        "one box per frame, in order: {text}"
    );
    for event in &boxes {
        assert_eq!(
            (&event["name"], &event["cat"]),
            (&"cpu_filter".into(), &"cpu".into()),
            "{event}"
        );
        assert!(event["dur"].as_f64().is_some_and(|d| d > 0.0), "{event}");
    }
    let starts: Vec<f64> = boxes.iter().map(|e| e["ts"].as_f64().unwrap()).collect();
    assert!(
        starts.windows(2).all(|w| w[0] <= w[1]),
        "frames filtered one after another: {starts:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "CPU engine"),
        "{text}"
    );
}

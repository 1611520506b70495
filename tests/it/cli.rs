//! The binary end to end on real video made here with the `ffmpeg` CLI: frames, timestamps
//! and audio survive; identity is lossless where the output is; filtered pixels are what
//! the oracle says; the small commands work.
//!
//! One job, kept whole: the command line's end-to-end cases, one flag or command after
//! another, each reading alone; split by topic would scatter the shared clip size, run and
//! oracle check (`W`, `H`, `FRAMES`, `filter`, `assert_filtered_as_oracle`).

use crate::common;

use std::fs::File;
use std::path::Path;
use std::process::Stdio;

use common::{
    audio_packets_md5, convstream, decode_raw, make_clip, make_clip_as, plane_of, remuxed_video_pts, run, run_in,
    stats, stream_types, video_pts, video_stream, Clip, Y4m,
};
use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_core::Plane;
use convstream_testkit::oracle::oracle;
use convstream_testkit::tempdir;

const W: u32 = 160;
const H: u32 = 120;
const FRAMES: u32 = 12;

/// `convstream run --device cpu --no-progress ARGS` in `dir`, which must succeed.
fn filter(dir: &Path, args: &[&str]) -> common::Run {
    common::run_on_cpu(dir, args).success()
}

/// Asserts that every frame of `output` is the oracle's result for `input`, with the mask
/// applied to the planes `filtered` says and the others copied.
fn assert_filtered_as_oracle(input: &Y4m, output: &Y4m, mask: &Mask, border: BorderMode, filtered: &[bool]) {
    assert_eq!((output.width, output.height), (input.width, input.height));
    assert_eq!(output.frames.len(), input.frames.len(), "frame count");
    let sizes = input.plane_sizes();
    for (n, (inp, out)) in input.frames.iter().zip(&output.frames).enumerate() {
        for (p, ((a, b), &(w, h))) in inp.iter().zip(out).zip(&sizes).enumerate() {
            if filtered[p] {
                let expected = oracle(&plane_of(a, w, h), mask, border);
                if *b != expected {
                    let diffs = b.iter().zip(&expected).filter(|(x, y)| x != y).count();
                    panic!(
                        "frame {n} plane {p}: {diffs} of {} samples differ from the oracle",
                        b.len()
                    );
                }
            } else {
                assert!(a == b, "frame {n} plane {p} must be copied untouched");
            }
        }
    }
}

// ---- containers, timestamps and audio ----

#[test]
fn h264_mp4_keeps_frames_timestamps_and_audio() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mp4", Clip::H264Mp4, W, H, FRAMES);
    let run = filter(
        dir.path(),
        &[
            "-i",
            "in.mp4",
            "-o",
            "out.mp4",
            "--mask",
            "box:size=5",
            "--stats-json",
            "stats.json",
        ],
    );
    let output = dir.path().join("out.mp4");
    let pts = video_pts(&input);
    assert_eq!(pts.len(), FRAMES as usize);
    assert_eq!(video_pts(&output), pts, "timestamps");
    assert!(stream_types(&output).contains(&"audio".to_string()), "audio copied");
    assert_eq!(audio_packets_md5(&output), audio_packets_md5(&input), "audio untouched");
    let video = video_stream(&output);
    assert_eq!(
        (video["width"].as_u64(), video["height"].as_u64()),
        (Some(W as u64), Some(H as u64))
    );
    assert_eq!(video["codec_name"], "h264", "the default encoder for mp4");
    assert_ne!(
        decode_raw(&input, "yuv420p"),
        decode_raw(&output, "yuv420p"),
        "the blur changed pixels"
    );
    let stats = stats(&dir.path().join("stats.json"));
    assert_eq!(stats["frames_in"], FRAMES);
    assert_eq!(stats["frames_out"], FRAMES);
    assert_eq!(stats["engine"], "cpu");
    assert!(stats["packets_passed_through"].as_u64().unwrap() > 0);
    // The slowest frames, slowest first, each split into parts that add up to its latency.
    let slowest = stats["latency_slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 10);
    for pair in slowest.windows(2) {
        assert!(pair[0]["ms"].as_f64() >= pair[1]["ms"].as_f64(), "{slowest:?}");
    }
    for frame in slowest {
        assert!(frame["frame"].as_u64().unwrap() < FRAMES as u64);
        let part = |name: &str| frame[name].as_f64().unwrap_or_else(|| panic!("{name} in {frame}"));
        let parts = ["waited_ms", "submit_ms", "engine_ms", "handoff_ms"].map(part);
        assert!(parts.iter().all(|&ms| ms >= 0.0), "{frame}");
        // Each part is rounded to the microsecond on its own.
        assert!((parts.iter().sum::<f64>() - part("ms")).abs() < 0.003, "{frame}");
        // The CPU engine filters as it takes a frame: that is its engine part.
        assert!(part("engine_ms") > 0.0, "{frame}");
        assert!(frame["gpu_ms"].is_null(), "{frame}");
    }
    // The start, step by step, in order; the CPU engine is settled as soon as it is ready.
    let startup = &stats["startup"];
    let step = |name: &str| startup[name].as_f64().unwrap_or_else(|| panic!("{name} in {startup}"));
    assert_eq!(step("engine_settled"), step("engine_ready"), "{startup}");
    assert!(step("input_opened") <= step("first_frame"), "{startup}");
    assert!(step("engine_ready") <= step("first_frame"), "{startup}");
    assert_eq!(stats["time_to_first_frame"].as_f64(), Some(step("first_frame")));
    assert!(
        run.stderr.contains(&format!("{FRAMES} frames in, {FRAMES} out")),
        "{}",
        run.stderr
    );
}

#[test]
fn mpeg4_mp4_to_mkv_keeps_frames_timestamps_and_audio() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mp4", Clip::Mpeg4Mp4, W, H, FRAMES);
    filter(
        dir.path(),
        &[
            "-i", "in.mp4", "-o", "out.mkv", "--mask", "sharpen", "--border", "nearest",
        ],
    );
    let output = dir.path().join("out.mkv");
    // Matroska shifts every stream so that the AAC priming (negative audio timestamps)
    // starts at 0; a stream copy with ffmpeg shows the same shift.
    assert_eq!(video_pts(&output), remuxed_video_pts(dir.path(), &input, "mkv"));
    assert_eq!(video_pts(&output).len(), FRAMES as usize);
    assert_eq!(stream_types(&output), vec!["video", "audio"]);
}

#[test]
fn mpegts_to_mkv_keeps_frames_timestamps_and_audio() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.ts", Clip::H264Ts, W, H, FRAMES);
    filter(
        dir.path(),
        &["-i", "in.ts", "-o", "out.mkv", "--mask", "gaussian:size=3"],
    );
    let output = dir.path().join("out.mkv");
    let (a, b) = (video_pts(&input), video_pts(&output));
    assert_eq!(b.len(), a.len());
    // MPEG-TS starts its clock at 1.4 s; the output keeps the spacing of the frames.
    let times = |v: &[String]| v.iter().map(|t| t.parse::<f64>().unwrap()).collect::<Vec<_>>();
    let (a, b) = (times(&a), times(&b));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - a[0] - (y - b[0])).abs() < 1e-3, "frame {i}: {x} vs {y}");
    }
    assert!(stream_types(&output).contains(&"audio".to_string()));
}

#[test]
fn ffv1_mkv_identity_lossless_is_bit_identical() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, FRAMES);
    filter(
        dir.path(),
        &["-i", "in.mkv", "-o", "out.mkv", "--lossless", "--mask", "identity"],
    );
    let output = dir.path().join("out.mkv");
    assert_eq!(video_stream(&output)["codec_name"], "ffv1");
    assert_eq!(video_pts(&output), video_pts(&input));
    assert_eq!(stream_types(&output), vec!["video", "audio"]);
    assert_eq!(audio_packets_md5(&output), audio_packets_md5(&input), "audio untouched");
    let (a, b) = (decode_raw(&input, "yuv420p"), decode_raw(&output, "yuv420p"));
    assert_eq!(a.len(), (W * H * 3 / 2 * FRAMES) as usize);
    assert!(a == b, "identity through ffv1 must be bit-identical");
}

#[test]
fn h264_to_lossless_mkv_identity_matches_the_decoded_input() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mp4", Clip::H264Mp4, W, H, FRAMES);
    filter(dir.path(), &["-i", "in.mp4", "-o", "out.mkv", "--lossless"]);
    let output = dir.path().join("out.mkv");
    assert!(decode_raw(&input, "yuv420p") == decode_raw(&output, "yuv420p"));
    assert_eq!(video_pts(&output), remuxed_video_pts(dir.path(), &input, "mkv"));
}

#[test]
fn y4m_identity_is_bit_identical() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, FRAMES);
    filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "out.y4m", "--mask", "identity:size=5"],
    );
    let (a, b) = (Y4m::read(&input), Y4m::read(&dir.path().join("out.y4m")));
    assert_eq!(b.frames.len(), FRAMES as usize);
    assert_eq!((b.width, b.height), (W as usize, H as usize));
    assert!(b.header.contains(" F25:1"), "frame rate kept: {}", b.header);
    assert_eq!(a.header, b.header, "size, rate, aspect ratio and colour space kept");
    assert!(a.frames == b.frames, "identity must be bit-identical");
}

#[test]
fn odd_sizes_and_other_layouts_pass_through_identity_exactly() {
    let dir = tempdir();
    for (pix_fmt, name) in [
        ("yuv420p", "a.y4m"),
        ("yuv422p", "b.y4m"),
        ("yuv444p", "c.y4m"),
        ("gray", "d.y4m"),
    ] {
        make_clip_as(dir.path(), name, Clip::Y4m, 37, 23, 5, pix_fmt);
        let out = format!("out-{name}");
        filter(dir.path(), &["-i", name, "-o", &out]);
        let (a, b) = (Y4m::read(&dir.path().join(name)), Y4m::read(&dir.path().join(&out)));
        assert_eq!((a.width, a.height), (37, 23), "{}", a.header);
        assert_eq!(b.frames.len(), 5, "{pix_fmt}");
        assert_eq!(a.header, b.header, "{pix_fmt}");
        assert!(a.frames == b.frames, "{pix_fmt}: identity must be bit-identical");
    }
}

#[test]
fn packed_rgb_input_is_filtered_per_channel() {
    let dir = tempdir();
    common::ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=34x22:rate=25",
            "-vf",
            "scale=33:21",
            "-frames:v",
            "4",
            "-c:v",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "in.nut",
        ],
    );
    filter(dir.path(), &["-i", "in.nut", "-o", "same.nut", "--codec", "rawvideo"]);
    let input = dir.path().join("in.nut");
    assert_eq!(video_stream(&dir.path().join("same.nut"))["pix_fmt"], "rgb24");
    assert!(decode_raw(&input, "rgb24") == decode_raw(&dir.path().join("same.nut"), "rgb24"));

    filter(
        dir.path(),
        &[
            "-i",
            "in.nut",
            "-o",
            "blur.nut",
            "--codec",
            "rawvideo",
            "--mask",
            "box:size=3",
            "--border",
            "wrap",
        ],
    );
    let (a, b) = (
        decode_raw(&input, "rgb24"),
        decode_raw(&dir.path().join("blur.nut"), "rgb24"),
    );
    let frame = 33 * 21 * 3;
    assert_eq!(b.len(), 4 * frame);
    let mask = Mask::from_spec("box:size=3").unwrap();
    for n in 0..4 {
        let plane = Plane {
            depth: convstream_core::SampleDepth::EIGHT,
            width: 33,
            height: 21,
            channels: 3,
            stride: 33 * 3,
            data: a[n * frame..(n + 1) * frame].to_vec().into(),
        };
        assert!(
            b[n * frame..(n + 1) * frame] == oracle(&plane, &mask, BorderMode::Wrap)[..],
            "frame {n}"
        );
    }

    let refused = run_in(
        dir.path(),
        &[
            "run", "--device", "cpu", "-i", "in.nut", "-o", "x.nut", "--planes", "luma",
        ],
    );
    assert_eq!(
        refused.code,
        Some(2),
        "a filter the input cannot take is a usage error: {}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("needs a YUV or gray input"),
        "{}",
        refused.stderr
    );
    refused.assert_no_panic();
}

// ---- pixels against the oracle ----

#[test]
fn box_blur_on_y4m_matches_the_oracle() {
    let dir = tempdir();
    // Odd sizes: chroma planes are 81x61.
    let input = make_clip(dir.path(), "in.y4m", Clip::Y4m, 161, 121, 6);
    assert_eq!(Y4m::read(&input).width, 161);
    filter(dir.path(), &["-i", "in.y4m", "-o", "out.y4m", "--mask", "box:size=3"]);
    let (a, b) = (Y4m::read(&input), Y4m::read(&dir.path().join("out.y4m")));
    let mask = Mask::from_spec("box:size=3").unwrap();
    assert_filtered_as_oracle(&a, &b, &mask, BorderMode::Reflect, &[true, true, true]);
    assert!(a.frames != b.frames, "the blur changed something");
}

#[test]
fn dense_mask_and_constant_border_match_the_oracle() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.y4m", Clip::Y4m, 64, 48, 3);
    let spec = "laplacian:neighbours=8,bias=128";
    filter(
        dir.path(),
        &["-i", "in.y4m", "-o", "out.y4m", "--mask", spec, "--border", "constant"],
    );
    let (a, b) = (Y4m::read(&input), Y4m::read(&dir.path().join("out.y4m")));
    assert_filtered_as_oracle(
        &a,
        &b,
        &Mask::from_spec(spec).unwrap(),
        BorderMode::Constant,
        &[true, true, true],
    );
}

#[test]
fn planes_luma_leaves_chroma_bit_identical() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 6);
    let spec = "gaussian:size=7,sigma=2";
    filter(
        dir.path(),
        &[
            "-i", "in.y4m", "-o", "luma.y4m", "--mask", spec, "--planes", "luma", "--border", "mirror",
        ],
    );
    filter(
        dir.path(),
        &[
            "-i",
            "in.y4m",
            "-o",
            "chroma.y4m",
            "--mask",
            spec,
            "--planes",
            "chroma",
            "--border",
            "mirror",
        ],
    );
    let a = Y4m::read(&input);
    let mask = Mask::from_spec(spec).unwrap();
    let luma = Y4m::read(&dir.path().join("luma.y4m"));
    assert_filtered_as_oracle(&a, &luma, &mask, BorderMode::Mirror, &[true, false, false]);
    let chroma = Y4m::read(&dir.path().join("chroma.y4m"));
    assert_filtered_as_oracle(&a, &chroma, &mask, BorderMode::Mirror, &[false, true, true]);
}

#[test]
fn planes_luma_through_lossless_mkv_keeps_chroma() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, 6);
    filter(
        dir.path(),
        &[
            "-i",
            "in.mkv",
            "-o",
            "out.mkv",
            "--lossless",
            "--mask",
            "edge",
            "--planes",
            "luma",
        ],
    );
    let (a, b) = (
        decode_raw(&input, "yuv420p"),
        decode_raw(&dir.path().join("out.mkv"), "yuv420p"),
    );
    let (luma, frame) = ((W * H) as usize, (W * H * 3 / 2) as usize);
    assert_eq!(a.len(), b.len());
    for n in 0..6 {
        let (fa, fb) = (&a[n * frame..(n + 1) * frame], &b[n * frame..(n + 1) * frame]);
        assert!(fa[luma..] == fb[luma..], "frame {n}: chroma must be untouched");
        assert!(fa[..luma] != fb[..luma], "frame {n}: luma is filtered");
    }
}

// ---- pipes ----

#[test]
fn dash_output_writes_y4m_to_stdout() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.mp4", Clip::H264Mp4, W, H, FRAMES);
    let run = filter(dir.path(), &["-i", "in.mp4", "-o", "-"]);
    assert!(run.stdout.starts_with(b"YUV4MPEG2 "), "stdout is y4m");
    let out = Y4m::parse(&run.stdout);
    assert_eq!(out.frames.len(), FRAMES as usize);
    let flat: Vec<u8> = out.frames.concat().concat();
    assert!(
        flat == decode_raw(&input, "yuv420p"),
        "identity to stdout is the decoded input"
    );
    assert!(!run.stderr.contains("YUV4MPEG2"), "video goes to stdout only");
}

#[test]
fn dash_input_reads_stdin() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 5);
    let output = convstream()
        .args(["run", "--device", "cpu", "-i", "-", "-o", "out.y4m", "--mask", "box"])
        .current_dir(dir.path())
        .stdin(Stdio::from(File::open(&input).unwrap()))
        .output()
        .unwrap();
    let run = common::Run::from(output).success();
    assert!(run.stderr.contains("5 frames in, 5 out"), "{}", run.stderr);
    let (a, b) = (Y4m::read(&input), Y4m::read(&dir.path().join("out.y4m")));
    assert_filtered_as_oracle(
        &a,
        &b,
        &Mask::from_spec("box").unwrap(),
        BorderMode::Reflect,
        &[true; 3],
    );
}

#[test]
fn closed_stdout_ends_the_run_cleanly() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 320, 240, 60);
    // The reader takes the header and a little more, then goes away.
    let mut child = convstream()
        .args(["run", "--device", "cpu", "-i", "in.y4m", "-o", "-"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = vec![0u8; 4096];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    let run = common::Run::from(output);
    run.assert_no_panic();
    assert_eq!(run.code, Some(0), "a closed pipe is a normal end:\n{}", run.stderr);
    assert!(run.stderr.contains("output was closed"), "{}", run.stderr);
}

// ---- configs ----

#[test]
fn config_runs_every_pipeline_and_flags_pick_one() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 48, 32, 4);
    std::fs::write(dir.path().join("row.txt"), "1 2 1\n").unwrap();
    let config = r#"
[masks.row]
file = "row.txt"
normalize = true

[[pipeline]]
name = "soft"
[pipeline.source]
url = "in.y4m"
[pipeline.filter]
mask = "row"
device = "cpu"
[pipeline.sink]
url = "soft.y4m"

[[pipeline]]
name = "edges"
[pipeline.source]
url = "in.y4m"
[pipeline.filter]
mask = { preset = "sobel-y", bias = 128 }
border = "nearest"
device = "cpu"
[pipeline.sink]
url = "edges.y4m"
"#;
    std::fs::write(dir.path().join("two.toml"), config).unwrap();
    let run = run_in(dir.path(), &["run", "--config", "two.toml"]).success();
    assert!(run.stderr.contains("soft: 4 frames in, 4 out"), "{}", run.stderr);
    assert!(run.stderr.contains("edges: 4 frames in, 4 out"), "{}", run.stderr);
    let input = Y4m::read(&dir.path().join("in.y4m"));
    let row = Mask::from_coefficients(3, 1, vec![0.25, 0.5, 0.25], 0.0);
    assert_filtered_as_oracle(
        &input,
        &Y4m::read(&dir.path().join("soft.y4m")),
        &row,
        BorderMode::Reflect,
        &[true; 3],
    );
    let sobel = Mask::from_spec("sobel-y:bias=128").unwrap();
    assert_filtered_as_oracle(
        &input,
        &Y4m::read(&dir.path().join("edges.y4m")),
        &sobel,
        BorderMode::Nearest,
        &[true; 3],
    );

    // A flag overrides the one pipeline chosen.
    run_in(
        dir.path(),
        &[
            "run",
            "--config",
            "two.toml",
            "--pipeline",
            "edges",
            "-o",
            "other.y4m",
            "--mask",
            "identity",
        ],
    )
    .success();
    assert!(Y4m::read(&dir.path().join("other.y4m")).frames == input.frames);
    // Flags without --pipeline on a two-pipeline config are a usage error.
    let refused = run_in(dir.path(), &["run", "--config", "two.toml", "--mask", "box"]);
    assert_eq!(refused.code, Some(2));
    assert!(refused.stderr.contains("--pipeline NAME"), "{}", refused.stderr);
}

// ---- the small commands ----

#[test]
fn version_and_help() {
    let version = run(&["--version"]).success();
    assert_eq!(
        version.stdout_text().trim(),
        format!("convstream {}", env!("CARGO_PKG_VERSION"))
    );
    let help = run(&["--help"]).success().stdout_text();
    for word in ["run", "check", "masks", "demo", "Usage"] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
    for (sub, words) in [
        (
            "run",
            &[
                "--input",
                "--output",
                "--mask",
                "--planes",
                "--border",
                "--device",
                "--config",
                "--pipeline",
                "--stats-json",
                "--no-progress",
            ][..],
        ),
        ("check", &["--config"][..]),
        ("masks", &["show"][..]),
        ("demo", &["--device"][..]),
    ] {
        let text = run(&[sub, "--help"]).success().stdout_text();
        for word in words {
            assert!(text.contains(word), "{sub} --help lacks {word}:\n{text}");
        }
    }
    let text = run(&["masks", "show", "--help"]).success().stdout_text();
    assert!(text.contains("SPEC"), "{text}");
}

#[test]
fn masks_lists_every_preset() {
    let text = run(&["masks"]).success().stdout_text();
    for preset in convstream_core::PRESETS {
        assert!(text.contains(preset.name), "masks lacks {}:\n{text}", preset.name);
    }
    for preset in [
        "identity",
        "box",
        "gaussian",
        "sharpen",
        "unsharp",
        "laplacian",
        "sobel-x",
        "sobel-y",
        "prewitt-x",
        "prewitt-y",
        "sobel",
        "prewitt",
        "emboss",
        "motion-blur",
        "edge",
        "neutral",
        "custom",
    ] {
        assert!(text.contains(preset), "{preset} missing:\n{text}");
    }
}

#[test]
fn masks_show_prints_the_matrix_and_separability() {
    let text = run(&["masks", "show", "box:size=3"]).success().stdout_text();
    assert!(text.contains("0.111111"), "{text}");
    assert!(text.contains("separable: yes"), "{text}");
    let text = run(&["masks", "show", "laplacian:neighbours=8"])
        .success()
        .stdout_text();
    assert!(text.contains("-8.000000") && text.contains("separable: no"), "{text}");
    let text = run(&["masks", "show", "gaussian:size=5,sigma=1"])
        .success()
        .stdout_text();
    assert!(
        text.contains("(5x5, width x height)") && text.contains("column factor"),
        "{text}"
    );
    let bad = run(&["masks", "show", "box:size=4"]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("size: 4 is even"), "{}", bad.stderr);
}

#[test]
fn check_accepts_the_examples_and_the_default() {
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = run(&["check", "--config", path.to_str().unwrap()])
                .success()
                .stdout_text();
            assert!(text.contains(": ok,"), "{text}");
        }
    }
    let text = run(&["check", "--config", "config/default.toml"])
        .success()
        .stdout_text();
    assert!(text.contains("ok, 1 pipeline(s)"), "{text}");
}

/// `doctor` on a host where NVRTC cannot be loaded says that it is missing, what needs it
/// and how to get it (it used to say nothing). The tests find NVRTC through LD_LIBRARY_PATH
/// (scripts/test.sh, CI): without it only a system-wide one loads, and then the line gives
/// its version instead.
#[cfg(feature = "cuda")]
#[test]
fn doctor_says_when_nvrtc_is_missing_and_how_to_get_it() {
    let system_wide = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libnvrtc.so"));
    let output = convstream()
        .arg("doctor")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    let nvrtc = text
        .lines()
        .find(|line| line.starts_with("NVRTC"))
        .unwrap_or_else(|| panic!("doctor says nothing of NVRTC:\n{text}"));
    if system_wide {
        assert!(nvrtc.starts_with("NVRTC: 1"), "{nvrtc}");
        return;
    }
    for told in [
        "NVRTC: missing",
        "compiles its kernels with NVRTC",
        "--device auto runs on the CPU",
        "pip install nvidia-cuda-nvrtc-cu12",
        "LD_LIBRARY_PATH",
    ] {
        assert!(nvrtc.contains(told), "`{told}` in: {nvrtc}");
    }
}

/// `scripts/demo.sh` says what each step does before it starts, and lets cargo show the
/// build's progress (a quiet first build of minutes looks hung). Run against stand-ins for
/// cargo and the dependency check, which record how they were called.
#[test]
fn the_demo_script_announces_each_step_and_builds_visibly() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let root = dir.path();
    for folder in ["scripts", "bin"] {
        std::fs::create_dir(root.join(folder)).unwrap();
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo.sh"),
        root.join("scripts/demo.sh"),
    )
    .unwrap();
    let stand_ins = [
        (
            "scripts/install-deps.sh",
            "echo 'dependencies checked' >&2\necho /opt/nvrtc/lib\n",
        ),
        (
            "bin/cargo",
            "echo \"cargo $* (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)\" >&2\n",
        ),
    ];
    for (name, body) in stand_ins {
        let path = root.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new("bash")
        .arg(root.join("scripts/demo.sh"))
        .args(["--device", "cpu"])
        .env("HOME", root) // no ~/.cargo/env to put the real cargo first
        .env("PATH", path)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    let expected = [
        "demo: checking the build dependencies",
        "dependencies checked",
        "demo: building convstream",
        "cargo build --release --bin convstream (LD_LIBRARY_PATH=/opt/nvrtc/lib)",
        "demo: running convstream demo",
        "cargo run --release --quiet --bin convstream -- demo --device cpu (LD_LIBRARY_PATH=/opt/nvrtc/lib)",
    ];
    assert_eq!(lines.len(), expected.len(), "{stderr}");
    for (line, start) in lines.iter().zip(expected) {
        assert!(
            line.starts_with(start),
            "`{line}` should start with `{start}`:\n{stderr}"
        );
    }
}

/// The sharpen example's comment states the matrix its mask makes: the sign of the
/// Laplacian term and the numbers themselves.
#[test]
fn the_sharpen_example_states_the_matrix_it_runs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/examples/sharpen-y4m-pipe.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let settings =
        convstream_config::ConfigFile::parse(&text, "sharpen-y4m-pipe.toml", convstream_media::output_problems)
            .unwrap()
            .validate(None, convstream_media::output_problems)
            .unwrap();
    let mask = &settings.pipelines[0].filter.mask;
    let c = mask.coefficients();
    assert_eq!((mask.width(), mask.height()), (3, 3));
    let comment: String = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    for stated in [
        "identity - 1.5 x (4-neighbour Laplacian)".to_string(),
        format!("centre {}", c[4]),
        format!("neighbours {}", c[1]),
    ] {
        assert!(comment.contains(&stated), "{} should say `{stated}`", path.display());
    }
    assert_eq!((c[4], c[1], c[0]), (7.0, -1.5, 0.0), "identity - 1.5 x Laplacian");
}

#[test]
fn check_reports_every_problem_with_its_place() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("bad.toml"),
        r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
[pipeline.filter]
mask = "box:size=14"
device = "tpu"
[pipeline.sink]
url = ""
"#,
    )
    .unwrap();
    let run = run_in(dir.path(), &["check", "--config", "bad.toml"]);
    assert_eq!(run.code, Some(2));
    run.assert_no_panic();
    for line in [
        "3 problems in the configuration",
        "pipeline \"cam1\": filter.mask: size: 14 is even; mask sizes must be odd, 1..=63",
        "pipeline \"cam1\": filter.device: `tpu` is not a device",
        "pipeline \"cam1\": sink.url is empty",
    ] {
        assert!(run.stderr.contains(line), "missing {line:?} in:\n{}", run.stderr);
    }
}

#[test]
fn missing_flags_are_usage_errors() {
    let run = run(&["run", "-i", "x.mp4"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("--output is required"), "{}", run.stderr);
    let run = common::run(&["run", "--border", "sideways"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("sideways"));
}

// ---- signals ----

/// Starts a paced (real-time) run, sends `signal` after a second, and checks that the run
/// drained what it had read, finalised a playable file and exited with `code`.
fn stop_with(signal: &str, code: i32) {
    let dir = tempdir();
    make_clip(dir.path(), "long.y4m", Clip::Y4m, 160, 120, 100);
    std::fs::write(
        dir.path().join("live.toml"),
        r#"
[[pipeline]]
name = "live"
[pipeline.source]
url = "long.y4m"
realtime = true      # 25 fps: four seconds for the whole clip
[pipeline.filter]
mask = "box"
device = "cpu"
[pipeline.sink]
url = "out.mkv"
lossless = true
"#,
    )
    .unwrap();
    let child = convstream()
        .args(["run", "--config", "live.toml", "--stats-json", "stats.json"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let run = common::Run::from(child.wait_with_output().unwrap());
    run.assert_no_panic();
    // As a shell reports a program it stopped (128 + the signal), after the output is final.
    assert_eq!(run.code, Some(code), "a stop by {signal}:\n{}", run.stderr);
    assert!(
        run.stderr.contains("stopped early: interrupted by a signal"),
        "{}",
        run.stderr
    );
    let stats = stats(&dir.path().join("stats.json"));
    let frames = stats["frames_out"].as_u64().unwrap();
    assert!(frames > 5 && frames < 100, "stopped part way: {stats}");
    assert_eq!(stats["frames_in"], stats["frames_out"], "what was read was drained");
    let output = dir.path().join("out.mkv");
    assert_eq!(
        video_pts(&output).len() as u64,
        frames,
        "the output is finalised and plays"
    );
}

#[test]
fn sigint_drains_and_finalises_the_output() {
    stop_with("-INT", 130);
}

#[test]
fn sigterm_drains_and_finalises_the_output() {
    stop_with("-TERM", 143);
}

// ---- stream properties ----

#[test]
fn aspect_ratio_and_colour_description_are_carried_over() {
    let dir = tempdir();
    common::ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=160x120:rate=25",
            "-vf",
            "setsar=4/3",
            "-frames:v",
            "5",
            "-c:v",
            "ffv1",
            "-pix_fmt",
            "yuv420p",
            "-colorspace",
            "bt709",
            "-color_primaries",
            "bt709",
            "-color_trc",
            "bt709",
            "-color_range",
            "tv",
            "in.mkv",
        ],
    );
    let described = |path: &Path| {
        let v = video_stream(path);
        [
            "sample_aspect_ratio",
            "color_range",
            "color_space",
            "color_primaries",
            "color_transfer",
        ]
        .map(|key| v[key].as_str().unwrap_or("unset").to_string())
    };
    let input = described(&dir.path().join("in.mkv"));
    assert_eq!(input, ["4:3", "tv", "bt709", "bt709", "bt709"]);
    for output in ["out.mp4", "out.mkv"] {
        filter(dir.path(), &["-i", "in.mkv", "-o", output, "--mask", "box"]);
        assert_eq!(described(&dir.path().join(output)), input, "{output}");
    }
    // YUV4MPEG2 has a field for the aspect ratio (and none for the colour space).
    filter(dir.path(), &["-i", "in.mkv", "-o", "out.y4m"]);
    assert!(Y4m::read(&dir.path().join("out.y4m")).header.contains(" A4:3 "));
}

/// A custom matrix on the command line: brackets nest, the commas inside them belong to the
/// matrix, and the result is the oracle's for that matrix (and the same as the mask file).
#[test]
fn a_custom_matrix_on_the_command_line_filters_as_the_oracle() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 4);
    let spec = "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],normalize=true";
    filter(dir.path(), &["-i", "in.y4m", "--mask", spec, "-o", "inline.y4m"]);
    std::fs::write(dir.path().join("m.txt"), "1 2 1\n2 4 2\n1 2 1\n").unwrap();
    filter(
        dir.path(),
        &[
            "-i",
            "in.y4m",
            "--mask",
            "custom:file=m.txt,normalize=true",
            "-o",
            "file.y4m",
        ],
    );
    let (inline, from_file) = (
        Y4m::read(&dir.path().join("inline.y4m")),
        Y4m::read(&dir.path().join("file.y4m")),
    );
    assert_eq!(inline.frames, from_file.frames, "the inline matrix is the file's");
    let mask = Mask::from_spec(spec).expect("the SPEC parses");
    assert_filtered_as_oracle(
        &Y4m::read(&input),
        &inline,
        &mask,
        BorderMode::Reflect,
        &[true, true, true],
    );
    // A malformed matrix is a usage error that names the key.
    let bad = run_in(
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "-i",
            "in.y4m",
            "--mask",
            "custom:matrix=[[1,2,1]",
            "-o",
            "bad.y4m",
        ],
    );
    bad.assert_no_panic();
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("matrix=") && bad.stderr.contains("rows of numbers in brackets"),
        "{}",
        bad.stderr
    );
    assert!(!dir.path().join("bad.y4m").exists(), "nothing written");
}

/// `--help` of every command describes every flag and argument: none is a bare name.
#[test]
fn help_describes_every_flag() {
    for sub in [
        &["run"][..],
        &["serve"],
        &["check"],
        &["bench"],
        &["demo"],
        &["doctor"],
        &["masks"],
        &["masks", "show"],
    ] {
        let mut args = sub.to_vec();
        args.push("--help");
        let text = run(&args).success().stdout_text();
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let first = trimmed.split_whitespace().next().unwrap_or("");
            let is_flag = first.starts_with('-')
                && first.len() > 1
                && first.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ',');
            let is_argument = trimmed.starts_with('<') && line.starts_with("  ");
            if !(is_flag || is_argument) || trimmed.starts_with("- ") {
                continue;
            }
            let indent = line.len() - trimmed.len();
            let next = lines.get(n + 1).copied().unwrap_or("");
            let next_indent = next.len() - next.trim_start().len();
            // Short help puts the description on the flag's line, after two spaces or more;
            // long help on the lines below, indented deeper.
            let on_the_line = trimmed
                .split_once("  ")
                .is_some_and(|(_, rest)| !rest.trim().is_empty());
            assert!(
                on_the_line || (!next.trim().is_empty() && next_indent > indent),
                "{} --help: `{}` has no description:\n{text}",
                sub.join(" "),
                trimmed
            );
        }
    }
}

/// `[log] format = "json"`: every line `run` writes to stderr is a JSON object, the summary
/// too (with its numbers as fields); pretty logs carry a time and name the pipeline once.
#[test]
fn json_logs_are_json_to_the_last_line_and_pretty_logs_name_the_pipeline_once() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 5);
    let config = |format: &str| {
        format!(
            "[log]\nformat = \"{format}\"\n[[pipeline]]\nname = \"cam\"\n[pipeline.source]\nurl = \"in.y4m\"\n[pipeline.filter]\nmask = \"box\"\ndevice = \"cpu\"\n[pipeline.sink]\nurl = \"out-{format}.mkv\"\n"
        )
    };
    std::fs::write(dir.path().join("json.toml"), config("json")).unwrap();
    let run = run_in(dir.path(), &["run", "--config", "json.toml", "--no-progress"]).success();
    let events: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let summary = events
        .iter()
        .find(|e| e["fields"]["summary"] == true)
        .unwrap_or_else(|| panic!("no summary event:\n{}", run.stderr));
    assert_eq!(summary["fields"]["frames_out"], 5, "{summary}");
    assert_eq!(summary["fields"]["pipeline"], "cam");
    assert!(
        summary["fields"]["output_encoder"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{summary}"
    );

    std::fs::write(dir.path().join("pretty.toml"), config("pretty")).unwrap();
    let run = run_in(dir.path(), &["run", "--config", "pretty.toml", "--no-progress"]).success();
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("in.y4m") && l.contains("->"))
        .unwrap_or_else(|| panic!("no start line:\n{}", run.stderr));
    assert_eq!(line.matches("cam").count(), 1, "the pipeline is named once: {line}");
    let time = line.split_whitespace().next().unwrap_or("");
    assert!(
        time.len() == 12 && time.as_bytes()[2] == b':' && time.as_bytes()[8] == b'.',
        "a line starts with its time (HH:MM:SS.mmm): {line}"
    );
}

#[test]
fn masks_show_names_the_brightness_a_custom_matrix_adds_and_its_taps_as_written() {
    let shown = run(&["masks", "show", "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]]"]).success();
    let text = shown.stdout_text();
    assert!(
        text.contains("warning: the custom matrix sums to 16") && text.contains("divisor=16"),
        "{text}"
    );
    let fixed = run(&["masks", "show", "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],divisor=16"]).success();
    assert!(!fixed.stdout_text().contains("warning"), "{}", fixed.stdout_text());
    // With mode=correlate, the matrix as written is shown too, beside the convolution form.
    let shift = run(&[
        "masks",
        "show",
        "custom:matrix=[[0,0,0],[0,0,1],[0,0,0]],mode=correlate",
    ])
    .success();
    let text = shift.stdout_text();
    let (convolution, as_written) = text.split_once("as written").expect("the taps as written");
    let middle_row = |block: &str| {
        block
            .lines()
            .filter(|line| line.trim_start().starts_with(|c: char| c.is_ascii_digit() || c == '-'))
            .nth(1)
            .map(|line| line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .expect("a middle row")
    };
    assert_eq!(middle_row(convolution), ["1.000000", "0.000000", "0.000000"], "{text}");
    assert_eq!(middle_row(as_written), ["0.000000", "0.000000", "1.000000"], "{text}");
}

#[test]
fn check_warns_of_a_custom_matrix_that_changes_brightness() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("c.toml"),
        "[[pipeline]]\nname = \"cam\"\nsource.url = \"in.mp4\"\nsink.url = \"out.mkv\"\nfilter.mask = \"custom:matrix=[[1,1,1],[1,1,1],[1,1,1]]\"\n",
    )
    .unwrap();
    let checked = run_in(dir.path(), &["check", "--config", "c.toml"]).success();
    assert!(
        checked.stderr.contains("pipeline \"cam\"")
            && checked.stderr.contains("sums to 9")
            && checked.stderr.contains("divisor=9"),
        "{}",
        checked.stderr
    );
}

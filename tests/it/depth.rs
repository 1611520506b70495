//! Pictures of 9 to 16 bits per sample end to end on the CPU engine: decoded at their depth,
//! filtered exactly as the oracle says (bias in 8-bit units), written at the same depth (y4m
//! `C420p10`, FFV1, raw video), converted with a warning for an encoder that cannot take it,
//! and converted on purpose with `--depth`. P010 (samples in the high bits) and planar GBR
//! go through too. The CUDA engine's parity at these depths is `gpu::gpu_parity_at_high_bit_depths`.

use std::path::Path;

use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_core::{PixelFormat, PixelLayout, Plane};

use crate::common::{self, decode_raw, ffmpeg, make_clip_as, run_in, video_stream, Clip, Y4m};
use convstream_testkit::oracle::oracle;
use convstream_testkit::tempdir;

const W: u32 = 48;
const H: u32 = 30;
const FRAMES: u32 = 4;

fn filter(dir: &Path, args: &[&str]) -> common::Run {
    let mut all = vec!["run", "--device", "cpu", "--no-progress", "--border", "reflect"];
    all.extend_from_slice(args);
    run_in(dir, &all)
}

/// Splits raw frames of `format` (as `ffmpeg -f rawvideo` writes them) into planes.
fn frames_of(raw: &[u8], format: PixelFormat) -> Vec<Vec<Plane>> {
    let shapes = format.plane_shapes(W as usize, H as usize);
    let frame_bytes: usize = shapes.iter().map(|s| s.row_bytes() * s.height).sum();
    assert_eq!(raw.len() % frame_bytes, 0, "whole {format} frames");
    raw.chunks(frame_bytes)
        .map(|frame| {
            let mut at = 0;
            shapes
                .iter()
                .map(|shape| {
                    let len = shape.row_bytes() * shape.height;
                    let mut plane = Plane::new(*shape);
                    plane.data.copy_from_slice(&frame[at..at + len]);
                    at += len;
                    plane
                })
                .collect()
        })
        .collect()
}

/// `format`'s planes after `masks` (one per plane, `None`: untouched), as packed bytes.
fn expected(input: &[Vec<Plane>], masks: &[Option<Mask>]) -> Vec<Vec<Vec<u8>>> {
    input
        .iter()
        .map(|planes| {
            planes
                .iter()
                .zip(masks)
                .map(|(plane, mask)| match mask {
                    Some(mask) => oracle(plane, mask, BorderMode::Reflect),
                    None => plane.data.to_vec(),
                })
                .collect()
        })
        .collect()
}

fn format(layout: PixelLayout, bits: u8) -> PixelFormat {
    PixelFormat::new(layout, bits).unwrap()
}

#[test]
fn ten_bit_video_is_filtered_at_ten_bits_and_written_as_c420p10() {
    let dir = tempdir();
    let input = make_clip_as(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, FRAMES, "yuv420p10le");
    filter(
        dir.path(),
        &["-i", "in.mkv", "-o", "out.y4m", "--mask", "gaussian:size=5"],
    )
    .success();
    let out = Y4m::read(&dir.path().join("out.y4m"));
    assert!(
        out.colorspace.starts_with("420p10"),
        "the depth is kept: {}",
        out.header
    );
    let ten = format(PixelLayout::Yuv420, 10);
    let gaussian = Mask::from_spec("gaussian:size=5").unwrap();
    let want = expected(
        &frames_of(&decode_raw(&input, "yuv420p10le"), ten),
        &[Some(gaussian.clone()), Some(gaussian.clone()), Some(gaussian)],
    );
    assert_eq!(out.frames.len(), FRAMES as usize);
    assert!(out.frames == want, "10-bit samples as the oracle computes them");

    // A zero-sum edge map on luma with the chroma at mid-grey: the bias of `neutral` (128
    // in 8-bit units) is 512 at 10 bits.
    filter(
        dir.path(),
        &[
            "-i",
            "in.mkv",
            "-o",
            "edges.y4m",
            "--plane-mask",
            "y=edge",
            "--plane-mask",
            "uv=neutral",
        ],
    )
    .success();
    let edges = Y4m::read(&dir.path().join("edges.y4m"));
    for frame in &edges.frames {
        for chroma in &frame[1..] {
            assert!(
                chroma.chunks(2).all(|w| u16::from_le_bytes([w[0], w[1]]) == 512),
                "mid-grey at 10 bits is 512"
            );
        }
    }
}

#[test]
fn the_depth_reaches_lossless_files_and_encoders_that_cannot_take_it_get_a_warning() {
    let dir = tempdir();
    let input = make_clip_as(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, FRAMES, "yuv422p12le");
    filter(
        dir.path(),
        &["-i", "in.mkv", "-o", "same.mkv", "--mask", "identity", "--lossless"],
    )
    .success();
    let same = dir.path().join("same.mkv");
    assert_eq!(video_stream(&same)["pix_fmt"], "yuv422p12le");
    assert!(
        decode_raw(&same, "yuv422p12le") == decode_raw(&input, "yuv422p12le"),
        "identity through --lossless keeps every 12-bit sample"
    );

    // MPEG-4 Part 2 is 8-bit only: said once, and converted.
    let run = filter(dir.path(), &["-i", "in.mkv", "-o", "mpeg4.mkv", "--codec", "mpeg4"]).success();
    assert_eq!(
        run.stderr.matches("cannot take 12-bit yuv422p12le").count(),
        1,
        "one warning naming the depth:\n{}",
        run.stderr
    );
    assert_eq!(video_stream(&dir.path().join("mpeg4.mkv"))["pix_fmt"], "yuv420p");
}

#[test]
fn depth_converts_on_purpose_and_refuses_depths_that_do_not_exist() {
    let dir = tempdir();
    make_clip_as(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, FRAMES, "yuv420p10le");
    filter(dir.path(), &["-i", "in.mkv", "-o", "eight.y4m", "--depth", "8"]).success();
    let eight = Y4m::read(&dir.path().join("eight.y4m"));
    assert_eq!(eight.sample_bytes, 1, "{}", eight.header);
    assert_eq!(eight.frames.len(), FRAMES as usize);

    make_clip_as(dir.path(), "in8.y4m", Clip::Y4m, W, H, FRAMES, "yuv444p");
    filter(dir.path(), &["-i", "in8.y4m", "-o", "sixteen.y4m", "--depth", "16"]).success();
    let sixteen = Y4m::read(&dir.path().join("sixteen.y4m"));
    assert!(sixteen.colorspace.starts_with("444p16"), "{}", sixteen.header);

    let run = filter(dir.path(), &["-i", "in.mkv", "-o", "odd.y4m", "--depth", "11"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("--depth: 11 bits"), "{}", run.stderr);
    assert!(!dir.path().join("odd.y4m").exists(), "nothing written");
}

#[test]
fn p010_is_filtered_on_its_high_bits_and_stays_p010() {
    let dir = tempdir();
    // Raw P010 (the layout NVDEC gives for 10-bit HEVC; no container has a tag for it), read
    // and written as raw video.
    ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=48x30:rate=25",
            "-frames:v",
            "4",
            "-pix_fmt",
            "p010le",
            "-f",
            "rawvideo",
            "in.p010",
        ],
    );
    let raw_input = [
        "--input-format",
        "rawvideo",
        "--size",
        "48x30",
        "--pix-fmt",
        "p010le",
        "--framerate",
        "25",
    ];
    let mut args = vec![
        "-i",
        "in.p010",
        "-o",
        "out.p010",
        "--format",
        "rawvideo",
        "--mask",
        "sharpen:amount=2",
    ];
    args.extend(raw_input);
    filter(dir.path(), &args).success();
    let read = |name: &str| std::fs::read(dir.path().join(name)).expect("the file exists");
    let sharpen = Mask::from_spec("sharpen:amount=2").unwrap();
    let want = expected(
        &frames_of(&read("in.p010"), PixelFormat::P010),
        &[Some(sharpen.clone()), Some(sharpen)],
    );
    let got: Vec<Vec<Vec<u8>>> = frames_of(&read("out.p010"), PixelFormat::P010)
        .into_iter()
        .map(|planes| planes.into_iter().map(|p| p.data.to_vec()).collect())
        .collect();
    assert_eq!(
        got.len(),
        4,
        "every frame, still P010 (raw video has no header to say so)"
    );
    assert!(
        got == want,
        "P010 samples filtered as 10-bit values, written back in the high bits"
    );
    assert!(
        got.iter().flatten().flatten().step_by(2).all(|low| low & 0x3f == 0),
        "P010's six low bits stay zero"
    );
}

#[test]
fn rgb_channels_take_their_own_masks_at_their_depth() {
    let dir = tempdir();
    // 10-bit planar GBR, and 8-bit packed RGB (made planar for per-channel masks).
    make_clip_as(dir.path(), "gbr.mkv", Clip::Ffv1Mkv, W, H, FRAMES, "gbrp10le");
    ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=48x30:rate=25",
            "-frames:v",
            "4",
            "-pix_fmt",
            "rgb24",
            "-c:v",
            "rawvideo",
            "rgb.nut",
        ],
    );
    let boxed = Mask::from_spec("box:size=3").unwrap();
    for (input, pix_fmt, bits) in [("gbr.mkv", "gbrp10le", 10), ("rgb.nut", "gbrp", 8)] {
        let output = format!("out-{bits}.nut");
        filter(
            dir.path(),
            &[
                "-i",
                input,
                "-o",
                &output,
                "--codec",
                "rawvideo",
                "--mask",
                "identity",
                "--plane-mask",
                "r=box:size=3",
            ],
        )
        .success();
        let out = dir.path().join(&output);
        assert_eq!(video_stream(&out)["pix_fmt"], pix_fmt, "{input}");
        let gbr = format(PixelLayout::Gbr, bits);
        let source = frames_of(&decode_raw(&dir.path().join(input), pix_fmt), gbr);
        // FFmpeg's planar order is G, B, R: only R is blurred.
        let want = expected(&source, &[None, None, Some(boxed.clone())]);
        let got: Vec<Vec<Vec<u8>>> = frames_of(&decode_raw(&out, pix_fmt), gbr)
            .into_iter()
            .map(|planes| planes.into_iter().map(|p| p.data.to_vec()).collect())
            .collect();
        assert!(got == want, "{input}: r blurred, g and b untouched");
    }
}

/// The mastering display and light level ffprobe reports for `path` (from the stream's side
/// data, or, with `frames`, from the first frame's), by kind, each value as a number
/// (containers keep `34000/50000` as `17/25`).
fn hdr_side_data(path: &Path, frames: bool) -> Vec<(String, Vec<(String, f64)>)> {
    let entries = if frames { "frame_side_data" } else { "stream_side_data" };
    let mut args = vec![
        "-v",
        "error",
        "-of",
        "json",
        "-select_streams",
        "v:0",
        "-show_entries",
        entries,
    ];
    if frames {
        args.extend(["-read_intervals", "%+#1"]);
    }
    let output = std::process::Command::new("ffprobe")
        .args(&args)
        .arg(path)
        .output()
        .expect("ffprobe is installed");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("ffprobe writes JSON");
    let list = if frames {
        &json["frames"][0]
    } else {
        &json["streams"][0]
    };
    list["side_data_list"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|s| {
            let kind = s["side_data_type"].as_str().unwrap_or_default().to_string();
            if kind != "Mastering display metadata" && kind != "Content light level metadata" {
                return None;
            }
            let values = s
                .as_object()?
                .iter()
                .filter(|(key, _)| *key != "side_data_type")
                .map(|(key, value)| {
                    let number = match value {
                        serde_json::Value::String(text) => {
                            let (num, den) = text.split_once('/').unwrap_or((text, "1"));
                            num.parse::<f64>().unwrap() / den.parse::<f64>().unwrap()
                        }
                        other => other.as_f64().unwrap(),
                    };
                    (key.clone(), number)
                })
                .collect();
            Some((kind, values))
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

#[test]
fn hdr10_metadata_reaches_mkv_mp4_and_ts() {
    let dir = tempdir();
    // A 10-bit PQ HEVC clip whose metadata is only in its bitstream (SEI), as libx265 makes it.
    let master = "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)";
    let params = format!(
        "log-level=error:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:master-display={master}:max-cll=1000,400"
    );
    ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=25",
            "-frames:v",
            "5",
            "-pix_fmt",
            "yuv420p10le",
            "-c:v",
            "libx265",
            "-preset",
            "ultrafast",
            "-x265-params",
            &params,
            "-color_primaries",
            "bt2020",
            "-color_trc",
            "smpte2084",
            "-colorspace",
            "bt2020nc",
            "hdr.mkv",
        ],
    );
    let input = hdr_side_data(&dir.path().join("hdr.mkv"), true);
    assert_eq!(input.len(), 2, "the clip carries both in its first frame: {input:?}");
    for output in ["out.mkv", "out.mp4", "out.ts"] {
        filter(
            dir.path(),
            &[
                "-i",
                "hdr.mkv",
                "-o",
                output,
                "--codec",
                "libx265",
                "--mask",
                "gaussian:size=3",
            ],
        )
        .success();
        let path = dir.path().join(output);
        let stream = video_stream(&path);
        assert_eq!(stream["pix_fmt"], "yuv420p10le", "{output}");
        assert_eq!(stream["color_transfer"], "smpte2084", "{output}");
        // In the bitstream of every output (libx265's SEI), and in the header of the
        // containers that have a place for it.
        assert_eq!(
            hdr_side_data(&path, true),
            input,
            "{output}: the first frame's side data"
        );
        if output != "out.ts" {
            assert_eq!(hdr_side_data(&path, false), input, "{output}: the stream's side data");
        }
    }
}

//! `run` speaks FFmpeg's language: its flag spellings, its time syntax, a positional output,
//! containers from URL schemes, muxer options and fragmented MP4 to a pipe, WebM's default
//! codec, its exit codes and timestamps that start at 0, compared with FFmpeg's own CLI
//! where the claim is "as FFmpeg does".

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{convstream, make_clip, run_in, video_pts, video_stream, Clip, Y4m};
use convstream_testkit::tempdir;

const W: u32 = 96;
const H: u32 = 64;

fn filter(dir: &Path, args: &[&str]) -> common::Run {
    common::run_on_cpu(dir, args)
}

fn format_name(path: &Path) -> String {
    let output = Command::new("ffprobe")
        .args(["-v", "error", "-show_entries", "format=format_name", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .trim_matches('"')
        .to_string()
}

fn usage_error(run: &common::Run, wanted: &str) {
    assert_eq!(run.code, Some(2), "a usage error:\n{}", run.stderr);
    run.assert_no_panic();
    assert!(run.stderr.contains(wanted), "missing {wanted:?} in:\n{}", run.stderr);
}

#[test]
fn ffmpeg_spellings_mean_what_they_mean_in_ffmpeg() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, W, H, 10);
    // Output side, with the output as FFmpeg's last word.
    filter(
        dir.path(),
        &[
            "-i",
            "in.mkv",
            "-c:v",
            "mpeg4",
            "-b:v",
            "300k",
            "-frames:v",
            "4",
            "-an",
            "-f",
            "matroska",
            "out.bin",
        ],
    )
    .success();
    let out = dir.path().join("out.bin");
    assert_eq!(video_stream(&out)["codec_name"], "mpeg4");
    assert_eq!(video_pts(&out).len(), 4, "-frames:v 4");
    assert_eq!(common::stream_types(&out), vec!["video"], "-an");
    assert!(format_name(&out).starts_with("matroska"), "-f matroska");
    filter(dir.path(), &["-i", "in.mkv", "-vcodec", "ffv1", "-o", "v.mkv"]).success();
    assert_eq!(video_stream(&dir.path().join("v.mkv"))["codec_name"], "ffv1");

    // Input side: before -i, -f, -s, -pix_fmt and -r describe the input, as in FFmpeg.
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 5);
    let input = Y4m::read(&dir.path().join("in.y4m"));
    let raw: Vec<u8> = input.frames.iter().flatten().flatten().copied().collect();
    std::fs::write(dir.path().join("in.yuv"), raw).unwrap();
    let size = format!("{W}x{H}");
    filter(
        dir.path(),
        &[
            "-f", "rawvideo", "-s", &size, "-pix_fmt", "yuv420p", "-r", "25", "-i", "in.yuv", "raw.y4m",
        ],
    )
    .success();
    assert_eq!(Y4m::read(&dir.path().join("raw.y4m")).frames, input.frames);
}

#[test]
fn errors_name_the_flag_as_typed() {
    let dir = tempdir();
    let run = filter(dir.path(), &["-i", "in.mkv", "-frames:v", "many", "out.mkv"]);
    usage_error(&run, "'-frames:v <N>'");
    assert!(!run.stderr.contains("--frames"), "{}", run.stderr);
    usage_error(&filter(dir.path(), &["-i", "in.mkv", "out.mkv", "-f"]), "'-f <FORMAT>'");
    usage_error(
        &filter(dir.path(), &["-i", "in.mkv", "-stream_loop", "twice", "out.mkv"]),
        "-stream_loop `twice`: use N",
    );
    usage_error(
        &filter(dir.path(), &["-i", "in.mkv", "-video_size", "64x32", "out.mkv"]),
        "-video_size applies to the input only",
    );
    // A run of flags hears about flags, not about the config's places.
    let run = filter(dir.path(), &["-i", "in.mkv", "--streams", "99", "out.mkv"]);
    usage_error(&run, "--streams: 99 is out of range");
    assert!(!run.stderr.contains("filter.streams"), "{}", run.stderr);
    usage_error(
        &filter(dir.path(), &["-f", "rawvideo", "-i", "in.yuv", "out.y4m"]),
        "--size: raw video has no header to tell its picture size",
    );
    usage_error(
        &filter(dir.path(), &["-i", "in.mkv", "-o", "a.mkv", "b.mkv"]),
        "cannot be used with",
    );
}

#[test]
fn ffmpeg_time_syntax_and_a_positional_output() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 50);
    let input = Y4m::read(&dir.path().join("in.y4m"));
    filter(dir.path(), &["-i", "in.y4m", "-ss", "1s", "-t", "400ms", "part.y4m"]).success();
    assert_eq!(Y4m::read(&dir.path().join("part.y4m")).frames, input.frames[25..35]);
    filter(
        dir.path(),
        &["-i", "in.y4m", "--ss", "00:00:01.2", "-t", "0:00.12", "clock.y4m"],
    )
    .success();
    assert_eq!(Y4m::read(&dir.path().join("clock.y4m")).frames, input.frames[30..33]);
    usage_error(
        &filter(dir.path(), &["-i", "in.y4m", "--ss", "-1.5", "neg.y4m"]),
        "is before the input's start",
    );
    usage_error(&filter(dir.path(), &["-i", "in.y4m", "-t", "1min", "bad.y4m"]), "500ms");
}

#[test]
fn loop_and_realtime_from_the_command_line() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 10);
    let input = Y4m::read(&dir.path().join("in.y4m"));
    filter(dir.path(), &["-i", "in.y4m", "--loop", "--frames", "25", "looped.y4m"]).success();
    let looped = Y4m::read(&dir.path().join("looped.y4m"));
    assert_eq!(looped.frames.len(), 25);
    assert_eq!(looped.frames[20..], input.frames[..5], "the third pass starts over");
    filter(
        dir.path(),
        &["-stream_loop", "-1", "-i", "in.y4m", "-frames:v", "15", "again.y4m"],
    )
    .success();
    assert_eq!(Y4m::read(&dir.path().join("again.y4m")).frames.len(), 15);

    // -re: 10 frames at 25 fps take at least 0.36 s (the first is sent at once).
    let started = Instant::now();
    filter(dir.path(), &["-re", "-i", "in.y4m", "paced.y4m"]).success();
    let paced = started.elapsed();
    assert!(
        paced >= Duration::from_millis(360),
        "paced at the frame rate: {paced:?}"
    );
}

#[test]
fn a_udp_url_is_written_as_mpegts() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 10);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let url = format!("udp://{}", socket.local_addr().unwrap());
    filter(dir.path(), &["-i", "in.y4m", "-o", &url]).success();
    let mut datagram = [0u8; 2048];
    let (length, _) = socket.recv_from(&mut datagram).expect("a datagram arrives");
    // The stream starts with a TS packet, and its 188-byte packets follow one another.
    assert!(length > 2 * 188, "{length} bytes");
    assert!(
        datagram[..length].chunks_exact(188).all(|packet| packet[0] == 0x47),
        "MPEG-TS sync bytes every 188 bytes"
    );
}

/// The types of the top-level boxes of an MP4 file, in order.
fn top_level_boxes(bytes: &[u8]) -> Vec<String> {
    let mut boxes = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let size = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        boxes.push(String::from_utf8_lossy(&bytes[at + 4..at + 8]).to_string());
        let size = match size {
            1 => u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize,
            0 => bytes.len() - at,
            size => size,
        };
        at += size.max(8);
    }
    boxes
}

#[test]
fn movflags_reach_the_muxer_and_an_mp4_to_a_pipe_is_fragmented() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 10);
    let position = |boxes: &[String], name: &str| boxes.iter().position(|b| b == name);
    filter(dir.path(), &["-i", "in.y4m", "plain.mp4"]).success();
    let plain = top_level_boxes(&std::fs::read(dir.path().join("plain.mp4")).unwrap());
    assert!(position(&plain, "mdat") < position(&plain, "moov"), "{plain:?}");
    filter(dir.path(), &["-i", "in.y4m", "-movflags", "+faststart", "fast.mp4"]).success();
    let fast = top_level_boxes(&std::fs::read(dir.path().join("fast.mp4")).unwrap());
    assert!(position(&fast, "moov") < position(&fast, "mdat"), "faststart: {fast:?}");

    // stdout a pipe: FFmpeg's mp4 muxer needs fragments there, which are set without asking.
    let output = convstream()
        .args([
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "in.y4m",
            "-o",
            "-",
            "--format",
            "mp4",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let run = common::Run::from(output);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let boxes = top_level_boxes(&run.stdout);
    assert!(boxes.contains(&"moof".to_string()), "fragmented: {boxes:?}");
    std::fs::write(dir.path().join("piped.mp4"), &run.stdout).unwrap();
    assert_eq!(video_pts(&dir.path().join("piped.mp4")).len(), 10, "every frame plays");

    // What cannot work says so, with the fix.
    let output = convstream()
        .args([
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "in.y4m",
            "-o",
            "-",
            "-f",
            "mp4",
        ])
        .args(["-movflags", "+faststart"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    usage_error(&common::Run::from(output), "needs an output that can seek back");
    usage_error(
        &filter(
            dir.path(),
            &["-i", "in.y4m", "--muxer-opt", "no_such_option=1", "x.mp4"],
        ),
        "the mp4 muxer has no option `no_such_option`",
    );
    assert!(!dir.path().join("x.mp4").exists(), "nothing is left at the output");
}

#[test]
fn webm_gets_vp9_without_asking() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 5);
    filter(dir.path(), &["-i", "in.y4m", "out.webm"]).success();
    let out = dir.path().join("out.webm");
    assert_eq!(video_stream(&out)["codec_name"], "vp9");
    assert_eq!(video_pts(&out).len(), 5);
}

#[test]
fn exit_codes_for_option_values_and_empty_outputs() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 25);
    usage_error(
        &filter(dir.path(), &["-i", "in.y4m", "--preset", "turbo", "a.mp4"]),
        "--preset: `turbo` is a value the libx264 encoder refuses",
    );
    usage_error(
        &filter(dir.path(), &["-i", "in.y4m", "--crf", "70", "b.mp4"]),
        "--crf: 70 is out of range for libx264; allowed 0..=51",
    );
    usage_error(
        &filter(
            dir.path(),
            &["-i", "in.y4m", "-c:v", "libvpx-vp9", "--crf", "64", "c.webm"],
        ),
        "allowed 0..=63",
    );
    filter(
        dir.path(),
        &["-i", "in.y4m", "-c:v", "libvpx-vp9", "--crf", "60", "d.webm"],
    )
    .success();

    // --ss past the end: nothing written is an error, unless asked for.
    let run = filter(dir.path(), &["-i", "in.y4m", "--ss", "10", "empty.mkv"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("no frame was written to empty.mkv"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--allow-empty"), "{}", run.stderr);
    filter(
        dir.path(),
        &["-i", "in.y4m", "--ss", "10", "--allow-empty", "-y", "empty.mkv"],
    )
    .success();
}

/// The first video frame's time, as ffprobe prints it.
fn first_pts(path: &Path) -> f64 {
    video_pts(path)[0].parse().expect("a time")
}

#[test]
fn output_timestamps_start_at_zero_as_ffmpegs_do() {
    let dir = tempdir();
    // MPEG-TS starts its clock at 1.4 s.
    let video_only = dir.path().join("video.ts");
    common::ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=96x64:rate=25",
            "-frames:v",
            "25",
            "-c:v",
            "mpeg2video",
            "video.ts",
        ],
    );
    assert!(first_pts(&video_only) > 1.0, "the input starts late");
    filter(dir.path(), &["-i", "video.ts", "ours.mkv"]).success();
    common::ffmpeg(dir.path(), &["-i", "video.ts", "theirs.mkv"]);
    let (ours, theirs) = (dir.path().join("ours.mkv"), dir.path().join("theirs.mkv"));
    assert_eq!(video_pts(&ours)[0], video_pts(&theirs)[0], "as ffmpeg -i in.ts out.mkv");
    assert_eq!(first_pts(&ours), 0.0);

    // With audio starting a little before the video: both start within a frame of 0.
    make_clip(dir.path(), "av.ts", Clip::H264Ts, W, H, 25);
    filter(dir.path(), &["-i", "av.ts", "ours-av.mkv"]).success();
    common::ffmpeg(dir.path(), &["-i", "av.ts", "theirs-av.mkv"]);
    let ours = first_pts(&dir.path().join("ours-av.mkv"));
    let theirs = first_pts(&dir.path().join("theirs-av.mkv"));
    assert!(ours < 0.04 && theirs < 0.04, "ours {ours}, ffmpeg's {theirs}");

    // --copyts keeps the input's clock, as ffmpeg -copyts does.
    filter(dir.path(), &["-i", "video.ts", "--copyts", "kept.mkv"]).success();
    common::ffmpeg(dir.path(), &["-copyts", "-i", "video.ts", "theirs-kept.mkv"]);
    let kept = first_pts(&dir.path().join("kept.mkv"));
    assert!(
        (kept - first_pts(&dir.path().join("theirs-kept.mkv"))).abs() < 0.002,
        "{kept}"
    );
}

#[test]
fn json_logs_stay_json_with_an_encoder_that_prints_itself() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, W, H, 5);
    let run = filter(
        dir.path(),
        &["-i", "in.y4m", "-c:v", "libx265", "--log-format", "json", "out.mkv"],
    )
    .success();
    let events: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{}", run.stderr)))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["target"] == "x265" && e["fields"]["message"].as_str().is_some_and(|m| m.contains("HEVC"))),
        "x265's own lines are events of target x265:\n{}",
        run.stderr
    );
    // An error line at the end is JSON too.
    let run = filter(
        dir.path(),
        &["-i", "in.y4m", "--log-format", "json", "--ss", "10", "empty.mkv"],
    );
    assert_eq!(run.code, Some(1));
    let last = run.stderr.lines().last().expect("an error line");
    let event: serde_json::Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {last}"));
    assert_eq!(event["level"], "ERROR", "{event}");
}

#[test]
fn check_reports_every_problem_at_once_and_warns_of_missing_inputs() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("c.toml"),
        r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "not-there.mp4"
threads = "many"
[pipeline.filter]
streams = 99
[pipeline.sink]
url = "out.mkv"

[[pipeline]]
name = "cam2"
[pipeline.source]
url = 5
[pipeline.sink]
url = "out.mkv"
"#,
    )
    .unwrap();
    let run = run_in(dir.path(), &["check", "--config", "c.toml"]);
    for wanted in [
        "warning: pipeline \"cam1\": source.url: `not-there.mp4` does not exist",
        "pipeline \"cam1\": source.threads: invalid type",
        "pipeline \"cam1\": filter.streams: 99 is out of range",
        "pipeline \"cam2\": source.url: invalid type",
        // cam2 is checked though its url is broken: it writes cam1's file.
        "pipeline \"cam2\": sink.url `out.mkv` is the file pipeline \"cam1\" writes",
    ] {
        usage_error(&run, wanted);
    }
    std::fs::write(
        dir.path().join("ok.toml"),
        "[[pipeline]]\nname = \"a\"\nsource = { url = \"gone.mp4\" }\nsink = { url = \"null\" }\n",
    )
    .unwrap();
    let run = run_in(dir.path(), &["check", "--config", "ok.toml"]).success();
    assert!(
        run.stderr
            .contains("warning: pipeline \"a\": source.url: `gone.mp4` does not exist"),
        "{}",
        run.stderr
    );
}

//! Outputs never destroy data, on real video made here with the `ffmpeg` CLI: an output that
//! is an input (by any name) or another pipeline's output is refused before anything opens;
//! an existing file is replaced only with consent; a failed start leaves no trace; SIGHUP
//! does not end a run; streamable outputs survive SIGKILL up to about a second; a stop
//! ends a run whose output blocks; colour survives palette input.
//!
//! One test file at some length (about 500 lines): what happens to files, one promise after
//! another, with shared clips.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{convstream, make_clip, readable_frames, run_in, video_pts, Clip};
use convstream_testkit::tempdir;

/// `convstream run --device cpu --no-progress ARGS` in `dir`.
fn run(dir: &Path, args: &[&str]) -> common::Run {
    let mut all = vec!["run", "--device", "cpu", "--no-progress"];
    all.extend_from_slice(args);
    let run = run_in(dir, &all);
    run.assert_no_panic();
    run
}

/// Every name in `dir`, sorted (to see that nothing was left behind).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

fn frames(path: &Path) -> usize {
    video_pts(path).len()
}

#[test]
fn an_output_that_is_an_input_is_refused_under_every_name() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "v.ts", Clip::Mpeg2Ts, 64, 48, 10);
    let before = std::fs::read(&input).unwrap();
    std::os::unix::fs::symlink("v.ts", dir.path().join("link.ts")).unwrap();
    std::fs::hard_link(&input, dir.path().join("hard.ts")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let absolute = input.display().to_string();
    for output in ["v.ts", "./v.ts", "link.ts", "hard.ts", absolute.as_str(), "sub/../v.ts"] {
        let refused = run(dir.path(), &["-i", "v.ts", "-o", output, "-y"]);
        assert_eq!(refused.code, Some(2), "-o {output}:\n{}", refused.stderr);
        assert!(
            refused.stderr.contains("is the same file as its input"),
            "-o {output}:\n{}",
            refused.stderr
        );
        assert!(
            std::fs::read(&input).unwrap() == before,
            "-o {output} changed the input"
        );
    }
    // stdin redirected from the file it would write.
    let refused = convstream()
        .args(["run", "--device", "cpu", "-i", "-", "-o", "v.ts", "-y"])
        .current_dir(dir.path())
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(std::fs::read(&input).unwrap() == before);
}

#[test]
fn check_and_run_refuse_two_pipelines_on_one_file_and_an_output_that_is_another_input() {
    let dir = tempdir();
    make_clip(dir.path(), "a.y4m", Clip::Y4m, 32, 32, 3);
    make_clip(dir.path(), "b.y4m", Clip::Y4m, 32, 32, 3);
    let config = r#"
[[pipeline]]
name = "one"
source = { url = "a.y4m" }
filter = { device = "cpu" }
sink = { url = "out.y4m" }

[[pipeline]]
name = "two"
source = { url = "b.y4m" }
filter = { device = "cpu" }
sink = { url = "./out.y4m" }

[[pipeline]]
name = "three"
source = { url = "b.y4m" }
filter = { device = "cpu" }
sink = { url = "a.y4m" }
"#;
    std::fs::write(dir.path().join("c.toml"), config).unwrap();
    let before = listing(dir.path());
    let a = std::fs::read(dir.path().join("a.y4m")).unwrap();
    for command in [
        &["check", "--config", "c.toml"][..],
        &["run", "--config", "c.toml", "-y"],
    ] {
        let refused = run_in(dir.path(), command);
        refused.assert_no_panic();
        assert_eq!(refused.code, Some(2), "{command:?}:\n{}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("pipeline \"two\": sink.url `./out.y4m` is the file pipeline \"one\" writes"),
            "{}",
            refused.stderr
        );
        assert!(
            refused
                .stderr
                .contains("pipeline \"three\": sink.url `a.y4m` is the same file as the input of pipeline \"one\""),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(listing(dir.path()), before, "nothing was created");
    assert!(std::fs::read(dir.path().join("a.y4m")).unwrap() == a);
}

#[test]
fn an_existing_output_is_replaced_only_with_consent() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 48, 32, 4);
    std::fs::write(dir.path().join("out.mkv"), b"precious").unwrap();
    let refused = run(dir.path(), &["-i", "in.y4m", "-o", "out.mkv"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("`out.mkv` exists"), "{}", refused.stderr);
    assert!(refused.stderr.contains("-y / --overwrite"), "{}", refused.stderr);
    assert_eq!(std::fs::read(dir.path().join("out.mkv")).unwrap(), b"precious");
    assert_eq!(listing(dir.path()), ["in.y4m", "out.mkv"], "nothing else was created");

    // A config without `overwrite` is refused the same way; with it, it replaces.
    let config = |overwrite: bool| {
        format!(
            "[[pipeline]]\nname = \"p\"\nsource = {{ url = \"in.y4m\" }}\nfilter = {{ device = \"cpu\" }}\nsink = {{ url = \"out.mkv\", overwrite = {overwrite} }}\n"
        )
    };
    std::fs::write(dir.path().join("c.toml"), config(false)).unwrap();
    let refused = run_in(dir.path(), &["run", "--config", "c.toml"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert_eq!(std::fs::read(dir.path().join("out.mkv")).unwrap(), b"precious");
    std::fs::write(dir.path().join("c.toml"), config(true)).unwrap();
    run_in(dir.path(), &["run", "--config", "c.toml", "--no-progress"]).success();
    assert_eq!(frames(&dir.path().join("out.mkv")), 4);

    // -y and --overwrite replace it.
    for flag in ["-y", "--overwrite"] {
        std::fs::write(dir.path().join("out.mkv"), b"precious").unwrap();
        run(dir.path(), &["-i", "in.y4m", "-o", "out.mkv", flag]).success();
        assert_eq!(frames(&dir.path().join("out.mkv")), 4, "{flag}");
    }
    assert_eq!(
        listing(dir.path()),
        ["c.toml", "in.y4m", "out.mkv"],
        "no file left behind"
    );
}

#[test]
fn a_failed_start_leaves_an_existing_file_identical_and_creates_nothing() {
    let dir = tempdir();
    // 4:2:0 at an odd size: libx264 cannot open for it.
    make_clip(dir.path(), "odd.y4m", Clip::Y4m, 161, 121, 3);
    std::fs::write(dir.path().join("kept.mp4"), b"an earlier recording").unwrap();
    let failed = run(
        dir.path(),
        &["-i", "odd.y4m", "-o", "kept.mp4", "-y", "--codec", "libx264"],
    );
    assert_eq!(failed.code, Some(2), "a usage error: {}", failed.stderr);
    assert!(failed.stderr.contains("libx264"), "{}", failed.stderr);
    assert!(
        failed.stderr.contains("need an even width and height") && failed.stderr.contains("--codec ffv1"),
        "the message names the constraint and the fix:\n{}",
        failed.stderr
    );
    assert_eq!(
        std::fs::read(dir.path().join("kept.mp4")).unwrap(),
        b"an earlier recording"
    );
    let failed = run(dir.path(), &["-i", "odd.y4m", "-o", "new.mp4", "--codec", "libx264"]);
    assert_eq!(failed.code, Some(2), "a usage error: {}", failed.stderr);
    assert_eq!(
        listing(dir.path()),
        ["kept.mp4", "odd.y4m"],
        "no empty or temporary file"
    );
}

#[test]
fn check_catches_containers_and_codecs_that_do_not_fit() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 32, 32, 2);
    let pipeline = |name: &str, sink: &str| {
        format!("[[pipeline]]\nname = \"{name}\"\nsource = {{ url = \"in.y4m\" }}\nfilter = {{ device = \"cpu\" }}\nsink = {sink}\n")
    };
    let config = [
        pipeline("ts", r#"{ url = "x.ts", lossless = true }"#),
        pipeline("ext", r#"{ url = "x.foo" }"#),
        pipeline("codec", r#"{ url = "x.mkv", codec = "nosuchcodec" }"#),
        pipeline("mpeg4", r#"{ url = "y.mkv", codec = "mpeg4", lossless = true }"#),
        pipeline("ffv1ts", r#"{ url = "y.ts", codec = "ffv1" }"#),
        pipeline("muxer", r#"{ url = "z.out", format = "nosuchmuxer" }"#),
    ]
    .concat();
    std::fs::write(dir.path().join("c.toml"), config).unwrap();
    let refused = run_in(dir.path(), &["check", "--config", "c.toml"]);
    refused.assert_no_panic();
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    for expected in [
        "pipeline \"ts\": sink.lossless: lossless output uses ffv1, which the mpegts container cannot carry; write .mkv, .nut or .avi",
        "pipeline \"ext\": sink.url `x.foo`: cannot tell the container from the name",
        "pipeline \"codec\": sink.codec: `nosuchcodec` is not a video encoder",
        "pipeline \"mpeg4\": sink.lossless: the mpeg4 encoder has no lossless mode",
        "pipeline \"ffv1ts\": sink.codec: the mpegts container cannot carry ffv1 video",
        "pipeline \"muxer\": sink.format: `nosuchmuxer` is not an output format",
    ] {
        assert!(refused.stderr.contains(expected), "missing {expected:?} in:\n{}", refused.stderr);
    }
    // `run` refuses the same before opening anything.
    let refused = run(dir.path(), &["-i", "in.y4m", "-o", "x.ts", "--lossless"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert_eq!(listing(dir.path()), ["c.toml", "in.y4m"]);
}

#[test]
fn lossless_uses_the_lossless_mode_of_the_encoder_named() {
    let dir = tempdir();
    let input = make_clip(dir.path(), "in.ts", Clip::Mpeg2Ts, 64, 48, 8);
    let decoded = common::decode_raw(&input, "yuv420p");
    for (codec, output) in [("libx264", "x264.ts"), ("libx265", "x265.mkv")] {
        run(
            dir.path(),
            &[
                "-i",
                "in.ts",
                "-o",
                output,
                "--codec",
                codec,
                "--lossless",
                "--mask",
                "identity",
            ],
        )
        .success();
        assert!(
            common::decode_raw(&dir.path().join(output), "yuv420p") == decoded,
            "{codec} --lossless is bit-exact"
        );
    }
}

/// The summary of a lossless run says lossless and names no bitrate setting: FFV1 ignores
/// the 200 kb/s FFmpeg leaves in every encoder context, so `b=200k` there was false. The
/// bitrate actually written is still reported.
#[test]
fn the_summary_of_a_lossless_run_says_lossless_and_no_bitrate_setting() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 64, 48, 8);
    for (args, encoder) in [
        (
            &["-o", "ffv1.mkv"][..],
            "output: ffv1 (lossless), yuv420p in matroska, 64x48, ",
        ),
        (
            &["-o", "x264.mkv", "--codec", "libx264"],
            "output: libx264 (lossless, qp=0",
        ),
    ] {
        let mut all = vec!["-i", "in.y4m", "--lossless"];
        all.extend_from_slice(args);
        let done = run(dir.path(), &all).success();
        let summary = done
            .stderr
            .lines()
            .find(|line| line.contains(" frames in, "))
            .unwrap_or_else(|| panic!("no summary in:\n{}", done.stderr));
        assert!(summary.contains(encoder), "`{encoder}` in: {summary}");
        assert!(!summary.contains("b="), "no bitrate setting: {summary}");
        assert!(summary.ends_with(" kb/s"), "the bitrate written: {summary}");
    }
}

/// `--lossless` in every container that takes a lossless codec gives back the input's exact
/// samples through an identity mask (4:2:0, 4:4:4 and grey), and one that takes none is a
/// usage error that writes nothing.
#[test]
fn lossless_is_bit_exact_in_every_container_that_takes_it() {
    let dir = tempdir();
    for pix_fmt in ["yuv420p", "yuv444p", "gray"] {
        let input = common::make_clip_as(dir.path(), "in.mkv", Clip::Ffv1Mkv, 48, 32, 5, pix_fmt);
        let decoded = common::decode_raw(&input, pix_fmt);
        let mut outputs = vec![
            ("out.mkv", None),
            ("out.nut", None),
            ("out.avi", None),
            ("out.y4m", None),
            ("x264.mp4", Some("libx264")),
        ];
        if pix_fmt == "gray" {
            // YUV4MPEG2 writes grey as mono, libx264 has no grey mode: both change the samples' format.
            outputs.retain(|(name, _)| !name.ends_with(".y4m") && !name.starts_with("x264"));
        }
        for (output, codec) in outputs {
            let mut args = vec!["-y", "-i", "in.mkv", "-o", output, "--lossless", "--mask", "identity"];
            if let Some(codec) = codec {
                args.extend(["--codec", codec]);
            }
            run(dir.path(), &args).success();
            assert!(
                common::decode_raw(&dir.path().join(output), pix_fmt) == decoded,
                "{pix_fmt} through --lossless into {output} is bit-exact"
            );
        }
    }
    for refused_output in ["refused.mp4", "refused.mov"] {
        let refused = run(dir.path(), &["-i", "in.mkv", "-o", refused_output, "--lossless"]);
        assert_eq!(refused.code, Some(2), "{}", refused.stderr);
        assert!(
            refused.stderr.contains("write .mkv, .nut or .avi"),
            "{}",
            refused.stderr
        );
        assert!(!dir.path().join(refused_output).exists());
    }
}

#[test]
fn demo_runs_twice_into_its_own_folder() {
    let dir = tempdir();
    for _ in 0..2 {
        let run = run_in(dir.path(), &["demo", "--dir", "d", "--device", "cpu"]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
    }
    assert!(frames(&dir.path().join("d/filtered.mp4")) > 0);
}

/// Starts a paced run of `frames` frames of a 25 fps clip into `output` (extra flags after).
fn paced_run(dir: &Path, frames: u32, output: &str, extra: &[&str]) -> Child {
    make_clip(dir, "long.y4m", Clip::Y4m, 160, 120, frames);
    let config = format!(
        "[server]\nshutdown_timeout = 2.0\n[[pipeline]]\nname = \"live\"\nsource = {{ url = \"long.y4m\", realtime = true }}\nfilter = {{ mask = \"box\", device = \"cpu\" }}\nsink = {{ url = \"{output}\" }}\n"
    );
    std::fs::write(dir.join("live.toml"), config).unwrap();
    convstream()
        .args(["run", "--config", "live.toml", "--no-progress"])
        .args(extra)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn kill(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sighup_is_logged_and_ignored_by_run() {
    let dir = tempdir();
    let child = paced_run(dir.path(), 40, "out.mkv", &[]);
    std::thread::sleep(Duration::from_millis(800));
    kill(&child, "-HUP");
    let run = common::Run::from(child.wait_with_output().unwrap());
    run.assert_no_panic();
    assert_eq!(run.code, Some(0), "SIGHUP does not end a run:\n{}", run.stderr);
    assert!(run.stderr.contains("SIGHUP ignored"), "{}", run.stderr);
    assert_eq!(frames(&dir.path().join("out.mkv")), 40, "the whole input was written");
}

/// SIGKILL after `seconds` of a paced 25 fps run into `output`: every frame written up to
/// about a second before is in the file.
fn survives_sigkill(output: &str, extra: &[&str]) {
    let dir = tempdir();
    let child = paced_run(dir.path(), 250, output, extra);
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(3500));
    kill(&child, "-KILL");
    let _ = child.wait_with_output();
    let seconds = started.elapsed().as_secs_f64();
    let path = dir.path().join(output);
    let decoded = if output.ends_with(".y4m") {
        let bytes = std::fs::read(&path).unwrap();
        bytes.windows(6).filter(|w| w == b"FRAME\n").count()
    } else {
        readable_frames(&path)
    };
    // 25 fps from about the start; less a second for the flush interval and one for start-up
    // and the encoder's own delay.
    let expected = ((seconds - 2.0) * 25.0) as usize;
    eprintln!("{output}: {decoded} frames readable after SIGKILL at {seconds:.1} s (at least {expected} expected)");
    assert!(
        decoded >= expected,
        "{output}: {decoded} frames readable, expected at least {expected}"
    );
}

#[test]
fn streamable_outputs_survive_sigkill_up_to_a_second() {
    survives_sigkill("out.mkv", &["--lossless"]);
    survives_sigkill("out.mkv", &["--codec", "libx264"]);
    survives_sigkill("out.ts", &["--codec", "mpeg2video"]);
    survives_sigkill("out.nut", &["--lossless"]);
    survives_sigkill("out.y4m", &[]);
}

#[test]
fn sigterm_ends_a_run_whose_output_fifo_is_not_read() {
    let dir = tempdir();
    let fifo = dir.path().join("stuck.y4m");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // A reader that opens the FIFO and never reads: the writer blocks once the pipe is full.
    let mut reader = std::process::Command::new("sleep")
        .arg("60")
        .stdin(std::fs::File::options().read(true).custom_open_nonblocking(&fifo))
        .spawn()
        .unwrap();
    let child = paced_run(dir.path(), 500, "stuck.y4m", &[]);
    std::thread::sleep(Duration::from_millis(2500));
    let stopped_at = Instant::now();
    kill(&child, "-TERM");
    let run = common::Run::from(child.wait_with_output().unwrap());
    let took = stopped_at.elapsed();
    let _ = reader.kill();
    let _ = reader.wait();
    run.assert_no_panic();
    // shutdown_timeout = 2 s in the config.
    assert!(took < Duration::from_secs(3), "stopped after {took:?}:\n{}", run.stderr);
    assert_ne!(run.code, None, "exited by itself:\n{}", run.stderr);
}

/// Opening a FIFO for reading without waiting for its writer.
trait OpenNonBlocking {
    fn custom_open_nonblocking(&mut self, path: &Path) -> std::fs::File;
}

impl OpenNonBlocking for std::fs::OpenOptions {
    fn custom_open_nonblocking(&mut self, path: &Path) -> std::fs::File {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc_o_nonblock()).open(path).unwrap()
    }
}

const fn libc_o_nonblock() -> i32 {
    0o4000 // O_NONBLOCK on Linux
}

#[test]
fn palette_input_keeps_its_colour() {
    let dir = tempdir();
    // A paletted clip (pal8), as GIF-like sources decode.
    common::ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=25:duration=0.12",
            "-vf",
            "split[a][b];[a]palettegen[p];[b][p]paletteuse",
            "-c:v",
            "rawvideo",
            "-pix_fmt",
            "pal8",
            "pal.avi",
        ],
    );
    assert_eq!(common::video_stream(&dir.path().join("pal.avi"))["pix_fmt"], "pal8");
    let run = run(
        dir.path(),
        &[
            "-i", "pal.avi", "-o", "out.nut", "--codec", "rawvideo", "--mask", "identity",
        ],
    )
    .success();
    assert!(run.stderr.contains("converted to rgb24"), "{}", run.stderr);
    let input = common::decode_raw(&dir.path().join("pal.avi"), "rgb24");
    let output = common::decode_raw(&dir.path().join("out.nut"), "rgb24");
    assert!(!input.is_empty());
    assert!(output == input, "identity on a palette keeps every colour exactly");
}

#[test]
fn sigterm_ends_a_run_waiting_for_a_fifo_reader() {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 64, 48, 5);
    let fifo = dir.path().join("nobody.y4m");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let child = convstream()
        .args([
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "in.y4m",
            "-o",
            "nobody.y4m",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let stopped_at = Instant::now();
    kill(&child, "-TERM");
    let run = common::Run::from(child.wait_with_output().unwrap());
    let took = stopped_at.elapsed();
    run.assert_no_panic();
    assert!(took < Duration::from_secs(1), "stopped after {took:?}:\n{}", run.stderr);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("stopped while waiting for a reader of the FIFO"),
        "{}",
        run.stderr
    );
}

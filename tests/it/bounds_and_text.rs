//! Bounds a run keeps and text it shows: `duration` ends a looped input in every spelling
//! (`-t`, `-stream_loop -1 -t`, the config, the API); realtime pacing follows a slow
//! stream's own frame interval; URL credentials (userinfo, secret query values, RTMP
//! stream keys) are hidden wherever a URL is shown; untrusted text (a hostname, a broken
//! config) reaches logs and the terminal with its control characters escaped; and the
//! small exit-code promises (2 for usage) of `serve --listen`, `--decoder` and muxer
//! options, with `serve` running a config without pipelines as an API-only server. CPU
//! engine: no GPU needed.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::server::Server;
use common::{make_clip, Clip, Run};

/// `convstream ARGS` in `dir`, killed (and the test failed) if it runs past `limit`: a
/// run that never ends fails here instead of holding CI.
fn run_within(dir: &Path, args: &[&str], limit: Duration) -> Run {
    run_within_env(dir, args, &[], limit)
}

/// [`run_within`] with `env` added to the environment.
fn run_within_env(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Run {
    let mut child = common::convstream()
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("run.log")).unwrap())
        .spawn()
        .expect("convstream starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`convstream {}` ran past {limit:?}:\n{}",
                args.join(" "),
                std::fs::read_to_string(dir.join("run.log")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        code: status.code(),
        stdout: Vec::new(),
        stderr: std::fs::read_to_string(dir.join("run.log")).unwrap_or_default(),
    }
}

/// Frames the run whose `--stats-json` is `stats.json` in `dir` sent to its sink.
fn frames_out(dir: &Path) -> u64 {
    common::stats(&dir.join("stats.json"))["frames_out"]
        .as_u64()
        .expect("frames_out is a count")
}

#[test]
fn duration_bounds_a_looped_input_in_every_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // 1 s at 25 fps: 3 s of a looped run are 75 frames, over three passes.
    make_clip(root, "v.y4m", Clip::Y4m, 64, 48, 25);
    let limit = Duration::from_secs(60);
    let common_args = ["--device", "cpu", "--no-progress", "--stats-json", "stats.json", "-y"];
    for (spelling, args) in [
        (
            "--loop -t 3",
            vec!["run", "-i", "v.y4m", "--loop", "-t", "3", "-o", "x.y4m"],
        ),
        (
            "-stream_loop -1 -t 3",
            vec!["run", "-stream_loop", "-1", "-i", "v.y4m", "-t", "3", "-o", "x.y4m"],
        ),
        (
            "-t 1.5 --loop (a pass cut short)",
            vec!["run", "-i", "v.y4m", "--loop", "-t", "1.5", "-o", "x.y4m"],
        ),
    ] {
        let mut all = args.clone();
        all.extend(common_args);
        run_within(root, &all, limit).success();
        let expected = if spelling.contains("1.5") { 38 } else { 75 };
        let sent = frames_out(root);
        assert!(
            sent.abs_diff(expected) <= 1,
            "{spelling}: {sent} frames, not {expected}"
        );
        assert_eq!(common::readable_frames(&root.join("x.y4m")) as u64, sent, "{spelling}");
    }
    // --frames still bounds a loop, and the lesser of the two ends it.
    let run = [
        "run", "-i", "v.y4m", "--loop", "--frames", "40", "-t", "3", "-o", "x.y4m",
    ];
    run_within(root, &[&run[..], &common_args[..]].concat(), limit).success();
    assert_eq!(frames_out(root), 40, "--frames 40 with -t 3");

    // The config's `loop` and `duration`.
    std::fs::write(
        root.join("loop.toml"),
        "[[pipeline]]\nname = \"looped\"\n[pipeline.source]\nurl = \"v.y4m\"\nloop = true\nduration = 3.0\n\
         [pipeline.filter]\ndevice = \"cpu\"\n[pipeline.sink]\nurl = \"null\"\n",
    )
    .unwrap();
    let args = [
        "run",
        "--config",
        "loop.toml",
        "--no-progress",
        "--stats-json",
        "stats.json",
        "-y",
    ];
    run_within(root, &args, limit).success();
    assert!(
        frames_out(root).abs_diff(75) <= 1,
        "config: {} frames",
        frames_out(root)
    );
}

#[test]
fn an_api_pipeline_with_loop_and_duration_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("media")).unwrap();
    make_clip(root, "media/v.y4m", Clip::Y4m, 64, 48, 25);
    std::fs::write(
        root.join("config.toml"),
        format!("[server]\nallow_paths = [\"{}\"]\n", root.join("media").display()),
    )
    .unwrap();
    let serve = Server::start(root, &[]);
    let body = format!(
        r#"{{"name": "looped", "source": {{"url": "{}", "loop": true, "duration": 2.0}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "null"}}}}"#,
        root.join("media/v.y4m").display()
    );
    let (status, answer) = serve.json("POST", "/pipelines", &body);
    assert_eq!(status, 201, "{answer}");
    serve.wait_for("the looped pipeline to finish", Duration::from_secs(60), || {
        serve.pipeline("looped")["state"] == "finished"
    });
    let sent = serve.counter("looped", "frames_written");
    assert!(sent.abs_diff(50) <= 1, "{sent} frames, not 50");
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn realtime_pacing_keeps_the_pace_of_a_slow_stream() {
    // Two frames 4 s apart (0.25 fps): paced, the second leaves 4 s after the first. A gap
    // longer than 3 s used to count as a timestamp jump, and nothing was paced.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    common::ffmpeg(
        root,
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=64x48:rate=0.25",
            "-frames:v",
            "2",
            "-pix_fmt",
            "yuv420p",
            "slow.y4m",
        ],
    );
    let started = Instant::now();
    let args = [
        "run",
        "-re",
        "-i",
        "slow.y4m",
        "--device",
        "cpu",
        "--no-progress",
        "-o",
        "null",
    ];
    run_within(root, &args, Duration::from_secs(60)).success();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(3500), "2 frames at 0.25 fps in {took:?}");
}

#[test]
fn secret_query_values_and_rtmp_stream_keys_are_shown_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("config.toml"),
        r#"
[[pipeline]]
name = "srtcam"
source = { url = "srt://127.0.0.1:9?mode=caller&passphrase=srt-pass-secret&streamid=#!::r=live/sid-secret", reconnect = { initial = 0.1, max = 0.2 } }
filter = { device = "cpu" }
sink = { url = "null" }
"#,
    )
    .unwrap();
    let serve = Server::start(root, &[]);
    let body = r#"{"name": "api", "source": {"url": "rtmp://127.0.0.1:9/live/in-key-secret?token=tok-secret"}, "filter": {"device": "cpu"}, "sink": {"url": "rtmp://127.0.0.1:9/app/out-key-secret", "format": "flv"}}"#;
    let (status, posted) = serve.json("POST", "/pipelines", body);
    assert_eq!(status, 201, "{posted}");
    serve.wait_for("both inputs to fail and be logged", Duration::from_secs(30), || {
        let log = serve.log_text();
        log.contains("cannot open input rtmp://") && log.contains("cannot open input srt://")
    });
    let (_, listed) = serve.request("GET", "/pipelines", None);
    let (_, console) = serve.request("GET", "/console/status", None);
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
    let secrets = [
        "srt-pass-secret",
        "sid-secret",
        "in-key-secret",
        "tok-secret",
        "out-key-secret",
    ];
    for secret in secrets {
        for (what, text) in [
            ("the POST answer", &posted),
            ("GET /pipelines", &listed),
            ("/console/status", &console),
            ("the log", &log),
        ] {
            assert!(!text.contains(secret), "{what} shows {secret:?}:\n{text}");
        }
    }
    assert!(
        listed.contains("rtmp://127.0.0.1:9/live/***?token=***") && listed.contains("passphrase=***"),
        "the URLs are shown without their secrets: {listed}"
    );

    // `run`'s error line and log.
    std::fs::write(
        root.join("run.toml"),
        "[[pipeline]]\nname = \"r\"\nsource = { url = \"rtmp://127.0.0.1:9/live/run-key-secret?auth=run-auth-secret\", live = false }\n\
         filter = { device = \"cpu\" }\nsink = { url = \"null\" }\n",
    )
    .unwrap();
    let run = run_within(root, &["run", "--config", "run.toml"], Duration::from_secs(60));
    assert_ne!(run.code, Some(0));
    run.assert_no_panic();
    assert!(run.stderr.contains("127.0.0.1:9/live/***"), "{}", run.stderr);
    for secret in ["run-key-secret", "run-auth-secret"] {
        assert!(!run.stderr.contains(secret), "{}", run.stderr);
    }
}

/// Asserts that `text` holds no raw control character but line breaks, and no line that
/// starts with `forged`.
fn assert_escaped(what: &str, text: &str, forged: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what} holds a raw control character:\n{text:?}"
    );
    assert!(
        !text.lines().any(|line| line.starts_with(forged)),
        "{what} holds a forged line:\n{text}"
    );
}

#[test]
fn untrusted_text_reaches_logs_and_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A hostname that would write a line of its own into the log.
    std::fs::write(
        root.join("sharded.toml"),
        "[server]\nshard = \"auto\"\nlisten = \"127.0.0.1:0\"\n[[pipeline]]\nname = \"cam\"\n\
         source = { url = \"udp://127.0.0.1:9\" }\nfilter = { device = \"cpu\" }\nsink = { url = \"null\" }\n",
    )
    .unwrap();
    let env = [
        (
            "HOSTNAME",
            "x\n12:00:00.000 ERROR FAKE all pipelines deleted\u{1b}[2J-0",
        ),
        ("CONVSTREAM_SHARDS", "1"),
    ];
    let serve = run_within_env(
        root,
        &["serve", "--config", "sharded.toml"],
        &env,
        Duration::from_secs(30),
    );
    assert_eq!(serve.code, Some(2), "{}", serve.stderr);
    serve.assert_no_panic();
    assert!(serve.stderr.contains("is not a hostname"), "{}", serve.stderr);
    assert_escaped("serve's output", &serve.stderr, "12:00:00.000");

    // A config whose bytes hold ESC, NUL and CR: TOML's error quotes the line.
    std::fs::write(root.join("bad.toml"), "[[pipeline]]\nname = \"a\u{1b}[2J\u{0}\rb\"\n").unwrap();
    for command in ["check", "run"] {
        let run = run_within(root, &[command, "--config", "bad.toml"], Duration::from_secs(30));
        assert_eq!(run.code, Some(2), "{command}: {}", run.stderr);
        assert!(
            run.stderr.contains("\\u{1b}[2J"),
            "{command} shows the escape escaped: {}",
            run.stderr
        );
        assert_escaped(command, &run.stderr, "b\"");
    }
}

#[test]
fn usage_mistakes_exit_2_and_serve_runs_a_config_without_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.y4m", Clip::Y4m, 64, 48, 5);
    let limit = Duration::from_secs(60);
    let cpu = ["--device", "cpu", "--no-progress"];
    for (what, args, output) in [
        (
            "a decoder this build lacks",
            vec!["run", "-i", "v.y4m", "--decoder", "nosuch", "-o", "a.mkv"],
            "a.mkv",
        ),
        (
            "a muxer option's bad value",
            vec!["run", "-i", "v.y4m", "-movflags", "+bogus", "-o", "b.mp4"],
            "b.mp4",
        ),
    ] {
        let run = run_within(root, &[&args[..], &cpu[..]].concat(), limit);
        assert_eq!(run.code, Some(2), "{what}: {}", run.stderr);
        run.assert_no_panic();
        assert!(!root.join(output).exists(), "{what}: {output} was written");
    }
    std::fs::write(root.join("config.toml"), "[server]\n").unwrap();
    let port = common::server::free_tcp_port().to_string();
    let named = run_within(
        root,
        &[
            "serve",
            "--config",
            "config.toml",
            "--listen",
            &format!("localhost:{port}"),
        ],
        limit,
    );
    assert_eq!(named.code, Some(2), "{}", named.stderr);
    assert!(
        named.stderr.contains("127.0.0.1:8686"),
        "the fix is named: {}",
        named.stderr
    );

    // No [[pipeline]]: an API-only server, not a refused config.
    let serve = Server::start(root, &[]);
    assert_eq!(serve.names(), Vec::<String>::new());
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
    let check = run_within(root, &["check", "--config", "config.toml"], limit);
    assert_eq!(check.code, Some(0), "{}", check.stderr);
}

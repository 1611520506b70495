//! Stops that must stop, and starts that must not hang: a FIFO input with no writer or a
//! silent one (SIGTERM for `run`, `DELETE` and SIGTERM for `serve`), a config file that is a
//! FIFO, a device or too large (`check` refuses it at once), and POST/DELETE racing on one
//! name (no pipeline runs that the API does not list). CPU engine: no GPU needed.

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::server::Server;
use common::{convstream, make_clip, Clip};

/// A process holding `fifo` open for writing and never writing (until killed).
fn silent_writer(fifo: &Path) -> Child {
    Command::new("sh")
        .args(["-c", "exec sleep 60 3>\"$0\"", &fifo.display().to_string()])
        .spawn()
        .unwrap()
}

/// Sends SIGTERM to `child` after `after`, and returns how long it took to exit then, its
/// exit code and its stderr; fails if it outlives `limit`.
fn terminate_after(mut child: Child, after: Duration, limit: Duration) -> (Duration, Option<i32>, String) {
    std::thread::sleep(after);
    assert!(
        child.try_wait().unwrap().is_none(),
        "still waiting for its input when signalled"
    );
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let signalled = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            return (signalled.elapsed(), status.code(), stderr);
        }
        if signalled.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "still running {limit:?} after SIGTERM:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_from(dir: &Path, input: &str) -> Child {
    common::spawn_in(dir, &["run", "-i", input, "-o", "out.y4m", "--device", "cpu"])
}

#[test]
fn sigterm_ends_a_run_whose_input_fifo_has_no_writer_or_a_silent_one() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.y4m");
    common::mkfifo(&fifo);
    // No writer at all: FFmpeg's open() of the FIFO used to block here. A stop before the
    // input opened is the user's, not a failure: no error, and it says so; the exit code
    // says a signal ended the run (143), as a shell expects.
    let (took, code, stderr) = terminate_after(
        run_from(dir.path(), "in.y4m"),
        Duration::from_secs(1),
        Duration::from_secs(5),
    );
    assert!(took < Duration::from_secs(3), "ended {took:?} after SIGTERM:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains("stopped while opening its input; nothing was written") && !stderr.contains("error"),
        "{stderr}"
    );
    // A writer that never writes: the read used to block.
    let mut writer = silent_writer(&fifo);
    let (took, code, stderr) = terminate_after(
        run_from(dir.path(), "in.y4m"),
        Duration::from_secs(1),
        Duration::from_secs(5),
    );
    let _ = writer.kill();
    let _ = writer.wait();
    assert!(took < Duration::from_secs(3), "ended {took:?} after SIGTERM:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(143), "{stderr}");
    assert!(!dir.path().join("out.y4m").exists(), "nothing was written");
    // A FIFO that does carry a video still works, read through the same reader.
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 10);
    let mut feeder = Command::new("sh")
        .args(["-c", "cat clip.y4m > in.y4m"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let run = common::run_in(dir.path(), &["run", "-i", "in.y4m", "-o", "fed.y4m", "--device", "cpu"]).success();
    let _ = feeder.wait();
    assert_eq!(
        common::readable_frames(&dir.path().join("fed.y4m")),
        10,
        "{}",
        run.stderr
    );
}

#[test]
fn check_refuses_a_config_that_is_a_fifo_a_device_or_too_large_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.toml");
    common::mkfifo(&fifo);
    let big = dir.path().join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    for (config, says) in [
        ("config.toml", "a FIFO"),
        ("/dev/zero", "a device"),
        ("big.toml", "at most 1024 KiB"),
        (".", "a folder"),
    ] {
        let started = Instant::now();
        let mut child = convstream()
            .args(["check", "--config", config])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("check --config {config} still ran after 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{config}: {stderr}");
        assert!(stderr.contains(says), "{config}: says {says:?}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{config}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn delete_and_sigterm_end_serve_pipelines_reading_a_fifo_without_data() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("media")).unwrap();
    common::mkfifo(&root.join("media/nowriter.y4m"));
    common::mkfifo(&root.join("media/silent.y4m"));
    let mut writer = silent_writer(&root.join("media/silent.y4m"));
    let config = r#"
[server]
allow_paths = ["media"]
shutdown_timeout = 4.0

[[pipeline]]
name = "file-silent"
source = { url = "media/silent.y4m" }
filter = { device = "cpu" }
sink = { url = "null" }
"#;
    std::fs::write(root.join("config.toml"), config).unwrap();
    let serve = Server::start(root, &[]);
    let body = r#"{"name": "api", "source": {"url": "media/nowriter.y4m"}, "filter": {"device": "cpu"}, "sink": {"url": "null"}}"#;
    let (status, answer) = serve.json("POST", "/pipelines", body);
    assert_eq!(status, 201, "{answer}");
    std::thread::sleep(Duration::from_secs(1));
    let started = Instant::now();
    let (status, answer) = serve.json("DELETE", "/pipelines/api", "");
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["threads_ended"], true, "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "DELETE took {:?}",
        started.elapsed()
    );
    let started = Instant::now();
    let (code, log) = serve.terminate_within(Duration::from_secs(10));
    let _ = writer.kill();
    let _ = writer.wait();
    assert_eq!(code, Some(0), "every pipeline stopped within shutdown_timeout:\n{log}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "SIGTERM took {:?}",
        started.elapsed()
    );
}

#[test]
fn racing_posts_and_deletes_on_one_name_leave_no_pipeline_the_api_does_not_list() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "clip.y4m", Clip::Y4m, 64, 48, 5);
    std::fs::write(
        root.join("config.toml"),
        "[[pipeline]]\nname = \"base\"\nsource = { url = \"clip.y4m\" }\nfilter = { device = \"cpu\" }\nsink = { url = \"null\" }\n",
    )
    .unwrap();
    let serve = Server::start(root, &[]);
    let port = common::server::free_udp_port();
    let body = format!(
        r#"{{"name": "race", "source": {{"url": "udp://127.0.0.1:{port}"}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "null"}}}}"#
    );
    let created = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..10 {
            scope.spawn(|| {
                for _ in 0..20 {
                    if serve.json("POST", "/pipelines", &body).0 == 201 {
                        created.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    let _ = serve.json("DELETE", "/pipelines/race", "");
                }
            });
        }
    });
    assert!(created.into_inner() > 0, "some POSTs won");
    let _ = serve.json("DELETE", "/pipelines/race", "");
    assert_eq!(serve.names(), ["base"]);
    // Nothing of "race" runs any more: no thread of it, and its UDP port is free.
    serve.wait_for(
        "every thread of the deleted pipelines to end",
        Duration::from_secs(10),
        || !serve.threads().iter().any(|t| t.starts_with("race")),
    );
    let rebound = std::net::UdpSocket::bind(("127.0.0.1", port));
    assert!(rebound.is_ok(), "UDP port {port} is still bound: {rebound:?}");
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
}

/// A live pipeline still waiting for its first packet, stopped by the operator (`DELETE`,
/// SIGTERM): `stopped`, with no `last_error`, and no ERROR line in the log; nothing written.
#[test]
fn stopping_a_live_pipeline_that_never_received_a_packet_is_a_stop_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (config_port, api_port) = (common::server::free_udp_port(), common::server::free_udp_port());
    std::fs::write(
        root.join("config.toml"),
        format!(
            r#"
[log]
format = "json"

[[pipeline]]
name = "waiting"
source = {{ url = "udp://127.0.0.1:{config_port}", format = "mpegts" }}
filter = {{ device = "cpu" }}
sink = {{ url = "waiting.ts" }}
"#
        ),
    )
    .unwrap();
    let serve = Server::start(root, &[]);
    let body = format!(
        r#"{{"name": "api", "source": {{"url": "udp://127.0.0.1:{api_port}", "format": "mpegts"}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "null"}}}}"#
    );
    let (status, answer) = serve.json("POST", "/pipelines", &body);
    assert_eq!(status, 201, "{answer}");
    // Both are inside FFmpeg's open, waiting for a sender, when the stops come.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(serve.pipeline("waiting")["state"], "starting");

    let (status, answer) = serve.json("DELETE", "/pipelines/api", "");
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["stopped"]["state"], "stopped", "{answer}");
    assert_eq!(answer["stopped"]["last_error"], serde_json::Value::Null, "{answer}");
    assert_eq!(answer["threads_ended"], true, "{answer}");

    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
    let lines: Vec<serde_json::Value> = log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(!lines.is_empty(), "the log is JSON lines:\n{log}");
    let errors: Vec<&serde_json::Value> = lines.iter().filter(|l| l["level"] == "ERROR").collect();
    assert!(errors.is_empty(), "a stop logs no error: {errors:?}");
    for name in ["waiting", "api"] {
        let said = lines.iter().any(|l| {
            l["level"] == "INFO"
                && l["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&format!("pipeline \"{name}\": stopped while opening its input")))
        });
        assert!(said, "{name}: the stop is logged as what it is:\n{log}");
    }
    assert!(!root.join("waiting.ts").exists(), "nothing was written");
}

//! What `serve` says is true: a name is free only when its run's threads have ended (DELETE
//! says whether they have), a stop that cuts a pipe's I/O short is a stop, sources are
//! confined by what is opened and raw-byte demuxers are refused through the API, no other
//! site learns anything from a snapshot, and the console and the snapshot query say what
//! they mean. Against a real `convstream serve` on a loopback port, CPU engine.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::server::Server;
use common::{make_clip, Clip};
use serde_json::Value;

fn start_serve(dir: &Path, config: &str) -> Server {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    Server::start(dir, &[])
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// A reader of `path` that never reads: the pipe fills and its writer blocks.
fn stalled_reader(path: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap()
}

/// How many threads of the run of pipeline `name` the process has (named `NAME-run`).
fn run_threads(serve: &Server, name: &str) -> usize {
    let wanted = format!("{name}-run");
    serve.threads().iter().filter(|t| **t == wanted).count()
}

const FIFO_CONFIG: &str = r#"
[server]
shutdown_timeout = 1.0
allow_paths = ["out"]

[[pipeline]]
name = "base"
source = { url = "out/clip.y4m" }
filter = { mask = "box", device = "cpu" }
sink = { url = "null" }
"#;

fn fifo_pipeline(name: &str, fifo: &str) -> String {
    format!(
        r#"{{"name": "{name}", "source": {{"url": "out/clip.y4m", "loop": true}}, "filter": {{"mask": "box", "device": "cpu"}}, "sink": {{"url": "out/{fifo}"}}}}"#
    )
}

fn error_lines_about(log: &str, name: &str) -> Vec<String> {
    log.lines()
        .filter(|line| line.contains("ERROR") && line.contains(name))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_name_is_free_only_once_its_threads_have_ended_and_a_stop_on_a_pipe_is_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("out")).unwrap();
    make_clip(root, "out/clip.y4m", Clip::Y4m, 64, 48, 25);
    let serve = start_serve(root, FIFO_CONFIG);
    // A pipe with no reader yet, and one whose reader stalled.
    for (name, stalled) in [("noreader", false), ("stalled", true)] {
        let fifo = root.join(format!("out/{name}.y4m"));
        mkfifo(&fifo);
        let _reader = stalled.then(|| stalled_reader(&fifo));
        let body = fifo_pipeline(name, &format!("{name}.y4m"));
        let (status, text) = serve.json("POST", "/pipelines", &body);
        assert_eq!(status, 201, "{text}");
        serve.wait_for("its run thread", Duration::from_secs(10), || run_threads(&serve, name) == 1);
        std::thread::sleep(Duration::from_millis(500)); // blocked in the pipe by now
        let started = Instant::now();
        let (status, text) = serve.json("POST", &format!("/pipelines/{name}/stop"), "{}");
        assert_eq!(status, 200, "{text}");
        assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
        let answer: Value = serde_json::from_str(&text).unwrap();
        if answer["threads_ended"] == true {
            assert_eq!(run_threads(&serve, name), 0, "threads_ended is true: {answer}");
        }
        // DELETE and a new POST of the name, while the old run may still be ending.
        let (status, text) = serve.send("DELETE", &format!("/pipelines/{name}"), &[], None);
        assert_eq!(status, 200, "{text}");
        let deleted: Value = serde_json::from_str(&text).unwrap();
        let left = run_threads(&serve, name);
        if deleted["threads_ended"] == true {
            assert_eq!(left, 0, "DELETE said the threads ended: {deleted}");
        }
        let (status, text) = serve.json("POST", "/pipelines", &body);
        if status == 201 {
            assert!(
                run_threads(&serve, name) <= 1,
                "two runs write one pipe: {:?}",
                serve.threads()
            );
            let (status, text) = serve.send("DELETE", &format!("/pipelines/{name}"), &[], None);
            assert_eq!(status, 200, "{text}");
        } else {
            assert_eq!(status, 409, "{text}");
            assert!(text.contains("threads"), "the refusal says why: {text}");
        }
        // The stop was a stop: stopped, no last_error, no ERROR line.
        assert_eq!(answer["stopped"]["state"], "stopped", "{answer}\n{}", serve.log_text());
        assert!(answer["stopped"]["last_error"].is_null(), "{answer}");
        let log = serve.log_text();
        assert!(error_lines_about(&log, name).is_empty(), "{log}");
    }
}

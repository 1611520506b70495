//! What `serve` says is true: a name is free only when its run's threads have ended (DELETE
//! says whether they have), a stop that cuts a pipe's I/O short is a stop, sources are
//! confined by what is opened and raw-byte demuxers are refused through the API, no other
//! site learns anything from a snapshot, and the console and the snapshot query say what
//! they mean. Against a real `convstream serve` on a loopback port, CPU engine.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use common::server::Server;
use common::{make_clip, Clip};
use serde_json::Value;

fn start_serve(dir: &Path, config: &str) -> Server {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    Server::start(dir, &[])
}

/// How many threads of the run of pipeline `name` the process has (named `NAME-run`).
/// The kernel stacks of the server's threads named `wanted`, to tell which is which.
fn stacks_of(serve: &Server, wanted: &str) -> String {
    let mut out = String::new();
    for task in std::fs::read_dir(format!("/proc/{}/task", serve.pid()))
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == wanted {
            let stack = std::fs::read_to_string(task.path().join("stack")).unwrap_or_default();
            let wchan = std::fs::read_to_string(task.path().join("wchan")).unwrap_or_default();
            out.push_str(&format!("{:?}: {wchan}\n{stack}\n", task.file_name()));
        }
    }
    out
}

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
        common::mkfifo(&fifo);
        let _reader = stalled.then(|| common::idle_reader(&fifo));
        let body = fifo_pipeline(name, &format!("{name}.y4m"));
        let (status, text) = serve.json("POST", "/pipelines", &body);
        assert_eq!(status, 201, "{text}");
        serve.wait_for("its run thread", Duration::from_secs(10), || {
            run_threads(&serve, name) == 1
        });
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
            // Two runs would both stay; a thread the new run starts and ends at once (named
            // after it, as unnamed threads inherit their creator's name) does not.
            let until = Instant::now() + Duration::from_secs(5);
            while run_threads(&serve, name) > 1 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(
                run_threads(&serve, name) <= 1,
                "two runs write one pipe: {:?}\n{}",
                serve.threads(),
                stacks_of(&serve, &format!("{name}-run"))
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

/// One GET written by hand with `headers`; returns the status and the answer's head (its
/// header lines, lower-cased).
fn raw_get(serve: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", serve.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nConnection: close\r\nHost: {}\r\n", serve.host());
    for (key, value) in headers {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let head = answer.split_once("\r\n\r\n").map_or(answer.as_str(), |(h, _)| h);
    (status, head.to_ascii_lowercase())
}

const LOOPING_CONFIG: &str = r#"
[[pipeline]]
name = "cam"
source = { url = "clip.y4m", realtime = true, loop = true }
filter = { mask = "box", device = "cpu" }
sink = { url = "null" }
"#;

#[test]
fn another_sites_page_learns_nothing_from_a_snapshot_and_spends_no_budget() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "clip.y4m", Clip::Y4m, 64, 48, 25);
    // No token: the loopback default.
    let serve = start_serve(root, LOOPING_CONFIG);
    serve.wait_for("cam to run", Duration::from_secs(20), || {
        serve.pipeline("cam")["state"] == "running"
    });
    const CORP: &str = "cross-origin-resource-policy: same-origin";
    // What a browser sends for `<img src=http://127.0.0.1:PORT/pipelines/NAME/snapshot>` on
    // another site's page, with and without its Referer; and a Referer alone.
    let image = [
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", "no-cors"),
        ("Sec-Fetch-Dest", "image"),
    ];
    let from_pages: [&[(&str, &str)]; 4] = [
        &[
            image[0],
            image[1],
            image[2],
            ("Referer", "http://evil.example/page.html"),
        ],
        &image,
        &[("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Dest", "image")],
        &[("Referer", "http://evil.example/page.html")],
    ];
    for headers in from_pages {
        // More than the budget of 10 a second: none of them may spend it.
        for _ in 0..4 {
            for name in ["cam", "nothing-by-this-name"] {
                let (status, head) = raw_get(&serve, &format!("/pipelines/{name}/snapshot"), headers);
                assert_eq!(status, 403, "{headers:?} {name}: {head}");
                assert!(head.contains(CORP), "{head}");
            }
        }
    }
    // The operator's own requests: served, the budget whole, and marked same-origin too.
    let (status, head) = raw_get(
        &serve,
        "/pipelines/cam/snapshot?format=png",
        &[("Sec-Fetch-Site", "same-origin"), ("Referer", &serve.url("/"))],
    );
    assert_eq!(status, 200, "{head}");
    assert!(head.contains(CORP), "{head}");
    for path in ["/pipelines", "/pipelines/cam", "/healthz", "/nowhere"] {
        let (_, head) = raw_get(&serve, path, &[]);
        assert!(head.contains(CORP), "{path}: {head}");
    }
}

#[test]
fn no_file_comes_back_as_pixels_and_the_config_file_is_never_a_source() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("media")).unwrap();
    make_clip(root, "media/clip.y4m", Clip::Y4m, 64, 48, 5);
    // 16x5 rgb24: any 240 bytes are a picture to the raw demuxers.
    std::fs::write(root.join("media/secret.bin"), [b'S'; 240]).unwrap();
    let config = r#"
[server]
allow_paths = ["media"]

[[pipeline]]
name = "peek"
source = { url = "media/settings.toml" }
filter = { mask = "box", device = "cpu" }
sink = { url = "null" }
"#;
    std::fs::write(root.join("config.toml"), config).unwrap();
    // A second name for the config file, inside allow_paths.
    std::fs::hard_link(root.join("config.toml"), root.join("media/settings.toml")).unwrap();
    let serve = Server::start(root, &[]);
    let raw = |format: &str, url: &str| {
        format!(
            r#"{{"name": "raw", "source": {{"url": "{url}", "format": "{format}", "options": {{"video_size": "16x5", "pixel_format": "rgb24"}}}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "null"}}}}"#
        )
    };
    for format in ["rawvideo", "RawVideo", "bin", "tty", "data", "v210"] {
        let (status, text) = serve.json("POST", "/pipelines", &raw(format, "media/secret.bin"));
        assert_eq!(status, 400, "{format}: {text}");
        assert!(text.contains("allow_raw_sources"), "{format}: {text}");
    }
    // Without a format, probing may not pick a raw demuxer either: the file does not open.
    let body = r#"{"name": "probed", "source": {"url": "media/secret.bin"}, "filter": {"device": "cpu"}, "sink": {"url": "null"}}"#;
    let (status, text) = serve.json("POST", "/pipelines", body);
    if status == 201 {
        serve.wait_for("probed to end", Duration::from_secs(20), || {
            ["failed", "finished"].contains(&serve.pipeline("probed")["state"].as_str().unwrap_or(""))
        });
        assert_eq!(serve.pipeline("probed")["state"], "failed", "{text}");
    }
    // The config file by its second name: refused by the API, and never opened by a
    // pipeline of the file (found by device and inode when it starts).
    let body = r#"{"name": "cfg", "source": {"url": "media/settings.toml"}, "filter": {"device": "cpu"}, "sink": {"url": "null"}}"#;
    let (status, text) = serve.json("POST", "/pipelines", body);
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("config file"), "{text}");
    serve.wait_for("peek to end", Duration::from_secs(20), || {
        serve.pipeline("peek")["state"] == "failed"
    });
    let peek = serve.pipeline("peek");
    assert!(
        peek["last_error"].as_str().unwrap_or("").contains("config file"),
        "{peek}"
    );
}

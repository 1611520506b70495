//! The HTTP API under hostile and careless requests, against a real `convstream serve` on a
//! loopback port: mask files and media paths outside the configured folders, requests a web
//! page could send (other Host, other Origin, non-JSON bodies), names and strings made to
//! forge log lines, DELETE and shutdown of pipelines blocked in their sink (the process's
//! thread count must come back), and panics injected in every pipeline thread. Requests are
//! written by hand over TCP, so every header is the test's own. CPU engine: no GPU needed.
//!
//! One job, kept whole: the API's hostile requests, each test on a `serve` started the same
//! way (`start_serve`, `looping`, the planted secrets) and judged by `assert_refused`; a
//! split by attack would scatter that set-up.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::server::{free_tcp_port, Server};
use common::{make_clip, Clip};
use serde_json::Value;

const TOKEN: &str = "t0ken-for-tests";
/// A value in the service's environment that no answer may ever contain.
const ENV_SECRET: &str = "env-secret-7f3a9c";
const FILE_SECRET: &str = "TOPSECRET-LINE";

/// Starts `serve` in `dir` with `config`, its environment holding a secret no answer may
/// contain (and `env`).
fn start_serve(dir: &Path, config: &str, env: &[(&str, &str)]) -> Server {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let mut env = env.to_vec();
    env.insert(0, ("CONVSTREAM_TEST_SECRET", ENV_SECRET));
    Server::start(dir, &env)
}

const LOOPING: &str = r#"
[[pipeline]]
name = "{name}"
source = { url = "clip.y4m", realtime = true, loop = true }
filter = { mask = "box", device = "cpu" }
sink = { url = "null" }
"#;

fn looping(name: &str) -> String {
    LOOPING.replace("{name}", name)
}

/// Asserts an answer is a refusal that quotes nothing it should not.
fn assert_refused(answer: &(u16, String), status: u16, says: &str, what: &str) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{what}: {body}");
    assert!(body.contains(says), "{what}: the answer says {says:?}: {body}");
    for secret in [ENV_SECRET, FILE_SECRET, TOKEN, "root:"] {
        assert!(!body.contains(secret), "{what}: the answer leaks {secret:?}: {body}");
    }
    assert!(body.len() < 4000, "{what}: a short answer: {} bytes", body.len());
}

#[test]
fn mask_files_come_only_from_mask_dir_and_answers_never_quote_files() {
    let dir = tempfile::tempdir().unwrap();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    std::fs::write(
        dir.path().join("secret.txt"),
        format!("{FILE_SECRET} 1 2\nroot:x:0:0\n"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("masks")).unwrap();
    std::fs::write(dir.path().join("masks/edge.txt"), "0 -1 0\n-1 4 -1\n0 -1 0\n").unwrap();
    std::os::unix::fs::symlink("../secret.txt", dir.path().join("masks/escape.txt")).unwrap();
    let config = format!("[server]\nmask_dir = \"masks\"\n{}", looping("one"));
    let serve = start_serve(dir.path(), &config, &[]);
    serve.wait_for("one to run", Duration::from_secs(20), || {
        serve.pipeline("one")["state"] == "running"
    });
    let secret = dir.path().join("secret.txt").display().to_string();
    let hostile = [
        r#""custom:file=/etc/shadow""#.to_string(),
        r#""custom:file=/etc/passwd""#.to_string(),
        r#""custom:file=/proc/self/environ""#.to_string(),
        r#""custom:file=../secret.txt""#.to_string(),
        r#""custom:file=escape.txt""#.to_string(),
        r#""custom:file=sub/../../secret.txt""#.to_string(),
        format!(r#""custom:file={secret}""#),
        r#"{"file": "/proc/self/environ"}"#.to_string(),
        r#"{"file": "../secret.txt"}"#.to_string(),
        r#"{"preset": "custom", "file": "/dev/zero"}"#.to_string(),
    ];
    for mask in &hostile {
        let answer = serve.json("PUT", "/pipelines/one/filter", &format!(r#"{{"mask": {mask}}}"#));
        assert_refused(&answer, 400, "mask_dir", &format!("PUT mask {mask}"));
        let answer = serve.json(
            "PUT",
            "/pipelines/one/filter",
            &format!(r#"{{"plane_masks": {{"y": "box", "uv": {mask}}}}}"#),
        );
        assert_refused(&answer, 400, "mask_dir", &format!("PUT plane_masks {mask}"));
        let body = format!(
            r#"{{"name": "two", "source": {{"url": "udp://127.0.0.1:9"}}, "filter": {{"plane_masks": {{"y": {mask}}}, "device": "cpu"}}, "sink": {{"url": "null"}}}}"#
        );
        let answer = serve.json("POST", "/pipelines", &body);
        assert_refused(&answer, 400, "mask_dir", &format!("POST plane_masks {mask}"));
        let body = format!(
            r#"{{"name": "two", "source": {{"url": "udp://127.0.0.1:9"}}, "filter": {{"mask": {mask}, "device": "cpu"}}, "sink": {{"url": "null"}}}}"#
        );
        let answer = serve.json("POST", "/pipelines", &body);
        assert_refused(&answer, 400, "mask_dir", &format!("POST mask {mask}"));
    }
    assert_eq!(serve.names(), ["one"], "nothing was started");
    // A mask file inside the folder is what the folder is for.
    let (status, body) = serve.json("PUT", "/pipelines/one/filter", r#"{"mask": "custom:file=edge.txt"}"#);
    assert_eq!(status, 200, "{body}");
    let (code, log) = serve.terminate_within(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains(FILE_SECRET) && !log.contains(ENV_SECRET), "{log}");

    // Without mask_dir, the API takes no mask file at all, and no media file either.
    let serve = start_serve(dir.path(), &looping("one"), &[]);
    serve.wait_for("one to run", Duration::from_secs(20), || {
        serve.pipeline("one")["state"] == "running"
    });
    let answer = serve.json(
        "PUT",
        "/pipelines/one/filter",
        r#"{"mask": "custom:file=masks/edge.txt"}"#,
    );
    assert_refused(&answer, 400, "mask_dir, which is not set", "no mask_dir");
    let answer = serve.json(
        "POST",
        "/pipelines",
        r#"{"name": "two", "source": {"url": "clip.y4m"}, "sink": {"url": "null"}}"#,
    );
    assert_refused(&answer, 400, "allow_paths is empty", "a file without allow_paths");
    let (status, body) = serve.json(
        "PUT",
        "/pipelines/one/filter",
        r#"{"mask": {"matrix": [[0, 1, 0], [1, 1, 1], [0, 1, 0]], "normalize": true}}"#,
    );
    assert_eq!(status, 200, "inline matrices are fine: {body}");
}

#[test]
fn api_pipelines_use_files_only_under_allow_paths_and_never_replace_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("media")).unwrap();
    make_clip(root, "media/clip.y4m", Clip::Y4m, 64, 48, 10);
    make_clip(root, "outside.y4m", Clip::Y4m, 64, 48, 5);
    std::fs::write(root.join("media/existing.y4m"), "precious").unwrap();
    std::os::unix::fs::symlink("../config.toml", root.join("media/config-link.toml")).unwrap();
    std::os::unix::fs::symlink("..", root.join("media/up")).unwrap();
    let config = format!(
        "[server]\nallow_paths = [\"media\"]\n{}",
        looping("one").replace("clip.y4m", "media/clip.y4m")
    );
    let serve = start_serve(root, &config, &[]);
    let config_before = std::fs::read(root.join("config.toml")).unwrap();
    let post = |source: &str, sink: &str, extra: &str| {
        serve.json(
            "POST",
            "/pipelines",
            &format!(
                r#"{{"name": "api", "source": {{"url": "{source}"}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "{sink}"{extra}}}}}"#
            ),
        )
    };
    for (source, sink, extra, says) in [
        ("outside.y4m", "media/new.y4m", "", "not under [server] allow_paths"),
        ("/etc/passwd", "media/new.y4m", "", "not under [server] allow_paths"),
        (
            "file:/etc/passwd",
            "media/new.y4m",
            "",
            "not under [server] allow_paths",
        ),
        (
            "media/../outside.y4m",
            "media/new.y4m",
            "",
            "not under [server] allow_paths",
        ),
        (
            "media/up/outside.y4m",
            "media/new.y4m",
            "",
            "not under [server] allow_paths",
        ),
        (
            "concat:media/clip.y4m|/etc/passwd",
            "media/new.y4m",
            "",
            "not a network protocol",
        ),
        ("-", "media/new.y4m", "", "stdin"),
        ("media/clip.y4m", "-", "", "stdout"),
        ("media/clip.y4m", "config.toml", "", "not under [server] allow_paths"),
        (
            "media/clip.y4m",
            "media/../config.toml",
            "",
            "not under [server] allow_paths",
        ),
        ("media/clip.y4m", "media/config-link.toml", "", "exists already"),
        ("media/clip.y4m", "media/existing.y4m", "", "exists already"),
        ("media/clip.y4m", "media/clip.y4m", "", "exists already"),
        ("media/clip.y4m", "media/up/x.y4m", "", "not under [server] allow_paths"),
        (
            "media/clip.y4m",
            "udp://127.0.0.1:9|media/x.y4m",
            r#", "format": "tee""#,
            "only the config file",
        ),
        (
            "media/clip.y4m",
            "media/x.mkv",
            r#", "options": {"x264-params": "dump-yuv=/tmp/x"}"#,
            "cannot be set through the API",
        ),
    ] {
        let answer = post(source, sink, extra);
        assert_refused(&answer, 400, says, &format!("{source} -> {sink} {extra}"));
    }
    // Input options that widen what an input may read are the config file's alone.
    for option in [
        r#""allowed_extensions": "ALL""#,
        r#""protocol_whitelist": "file,http""#,
        r#""safe": "0""#,
    ] {
        let answer = serve.json(
            "POST",
            "/pipelines",
            &format!(
                r#"{{"name": "api", "source": {{"url": "media/clip.y4m", "options": {{{option}}}}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "media/opt.y4m"}}}}"#
            ),
        );
        assert_refused(&answer, 400, "source.options", option);
    }
    assert_eq!(std::fs::read(root.join("media/existing.y4m")).unwrap(), b"precious");
    assert_eq!(std::fs::read(root.join("config.toml")).unwrap(), config_before);
    assert!(!root.join("media/x.y4m").exists() && !root.join("media/new.y4m").exists());

    // Inside the folder, to a new file: it runs.
    let (status, body) = post("media/clip.y4m", "media/new.y4m", "");
    assert_eq!(status, 201, "{body}");
    serve.wait_for("the API pipeline to finish", Duration::from_secs(20), || {
        serve.pipeline("api")["state"] == "finished"
    });
    assert!(std::fs::metadata(root.join("media/new.y4m")).unwrap().len() > 0);
    // Network URLs need no folder.
    let (status, body) = serve.json("DELETE", "/pipelines/api", "");
    assert_eq!(status, 200, "{body}");
    let udp = format!("udp://127.0.0.1:{}", free_tcp_port());
    let (status, body) = post(&udp, "null", "");
    assert_eq!(status, 201, "{body}");
    let (status, body) = serve.send("DELETE", "/pipelines/api", &[], None);
    assert_eq!(status, 200, "{body}");
    let (code, log) = serve.terminate_within(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn requests_a_web_page_could_send_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let config = format!(
        "[server]\nallowed_origins = [\"http://localhost:3000\"]\nallowed_hosts = [\"video.internal\"]\n{}",
        looping("one")
    );
    let serve = start_serve(dir.path(), &config, &[]);
    let body = r#"{"name": "web", "source": {"url": "udp://127.0.0.1:9"}, "filter": {"device": "cpu"}, "sink": {"url": "null"}}"#;

    // Bodies that are not declared JSON: a form, text/plain (a "simple" cross-site request),
    // none at all.
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonx"),
        None,
    ] {
        let headers: Vec<(&str, &str)> = content_type.iter().map(|c| ("Content-Type", *c)).collect();
        let answer = serve.send("POST", "/pipelines", &headers, Some(body));
        assert_refused(&answer, 415, "application/json", &format!("POST as {content_type:?}"));
        let answer = serve.send("PUT", "/pipelines/one/filter", &headers, Some(r#"{"mask": "sharpen"}"#));
        assert_refused(&answer, 415, "application/json", &format!("PUT as {content_type:?}"));
    }
    // Origins: only the configured one.
    for origin in ["http://evil.example", "null", "http://localhost:3001"] {
        let headers = [("Content-Type", "application/json"), ("Origin", origin)];
        let answer = serve.send("POST", "/pipelines", &headers, Some(body));
        assert_refused(&answer, 403, "allowed_origins", &format!("POST from {origin}"));
        let answer = serve.send("GET", "/pipelines", &[("Origin", origin)], None);
        assert_refused(&answer, 403, "allowed_origins", &format!("GET from {origin}"));
    }
    let allowed = [("Origin", "http://localhost:3000")];
    assert_eq!(serve.send("GET", "/pipelines", &allowed, None).0, 200);
    // Hosts: the listen address, its localhost forms, allowed_hosts; no rebound name.
    let port = serve.port;
    for host in [
        format!("evil.example:{port}"),
        "evil.example".into(),
        format!("127.0.0.2:{}", port + 1),
    ] {
        let answer = serve.send("GET", "/pipelines", &[("Host", &host)], None);
        assert_refused(&answer, 403, "allowed_hosts", &format!("Host {host:?}"));
        let headers = [("Host", host.as_str()), ("Content-Type", "application/json")];
        let answer = serve.send("POST", "/pipelines", &headers, Some(body));
        assert_refused(&answer, 403, "allowed_hosts", &format!("POST with Host {host:?}"));
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "video.internal".into(),
    ] {
        assert_eq!(
            serve.send("GET", "/pipelines", &[("Host", &host)], None).0,
            200,
            "Host {host}"
        );
    }
    // Probes call /healthz by whatever name they know.
    assert_eq!(
        serve.send("GET", "/healthz", &[("Host", "pod.example:80")], None).0,
        200
    );
    assert_eq!(serve.names(), ["one"], "no refused request started anything");
    // A JSON body with parameters is JSON.
    let (status, text) = serve.send(
        "POST",
        "/pipelines",
        &[("Content-Type", "Application/JSON; charset=utf-8")],
        Some(body),
    );
    assert_eq!(status, 201, "{text}");
    let (code, log) = serve.terminate_within(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_refusals_are_logged_at_a_limited_rate() {
    let dir = tempfile::tempdir().unwrap();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let config = format!("[server]\ntoken_env = \"CONVSTREAM_TEST_TOKEN\"\n{}", looping("one"));
    let serve = start_serve(dir.path(), &config, &[("CONVSTREAM_TEST_TOKEN", TOKEN)]);
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        for gap in [" ", "   "] {
            let auth = format!("{scheme}{gap}{TOKEN}");
            let (status, body) = serve.send("GET", "/pipelines", &[("Authorization", &auth)], None);
            assert_eq!(status, 200, "{auth:?}: {body}");
        }
    }
    for auth in [
        format!("Basic {TOKEN}"),
        format!("Bearer{TOKEN}"),
        "Bearer ".into(),
        TOKEN.into(),
    ] {
        let answer = serve.send("GET", "/pipelines", &[("Authorization", &auth)], None);
        assert_refused(&answer, 401, "bearer token", &format!("Authorization {auth:?}"));
    }
    let flood = 300;
    for n in 0..flood {
        let auth = format!("Bearer wrong-{n}");
        assert_eq!(serve.send("GET", "/metrics", &[("Authorization", &auth)], None).0, 401);
    }
    let log = serve.log_text();
    let lines = log.lines().filter(|l| l.contains("unauthorized GET")).count();
    assert!(
        (1..=10).contains(&lines),
        "{lines} refusal lines for {} refused requests:\n{log}",
        flood + 4
    );
    assert!(
        !log.contains(TOKEN) && !log.contains("wrong-"),
        "tokens are never logged"
    );
    let mut serve = serve;
    serve.token = Some(TOKEN.into());
    let metrics = serve.send("GET", "/metrics", &[], None).1;
    let counted = metrics
        .lines()
        .find(|l| l.starts_with("convstream_http_unauthorized_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok());
    assert_eq!(
        counted,
        Some((flood + 4) as f64),
        "every refusal is counted:\n{metrics}"
    );
    // After the window, the next line says how many were left out.
    std::thread::sleep(Duration::from_secs(11));
    assert_eq!(
        serve
            .send("GET", "/metrics", &[("Authorization", "Bearer late")], None)
            .0,
        401
    );
    serve.wait_for("the summary of refusals not logged", Duration::from_secs(5), || {
        serve.log_text().contains("more refused requests were not logged")
    });
}

#[test]
fn names_and_strings_cannot_forge_log_lines_or_outgrow_the_api() {
    let dir = tempfile::tempdir().unwrap();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let serve = start_serve(dir.path(), &looping("one"), &[]);
    let pipeline = |name: &str, url: &str| {
        format!(
            r#"{{"name": {}, "source": {{"url": {}}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "null"}}}}"#,
            serde_json::to_string(name).unwrap(),
            serde_json::to_string(url).unwrap()
        )
    };
    let udp = "udp://127.0.0.1:9";
    let long = "n".repeat(100_000);
    for name in [
        "cam\nERROR forged line",
        "a b",
        "a/b",
        "x\u{1b}[2J",
        "",
        long.as_str(),
        &"n".repeat(65),
    ] {
        let answer = serve.json("POST", "/pipelines", &pipeline(name, udp));
        assert_refused(
            &answer,
            400,
            "1 to 64 letters, digits",
            &format!("name {:?}", &name[..name.len().min(20)]),
        );
    }
    let answer = serve.json(
        "POST",
        "/pipelines",
        &pipeline("ok", "udp://127.0.0.1:9\nERROR forged url"),
    );
    assert_refused(&answer, 400, "control characters", "a URL with a newline");
    let answer = serve.json("PUT", "/pipelines/one/filter", r#"{"mask": "box\nERROR forged mask"}"#);
    assert_eq!(answer.0, 400, "{}", answer.1);
    // A long name is looked up and answered without being repeated.
    for method in ["GET", "DELETE"] {
        let answer = serve.send(method, &format!("/pipelines/{}", "n".repeat(20_000)), &[], None);
        assert_refused(
            &answer,
            404,
            "no pipeline named",
            &format!("{method} a 20000-character name"),
        );
    }
    let (status, body) = serve.json("POST", "/pipelines", &pipeline("Cam-2.main_x", udp));
    assert_eq!(status, 201, "{body}");
    let (status, body) = serve.send("DELETE", "/pipelines/Cam-2.main_x", &[], None);
    assert_eq!(status, 200, "{body}");
    let (code, log) = serve.terminate_within(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log}");
    assert!(
        !log.lines().any(|l| l.trim_start().starts_with("ERROR forged")),
        "no forged line:\n{log}"
    );
}

#[test]
fn delete_and_shutdown_end_the_threads_of_pipelines_blocked_in_their_sink() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("out")).unwrap();
    make_clip(root, "out/clip.y4m", Clip::Y4m, 64, 48, 25);
    let config = r#"
[server]
shutdown_timeout = 1.0
allow_paths = ["out"]
# Polling the file keeps a control-plane thread for file reads; off, the threads that
# remain are the pipelines' own.
watch = false

[[pipeline]]
name = "base"
source = { url = "out/clip.y4m" }
filter = { mask = "box", device = "cpu" }
sink = { url = "null" }
"#;
    let serve = start_serve(root, config, &[]);
    serve.wait_for("base to finish", Duration::from_secs(20), || {
        serve.pipeline("base")["state"] == "finished"
    });
    // Idle: the control plane's threads and the CPU engine's pool are all there is.
    std::thread::sleep(Duration::from_secs(1));
    let baseline = serve.threads().len();
    let mut readers = Vec::new();
    for attempt in 0..4 {
        let fifo = root.join(format!("out/stuck{attempt}.y4m"));
        common::mkfifo(&fifo);
        // Half the attempts block in opening the pipe (nobody reads it), half in writing
        // to it (a reader that never reads).
        if attempt % 2 == 1 {
            readers.push(common::idle_reader(&fifo));
        }
        let name = format!("stuck{attempt}");
        let body = format!(
            r#"{{"name": "{name}", "source": {{"url": "out/clip.y4m", "loop": true}}, "filter": {{"mask": "box", "device": "cpu"}}, "sink": {{"url": "out/stuck{attempt}.y4m"}}}}"#
        );
        let (status, text) = serve.json("POST", "/pipelines", &body);
        assert_eq!(status, 201, "{text}");
        std::thread::sleep(Duration::from_millis(700));
        assert!(
            serve.threads().len() > baseline,
            "the pipeline holds threads while blocked: {:?}",
            serve.threads()
        );
        let started = Instant::now();
        let (status, text) = serve.send("DELETE", &format!("/pipelines/{name}"), &[], None);
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["threads_ended"], true, "{answer}");
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }
    // Threads the control plane started for the requests (tokio's blocking pool) end after
    // 10 s idle.
    let settled = Instant::now();
    loop {
        let threads = serve.threads();
        if threads.len() <= baseline {
            break;
        }
        assert!(
            settled.elapsed() < Duration::from_secs(20),
            "{} threads after the deletes, {baseline} before: {threads:?}\n{}",
            threads.len(),
            serve.log_text()
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    // Shutdown ends a pipeline blocked the same way, within its timeout and the grace.
    let fifo = root.join("out/last.y4m");
    common::mkfifo(&fifo);
    readers.push(common::idle_reader(&fifo));
    let body = r#"{"name": "last", "source": {"url": "out/clip.y4m", "loop": true}, "filter": {"device": "cpu"}, "sink": {"url": "out/last.y4m"}}"#;
    assert_eq!(serve.json("POST", "/pipelines", body).0, 201);
    std::thread::sleep(Duration::from_millis(700));
    let started = Instant::now();
    let (code, log) = serve.terminate_within(Duration::from_secs(15));
    assert_eq!(code, Some(0), "every pipeline ended:\n{log}");
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    drop(readers);
}

#[test]
fn a_panic_in_any_pipeline_thread_fails_that_pipeline_only() {
    let dir = tempfile::tempdir().unwrap();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let stages = ["pipeline", "source", "filter", "sink"];
    let mut config = looping("ok");
    let mut plan = Vec::new();
    for stage in stages {
        config.push_str(&looping(&format!("p-{stage}")));
        plan.push(format!("p-{stage}:{stage}"));
    }
    plan.push("p-api:pipeline".into());
    let plan = plan.join(",");
    let serve = start_serve(dir.path(), &config, &[("CONVSTREAM_INJECT_PANIC", plan.as_str())]);
    for stage in stages {
        let name = format!("p-{stage}");
        serve.wait_for(&format!("{name} to fail"), Duration::from_secs(20), || {
            serve.pipeline(&name)["state"] == "failed"
        });
        let error = serve.pipeline(&name)["last_error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            error.contains(&format!("the {stage} thread panicked: injected panic")),
            "{name}: {error}"
        );
    }
    // Through the API too, and with a setting that used to panic refused up front.
    let body = r#"{"name": "p-api", "source": {"url": "udp://127.0.0.1:9"}, "filter": {"device": "cpu"}, "sink": {"url": "null"}}"#;
    let (status, text) = serve.json(
        "POST",
        "/pipelines",
        &body.replace("127.0.0.1:9\"", "127.0.0.1:9\", \"idle_timeout\": 1e20"),
    );
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("idle_timeout: 100000000000000000000 is out of range"),
        "{text}"
    );
    let (status, text) = serve.json("POST", "/pipelines", body);
    assert_eq!(status, 201, "{text}");
    serve.wait_for("p-api to fail", Duration::from_secs(20), || {
        serve.pipeline("p-api")["state"] == "failed"
    });
    // The others go on, and the service is ready (nothing is left starting).
    let before = serve.pipeline("ok")["counters"]["frames_written"].as_u64().unwrap();
    serve.wait_for("ok to go on", Duration::from_secs(10), || {
        serve.pipeline("ok")["counters"]["frames_written"].as_u64().unwrap() > before + 10
    });
    assert_eq!(serve.pipeline("ok")["state"], "running");
    // Ready once `ok` has run 3 s without a drop: the failed ones do not hold it back.
    serve.wait_for("/readyz to turn 200", Duration::from_secs(20), || {
        serve.send("GET", "/readyz", &[], None).0 == 200
    });
    let (code, log) = serve.terminate_within(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_body_of_the_wrong_shape_gets_every_problem_at_once() {
    let dir = tempfile::tempdir().unwrap();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let serve = start_serve(dir.path(), &looping("one"), &[]);
    let body = r#"{"name": "x", "source": {"url": "udp://127.0.0.1:9", "colour": 1, "drop": "newest", "format": null},
                   "filter": {"planes": "y", "border": "reflct"}, "extra": true}"#;
    let (status, text) = serve.json("POST", "/pipelines", body);
    assert_eq!(status, 400, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let problems: Vec<&str> = answer["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in [
        "pipeline \"x\": unknown field `extra`",
        "pipeline \"x\": source.colour: unknown field `colour`",
        "pipeline \"x\": source.drop: unknown variant `newest`",
        "pipeline \"x\": filter.planes: unknown variant `y`",
        "pipeline \"x\": filter.border: unknown variant `reflct`",
        "pipeline \"x\": sink is missing",
    ] {
        assert!(
            problems.iter().any(|p| p.starts_with(wanted)),
            "missing {wanted:?} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), 6, "{problems:#?}");
    assert_eq!(serve.names(), ["one"]);
}

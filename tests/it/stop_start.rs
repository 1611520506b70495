//! `POST /pipelines/{name}/stop` and `/start` on a real `serve` process: a stop keeps the
//! pipeline listed as stopped with its output finalised, a start runs it again, wrong
//! states answer 409, unknown names 404, the token is required, `/readyz` stays ready, and
//! racing stops, starts and deletes on one name leave a consistent list. CPU engine.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::server::Server;
use common::{make_clip, readable_frames, Clip};
use convstream_testkit::tempdir;
use serde_json::Value;

const TOKEN: &str = "st0p-start-token";

fn write_config(dir: &Path, text: &str) {
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn recording(name: &str, output: &str) -> String {
    format!(
        "[[pipeline]]\nname = \"{name}\"\nsource = {{ url = \"clip.y4m\", realtime = true, loop = true }}\nfilter = {{ mask = \"box\", device = \"cpu\" }}\nsink = {{ url = \"{output}\" }}\n"
    )
}

fn state(server: &Server, name: &str) -> String {
    server.pipeline(name)["state"].as_str().unwrap_or_default().to_string()
}

#[test]
fn stop_keeps_the_pipeline_listed_and_start_runs_it_again() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(
        dir.path(),
        &format!(
            "[server]\ntoken_env = \"CONVSTREAM_TEST_TOKEN\"\nallow_paths = [\".\"]\n{}",
            recording("rec", "rec.mkv")
        ),
    );
    let mut server = Server::start(dir.path(), &[("CONVSTREAM_TEST_TOKEN", TOKEN)]);
    assert_eq!(server.request_with("POST", "/pipelines/rec/stop", None, None).0, 401);
    assert_eq!(server.request_with("POST", "/pipelines/rec/start", None, None).0, 401);
    server.token = Some(TOKEN.to_string());
    server.wait_for("rec to write", Duration::from_secs(20), || {
        server.counter("rec", "frames_written") >= 10
    });
    assert_eq!(server.request("POST", "/pipelines/nope/stop", None).0, 404);
    assert_eq!(server.request("POST", "/pipelines/nope/start", None).0, 404);
    let (status, body) = server.request("POST", "/pipelines/rec/start", None);
    assert_eq!(status, 409, "a running pipeline cannot start: {body}");

    let (status, body) = server.request("POST", "/pipelines/rec/stop", None);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["threads_ended"], true, "{body}");
    assert_eq!(answer["stopped"]["state"], "stopped", "{body}");
    assert_eq!(state(&server, "rec"), "stopped");
    assert!(
        readable_frames(&dir.path().join("rec.mkv")) >= 10,
        "the output is finalised"
    );
    assert_eq!(server.request("POST", "/pipelines/rec/stop", None).0, 409);
    assert_eq!(
        server.request("GET", "/readyz", None).0,
        200,
        "an operator's stop is not unready"
    );

    let (status, body) = server.request("POST", "/pipelines/rec/start", None);
    assert_eq!(status, 200, "{body}");
    server.wait_for("rec to run again", Duration::from_secs(20), || {
        state(&server, "rec") == "running" && server.counter("rec", "frames_written") >= 5
    });

    // Stop, then DELETE: gone.
    assert_eq!(server.request("POST", "/pipelines/rec/stop", None).0, 200);
    assert_eq!(server.request("DELETE", "/pipelines/rec", None).0, 200);
    assert_eq!(server.request("GET", "/pipelines/rec", None).0, 404);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn racing_stops_starts_and_deletes_leave_a_consistent_list() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(
        dir.path(),
        &format!("[server]\nallow_paths = [\".\"]\n{}", recording("r", "null")),
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("r to run", Duration::from_secs(20), || state(&server, "r") == "running");
    std::thread::scope(|scope| {
        for i in 0..6 {
            let server = &server;
            scope.spawn(move || {
                let action = ["stop", "start", "stop", "start", "stop", "start"][i];
                let status = server.request("POST", &format!("/pipelines/r/{action}"), None).0;
                assert!([200, 404, 409].contains(&status), "{action}: {status}");
            });
        }
        let server = &server;
        scope.spawn(move || {
            let status = server.request("DELETE", "/pipelines/r", None).0;
            assert!([200, 404].contains(&status), "delete: {status}");
        });
    });
    let list = server.get("/pipelines");
    let listed = list["pipelines"].as_array().map(Vec::len).unwrap_or(0);
    assert!(listed <= 1, "{list}");
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

/// `POST .../stop`, `.../start` and `/console/reload` as a client sends them bare (no body,
/// no `Content-Type` or an empty one): taken, where before each was a 415. A body that is
/// not declared JSON is still refused. And a `POST /pipelines` with mistakes of shape and of meaning lists
/// every one of them at once.
#[test]
fn bodiless_posts_are_taken_and_a_pipelines_every_problem_is_listed() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(
        dir.path(),
        &format!(
            "[server]\ntoken_env = \"CONVSTREAM_TEST_TOKEN\"\nconsole = true\n{}",
            recording("rec", "null")
        ),
    );
    let mut server = Server::start(dir.path(), &[("CONVSTREAM_TEST_TOKEN", TOKEN)]);
    server.token = Some(TOKEN.to_string());
    server.wait_for("rec to run", Duration::from_secs(20), || {
        state(&server, "rec") == "running"
    });
    let (status, body) = server.send("POST", "/pipelines/rec/stop", &[], None);
    assert_eq!(status, 200, "a bare stop: {body}");
    assert_eq!(state(&server, "rec"), "stopped");
    let (status, body) = server.send("POST", "/pipelines/rec/start", &[], None);
    assert_eq!(status, 200, "a bare start: {body}");
    let (status, body) = server.send("POST", "/console/reload", &[], None);
    assert_eq!(status, 202, "a bare reload: {body}");
    let (status, body) = server.send(
        "POST",
        "/pipelines/rec/stop",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        None,
    );
    assert_eq!(status, 415, "a form, even an empty one: {body}");
    // An empty `Content-Type:` (some clients send the header on every request) names no body.
    let (status, body) = server.send("POST", "/pipelines/rec/stop", &[("Content-Type", "")], None);
    assert_eq!(status, 200, "a bare stop with an empty Content-Type: {body}");
    assert_eq!(state(&server, "rec"), "stopped");
    let (status, body) = server.send(
        "PUT",
        "/pipelines/rec/filter",
        &[("Content-Type", "")],
        Some(r#"{"mask": "box"}"#),
    );
    assert_eq!(status, 415, "a body still must be JSON: {body}");

    let body = r#"{"name": "x", "source": {"url": "udp://127.0.0.1:9", "colour": 1},
                   "filter": {"mask": "gaussian:size=4", "device": "cpu", "streams": 99},
                   "sink": {"url": "null"}}"#;
    let (status, text) = server.json("POST", "/pipelines", body);
    assert_eq!(status, 400, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let problems: Vec<&str> = answer["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for wanted in ["source.colour", "size", "streams"] {
        assert!(
            problems.iter().any(|p| p.contains(wanted)),
            "missing {wanted:?} in {problems:#?}"
        );
    }
}

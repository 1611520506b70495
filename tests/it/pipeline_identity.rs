//! A name is one pipeline at a time, and what the server keeps of a pipeline goes with it:
//! a pipeline deleted and added again under its name starts with no history and none of the
//! old one's log lines (`GET /pipelines/{name}/history`, `GET /console/status`), even when no
//! point was taken between the DELETE and the POST; a stop and start is the same pipeline,
//! and keeps both. Against a real `convstream serve` on the CPU engine.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::common::server::Server;
use crate::common::{make_clip, Clip};
use convstream_testkit::tempdir;
use serde_json::Value;

const TOKEN: &str = "identity-test-token";

const H1: &str = r#"{"name": "h1", "source": {"url": "clip.y4m", "loop": true, "realtime": true},
                    "filter": {"mask": "box", "device": "cpu"}, "sink": {"url": "null"}}"#;

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

fn post_h1(server: &Server) -> Value {
    let (status, body) = server.json("POST", "/pipelines", H1);
    assert_eq!(status, 201, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn points(server: &Server) -> Vec<Value> {
    server.get("/pipelines/h1/history")["points"]
        .as_array()
        .unwrap()
        .clone()
}

/// When each thing in `list` (points, log lines) was taken, by its `at`.
fn times(list: &[Value]) -> Vec<f64> {
    list.iter().map(|item| item["at"].as_f64().unwrap()).collect()
}

fn console_h1(server: &Server) -> Value {
    let status = server.get("/console/status");
    let h1 = status["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "h1");
    h1.cloned().unwrap_or_else(|| panic!("h1 in {status}"))
}

#[test]
fn a_pipeline_added_again_under_a_deleted_ones_name_has_none_of_its_history_or_log() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let config = "[server]\ntoken_env = \"IDENTITY_TOKEN\"\nallow_paths = [\".\"]\n";
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let mut server = Server::start(dir.path(), &[("IDENTITY_TOKEN", TOKEN)]);
    server.token = Some(TOKEN.to_string());

    let first = post_h1(&server)["id"].clone();
    assert!(first.as_u64().is_some(), "the pipeline's id: {first}");
    server.wait_for("two points of h1", Duration::from_secs(15), || {
        points(&server).len() >= 2
    });

    // A stop and a start are the same pipeline: its id and points stay.
    let kept = points(&server).len();
    assert_eq!(server.request("POST", "/pipelines/h1/stop", None).0, 200);
    let (status, body) = server.request("POST", "/pipelines/h1/start", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.pipeline("h1")["id"], first, "a restart is the same pipeline");
    assert!(points(&server).len() >= kept, "its points stay");

    // Deleted and added again right after a point: the next is 5 s away, so the history
    // keeper has not seen the name unlisted.
    let before = points(&server).len();
    server.wait_for("the next point", Duration::from_secs(10), || {
        points(&server).len() > before
    });
    let (status, body) = server.request("DELETE", "/pipelines/h1", None);
    assert_eq!(status, 200, "{body}");
    let added_at = now();
    let second = post_h1(&server)["id"].clone();
    assert_ne!(second, first, "another pipeline under the name");

    let answer = server.get("/pipelines/h1/history");
    assert_eq!(answer["id"], second, "{answer}");
    let points = answer["points"].as_array().unwrap();
    assert!(
        times(points).iter().all(|&at| at >= added_at),
        "no point of the deleted pipeline: {answer}"
    );
    let h1 = console_h1(&server);
    assert_eq!(h1["id"], second, "{h1}");
    let fps_history = h1["fps_history"].as_array().unwrap();
    assert!(fps_history.len() <= points.len() + 1, "the new one's points only: {h1}");
    // The deleted run's last lines (its summary, logged as it stopped) are not the new one's.
    let log = h1["log"].as_array().unwrap();
    assert!(
        times(log).iter().all(|&at| at >= added_at),
        "no log line of the deleted pipeline: {h1}"
    );
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

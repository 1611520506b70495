//! What the console reads from the server, over HTTP against a real `convstream serve` on the
//! CPU engine: the history the server keeps of each pipeline (`GET /pipelines/{name}/history`:
//! points every 5 s, bounded, surviving any client), the filter as the mask picker opens on
//! it (`GET /console/status`: each pipeline's own mask with its keys, per-plane masks, border,
//! planes) with each pipeline's last log lines, the warnings of a filter switch (a zero-sum
//! mask on chroma) and the mask preview (`POST /console/mask-preview`, the matrix `masks show`
//! prints).

use std::time::Duration;

use crate::common::server::Server;
use crate::common::{make_clip, Clip};
use convstream_testkit::tempdir;
use serde_json::Value;

const TOKEN: &str = "history-test-token";

fn serve_two(dir: &std::path::Path) -> Server {
    make_clip(dir, "clip.y4m", Clip::Y4m, 96, 64, 50);
    let config = "[server]\ntoken_env = \"HISTORY_TOKEN\"\n\
        [masks.soft]\npreset = \"gaussian\"\nsize = 5\nsigma = 1.5\n\
        [[pipeline]]\nname = \"north\"\nsource = { url = 'clip.y4m', loop = true, realtime = true }\n\
        filter = { mask = 'box:size=5', border = 'wrap', device = \"cpu\" }\nsink = { url = \"null\" }\n\
        [[pipeline]]\nname = \"south\"\nsource = { url = 'clip.y4m', loop = true, realtime = true }\n\
        filter = { mask = 'soft', planes = 'luma', plane_masks = { uv = 'neutral' }, device = \"cpu\" }\nsink = { url = \"null\" }\n\
        [[pipeline]]\nname = \"broken\"\nsource = { url = 'absent-input.y4m' }\nfilter = { device = \"cpu\" }\nsink = { url = \"null\" }\n";
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let mut server = Server::start(dir, &[("HISTORY_TOKEN", TOKEN)]);
    server.token = Some(TOKEN.to_string());
    server.wait_for("frames to flow", Duration::from_secs(30), || {
        server.counter("north", "frames_written") >= 10 && server.counter("south", "frames_written") >= 10
    });
    server
}

fn status_of<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {status}"))
}

#[test]
fn the_server_keeps_each_pipelines_history_of_fps_drops_and_p99() {
    let dir = tempdir();
    let server = serve_two(dir.path());
    let history = || server.get("/pipelines/north/history");
    // A point at once, then one every 5 s: two come within 12 s.
    server.wait_for("two points of history", Duration::from_secs(15), || {
        history()["points"].as_array().unwrap().len() >= 2
    });
    let answer = history();
    assert_eq!(answer["interval_seconds"], 5.0, "{answer}");
    assert_eq!(answer["capacity"], 120, "10 minutes at 5 s: {answer}");
    let points = answer["points"].as_array().unwrap();
    let last = points.last().unwrap();
    assert_eq!(last["state"], "running", "{answer}");
    let fps = last["fps"].as_f64().unwrap();
    assert!(fps > 10.0 && fps < 40.0, "a 25 fps clip at its pace: {answer}");
    assert_eq!(last["frames_dropped"], 0, "{answer}");
    let p99 = last["latency_p99_ms"].as_f64().expect("a p99 of the interval");
    assert!(p99 > 0.0 && p99 < 1000.0, "{answer}");
    let times: Vec<f64> = points.iter().map(|p| p["at"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] > 4.0), "5 s apart: {times:?}");

    // The console's own p99 comes from the same histogram, with no sorting per request.
    let status = server.get("/console/status");
    assert!(status_of(&status, "north")["latency_p99_ms"].as_f64().unwrap() > 0.0);

    assert_eq!(server.request("GET", "/pipelines/nobody/history", None).0, 404);
    assert_eq!(server.request("GET", "/pipelines/%3Cx%3E/history", None).0, 404);
    assert_eq!(
        server.request_with("GET", "/pipelines/north/history", None, None).0,
        401,
        "the token"
    );
    // A deleted pipeline's history goes with it.
    let (status, body) = server.request("DELETE", "/pipelines/south", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.request("GET", "/pipelines/south/history", None).0, 404);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn the_picker_opens_on_each_pipelines_own_filter_and_a_switch_says_its_warnings() {
    let dir = tempdir();
    let server = serve_two(dir.path());
    let status = server.get("/console/status");
    let north = &status_of(&status, "north")["filter"];
    assert_eq!(north["mask"]["preset"], "box", "{north}");
    assert_eq!(north["mask"]["size"], 5, "{north}");
    assert_eq!(north["border"], "wrap", "{north}");
    assert_eq!(north["planes"], "all", "{north}");
    let south = &status_of(&status, "south")["filter"];
    assert_eq!(south["mask_name"], "soft", "a named mask, by its table: {south}");
    assert_eq!(south["mask"]["preset"], "gaussian", "{south}");
    assert_eq!(south["mask"]["sigma"], 1.5, "{south}");
    assert_eq!(south["planes"], "luma", "{south}");
    assert_eq!(south["plane_masks"]["uv"]["preset"], "neutral", "per plane: {south}");
    // A failed pipeline's last log lines come with its reason.
    server.wait_for("broken to fail", Duration::from_secs(10), || {
        server.pipeline("broken")["state"] == "failed"
    });
    let status = server.get("/console/status");
    let log = status_of(&status, "broken")["log"].as_array().unwrap().clone();
    assert!(
        log.iter()
            .any(|line| line["level"] == "ERROR" && line["text"].as_str().unwrap().contains("absent-input.y4m")),
        "{log:?}"
    );
    assert!(
        status_of(&status, "north")["log"]
            .as_array()
            .unwrap()
            .iter()
            .all(|line| !line["text"].as_str().unwrap().contains("absent-input")),
        "each pipeline's own lines"
    );
    for choice in ["borders", "planes", "plane_keys", "modes", "presets"] {
        assert!(!status[choice].as_array().unwrap().is_empty(), "{choice}: {status}");
    }

    // A zero-sum mask without bias on a colour picture's chroma: the answer says so.
    let (code, body) = server.json(
        "PUT",
        "/pipelines/north/filter",
        r#"{"mask": "laplacian", "planes": "all", "border": "nearest"}"#,
    );
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let warnings = answer["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap().contains("turns green")),
        "{answer}"
    );
    assert!(answer["applies_from_frame"].as_u64().is_some(), "{answer}");
    // The picker then opens on what was applied.
    let status = server.get("/console/status");
    let north = &status_of(&status, "north")["filter"];
    assert_eq!(
        (&north["mask"]["preset"], &north["border"]),
        (&"laplacian".into(), &"nearest".into())
    );
    // A switch without surprises has none.
    let (code, body) = server.json("PUT", "/pipelines/north/filter", r#"{"mask": "box"}"#);
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["warnings"], serde_json::json!([]), "{answer}");
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn the_mask_preview_shows_the_matrix_masks_show_prints_and_reads_no_file_outside_mask_dir() {
    let dir = tempdir();
    let server = serve_two(dir.path());
    let preview = |body: &str| {
        let (code, text) = server.json("POST", "/console/mask-preview", body);
        (code, serde_json::from_str::<Value>(&text).unwrap_or(Value::Null), text)
    };
    let (code, answer, text) = preview(r#"{"mask": {"preset": "sobel-x"}}"#);
    assert_eq!(code, 200, "{text}");
    assert_eq!(
        (answer["width"].as_u64(), answer["height"].as_u64()),
        (Some(3), Some(3))
    );
    let rows: Vec<Vec<f64>> = serde_json::from_value(answer["rows"].clone()).unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(answer["sum"], 0.0, "{answer}");
    assert_eq!(answer["separable"], true, "{answer}");
    let shown = answer["text"].as_str().unwrap();
    assert!(shown.contains("separable: yes"), "the `masks show` text: {shown}");

    let (code, answer, _) = preview(r#"{"mask": "custom:matrix=[[0,0,0],[0,2,0],[0,0,0]]"}"#);
    assert_eq!(code, 200);
    assert!(
        !answer["warnings"].as_array().unwrap().is_empty(),
        "a brightness warning: {answer}"
    );
    let (code, answer, _) = preview(r#"{"mask": "soft"}"#);
    assert_eq!(
        (code, answer["width"].as_u64()),
        (200, Some(5)),
        "a named mask: {answer}"
    );

    std::fs::write(dir.path().join("mask.txt"), "0 0 0\n0 1 0\n0 0 0\n").unwrap();
    let (code, _, text) = preview(r#"{"mask": {"file": "mask.txt"}}"#);
    assert_eq!(code, 400, "no mask_dir, no file: {text}");
    let (code, _, text) = preview(r#"{"mask": "box:size=4"}"#);
    assert_eq!(code, 400, "an even size: {text}");
    assert!(text.contains("size"), "{text}");
    let (code, _, _) = preview(r#"{"mask": "box", "extra": 1}"#);
    assert_eq!(code, 400);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

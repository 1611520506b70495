//! `convstream serve` as an operator runs it: a real process on a free loopback port, fed a
//! file and a UDP MPEG-TS stream sent by the `ffmpeg` CLI, driven over HTTP. Checks the
//! API, the metrics (parsed as Prometheus text), live mask switching down to the frame,
//! reload by file change and by SIGHUP, token auth, bad requests, reconnection and a
//! graceful stop that leaves playable outputs. CPU engine: no GPU needed.
//!
//! One job, kept whole: `serve` as a process, through its API, metrics, reloads and signals;
//! the tests share the config writer, the looping pipeline and the log readers
//! (`write_config`, `looping`, `summary_counts`), which a split by topic would scatter.

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::server::{free_tcp_port, free_udp_port, Server};
use common::{convstream, make_clip, plane_of, readable_frames, video_pts, Clip, Y4m};
use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_testkit::oracle::oracle;
use convstream_testkit::tempdir;
use serde_json::Value;

const TOKEN: &str = "s3cret-test-token";

/// Sends `seconds` of a 25 fps test pattern as MPEG-TS over UDP, in real time.
fn send_udp(port: u16, seconds: u32) -> Child {
    Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-nostdin",
            "-re",
            "-f",
            "lavfi",
            "-i",
        ])
        .arg("testsrc2=size=160x120:rate=25")
        .args([
            "-t",
            &seconds.to_string(),
            "-pix_fmt",
            "yuv420p",
            "-c:v",
            "mpeg2video",
            "-g",
            "5",
        ])
        .args(["-f", "mpegts", &format!("udp://127.0.0.1:{port}?pkt_size=1316")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ffmpeg is installed")
}

/// `N frames in, M out` from the summary line a pipeline logs when it ends.
fn summary_counts(log: &str, pipeline: &str) -> (u64, u64) {
    let marker = format!("{pipeline}: ");
    let line = log
        .lines()
        .filter(|l| l.contains(" frames in, "))
        .find(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no summary for {pipeline} in:\n{log}"));
    let after = &line[line.find(&marker).unwrap() + marker.len()..];
    let numbers: Vec<u64> = after.split([' ', ',']).filter_map(|w| w.parse().ok()).take(2).collect();
    (numbers[0], numbers[1])
}

fn write_config(dir: &Path, text: &str) {
    // Written beside and renamed, as editors and ConfigMaps do, so a reload never sees half a file.
    let temporary = dir.join("config.toml.new");
    std::fs::write(&temporary, text).unwrap();
    std::fs::rename(&temporary, dir.join("config.toml")).unwrap();
}

#[test]
fn serves_a_file_and_a_udp_stream_with_api_metrics_reconnection_and_graceful_stop() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 160, 120, 300); // 12 s at 25 fps
    let udp = free_udp_port();
    write_config(
        dir.path(),
        &format!(
            r#"
[[pipeline]]
name = "file"
source = {{ url = "clip.y4m", realtime = true }}
filter = {{ mask = "box", device = "cpu" }}
sink = {{ url = "file.mkv", lossless = true }}

[[pipeline]]
name = "live"
source = {{ url = "udp://127.0.0.1:{udp}", format = "mpegts", idle_timeout = 1.0, reconnect = {{ initial = 0.2, max = 1.0 }} }}
filter = {{ mask = "gaussian:size=5", planes = "luma", device = "cpu" }}
sink = {{ url = "live.mkv" }}
"#
        ),
    );
    let sender = send_udp(udp, 3);
    let server = Server::start(dir.path(), &[]);

    check_both_pipelines_run(&server, udp);
    check_metrics_move(&server);
    check_metric_families(&server);
    check_reconnection(&server, udp, sender);
    check_graceful_stop(server, dir.path());
}

/// Ready, both pipelines listed in order, and `live` running as configured.
fn check_both_pipelines_run(server: &Server, udp: u16) {
    server.wait_for("/readyz", Duration::from_secs(20), || {
        server.request("GET", "/readyz", None).0 == 200
    });
    // Ready does not wait for a live input's frames (it can take input before they come).
    server.wait_for("live to run", Duration::from_secs(20), || {
        server.pipeline("live")["state"] == "running"
    });
    let list = server.get("/pipelines");
    let names: Vec<&str> = list["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["file", "live"]);
    let live = server.pipeline("live");
    assert_eq!(live["state"], "running", "{live}");
    assert_eq!(live["device"], "cpu");
    assert_eq!(live["source"], format!("udp://127.0.0.1:{udp}"));
    assert_eq!(live["mask"], "gaussian:size=5");
}

/// The metrics parse as Prometheus text and move.
fn check_metrics_move(server: &Server) {
    let first = server.metric("convstream_frames_written_total", "live").unwrap_or(0.0);
    std::thread::sleep(Duration::from_millis(1200));
    let second = server.metric("convstream_frames_written_total", "live").unwrap();
    assert!(second > first, "live frames written moves: {first} -> {second}");
    // The rate is recent: a live input receiving frames reads more than nothing.
    let live_fps = server.metric("convstream_frames_per_second", "live").unwrap();
    assert!(
        live_fps > 0.0,
        "a live pipeline receiving frames has a rate: {live_fps}"
    );
    let file_written = server.metric("convstream_frames_written_total", "file").unwrap();
    assert!(file_written > 0.0);
}

/// Every metric family is exported; pinned bytes and stage timings add up.
fn check_metric_families(server: &Server) {
    let scrape = server.scrape();
    for family in [
        "convstream_frames_decoded_total",
        "convstream_frames_dropped_total",
        "convstream_frames_late_total",
        "convstream_frames_held_up_total",
        "convstream_process_pauses_total",
        "convstream_process_paused_seconds_total",
        "convstream_corrupt_packets_total",
        "convstream_input_bytes_total",
        "convstream_output_bytes_total",
        "convstream_source_reconnects_total",
        "convstream_pipeline_restarts_total",
        "convstream_decoder_restarts_total",
        "convstream_frame_pool_allocations_total",
        "convstream_frame_pool_releases_total",
        "convstream_frame_pool_fallbacks_total",
        "convstream_build_info",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_threads",
        "convstream_decoded_queue_frames",
        "convstream_pinned_bytes",
        "convstream_ordinary_pool_bytes",
        "convstream_device_pinned_bytes",
        "convstream_frames_per_second",
        "convstream_stage_seconds_count",
        "convstream_end_to_end_seconds_count",
    ] {
        assert!(
            scrape.samples.iter().any(|s| s.metric == family),
            "/metrics has {family}"
        );
    }
    // Pinned bytes per device are the pipelines' own, summed by their device label.
    let gauge = |s: &prometheus_parse::Sample| match s.value {
        prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
        _ => f64::NAN,
    };
    let per_pipeline: f64 = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "convstream_pinned_bytes" && s.labels.get("device") == Some("cpu"))
        .map(gauge)
        .sum();
    let per_device = scrape
        .samples
        .iter()
        .find(|s| s.metric == "convstream_device_pinned_bytes" && s.labels.get("device") == Some("cpu"))
        .map(gauge);
    assert_eq!(
        per_device,
        Some(per_pipeline),
        "the cpu device's pinned bytes sum its pipelines'"
    );
    let stage_count = |stage: &str| {
        scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == "convstream_stage_seconds_count"
                    && s.labels.get("pipeline") == Some("live")
                    && s.labels.get("stage") == Some(stage)
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Untyped(v) | prometheus_parse::Value::Counter(v) => v,
                _ => 0.0,
            })
            .unwrap_or(0.0)
    };
    for stage in ["decode", "cpu_filter", "encode"] {
        assert!(stage_count(stage) > 0.0, "stage {stage} is timed");
    }
}

/// The sender goes away; the input is lost after idle_timeout and comes back.
fn check_reconnection(server: &Server, udp: u16, mut sender: Child) {
    sender.wait().unwrap();
    let before_gap = server.counter("live", "frames_written");
    server.wait_for("the live input to count as lost", Duration::from_secs(10), || {
        server.pipeline("live")["reconnecting"] == true
    });
    let mut sender = send_udp(udp, 2);
    server.wait_for(
        "the live pipeline to reconnect and go on",
        Duration::from_secs(20),
        || {
            let live = server.pipeline("live");
            live["counters"]["reconnects"].as_u64().unwrap() >= 1
                && live["counters"]["frames_written"].as_u64().unwrap() > before_gap + 10
        },
    );
    assert!(server.metric("convstream_source_reconnects_total", "live").unwrap() >= 1.0);
    sender.wait().unwrap();
}

/// SIGTERM with the file pipeline mid-stream: everything read is written, outputs play.
fn check_graceful_stop(server: Server, dir: &Path) {
    assert_eq!(server.pipeline("file")["state"], "running");
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "a stop by signal is a normal end:\n{log}");
    assert!(log.contains("every pipeline stopped"), "{log}");
    for (pipeline, output) in [("file", "file.mkv"), ("live", "live.mkv")] {
        let (decoded, written) = summary_counts(&log, pipeline);
        assert_eq!(decoded, written, "{pipeline}: every decoded frame is written:\n{log}");
        let played = video_pts(&dir.join(output)).len() as u64;
        assert_eq!(played, written, "{output} is finalised and plays every frame");
    }
    let (file_frames, _) = summary_counts(&log, "file");
    assert!(
        file_frames < 300,
        "the file pipeline was stopped part way ({file_frames})"
    );
}

/// `serve` with one pipeline, "cam", filtering a 4 s clip paced at 25 fps with `box` into
/// out.y4m, once its first second is written: for filter switches mid-stream.
fn switching_server() -> (tempfile::TempDir, Server) {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 96, 64, 100); // 4 s at 25 fps
    write_config(
        dir.path(),
        r#"
[[pipeline]]
name = "cam"
source = { url = "clip.y4m", realtime = true }
filter = { mask = "box", device = "cpu" }
sink = { url = "out.y4m" }
"#,
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("frames to flow", Duration::from_secs(20), || {
        server.counter("cam", "frames_written") >= 25
    });
    (dir, server)
}

#[test]
fn a_mask_switch_applies_from_the_frame_the_api_reports() {
    let (dir, server) = switching_server();
    let (status, body) = server.request("PUT", "/pipelines/cam/filter", Some(r#"{"mask": "sharpen"}"#));
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let switch_at = answer["applies_from_frame"].as_u64().unwrap() as usize;
    assert_eq!(answer["mask"], "sharpen");
    assert_eq!(answer["changed_planes"], serde_json::json!(["y", "u", "v"]), "{answer}");
    assert!(answer.get("warning").is_none(), "{answer}");
    assert!((25..100).contains(&switch_at), "switched mid-stream: {answer}");
    assert_eq!(server.pipeline("cam")["mask"], "sharpen");
    server.wait_for("the end of the input", Duration::from_secs(20), || {
        server.pipeline("cam")["state"] == "finished"
    });
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");

    let input = Y4m::read(&dir.path().join("clip.y4m"));
    let output = Y4m::read(&dir.path().join("out.y4m"));
    assert_eq!(output.frames.len(), 100, "no frame lost or duplicated");
    let (old, new) = (Mask::from_spec("box").unwrap(), Mask::from_spec("sharpen").unwrap());
    let sizes = input.plane_sizes();
    for (n, (inp, out)) in input.frames.iter().zip(&output.frames).enumerate() {
        let mask = if n < switch_at { &old } else { &new };
        for (p, (a, b)) in inp.iter().zip(out).enumerate() {
            let (w, h) = sizes[p];
            let expected = oracle(&plane_of(a, w, h), mask, BorderMode::Reflect);
            assert!(
                *b == expected,
                "frame {n} plane {p} is not {} (the switch was reported at frame {switch_at})",
                mask.description()
            );
        }
    }
}

#[test]
fn a_switch_to_plane_masks_applies_from_the_frame_the_api_reports() {
    let (dir, server) = switching_server();
    // A plane the input lacks is refused, and nothing changes.
    let (status, body) = server.request(
        "PUT",
        "/pipelines/cam/filter",
        Some(r#"{"plane_masks": {"r": "edge"}}"#),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("names r, which yuv420p frames do not have"), "{body}");
    let (status, body) = server.request(
        "PUT",
        "/pipelines/cam/filter",
        Some(r#"{"mask": "edge", "plane_masks": {"uv": "neutral"}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let switch_at = answer["applies_from_frame"].as_u64().unwrap() as usize;
    assert_eq!(answer["plane_masks"]["u"], "neutral", "{answer}");
    server.wait_for("the end of the input", Duration::from_secs(20), || {
        server.pipeline("cam")["state"] == "finished"
    });
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("turns green"), "neutral chroma needs no warning:\n{log}");

    let input = Y4m::read(&dir.path().join("clip.y4m"));
    let output = Y4m::read(&dir.path().join("out.y4m"));
    assert_eq!(output.frames.len(), 100);
    let (old, edge) = (Mask::from_spec("box").unwrap(), Mask::from_spec("edge").unwrap());
    let sizes = input.plane_sizes();
    for (n, (inp, out)) in input.frames.iter().zip(&output.frames).enumerate() {
        for (p, (a, b)) in inp.iter().zip(out).enumerate() {
            let (w, h) = sizes[p];
            let expected = match (n < switch_at, p) {
                (true, _) => oracle(&plane_of(a, w, h), &old, BorderMode::Reflect),
                (false, 0) => oracle(&plane_of(a, w, h), &edge, BorderMode::Reflect),
                (false, _) => vec![128; w * h],
            };
            assert!(*b == expected, "frame {n} plane {p} (switch at {switch_at})");
        }
    }
}

/// Plane masks on every plane, then a new `mask`: the answer says that no plane changes,
/// and why; with `clear_plane_masks` the mask replaces them. The frames say the same.
#[test]
fn a_mask_switch_that_plane_masks_override_changes_no_plane_and_says_so() {
    let (dir, server) = switching_server();
    let put = |body: &str| {
        let (status, text) = server.request("PUT", "/pipelines/cam/filter", Some(body));
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
            text,
        )
    };
    let (status, answer, text) = put(r#"{"plane_masks": {"y": "edge", "uv": "neutral"}}"#);
    assert_eq!(status, 200, "{text}");
    assert_eq!(answer["changed_planes"], serde_json::json!(["y", "u", "v"]), "{text}");
    let masked_from = answer["applies_from_frame"].as_u64().unwrap() as usize;

    let (status, answer, text) = put(r#"{"mask": "sharpen"}"#);
    assert_eq!(
        status, 200,
        "the switch stands, for a later change of plane_masks: {text}"
    );
    assert_eq!(answer["changed_planes"], serde_json::json!([]), "{text}");
    let warning = answer["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("changes no plane")
            && warning.contains("(y, u, v)")
            && warning.contains("\"clear_plane_masks\": true"),
        "the warning names the plane masks and the fix: {text}"
    );
    assert_eq!(answer["plane_masks"]["y"], "edge", "{text}");

    let (status, _, text) = put(r#"{"mask": "sharpen", "plane_masks": {}, "clear_plane_masks": true}"#);
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("either plane_masks") && text.contains("not both"),
        "{text}"
    );
    let (status, _, text) = put(r#"{"clear_plane_masks": "yes"}"#);
    assert_eq!(status, 400, "{text}");

    let (status, answer, text) = put(r#"{"mask": "sharpen", "clear_plane_masks": true}"#);
    assert_eq!(status, 200, "{text}");
    assert_eq!(answer["changed_planes"], serde_json::json!(["y", "u", "v"]), "{text}");
    assert_eq!(answer["plane_masks"], serde_json::json!({}), "{text}");
    assert!(answer.get("warning").is_none(), "{text}");
    let sharpened_from = answer["applies_from_frame"].as_u64().unwrap() as usize;

    let (status, answer, text) = put(r#"{"border": "reflect"}"#);
    assert_eq!(status, 200, "{text}");
    assert_eq!(answer["changed_planes"], serde_json::json!([]), "{text}");
    assert!(
        answer["warning"]
            .as_str()
            .is_some_and(|w| w.contains("every plane keeps the mask and border it had")),
        "{text}"
    );

    server.wait_for("the end of the input", Duration::from_secs(20), || {
        server.pipeline("cam")["state"] == "finished"
    });
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("changes no plane"), "the log warns too:\n{log}");
    let input = Y4m::read(&dir.path().join("clip.y4m"));
    let output = Y4m::read(&dir.path().join("out.y4m"));
    assert_eq!(output.frames.len(), 100);
    let [boxed, edge, sharpen] = ["box", "edge", "sharpen"].map(|spec| Mask::from_spec(spec).unwrap());
    let sizes = input.plane_sizes();
    for (n, (inp, out)) in input.frames.iter().zip(&output.frames).enumerate() {
        for (p, (a, b)) in inp.iter().zip(out).enumerate() {
            let (w, h) = sizes[p];
            let plane = plane_of(a, w, h);
            let expected = if n < masked_from {
                oracle(&plane, &boxed, BorderMode::Reflect)
            } else if n >= sharpened_from {
                oracle(&plane, &sharpen, BorderMode::Reflect)
            } else if p == 0 {
                oracle(&plane, &edge, BorderMode::Reflect)
            } else {
                vec![128; w * h]
            };
            assert!(
                *b == expected,
                "frame {n} plane {p} (plane masks from {masked_from}, sharpen everywhere from {sharpened_from})"
            );
        }
    }
}

const LOOPING_PIPELINE: &str = r#"
[[pipeline]]
name = "{name}"
source = { url = "clip.y4m", realtime = true, loop = true }
filter = { mask = "box", device = "cpu" }
sink = { url = "null" }
"#;

fn looping(name: &str) -> String {
    LOOPING_PIPELINE.replace("{name}", name)
}

fn names(server: &Server) -> Vec<String> {
    server.get("/pipelines")["pipelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

fn rejected_reloads(server: &Server) -> f64 {
    server
        .scrape()
        .samples
        .iter()
        .find(|s| s.metric == "convstream_config_reloads_total" && s.labels.get("result") == Some("rejected"))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .unwrap_or(0.0)
}

#[test]
fn a_changed_config_file_is_reloaded_and_an_invalid_one_refused() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(dir.path(), &looping("one"));
    let server = Server::start(dir.path(), &[]);
    server.wait_for("pipeline one to run", Duration::from_secs(20), || {
        server.pipeline("one")["state"] == "running"
    });

    // Added: starts. The unchanged pipeline keeps running, uninterrupted.
    let one_before = server.counter("one", "frames_written");
    write_config(dir.path(), &format!("{}{}", looping("one"), looping("two")));
    server.wait_for("pipeline two to start", Duration::from_secs(20), || {
        names(&server) == ["one", "two"] && server.pipeline("two")["state"] == "running"
    });
    let one = server.pipeline("one");
    assert_eq!(one["counters"]["restarts"], 0, "one was left alone: {one}");
    assert!(one["counters"]["frames_written"].as_u64().unwrap() >= one_before);

    // Invalid: refused with every problem logged; both keep running.
    write_config(
        dir.path(),
        &format!(
            "{}{}",
            looping("one"),
            looping("two").replace("\"box\"", "\"box:size=4\"")
        ),
    );
    server.wait_for("the invalid config to be refused", Duration::from_secs(10), || {
        rejected_reloads(&server) >= 1.0
    });
    assert!(server.log_text().contains("size: 4 is even"), "{}", server.log_text());
    assert_eq!(names(&server), ["one", "two"]);
    let two_written = server.counter("two", "frames_written");
    std::thread::sleep(Duration::from_millis(500));
    assert!(server.counter("two", "frames_written") > two_written, "two still runs");

    // Removed: drained and stopped; a changed filter switches live.
    write_config(dir.path(), &looping("two").replace("\"box\"", "\"sharpen\""));
    server.wait_for("pipeline one to stop", Duration::from_secs(20), || {
        names(&server) == ["two"]
    });
    server.wait_for("two to switch its mask live", Duration::from_secs(10), || {
        server.pipeline("two")["mask"] == "sharpen"
    });
    assert_eq!(server.pipeline("two")["counters"]["restarts"], 0);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn sighup_reloads_when_watching_is_off() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let server_table = "[log]\nformat = \"json\"\n[server]\nwatch = false\n";
    write_config(
        dir.path(),
        &format!("{server_table}{}{}", looping("one"), looping("two")),
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("both pipelines to run", Duration::from_secs(20), || {
        names(&server).len() == 2 && server.pipeline("two")["state"] == "running"
    });
    // The source of two changes (a restart), one goes away, three is new.
    let changed_two = looping("two").replace("loop = true", "loop = true, threads = 1");
    write_config(dir.path(), &format!("{server_table}{changed_two}{}", looping("three")));
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        names(&server),
        ["one", "two"],
        "no reload without SIGHUP when watch = false"
    );

    server.signal("-HUP");
    server.wait_for("the reload", Duration::from_secs(20), || {
        names(&server) == ["three", "two"] && server.pipeline("three")["state"] == "running"
    });
    server.wait_for("two to be restarted", Duration::from_secs(20), || {
        let two = server.pipeline("two");
        two["counters"]["restarts"] == 1 && two["state"] == "running"
    });
    assert_eq!(server.metric("convstream_pipeline_restarts_total", "two"), Some(1.0));

    // An invalid file on SIGHUP changes nothing.
    write_config(dir.path(), &format!("{server_table}[[pipeline]]\nname = \"broken\"\n"));
    server.signal("-HUP");
    server.wait_for("the invalid config to be refused", Duration::from_secs(10), || {
        rejected_reloads(&server) >= 1.0
    });
    assert_eq!(names(&server), ["three", "two"]);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");

    // format = "json": one JSON object per line (FFmpeg's own messages aside), pipeline
    // messages inside their pipeline's span.
    let events: Vec<Value> = log
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(events.len() > 5, "{log}");
    assert!(
        events
            .iter()
            .any(|e| e["span"]["pipeline"] == "three" && e["level"] == "INFO"),
        "a pipeline's messages carry its span:\n{log}"
    );
}

#[test]
fn token_auth_and_bad_requests_get_clear_answers() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(
        dir.path(),
        // API pipelines may read files only under allow_paths.
        &format!(
            "[server]\ntoken_env = \"CONVSTREAM_TEST_TOKEN\"\nallow_paths = [\".\"]\n{}",
            looping("one")
        ),
    );
    let mut server = Server::start(dir.path(), &[("CONVSTREAM_TEST_TOKEN", TOKEN)]);

    check_token_auth(&mut server);
    check_bad_requests(&server);
    check_api_pipeline_runs_and_is_deleted(server);
}

/// /healthz is open; everything else needs the token, and refusals are logged without it.
fn check_token_auth(server: &mut Server) {
    assert_eq!(server.request_with("GET", "/healthz", None, None).0, 200);
    for path in ["/readyz", "/metrics", "/pipelines", "/pipelines/one"] {
        assert_eq!(
            server.request_with("GET", path, None, None).0,
            401,
            "{path} without a token"
        );
        assert_eq!(
            server.request_with("GET", path, None, Some("guessed-token-7")).0,
            401,
            "{path} with a wrong token"
        );
    }
    let (status, _) = server.request_with("DELETE", "/pipelines/one", None, None);
    assert_eq!(status, 401, "DELETE without a token");
    server.token = Some(TOKEN.to_string());
    assert_eq!(server.request("GET", "/pipelines", None).0, 200);
    let log = server.log_text();
    assert!(
        log.contains("unauthorized GET /pipelines"),
        "refusals are logged:\n{log}"
    );
    assert!(
        !log.contains(TOKEN) && !log.contains("guessed-token-7"),
        "tokens are never logged:\n{log}"
    );
}

/// Malformed, invalid and conflicting requests get a JSON answer that says what is wrong.
fn check_bad_requests(server: &Server) {
    let expect = |method: &str, path: &str, body: &str, status: u16, says: &str| {
        let (got, text) = server.request(method, path, Some(body));
        assert_eq!(got, status, "{method} {path} {body}: {text}");
        assert!(
            text.contains(says),
            "{method} {path} {body}: the answer says {says:?}: {text}"
        );
        serde_json::from_str::<Value>(&text).expect("errors are JSON")
    };
    expect("POST", "/pipelines", "{not json", 400, "invalid pipeline");
    expect(
        "POST",
        "/pipelines",
        r#"{"name": 5, "source": {"url": "clip.y4m"}, "sink": {"url": "null"}}"#,
        400,
        "invalid type",
    );
    expect(
        "POST",
        "/pipelines",
        r#"{"name": "x", "source": {"url": "clip.y4m", "colour": 1}, "sink": {"url": "null"}}"#,
        400,
        "unknown field `colour`",
    );
    let invalid = expect(
        "POST",
        "/pipelines",
        r#"{"name": "x", "source": {"url": "clip.y4m"}, "filter": {"mask": "box:size=4", "streams": 99, "frames_per_stream": 0}, "sink": {"url": "null"}}"#,
        400,
        "3 problems",
    );
    let problems = invalid["problems"].as_array().unwrap();
    assert!(problems.iter().any(|p| p.as_str().unwrap().contains("size: 4 is even")));
    assert!(problems
        .iter()
        .any(|p| p.as_str().unwrap().contains("streams: 99 is out of range")));
    assert!(problems
        .iter()
        .any(|p| p.as_str().unwrap().contains("frames_per_stream: 0 is out of range")));
    expect(
        "POST",
        "/pipelines",
        r#"{"name": "one", "source": {"url": "clip.y4m"}, "sink": {"url": "null"}}"#,
        409,
        "exists already",
    );
    expect("PUT", "/pipelines/one/filter", "{}", 400, "nothing to change");
    expect(
        "PUT",
        "/pipelines/one/filter",
        r#"{"mask": "gausian"}"#,
        400,
        "did you mean `gaussian`",
    );
    expect(
        "PUT",
        "/pipelines/one/filter",
        r#"{"device": "cpu"}"#,
        400,
        "unknown field `device`",
    );
    expect(
        "PUT",
        "/pipelines/nope/filter",
        r#"{"mask": "box"}"#,
        404,
        "no pipeline named",
    );
    assert_eq!(server.request("GET", "/pipelines/nope", None).0, 404);
    assert_eq!(server.request("DELETE", "/pipelines/nope", None).0, 404);
    assert_eq!(server.request("GET", "/no/such/endpoint", None).0, 404);
}

/// A pipeline started through the API runs, and DELETE drains and removes it.
fn check_api_pipeline_runs_and_is_deleted(server: Server) {
    let (status, body) = server.request(
        "POST",
        "/pipelines",
        Some(r#"{"name": "extra", "source": {"url": "clip.y4m", "realtime": true, "loop": true}, "filter": {"mask": "emboss", "device": "cpu"}, "sink": {"url": "null"}}"#),
    );
    assert_eq!(status, 201, "{body}");
    server.wait_for("extra to run", Duration::from_secs(20), || {
        server.counter("extra", "frames_written") > 5
    });
    assert_eq!(server.pipeline("extra")["origin"], "api");
    let (status, body) = server.request("DELETE", "/pipelines/extra", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.request("GET", "/pipelines/extra", None).0, 404);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("panicked"));
}

#[test]
fn a_config_naming_an_unset_token_variable_is_refused_at_start() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 5);
    write_config(
        dir.path(),
        &format!("[server]\ntoken_env = \"CONVSTREAM_UNSET_TOKEN\"\n{}", looping("one")),
    );
    let mut child = convstream()
        .args([
            "serve",
            "--config",
            "config.toml",
            "--listen",
            &format!("127.0.0.1:{}", free_tcp_port()),
        ])
        .env_remove("CONVSTREAM_UNSET_TOKEN")
        .current_dir(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("CONVSTREAM_UNSET_TOKEN, which is not set"), "{stderr}");
}

#[test]
fn a_second_signal_stops_at_once() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 250);
    // A FIFO whose reader never reads: once the pipe is full the sink waits, and after a stop
    // it may wait half of the 60 s allowed, so the first stop cannot finish soon; the second
    // signal must not wait for it.
    let fifo = Command::new("mkfifo")
        .arg(dir.path().join("stuck.y4m"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let mut reader = Command::new("sh")
        .args(["-c", "exec 3< stuck.y4m; sleep 60"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    write_config(
        dir.path(),
        r#"
[server]
shutdown_timeout = 60.0

[[pipeline]]
name = "stuck"
source = { url = "clip.y4m" }
filter = { mask = "box", device = "cpu" }
sink = { url = "stuck.y4m" }
"#,
    );
    let mut server = Server::start(dir.path(), &[]);
    server.wait_for("the sink to fill the pipe", Duration::from_secs(10), || {
        server.counter("stuck", "frames_written") >= 10
    });
    server.signal("-TERM");
    server.wait_for("the drain to begin", Duration::from_secs(10), || {
        server.log_text().contains("draining every pipeline")
    });
    server.signal("-TERM");
    let mut child = server.child.take().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a second signal exits at once"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = reader.kill();
    let _ = reader.wait();
    let log = server.log_text();
    assert!(!log.contains("panicked"), "{log}");
    assert_eq!(status.code(), Some(130), "{log}");
    assert!(log.contains("second signal"), "{log}");
}

#[test]
fn drop_oldest_loses_frames_when_the_filter_falls_behind_and_counts_them() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 320, 240, 60);
    // Not paced, and a 31x31 mask on the CPU: the decoder runs far ahead of the filter.
    write_config(
        dir.path(),
        r#"
[[pipeline]]
name = "slow"
source = { url = "clip.y4m", drop = "oldest" }
filter = { mask = "box:size=31", device = "cpu" }
sink = { url = "out.y4m" }
"#,
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("the end of the input", Duration::from_secs(60), || {
        server.pipeline("slow")["state"] == "finished"
    });
    let counters = server.pipeline("slow")["counters"].clone();
    let (decoded, dropped, written) = (
        counters["frames_decoded"].as_u64().unwrap(),
        counters["frames_dropped"].as_u64().unwrap(),
        counters["frames_written"].as_u64().unwrap(),
    );
    assert_eq!(decoded, 60, "{counters}");
    assert!(dropped > 0, "the filter fell behind, frames were dropped: {counters}");
    assert_eq!(
        written + dropped,
        decoded,
        "every frame is written or counted as dropped"
    );
    assert_eq!(
        server.metric("convstream_frames_dropped_total", "slow"),
        Some(dropped as f64)
    );
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(Y4m::read(&dir.path().join("out.y4m")).frames.len() as u64, written);
}

// ---- outputs never destroy data ----

/// A paced, looping pipeline of `clip.y4m` into `output` (a TOML table).
/// A `[server]` table that lets API pipelines use files in the test's folder.
const API_FILES_HERE: &str = "[server]\nallow_paths = [\".\"]\n";

fn recording(name: &str, output: &str) -> String {
    format!(
        "[[pipeline]]\nname = \"{name}\"\nsource = {{ url = \"clip.y4m\", realtime = true, loop = true }}\nfilter = {{ mask = \"box\", device = \"cpu\" }}\nsink = {{ url = \"{output}\" }}\n"
    )
}

#[test]
fn a_pipeline_on_a_file_another_uses_is_refused_with_409() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(dir.path(), &format!("{API_FILES_HERE}{}", recording("rec", "rec.mkv")));
    let server = Server::start(dir.path(), &[]);
    server.wait_for("rec to run", Duration::from_secs(20), || {
        server.pipeline("rec")["state"] == "running"
    });
    let body = |name: &str, input: &str, output: &str| {
        format!(
            r#"{{"name": "{name}", "source": {{"url": "{input}", "realtime": true, "loop": true}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "{output}", "overwrite": true}}}}"#
        )
    };
    // Its output, by another name: consent to replace a file does not reach a file in use.
    let (status, answer) = server.request("POST", "/pipelines", Some(&body("dup", "clip.y4m", "./rec.mkv")));
    assert_eq!(status, 409, "{answer}");
    assert!(answer.contains("is the file pipeline \\\"rec\\\" writes"), "{answer}");
    // Its input.
    let (status, answer) = server.request("POST", "/pipelines", Some(&body("dup", "rec.mkv", "clip.y4m")));
    assert_eq!(status, 409, "{answer}");
    assert!(answer.contains("the input of pipeline \\\"rec\\\""), "{answer}");
    assert_eq!(names(&server), ["rec"]);

    // A pipeline of the API holds api.mkv: a reload cannot give that file to the config's.
    let (status, answer) = server.request("POST", "/pipelines", Some(&body("api", "clip.y4m", "api.mkv")));
    assert_eq!(status, 201, "{answer}");
    write_config(
        dir.path(),
        &format!(
            "{API_FILES_HERE}{}{}",
            recording("rec", "rec.mkv"),
            recording("late", "api.mkv")
        ),
    );
    server.wait_for("the reload to refuse late", Duration::from_secs(10), || {
        server.log_text().contains("the config's pipeline is not started")
    });
    assert_eq!(names(&server), ["api", "rec"]);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(readable_frames(&dir.path().join("rec.mkv")) > 0);
    assert!(readable_frames(&dir.path().join("api.mkv")) > 0);
}

#[test]
fn a_restart_writes_beside_what_the_pipeline_wrote_and_keeps_older_files() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    std::fs::write(dir.path().join("cam1.mkv"), b"from before the service").unwrap();
    write_config(
        dir.path(),
        &format!("{API_FILES_HERE}{}", recording("cam1", "cam1.mkv")),
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("cam1 to write 30 frames", Duration::from_secs(20), || {
        server.counter("cam1", "frames_written") >= 30
    });
    // Only frames_per_stream changes: a restart.
    write_config(
        dir.path(),
        &format!(
            "{API_FILES_HERE}{}",
            recording("cam1", "cam1.mkv").replace("device = \"cpu\"", "device = \"cpu\", frames_per_stream = 1")
        ),
    );
    server.wait_for("cam1 to restart and write again", Duration::from_secs(20), || {
        let cam1 = server.pipeline("cam1");
        cam1["counters"]["restarts"] == 1 && cam1["counters"]["frames_written"].as_u64().unwrap() >= 10
    });
    // The numbered file it writes now is in use as well.
    let (status, answer) = server.request(
        "POST",
        "/pipelines",
        Some(r#"{"name": "late", "source": {"url": "clip.y4m"}, "filter": {"device": "cpu"}, "sink": {"url": "cam1.2.mkv", "overwrite": true}}"#),
    );
    assert_eq!(status, 409, "{answer}");
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(
        std::fs::read(dir.path().join("cam1.mkv")).unwrap(),
        b"from before the service",
        "a file from before is kept without overwrite"
    );
    let first = video_pts(&dir.path().join("cam1.1.mkv")).len();
    let second = video_pts(&dir.path().join("cam1.2.mkv")).len();
    assert!(first >= 30, "the first run's recording is whole: {first} frames\n{log}");
    assert!(second >= 10, "the restart wrote beside it: {second} frames\n{log}");
    assert!(log.contains("cam1.mkv exists and is kept"), "{log}");
}

#[test]
fn mp4_outputs_of_serve_are_fragmented_and_survive_sigkill() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    write_config(
        dir.path(),
        &format!("{}{}", recording("mp4", "rec.mp4"), recording("ts", "rec.ts")),
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("both to write 75 frames", Duration::from_secs(20), || {
        server.counter("mp4", "frames_written") >= 75 && server.counter("ts", "frames_written") >= 75
    });
    server.signal("-KILL");
    drop(server);
    let mp4 = readable_frames(&dir.path().join("rec.mp4"));
    let ts = readable_frames(&dir.path().join("rec.ts"));
    eprintln!("after SIGKILL at 75+ frames written: mp4 {mp4} frames readable, ts {ts}");
    // Up to a second (25 frames) and the encoder's delay may be lost.
    assert!(mp4 >= 25, "mp4: {mp4} frames readable");
    assert!(ts >= 25, "ts: {ts} frames readable");
}

#[test]
fn sigterm_ends_serve_within_the_timeout_when_a_sink_blocks() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 160, 120, 25);
    let fifo = dir.path().join("stuck.y4m");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A reader that opens the FIFO and never reads: the writer blocks once the pipe is full.
    let reader_end = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::File::options()
            .read(true)
            .custom_flags(0o4000) // O_NONBLOCK: do not wait for the writer
            .open(&fifo)
            .unwrap()
    };
    write_config(
        dir.path(),
        &format!(
            "[server]\nshutdown_timeout = 2.0\n{}{}",
            recording("stuck", "stuck.y4m"),
            recording("rec", "rec.mkv")
        ),
    );
    let server = Server::start(dir.path(), &[]);
    server.wait_for("rec to write and stuck to block", Duration::from_secs(20), || {
        server.counter("rec", "frames_written") >= 50
    });
    let stuck_written = server.counter("stuck", "frames_written");
    assert!(stuck_written < 10, "stuck is blocked: {stuck_written} frames written");
    let started = Instant::now();
    let (code, log) = server.terminate();
    let took = started.elapsed();
    drop(reader_end);
    assert!(
        took < Duration::from_secs(4),
        "stopped after {took:?} (timeout 2 s):\n{log}"
    );
    assert_eq!(code, Some(0), "both pipelines ended within the timeout:\n{log}");
    assert!(readable_frames(&dir.path().join("rec.mkv")) >= 50, "{log}");
}

//! A host full of pipelines, as `serve` runs them: `/readyz` turns 200 only once every
//! pipeline has written frames for a while without dropping one (and says what each waits
//! for until then), pipelines start a few at a time (`[server] starting_at_once`), and the
//! page-locked memory budget (`[server] pinned_memory_mb`) is in the metrics; NVDEC seats
//! measured by `bench` (`[server] nvdec_seats_file`) are checked as the config is. CPU engine.

use crate::common;

use std::time::{Duration, Instant};

use common::server::Server;
use common::{make_clip, Clip};
use convstream_testkit::tempdir;
use serde_json::Value;

/// `count` looping real-time pipelines on the CPU, with `server` settings first.
fn config(server: &str, count: usize) -> String {
    let mut text = format!("[server]\n{server}\n");
    for i in 0..count {
        text.push_str(&format!(
            "[[pipeline]]\nname = \"cam{i}\"\nsource = {{ url = \"clip.y4m\", realtime = true, loop = true, drop = \"oldest\" }}\nfilter = {{ mask = \"box\", device = \"cpu\" }}\nsink = {{ url = \"null\" }}\n"
        ));
    }
    text
}

#[test]
fn ready_waits_for_frames_without_drops_and_says_what_each_pipeline_waits_for() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    std::fs::write(
        dir.path().join("config.toml"),
        config("starting_at_once = 1\npinned_memory_mb = 64", 3),
    )
    .unwrap();
    let server = Server::start(dir.path(), &[]);
    let began = Instant::now();
    let mut reasons: Vec<String> = Vec::new();
    loop {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "never ready; said: {reasons:?}"
        );
        let (status, body) = server.request("GET", "/readyz", None);
        let answer: Value = serde_json::from_str(&body).unwrap_or_default();
        if status == 200 {
            assert_eq!(answer["ready"], true, "{body}");
            break;
        }
        assert_eq!(status, 503, "{body}");
        let waiting = answer["not_ready"].as_object().cloned().unwrap_or_default();
        assert!(!waiting.is_empty(), "a 503 names the pipelines not ready: {body}");
        reasons.extend(waiting.values().filter_map(|why| why.as_str().map(String::from)));
        std::thread::sleep(Duration::from_millis(50));
    }
    // Each pipeline had written frames for 3 s (STEADY_FOR) by then.
    for i in 0..3 {
        let view = server.pipeline(&format!("cam{i}"));
        let first_frame = view["startup"]["first_frame"].as_f64().expect("a first frame");
        let uptime = view["uptime_seconds"].as_f64().unwrap();
        assert!(
            uptime - first_frame >= 3.0,
            "cam{i} counted as ready {:.2} s after its first frame",
            uptime - first_frame
        );
    }
    assert!(
        reasons
            .iter()
            .any(|why| why.contains("warming up") || why.contains("no frame written yet")),
        "a pipeline with frames, not yet steady, says so: {reasons:?}"
    );
    // Ready stays ready, and the budget is the config's.
    assert_eq!(server.request("GET", "/readyz", None).0, 200);
    let scrape = server.scrape();
    let budget = scrape
        .samples
        .iter()
        .find(|s| s.metric == "convstream_pinned_memory_budget_bytes")
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        });
    assert_eq!(budget, Some(64.0 * 1024.0 * 1024.0));
    assert!(
        scrape.samples.iter().any(|s| s.metric == "convstream_gpu_memory_bytes"),
        "the lanes' GPU memory is a gauge per pipeline"
    );
}

#[test]
fn a_pipeline_behind_its_real_time_input_is_not_ready_though_it_drops_nothing() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    // The same pictures announced at 2,000 frames per second, through a 31x31 mask on the
    // CPU: real-time pacing falls behind at once, and the default policy (wait for room in
    // the queue) drops nothing, so only the pace says it does not keep up.
    let fast = make_clip(dir.path(), "fast.y4m", Clip::Y4m, 640, 360, 50);
    let bytes = std::fs::read(&fast).unwrap();
    let header_end = bytes.iter().position(|&b| b == b'\n').unwrap();
    let header = String::from_utf8(bytes[..header_end].to_vec()).unwrap();
    assert!(header.contains(" F25:1"), "{header}");
    let mut announced_fast = header.replace(" F25:1", " F2000:1").into_bytes();
    announced_fast.extend_from_slice(&bytes[header_end..]);
    std::fs::write(&fast, announced_fast).unwrap();
    let mut text = config("", 1);
    text.push_str(
        "[[pipeline]]\nname = \"behind\"\nsource = { url = \"fast.y4m\", realtime = true, loop = true }\nfilter = { mask = \"gaussian:size=31\", device = \"cpu\" }\nsink = { url = \"null\" }\n",
    );
    std::fs::write(dir.path().join("config.toml"), text).unwrap();
    let server = Server::start(dir.path(), &[]);
    // Watched for 3 s beyond the time it needs to count as ready (STEADY_FOR, 3 s).
    server.wait_for("`behind` to write frames", Duration::from_secs(30), || {
        server.pipeline("behind")["counters"]["frames_written"].as_u64() > Some(0)
    });
    let watched = Instant::now();
    let mut said = String::new();
    while watched.elapsed() < Duration::from_secs(6) {
        let (status, body) = server.request("GET", "/readyz", None);
        assert_eq!(status, 503, "ready while `behind` cannot keep its input's pace: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        said = answer["not_ready"]["behind"].as_str().unwrap_or_default().to_string();
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(said.contains("behind its input's real-time pace"), "{said}");
    let view = server.pipeline("behind");
    assert_eq!(view["state"], "running", "{view}");
    assert_eq!(view["counters"]["frames_dropped"], 0, "{view}");
    assert!(
        view["counters"]["frames_late"].as_u64() > Some(0),
        "late frames are counted: {view}"
    );
    let late = server
        .scrape()
        .samples
        .into_iter()
        .find(|s| s.metric == "convstream_frames_late_total" && s.labels.get("pipeline") == Some("behind"))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        });
    assert!(late > Some(0.0), "and in the metrics: {late:?}");
    // The pipeline that keeps its pace is ready meanwhile: only `behind` is named (looked
    // at until then, since a loaded test host may make `cam0` late for a moment too).
    let mut named: Vec<String> = Vec::new();
    server.wait_for("only `behind` to be named not ready", Duration::from_secs(20), || {
        let (_, body) = server.request("GET", "/readyz", None);
        let answer: Value = serde_json::from_str(&body).unwrap_or_default();
        named = answer["not_ready"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        named == ["behind"]
    });
    assert_eq!(named, ["behind"]);
}

#[test]
fn pipelines_start_one_at_a_time_when_asked_and_those_waiting_say_so() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    // Two pipelines write to FIFOs nobody reads: their outputs never open, so each holds its
    // turn for the longest turn (5 s), and whoever comes after waits, saying so. The third
    // writes to a null sink.
    let mut text = config("starting_at_once = 1", 3);
    for i in 0..2 {
        common::mkfifo(&dir.path().join(format!("nobody-reads-{i}.fifo")));
        text = text.replacen(
            "sink = { url = \"null\" }",
            &format!("sink = {{ url = \"nobody-reads-{i}.fifo\", format = \"nut\" }}"),
            1,
        );
    }
    std::fs::write(dir.path().join("config.toml"), text).unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut waits: std::collections::BTreeMap<String, (Instant, Instant)> = Default::default();
    let mut told_by_readyz = false;
    // The turns' order is not fixed: cam2 may go first and write at once, so the wait goes on
    // until one pipeline has also been seen waiting for 3 s behind a FIFO's turn.
    let longest_wait = |waits: &std::collections::BTreeMap<String, (Instant, Instant)>| {
        waits
            .values()
            .map(|(first, last)| *last - *first)
            .max()
            .unwrap_or_default()
    };
    server.wait_for("cam2 to write frames after a 3 s wait", Duration::from_secs(40), || {
        let now = Instant::now();
        for view in server.get("/pipelines")["pipelines"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let waiting = view["waiting_for"]
                .as_str()
                .is_some_and(|why| why.contains("its turn to start") && why.contains("starting_at_once"));
            if waiting {
                let name = view["name"].as_str().unwrap_or_default().to_string();
                waits.entry(name).or_insert((now, now)).1 = now;
                let (status, body) = server.request("GET", "/readyz", None);
                told_by_readyz |= status == 503 && body.contains("its turn to start");
            }
        }
        server.counter("cam2", "frames_written") > 0 && longest_wait(&waits) >= Duration::from_secs(3)
    });
    let longest = longest_wait(&waits);
    assert!(
        longest >= Duration::from_secs(3),
        "a pipeline waited while another held its turn: {waits:?}"
    );
    assert!(told_by_readyz, "/readyz names the wait");
    assert_eq!(server.counter("cam0", "frames_written"), 0);
    assert_eq!(server.counter("cam1", "frames_written"), 0);
}

#[test]
fn a_measured_nvdec_seats_file_is_checked_with_the_config_and_bench_names_only_gpus_the_host_has() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let check = |server: &str| {
        std::fs::write(dir.path().join("config.toml"), config(server, 1)).unwrap();
        let out = common::convstream()
            .args(["check", "--config"])
            .arg(dir.path().join("config.toml"))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // What `bench` writes, relative to the config's folder.
    std::fs::write(
        dir.path().join("nvdec-seats.toml"),
        "measured_with = \"by hand\"\n[seats_per_gpu]\n\"NVIDIA H200\" = 44\n",
    )
    .unwrap();
    let (code, stderr) = check("nvdec_seats_file = \"nvdec-seats.toml\"");
    assert_eq!(code, Some(0), "{stderr}");
    // A file not there yet is nothing measured (`serve` writes the seats it learns there).
    let (code, stderr) = check("nvdec_seats_file = \"absent.toml\"");
    assert_eq!(code, Some(0), "{stderr}");
    // One without a folder to be written in, and a file that is not one, are listed with
    // every other problem.
    let (code, stderr) = check("nvdec_seats_file = \"nowhere/absent.toml\"\nmax_pipelines = 0");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("server.nvdec_seats_file") && stderr.contains("nor a folder"),
        "{stderr}"
    );
    assert!(
        stderr.contains("server.max_pipelines"),
        "every problem at once: {stderr}"
    );
    std::fs::write(dir.path().join("secret.toml"), "token = \"s3cr3t-value\"\n").unwrap();
    let (code, stderr) = check("nvdec_seats_file = \"secret.toml\"");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not a measured NVDEC seats file"), "{stderr}");
    assert!(
        !stderr.contains("s3cr3t-value"),
        "the file's contents stay out of the error: {stderr}"
    );
    // `bench --gpus` takes only GPUs the host has, before measuring anything.
    let out = common::convstream()
        .args([
            "bench",
            "--suite",
            "scale",
            "--decoder",
            "nvdec",
            "--gpus",
            "4096",
            "--out",
        ])
        .arg(dir.path().join("bench"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("GPU 4096") && stderr.contains("not on this host"),
        "{stderr}"
    );
}

/// The value of a process-wide `metric` (no labels) in a fresh scrape.
fn process_metric(server: &Server, metric: &str) -> Option<f64> {
    server
        .scrape()
        .samples
        .into_iter()
        .find(|s| s.metric == metric)
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

#[test]
fn a_process_stopped_for_seconds_says_it_stood_still_and_counts_it() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    std::fs::write(dir.path().join("config.toml"), config("", 1)).unwrap();
    let server = Server::start(dir.path(), &[]);
    server.wait_for("frames written", Duration::from_secs(30), || {
        server.counter("cam0", "frames_written") > 0
    });
    let before = process_metric(&server, "convstream_process_pauses_total").expect("the pause counter");
    let paused_before = process_metric(&server, "convstream_process_paused_seconds_total").expect("the pause time");
    // What a paused virtual machine or a frozen cgroup does to the process: nothing of it runs.
    server.signal("-STOP");
    std::thread::sleep(Duration::from_millis(2_500));
    server.signal("-CONT");
    server.wait_for("the pause said", Duration::from_secs(10), || {
        server.log_text().contains("the process stood still for")
    });
    let log = server.log_text();
    let line = log.lines().find(|l| l.contains("stood still")).unwrap();
    assert!(line.contains("WARN"), "{line}");
    let said: f64 = line
        .split("stood still for ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or_else(|| panic!("the pause's length: {line}"));
    assert!((2.0..10.0).contains(&said), "stopped 2.5 s, said {said} s: {line}");
    let pauses = process_metric(&server, "convstream_process_pauses_total").unwrap();
    let paused = process_metric(&server, "convstream_process_paused_seconds_total").unwrap();
    assert!(pauses > before, "counted: {before} -> {pauses}");
    assert!(
        paused - paused_before >= 2.0,
        "its length counted: {paused_before} -> {paused}"
    );
    // The pipeline goes on after it.
    let written = server.counter("cam0", "frames_written");
    server.wait_for("frames after the pause", Duration::from_secs(10), || {
        server.counter("cam0", "frames_written") > written
    });
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

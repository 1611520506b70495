//! Limits on what a config or a request can make the process hold: pipelines
//! (`[server] max_pipelines`), encoder threads (`sink.options.threads`, smaller through the
//! API). Each is refused with the allowed range, before anything starts.

use crate::common;

use std::time::Duration;

use common::server::Server;

const PIPELINE: &str = "[[pipeline]]\nname = \"NAME\"\nsource = { url = \"udp://127.0.0.1:9\" }\nfilter = { device = \"cpu\" }\nsink = { url = \"null\" }\n";

#[test]
fn serve_holds_at_most_max_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("config.toml"),
        format!("[server]\nmax_pipelines = 2\n{}", PIPELINE.replace("NAME", "one")),
    )
    .unwrap();
    let serve = Server::start(root, &[]);
    let body = |name: &str| {
        format!(
            r#"{{"name": "{name}", "source": {{"url": "udp://127.0.0.1:{}"}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "null"}}}}"#,
            common::server::free_udp_port()
        )
    };
    let (status, answer) = serve.json("POST", "/pipelines", &body("two"));
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = serve.json("POST", "/pipelines", &body("three"));
    assert_eq!(status, 429, "{answer}");
    assert!(answer.contains("max_pipelines allows (2)"), "{answer}");
    assert_eq!(serve.names(), ["one", "two"]);
    // Deleting one makes room.
    assert_eq!(serve.json("DELETE", "/pipelines/two", "").0, 200);
    let (status, answer) = serve.json("POST", "/pipelines", &body("three"));
    assert_eq!(status, 201, "{answer}");
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");

    // A config with more pipelines than its limit is refused by check.
    let config = format!(
        "[server]\nmax_pipelines = 1\n{}{}",
        PIPELINE.replace("NAME", "a"),
        PIPELINE.replace("NAME", "b")
    );
    std::fs::write(root.join("two.toml"), config).unwrap();
    let run = common::run_in(root, &["check", "--config", "two.toml"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("more than server.max_pipelines (1)"),
        "{}",
        run.stderr
    );
}

#[test]
fn encoder_threads_have_a_range_and_a_smaller_one_through_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = PIPELINE.replace("NAME", "one").replace(
        "sink = { url = \"null\" }",
        "sink = { url = \"out.mkv\", options = { threads = \"100000\" } }",
    );
    std::fs::write(root.join("config.toml"), &config).unwrap();
    let run = common::run_in(root, &["check", "--config", "config.toml"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("sink.options.threads: `100000` is out of range; allowed 0..=64"),
        "{}",
        run.stderr
    );
    std::fs::write(root.join("config.toml"), PIPELINE.replace("NAME", "one")).unwrap();
    let serve = Server::start(root, &[]);
    for (place, body) in [
        (
            "sink.options.threads",
            r#"{"name": "t", "source": {"url": "udp://127.0.0.1:9"}, "filter": {"device": "cpu"}, "sink": {"url": "udp://127.0.0.1:9", "format": "mpegts", "options": {"threads": "2000"}}}"#,
        ),
        (
            "source.threads",
            r#"{"name": "t", "source": {"url": "udp://127.0.0.1:9", "threads": 64}, "filter": {"device": "cpu"}, "sink": {"url": "null"}}"#,
        ),
    ] {
        let (status, answer) = serve.json("POST", "/pipelines", body);
        assert_eq!(status, 400, "{place}: {answer}");
        assert!(answer.contains(place) && answer.contains("allowed 0..=16"), "{answer}");
    }
    assert_eq!(serve.names(), ["one"]);
    let threads = serve.threads().len();
    assert!(threads < 100, "{threads} threads");
    let (code, log) = serve.terminate_within(Duration::from_secs(30));
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn absurd_frame_sizes_are_refused_before_a_frame_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Endless raw video of 16000x16000: refused from the header's size, at once.
    std::fs::write(
        root.join("raw.toml"),
        "[[pipeline]]\nname = \"raw\"\nsource = { url = \"/dev/zero\", format = \"rawvideo\", options = { video_size = \"16000x16000\", pixel_format = \"yuv420p\" } }\nfilter = { device = \"cpu\" }\nsink = { url = \"out.mkv\" }\n",
    )
    .unwrap();
    let mut y4m = b"YUV4MPEG2 W16000 H16000 F25:1 Ip A1:1 C420jpeg\nFRAME\n".to_vec();
    y4m.extend(std::iter::repeat_n(0u8, 1000));
    std::fs::write(root.join("big.y4m"), y4m).unwrap();
    for args in [
        vec!["run", "--config", "raw.toml"],
        vec!["run", "-i", "big.y4m", "-o", "out.mkv", "--device", "cpu"],
    ] {
        let started = std::time::Instant::now();
        let run = common::run_in(root, &args);
        run.assert_no_panic();
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("16000x16000 (256.0 megapixels)"), "{}", run.stderr);
        assert!(run.stderr.contains("8192x8192"), "names the limit: {}", run.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert!(!root.join("out.mkv").exists());
    }
    // A y4m header with a size FFmpeg refuses: FFmpeg's reason first, not an errno's text.
    std::fs::write(root.join("zero.y4m"), b"YUV4MPEG2 W0 H48 F25:1 C420jpeg\nFRAME\nabc").unwrap();
    let run = common::run_in(root, &["run", "-i", "zero.y4m", "-o", "out.mkv", "--device", "cpu"]);
    run.assert_no_panic();
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains("zero.y4m: Picture size 0x48 is invalid"),
        "the cause first: {}",
        run.stderr
    );
}

//! What `serve` may open and write, against links, content-detected formats and raw
//! outputs: a link at an output's name is never followed (its target is kept), the config
//! file is never written under any name, an allowed file whose bytes are a playlist cannot
//! make FFmpeg read files outside `[server] allow_paths`, and an API pipeline cannot write
//! raw bytes or a playlist. CPU engine: no GPU needed.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::server::Server;
use common::{make_clip, Clip};

fn start_serve(dir: &Path, config: &str) -> Server {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    Server::start(dir, &[])
}

fn post(serve: &Server, source: &str, sink: &str, extra: &str) -> (u16, String) {
    serve.json(
        "POST",
        "/pipelines",
        &format!(
            r#"{{"name": "api", "source": {{"url": "{source}"}}, "filter": {{"device": "cpu"}}, "sink": {{"url": "{sink}"{extra}}}}}"#
        ),
    )
}

#[test]
fn links_playlists_and_raw_outputs_never_reach_past_allow_paths_or_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("media")).unwrap();
    make_clip(root, "media/clip.y4m", Clip::Y4m, 64, 48, 5);
    make_clip(root, "outside.ts", Clip::Mpeg2Ts, 64, 48, 5);
    std::fs::write(root.join("outside.y4m"), "precious outside").unwrap();
    std::os::unix::fs::symlink("../outside.y4m", root.join("media/link.y4m")).unwrap();
    std::os::unix::fs::symlink("../config.toml", root.join("media/config-link.y4m")).unwrap();
    // An allowed file whose bytes are an HLS playlist naming a file outside the folder.
    std::fs::write(
        root.join("media/list.m3u8"),
        "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n../outside.ts\n#EXT-X-ENDLIST\n",
    )
    .unwrap();
    // Config-file pipelines with consent to replace: through a link to a file outside,
    // and the config file by its own name. Neither file may be written.
    let config = r#"
[server]
allow_paths = ["media"]
watch = false

[[pipeline]]
name = "through-link"
source = { url = "media/clip.y4m" }
filter = { device = "cpu" }
sink = { url = "media/link.y4m", overwrite = true }

[[pipeline]]
name = "by-name"
source = { url = "media/clip.y4m" }
filter = { device = "cpu" }
sink = { url = "config.toml", format = "yuv4mpegpipe", overwrite = true }
"#;
    let serve = start_serve(root, config);
    let config_before = std::fs::read(root.join("config.toml")).unwrap();
    let ended = |name: &str| {
        let state = serve.pipeline(name)["state"].clone();
        state == "finished" || state == "failed"
    };
    serve.wait_for("the config's pipelines to end", Duration::from_secs(30), || {
        ended("through-link") && ended("by-name")
    });
    assert_eq!(serve.pipeline("through-link")["state"], "finished");
    // The link itself was replaced by the output; the file it named is untouched.
    let written = std::fs::symlink_metadata(root.join("media/link.y4m")).unwrap();
    assert!(written.is_file(), "the link is replaced by the new file");
    assert_eq!(std::fs::read(root.join("outside.y4m")).unwrap(), b"precious outside");
    std::os::unix::fs::symlink("../outside.y4m", root.join("media/link2.y4m")).unwrap();
    let by_name = serve.pipeline("by-name");
    assert_eq!(by_name["state"], "failed", "{by_name}");
    let error = by_name["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("config file"), "{error}");
    assert_eq!(std::fs::read(root.join("config.toml")).unwrap(), config_before);

    // Through the API: a link at the output's name is refused before anything opens.
    for link in ["media/link2.y4m", "media/config-link.y4m"] {
        let answer = post(&serve, "media/clip.y4m", link, r#", "overwrite": true"#);
        assert_eq!(answer.0, 400, "{link}: {}", answer.1);
        assert!(answer.1.contains("symbolic link"), "{link}: {}", answer.1);
    }
    // Raw bytes and playlists are not written through the API, by extension or by name.
    for (sink, extra) in [
        ("media/out.yuv", ""),
        ("media/out.m3u8", ""),
        ("media/out.y4m", r#", "format": "rawvideo""#),
    ] {
        let answer = post(&serve, "media/clip.y4m", sink, extra);
        assert_eq!(answer.0, 400, "{sink} {extra}: {}", answer.1);
        assert!(answer.1.contains("muxer"), "{sink}: {}", answer.1);
    }
    assert!(!root.join("media/out.yuv").exists() && !root.join("media/out.m3u8").exists());
    // A playlist inside the folder: FFmpeg may not open it as one (its segment is outside).
    let answer = post(&serve, "media/list.m3u8", "media/from-list.y4m", "");
    assert_eq!(answer.0, 201, "{}", answer.1);
    serve.wait_for("the playlist pipeline to end", Duration::from_secs(30), || ended("api"));
    let view = serve.pipeline("api");
    assert_eq!(view["state"], "failed", "{view}");
    let error = view["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("whitelist"), "names the refused format: {error}");
    assert!(!root.join("media/from-list.y4m").exists(), "nothing read from outside");

    assert_eq!(std::fs::read(root.join("outside.y4m")).unwrap(), b"precious outside");
    assert_eq!(std::fs::read(root.join("config.toml")).unwrap(), config_before);
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn url_credentials_are_shown_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = r#"
[[pipeline]]
name = "cam"
source = { url = "rtsp://admin:hunter2-secret@127.0.0.1:9/stream", reconnect = { initial = 0.1, max = 0.2 } }
filter = { device = "cpu" }
sink = { url = "null" }
"#;
    let serve = start_serve(root, config);
    let body = r#"{"name": "api", "source": {"url": "rtsp://user:s3cret-pass@127.0.0.1:9/x"}, "filter": {"device": "cpu"}, "sink": {"url": "udp://viewer:out-secret@127.0.0.1:9", "format": "mpegts"}}"#;
    let (status, answer) = serve.json("POST", "/pipelines", body);
    assert_eq!(status, 201, "{answer}");
    // Long enough for both to fail to connect and log it.
    serve.wait_for("the failed connections to be logged", Duration::from_secs(20), || {
        serve.log_text().matches("127.0.0.1:9").count() >= 4
    });
    let (_, listed) = serve.request("GET", "/pipelines", None);
    let (_, one) = serve.request("GET", "/pipelines/cam", None);
    // A refused request that quotes the URL back.
    let refused = serve.json(
        "POST",
        "/pipelines",
        r#"{"name": "bad", "source": {"url": "rtsp://x:refused-secret@h/x"}, "sink": {"url": "null"}, "filter": {"mask": "nope"}}"#,
    );
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
    for secret in ["hunter2-secret", "s3cret-pass", "out-secret", "refused-secret"] {
        for (what, text) in [
            ("GET /pipelines", &listed),
            ("GET /pipelines/cam", &one),
            ("the refusal", &refused.1),
            ("the log", &log),
        ] {
            assert!(!text.contains(secret), "{what} shows {secret:?}:\n{text}");
        }
    }
    assert!(
        listed.contains("rtsp://***@127.0.0.1:9/stream"),
        "the URL is shown without its credentials: {listed}"
    );

    // `run`'s error line and log too (not live, so it ends at the first refusal).
    std::fs::write(
        root.join("run.toml"),
        "[[pipeline]]\nname = \"r\"\nsource = { url = \"rtsp://admin:run-secret@127.0.0.1:9/x\", live = false }\nfilter = { device = \"cpu\" }\nsink = { url = \"null\" }\n",
    )
    .unwrap();
    let run = common::run_in(root, &["run", "--config", "run.toml"]);
    assert_ne!(run.code, Some(0));
    run.assert_no_panic();
    assert!(run.stderr.contains("127.0.0.1:9"), "{}", run.stderr);
    assert!(!run.stderr.contains("run-secret"), "{}", run.stderr);
}

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let port = common::server::free_tcp_port();
    let listen = format!("0.0.0.0:{port}");
    let pipeline = "[[pipeline]]\nname = \"cam\"\nsource = { url = \"udp://127.0.0.1:9\" }\nfilter = { device = \"cpu\" }\nsink = { url = \"null\" }\n";
    let serve = |server: &str| {
        std::fs::write(root.join("config.toml"), format!("{server}{pipeline}")).unwrap();
        common::convstream()
            .args(["serve", "--config", "config.toml", "--listen", &listen])
            .current_dir(root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut refused = serve("");
    let started = std::time::Instant::now();
    while refused.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = refused.kill();
            let output = refused.wait_with_output().unwrap();
            panic!(
                "serve listened on {listen} without a token:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = refused.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("without a token") && stderr.contains("insecure_no_token"),
        "{stderr}"
    );
    // Said in the config: it serves, with a warning.
    let mut child = serve("[server]\ninsecure_no_token = true\n");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let started = std::time::Instant::now();
    let healthy = loop {
        let answer = agent.get(&format!("http://127.0.0.1:{port}/healthz")).call();
        if answer.is_ok_and(|a| a.status() == 200) {
            break true;
        }
        if started.elapsed() > Duration::from_secs(20) || child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    assert!(healthy, "{}", String::from_utf8_lossy(&output.stderr));
}

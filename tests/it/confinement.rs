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

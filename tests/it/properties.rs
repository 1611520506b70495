//! Property tests over everything a user or a client hands convstream to parse: TOML
//! configs and API request bodies (mask SPECs and files are core's:
//! `crates/core/tests/engines/mask_properties.rs`). Whatever the input, the answer
//! is a value or an error, never a panic, in bounded time; a valid result keeps its
//! promises (odd mask sides, finite taps, timeouts that convert to durations, API files
//! inside their folders); and errors stay short (they quote no more than a cut token).

use convstream_testkit::hostile::{config, mask_spec, text, value_text, MESSAGE_LIMIT, TIME_LIMIT};
use proptest::prelude::*;
use proptest::sample::select;
use std::path::Path;
use std::time::{Duration, Instant};

use convstream_config::{ConfigError, ConfigFile, PipelineConfig};
use convstream_media::output_problems;
use convstream_server::policy::ApiPolicy;

fn toml_string(value: &str) -> String {
    toml::Value::String(value.to_string()).to_string()
}

fn json_string(value: &str) -> String {
    serde_json::to_string(value).unwrap()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn configs_parse_and_validate_or_list_their_problems(
        server in proptest::collection::vec((select(vec!["shutdown_timeout", "watch", "listen", "token_env", "mask_dir", "bogus"]), toml_value()), 0..3),
        pipelines in proptest::collection::vec(pipeline_table(), 0..3),
    ) {
        let mut text = String::from("[server]\n");
        for (key, value) in &server {
            text.push_str(&format!("{key} = {value}\n"));
        }
        for pipeline in &pipelines {
            text.push_str(pipeline);
        }
        let started = Instant::now();
        match ConfigFile::parse(&text, "prop.toml", output_problems) {
            Ok(config) => match config.validate(None, output_problems) {
                Ok(settings) => {
                    // What validates runs: timeouts convert, thread counts are sane.
                    prop_assert!(Duration::try_from_secs_f64(settings.server.shutdown_timeout).is_ok());
                    for pipeline in &settings.pipelines {
                        prop_assert!(Duration::try_from_secs_f64(pipeline.source.idle_timeout).is_ok());
                        prop_assert!(Duration::try_from_secs_f64(pipeline.source.reconnect.max).is_ok());
                        prop_assert!(pipeline.source.threads <= 64);
                        prop_assert!(!pipeline.name.is_empty() && pipeline.name.len() <= 64);
                    }
                }
                Err(ConfigError::Invalid(problems)) => {
                    prop_assert!(!problems.is_empty());
                    for problem in problems.iter().map(ToString::to_string) {
                        prop_assert!(problem.len() < MESSAGE_LIMIT, "{problem}");
                        prop_assert!(!problem.contains('\n'), "{problem:?}");
                    }
                }
                Err(other) => prop_assert!(false, "validation gives a problem list, not {other}"),
            },
            Err(ConfigError::InvalidFile { problems, .. }) => {
                prop_assert!(!problems.is_empty());
                for problem in problems.iter().map(ToString::to_string) {
                    prop_assert!(!problem.contains('\n'), "{problem:?}");
                }
            }
            Err(_) => {}
        }
        prop_assert!(started.elapsed() < TIME_LIMIT, "took {:?}:\n{text}", started.elapsed());
    }

    #[test]
    fn api_bodies_are_refused_or_held_inside_their_folders(body in api_body()) {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("media");
        let masks = root.path().join("masks");
        std::fs::create_dir(&allowed).unwrap();
        std::fs::create_dir(&masks).unwrap();
        std::fs::write(allowed.join("in.y4m"), "x").unwrap();
        std::fs::write(masks.join("m.txt"), "1").unwrap();
        std::fs::write(root.path().join("config.toml"), "").unwrap();
        std::fs::write(root.path().join("outside.y4m"), "x").unwrap();
        // Links inside the allowed folder: to a file outside it, to the service's config file,
        // to a file inside it, and one that dangles (a sink would create its target).
        for (link, target) in [
            ("link-out.y4m", root.path().join("outside.y4m")),
            ("link-config.toml", root.path().join("config.toml")),
            ("link-in.y4m", allowed.join("in.y4m")),
            ("link-new.mkv", root.path().join("created-through-a-link.mkv")),
        ] {
            std::os::unix::fs::symlink(target, allowed.join(link)).unwrap();
        }
        let server = toml::from_str(&format!(
            "mask_dir = {:?}\nallow_paths = [{:?}]\n",
            masks.display().to_string(),
            allowed.display().to_string()
        ))
        .unwrap();
        let policy = ApiPolicy::new(&server, &root.path().join("config.toml")).with_working_dir(root.path());
        let started = Instant::now();
        if let Ok(mut pipeline) = serde_json::from_str::<PipelineConfig>(&body) {
            let problems = policy.check_pipeline(&mut pipeline);
            if problems.is_empty() {
                let allowed = allowed.canonicalize().unwrap();
                for url in [&pipeline.source.url, &pipeline.sink.url] {
                    let local = !url.contains("://") && url != "null";
                    prop_assert!(!local || Path::new(url).starts_with(&allowed), "{url} escaped: {body}");
                }
                // A local source is read as itself, after links (so inside the folder), and
                // FFmpeg may open nothing else for it: the file protocol only, and demuxers
                // that open no other file, whatever its bytes say.
                let options = &pipeline.source.options;
                let protocols = options.get("protocol_whitelist").map(String::as_str).unwrap_or("");
                prop_assert!(!protocols.is_empty(), "no protocol whitelist: {body}");
                let source = &pipeline.source.url;
                if !source.contains("://") {
                    let canonical = Path::new(source).canonicalize().unwrap_or_default();
                    prop_assert!(canonical.starts_with(&allowed), "{source} resolves outside: {body}");
                    prop_assert_eq!(protocols, "file");
                    let formats = options.get("format_whitelist").map(String::as_str).unwrap_or("");
                    for opener in ["hls", "concat", "dash", "image2", "tee", "segment"] {
                        prop_assert!(!formats.split(',').any(|f| f == opener), "{opener} allowed for {source}");
                    }
                } else {
                    prop_assert!(!protocols.split(',').any(|p| p == "file"), "{protocols} for {source}");
                }
                // A sink is never a link, and nothing was written through one.
                let sink = Path::new(&pipeline.sink.url);
                prop_assert!(
                    !std::fs::symlink_metadata(sink).is_ok_and(|m| m.file_type().is_symlink()),
                    "a sink through a link was taken: {body}"
                );
                if let convstream_config::MaskSelection::Inline(params) = &pipeline.filter.mask {
                    if let Some(file) = &params.file {
                        prop_assert!(file.starts_with(masks.canonicalize().unwrap()), "{}", file.display());
                    }
                }
            }
            for problem in problems {
                prop_assert!(problem.len() < MESSAGE_LIMIT, "{problem}");
            }
        }
        prop_assert!(started.elapsed() < TIME_LIMIT);
    }
}

fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        value_text().prop_map(|v| toml_string(&v)),
        select(vec![
            "0",
            "1",
            "-1",
            "1e20",
            "-1e20",
            "nan",
            "inf",
            "0.0005",
            "3600.0",
            "10.0",
            "100000",
            "true",
            "[]",
            "{}",
            "[1, 2]",
            "{ initial = 1e20, max = 0.1 }",
            "{ initial = 0.5, max = 30.0 }",
            "9223372036854775807",
        ])
        .prop_map(str::to_string),
    ]
}

fn pipeline_table() -> impl Strategy<Value = String> {
    let source_keys = select(vec![
        "format",
        "decoder",
        "threads",
        "loop",
        "realtime",
        "live",
        "drop",
        "idle_timeout",
        "reconnect",
        "colour",
    ]);
    let filter_keys = select(vec![
        "mask",
        "planes",
        "border",
        "device",
        "streams",
        "frames_per_stream",
        "pinned_frames",
        "maks",
    ]);
    let sink_keys = select(vec!["format", "codec", "lossless", "options", "audio", "overwrite"]);
    (
        prop_oneof![value_text().prop_map(|v| toml_string(&v)), Just("\"cam\"".to_string())],
        proptest::option::of(value_text()),
        proptest::collection::vec((source_keys, toml_value()), 0..4),
        proptest::collection::vec((filter_keys, toml_value()), 0..4),
        proptest::option::of(value_text()),
        proptest::collection::vec((sink_keys, toml_value()), 0..3),
    )
        .prop_map(|(name, source_url, source, filter, sink_url, sink)| {
            let mut text = format!("\n[[pipeline]]\nname = {name}\n[pipeline.source]\n");
            if let Some(url) = source_url {
                text.push_str(&format!("url = {}\n", toml_string(&url)));
            }
            push_unique(&mut text, &source);
            text.push_str("[pipeline.filter]\n");
            push_unique(&mut text, &filter);
            text.push_str("[pipeline.sink]\n");
            if let Some(url) = sink_url {
                text.push_str(&format!("url = {}\n", toml_string(&url)));
            }
            push_unique(&mut text, &sink);
            text
        })
}

/// Each key once (a repeated key is a TOML syntax error, tested enough by one case).
fn push_unique(text: &mut String, pairs: &[(&str, String)]) {
    let mut seen = std::collections::HashSet::new();
    for (key, value) in pairs {
        if seen.insert(*key) {
            text.push_str(&format!("{key} = {value}\n"));
        }
    }
}

fn api_body() -> impl Strategy<Value = String> {
    let url = prop_oneof![
        select(vec![
            "media/in.y4m",
            "media/../config.toml",
            "config.toml",
            "/etc/shadow",
            "file:/etc/passwd",
            "-",
            "null",
            "udp://127.0.0.1:9",
            "concat:a|b",
            "subfile,,start,0,end,1,,:/etc/passwd",
            "media/new.mkv",
            "media/./in.y4m",
            "media//x.y4m",
            "FILE:/etc/passwd",
            "media/sub/../../x",
            "",
            "masks/m.txt",
            "media/link-out.y4m",
            "media/link-config.toml",
            "media/link-in.y4m",
            "media/link-new.mkv",
            "media/out.m3u8",
            "media/out.yuv",
            "rtsp://user:secret@127.0.0.1:8554/cam",
            "http://127.0.0.1:9/list.m3u8",
            "hls+http://127.0.0.1:9/list.m3u8",
            "crypto:media/in.y4m",
            "data:video/x-raw;base64,AAAA",
            "tcp://127.0.0.1:9",
            "srt://127.0.0.1:9",
        ])
        .prop_map(str::to_string),
        text(30),
    ];
    let mask = prop_oneof![
        mask_spec().prop_map(|s| json_string(&s)),
        select(vec![
            "m.txt",
            "../config.toml",
            "/proc/self/environ",
            "/dev/zero",
            "sub/../../x",
            ""
        ])
        .prop_map(|f| format!(r#"{{"file": {}}}"#, json_string(f))),
        Just(r#"{"matrix": [[1, 2, 1]]}"#.to_string()),
    ];
    (url.clone(), url, mask, proptest::option::of(select(vec!["tee", "mpegts", "lavfi", "Concat", "hls", "rawvideo"])))
        .prop_map(|(source, sink, mask, format)| {
            let format = format.map(|f| format!(r#", "format": {}"#, json_string(f))).unwrap_or_default();
            format!(
                r#"{{"name": "p", "source": {{"url": {}}}, "filter": {{"mask": {mask}}}, "sink": {{"url": {}{format}}}}}"#,
                json_string(&source),
                json_string(&sink)
            )
        })
}

//! `filter.graph`: one FFmpeg chain for a pipeline, in a config and through the API. A
//! config's graph gives the frames `convstream run -vf` gives with the same words (one code
//! splits both); `check` lists every graph problem at once in libavfilter's words; the API
//! takes graphs of the filters that open nothing and refuses the others by name; a live
//! mask switch changes the graph's convolution stage alone, from the frame it names. CPU
//! engine: no GPU needed.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::server::Server;
use common::{convstream, make_clip, run_in, Clip, Y4m};
use convstream_testkit::tempdir;

/// Every frame of a y4m file, decoded by convstream's test reader.
fn frames(path: &Path) -> Vec<Vec<Vec<u8>>> {
    Y4m::read(path).frames
}

#[test]
fn a_config_graph_gives_the_frames_of_the_same_vf() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 97, 61, 12);
    let cases = [
        ("scale=64:-2,sobel,format=gray", None),
        ("crop=40:30:5:3,convolution=0m=1 2 1 2 4 2 1 2 1:0bias=3", None),
        ("scale=48:-2,null@mask,format=yuv444p", Some("gaussian:size=13")),
    ];
    for (at, (graph, mask)) in cases.iter().enumerate() {
        let mask_line = mask.map_or(String::new(), |m| format!(", mask = \"{m}\""));
        let config = format!(
            "[[pipeline]]\nname = \"g\"\nsource.url = \"in.mkv\"\nsink.url = \"config{at}.y4m\"\nfilter = {{ graph = \"{graph}\", device = \"cpu\"{mask_line} }}\n"
        );
        std::fs::write(dir.path().join(format!("graph{at}.toml")), config).unwrap();
        run_in(dir.path(), &["run", "--config", &format!("graph{at}.toml")]).success();
        let cli = format!("cli{at}.y4m");
        let mut args = vec!["run", "-i", "in.mkv", "--device", "cpu"];
        let (before, after);
        match mask {
            // The command line writes the convolution filter in the chain; `null@mask` is a
            // config's: its parts are the flags.
            Some(mask) => {
                let (b, rest) = graph.split_once(",null@mask,").unwrap();
                (before, after) = (b.to_string(), rest.to_string());
                args.extend(["--ffmpeg-before", &before, "--mask", mask, "--ffmpeg-after", &after]);
            }
            None => args.extend(["-vf", graph]),
        }
        args.push(&cli);
        run_in(dir.path(), &args).success();
        let (ours, theirs) = (
            frames(&dir.path().join(format!("config{at}.y4m"))),
            frames(&dir.path().join(&cli)),
        );
        assert_eq!(ours.len(), 12, "{graph}");
        assert!(
            ours == theirs,
            "{graph}: the config's graph and the command line differ"
        );
    }
}

#[test]
fn check_lists_every_graph_problem_at_once_in_libavfilters_words() {
    let dir = tempdir();
    let pipeline = |name: &str, filter: &str| {
        format!(
            "[[pipeline]]\nname = \"{name}\"\nsource.url = \"in.mkv\"\nsink.url = \"null\"\nfilter = {{ {filter} }}\n"
        )
    };
    let config = [
        pipeline("a", r#"graph = "scale=64:-2,nosuchfilter,sobel""#),
        pipeline("b", r#"graph = "gblur=sigma=-3,sobel", streams = 0"#),
        pipeline(
            "c",
            r#"graph = "sobel", ffmpeg_after = "format=gray", mask = "sharpen""#,
        ),
        pipeline("d", r#"graph = "scale=64:-2""#),
    ]
    .join("\n");
    std::fs::write(dir.path().join("bad.toml"), config).unwrap();
    let out = convstream()
        .args(["check", "--config", "bad.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    for says in [
        "6 problems",
        "pipeline \"a\": filter.graph: FFmpeg refuses the filter graph: No such filter: 'nosuchfilter'",
        "pipeline \"b\": filter.graph: FFmpeg refuses the filter graph: Value -3.000000 for parameter 'sigma' out of range",
        "pipeline \"b\": filter.streams: 0 is out of range",
        "pipeline \"c\": filter.ffmpeg_after: cannot be given with filter.graph",
        "pipeline \"c\": filter.mask: the graph's convolution filters say the masks",
        "pipeline \"d\": filter.graph: `scale=64:-2` has no convolution stage",
    ] {
        assert!(text.contains(says), "{says:?} in:\n{text}");
    }
}

/// What FFmpeg 5.1 sets aside in a graph (a convolution's `0rdiv`) is said by `check` and
/// when the pipeline runs, not only for `-vf`.
#[test]
fn a_graphs_set_aside_options_are_warned_of_by_check_and_by_the_run() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 24, 2);
    let config = "[[pipeline]]\nname = \"g\"\nsource.url = \"in.mkv\"\nsink.url = \"out.y4m\"\nfilter = { graph = \"convolution=0m=1 2 1 2 4 2 1 2 1:0rdiv=1/16\", device = \"cpu\" }\n";
    std::fs::write(dir.path().join("g.toml"), config).unwrap();
    let says = "0rdiv=0.0625 is set aside, as FFmpeg 5.1's convolution sets it aside";
    for args in [["check", "--config", "g.toml"], ["run", "--config", "g.toml"]] {
        let out = convstream().args(args).current_dir(dir.path()).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(says), "{args:?}: {says:?} in:\n{text}");
    }
}

#[test]
fn the_api_takes_graphs_of_filters_that_open_nothing_and_refuses_the_others_by_name() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 96, 64, 50);
    std::fs::write(dir.path().join("secret.txt"), "TOPSECRET-LINE\n").unwrap();
    std::fs::write(dir.path().join("config.toml"), "[server]\nallow_paths = [\".\"]\n").unwrap();
    let server = Server::start(dir.path(), &[]);
    let body = |name: &str, graph: &str| {
        let graph = serde_json::to_string(graph).unwrap();
        format!(
            r#"{{"name": "{name}", "source": {{"url": "clip.y4m"}}, "filter": {{"graph": {graph}, "device": "cpu"}}, "sink": {{"url": "null"}}}}"#
        )
    };
    for (graph, named) in [
        ("movie=secret.txt,sobel", "movie"),
        ("sobel,drawtext=textfile=secret.txt", "drawtext"),
        (r"scale='a\',movie=secret.txt,sobel", "movie"),
        ("sobel,metadata=mode=print:file=secret.txt", "metadata"),
        ("sendcmd=f=secret.txt,sobel", "sendcmd"),
    ] {
        let (status, answer) = server.json("POST", "/pipelines", &body("bad", graph));
        assert_eq!(status, 400, "{graph}: {answer}");
        assert!(
            answer.contains(&format!(
                "filter.graph: FFmpeg's `{named}` cannot run in an API pipeline"
            )),
            "{graph}: {answer}"
        );
        assert!(
            !answer.contains("secret.txt") && !answer.contains("TOPSECRET"),
            "{answer}"
        );
    }
    let (status, answer) = server.json("POST", "/pipelines", &body("good", "scale=48:-2,sobel,format=gray"));
    assert_eq!(status, 201, "{answer}");
    server.wait_for("the graph pipeline to finish", Duration::from_secs(20), || {
        server.pipeline("good")["state"] == "finished"
    });
    assert_eq!(server.counter("good", "frames_written"), 50);
    // The chains of old stay the config file's alone.
    let chain = r#"{"name": "chain", "source": {"url": "clip.y4m"}, "filter": {"ffmpeg_after": "format=gray", "device": "cpu"}, "sink": {"url": "null"}}"#;
    let (status, answer) = server.json("POST", "/pipelines", chain);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("filter.ffmpeg_after: FFmpeg filter chains can open files"),
        "{answer}"
    );
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("TOPSECRET"), "{log}");
}

/// The graph every switch test runs: FFmpeg's filters around the graph's own `sobel`.
const SWITCHED_GRAPH: &str = "scale=48:-2,sobel,format=gray";

/// Runs [`SWITCHED_GRAPH`] in `serve` on a paced 100-frame clip, sends `switch` to
/// `PUT /pipelines/cam/filter` once 25 frames are written, and checks the output frame by
/// frame: the graph's own frames (`run -vf`) before the frame the answer names, from it on
/// those of `run` with `after` (the graph's FFmpeg filters around the switched stage, on the
/// CPU engine). Returns the switch's answer.
fn switch_mid_stream(switch: &str, after: impl Fn(&serde_json::Value) -> Vec<String>) -> serde_json::Value {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 96, 64, 100); // 4 s at 25 fps
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[[pipeline]]\nname = \"cam\"\nsource = {{ url = \"clip.y4m\", realtime = true }}\nfilter = {{ graph = \"{SWITCHED_GRAPH}\", device = \"cpu\" }}\nsink = {{ url = \"out.y4m\" }}\n"
        ),
    )
    .unwrap();
    let server = Server::start(dir.path(), &[]);
    server.wait_for("frames to flow", Duration::from_secs(20), || {
        server.counter("cam", "frames_written") >= 25
    });
    let (status, body) = server.request("PUT", "/pipelines/cam/filter", Some(switch));
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let switch_at = answer["applies_from_frame"].as_u64().unwrap() as usize;
    assert!((25..100).contains(&switch_at), "switched mid-stream: {answer}");
    server.wait_for("the end of the input", Duration::from_secs(20), || {
        server.pipeline("cam")["state"] == "finished"
    });
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");

    let cpu = ["--device", "cpu"];
    run_in(
        dir.path(),
        &[
            &["run", "-i", "clip.y4m", "-vf", SWITCHED_GRAPH][..],
            &cpu,
            &["before.y4m"],
        ]
        .concat(),
    )
    .success();
    let after = after(&answer);
    let after: Vec<&str> = after.iter().map(String::as_str).collect();
    run_in(
        dir.path(),
        &[&["run", "-i", "clip.y4m"][..], &after, &cpu, &["after.y4m"]].concat(),
    )
    .success();
    let (out, old, new) = (
        frames(&dir.path().join("out.y4m")),
        frames(&dir.path().join("before.y4m")),
        frames(&dir.path().join("after.y4m")),
    );
    assert_eq!(out.len(), 100, "no frame lost or duplicated");
    assert!(old[switch_at] != new[switch_at], "the two stages differ at the switch");
    for (n, frame) in out.iter().enumerate() {
        let expected = if n < switch_at { &old[n] } else { &new[n] };
        assert!(frame == expected, "frame {n} (switch reported at frame {switch_at})");
    }
    answer
}

/// From the frame a mask switch names: the graph's FFmpeg filters around `sharpen`, with the
/// graph's border.
#[test]
fn a_mask_switch_changes_the_graphs_convolution_stage_from_the_frame_it_names() {
    switch_mid_stream(r#"{"mask": "sharpen"}"#, |_| {
        [
            "--ffmpeg-before",
            "scale=48:-2",
            "--mask",
            "sharpen",
            "--border",
            "ffmpeg",
            "--ffmpeg-after",
            "format=gray",
        ]
        .map(String::from)
        .to_vec()
    });
}

/// A switch of the border alone on a graph's own convolution filters keeps their masks and
/// runs them with the new border, from the frame it names; the FFmpeg filters around stay.
#[test]
fn a_border_switch_keeps_the_graphs_masks_and_changes_their_border() {
    let answer = switch_mid_stream(r#"{"border": "mirror"}"#, |answer| {
        let mask = answer["plane_masks"]["y"].as_str().unwrap_or("").to_string();
        [
            "--ffmpeg-before",
            "scale=48:-2",
            "--mask",
            &mask,
            "--border",
            "mirror",
            "--ffmpeg-after",
            "format=gray",
        ]
        .map(String::from)
        .to_vec()
    });
    assert_eq!(answer["border"], "mirror", "{answer}");
    assert!(
        answer["plane_masks"]["y"].as_str().unwrap_or("").starts_with("sobel"),
        "{answer}"
    );
}

//! Outputs that must not destroy data: an output that is the input behind one of FFmpeg's
//! wrapping protocols (`concat:`, `subfile`, `cache:`, `async:`, `pipe:0`), stdout (`pipe:1`)
//! appended to the input. Each is refused before anything is opened (exit 2), the input
//! byte-identical.

use crate::common;

use std::process::Stdio;

use common::{convstream, make_clip, Clip, Run};

#[test]
fn an_output_that_is_the_input_behind_a_wrapping_protocol_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.ts", Clip::Mpeg2Ts, 64, 48, 10);
    make_clip(root, "other.ts", Clip::Mpeg2Ts, 64, 48, 5);
    let before = std::fs::read(root.join("v.ts")).unwrap();
    for input in [
        "concat:v.ts",
        "concat:other.ts|v.ts",
        "subfile,,start,0,end,0,,:v.ts",
        "cache:v.ts",
        "async:v.ts",
        "async:cache:file:v.ts",
        "file:./v.ts",
    ] {
        let run = common::run_in(root, &["run", "-i", input, "-o", "v.ts", "-y", "--device", "cpu"]);
        run.assert_no_panic();
        assert_eq!(run.code, Some(2), "{input}: {}", run.stderr);
        assert!(
            run.stderr.contains("would destroy that input"),
            "{input}: {}",
            run.stderr
        );
        assert_eq!(std::fs::read(root.join("v.ts")).unwrap(), before, "{input}");
    }
    // stdin read from the output, through `pipe:0`; stdout appended to the input, `pipe:1`.
    let with_std = |args: &[&str], stdin: Stdio, stdout: Stdio| -> Run {
        convstream()
            .args(args)
            .current_dir(root)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
            .unwrap()
            .into()
    };
    let input = std::fs::File::open(root.join("v.ts")).unwrap();
    let run = with_std(
        &["run", "-i", "pipe:0", "-o", "v.ts", "-y", "--device", "cpu"],
        input.into(),
        Stdio::null(),
    );
    assert_eq!(run.code, Some(2), "pipe:0: {}", run.stderr);
    assert!(
        run.stderr.contains("would destroy that input"),
        "pipe:0: {}",
        run.stderr
    );
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("v.ts"))
        .unwrap();
    let run = with_std(
        &[
            "run", "-i", "v.ts", "-o", "pipe:1", "--format", "mpegts", "--device", "cpu",
        ],
        Stdio::null(),
        appended.into(),
    );
    assert_eq!(run.code, Some(2), "pipe:1 >> v.ts: {}", run.stderr);
    assert!(
        run.stderr.contains("would destroy that input"),
        "pipe:1: {}",
        run.stderr
    );
    assert_eq!(std::fs::read(root.join("v.ts")).unwrap(), before);
}

#[test]
fn stats_and_trace_files_are_outputs_too() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.ts", Clip::Mpeg2Ts, 64, 48, 5);
    let before = std::fs::read(root.join("v.ts")).unwrap();
    std::fs::write(root.join("stats.json"), "keep me").unwrap();
    let base = ["run", "-i", "v.ts", "-o", "out.mkv", "--device", "cpu", "--no-progress"];
    for (extra, says) in [
        (vec!["--stats-json", "v.ts", "-y"], "would destroy that input"),
        (vec!["--trace", "./v.ts", "-y"], "would destroy that input"),
        (vec!["--stats-json", "stats.json"], "pass -y / --overwrite"),
        (vec!["--trace", "stats.json"], "pass -y / --overwrite"),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let run = common::run_in(root, &args);
        run.assert_no_panic();
        assert_eq!(run.code, Some(2), "{extra:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{extra:?}: {}", run.stderr);
        assert!(!root.join("out.mkv").exists(), "{extra:?}: nothing ran");
    }
    assert_eq!(std::fs::read(root.join("v.ts")).unwrap(), before);
    assert_eq!(std::fs::read(root.join("stats.json")).unwrap(), b"keep me");
    // With consent, the stats replace the old file.
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--stats-json", "stats.json", "-y"])
        .collect();
    common::run_in(root, &args).success();
    let stats = common::stats(&root.join("stats.json"));
    assert_eq!(stats["frames_out"], 5, "{stats}");
}

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

/// A config writing `clip.y4m` to `sink` at the clip's frame rate (10 s for 250 frames).
fn realtime_config(sink: &str, overwrite: bool) -> String {
    format!(
        "[[pipeline]]\nname = \"rt\"\nsource = {{ url = \"clip.y4m\", realtime = true }}\nfilter = {{ device = \"cpu\", mask = \"box\" }}\nsink = {{ url = \"{sink}\", overwrite = {overwrite} }}\n"
    )
}

fn spawn_run(root: &std::path::Path, config: &str) -> std::process::Child {
    std::fs::write(root.join("rt.toml"), config).unwrap();
    common::spawn_in(root, &["run", "--config", "rt.toml", "--no-progress"])
}

#[test]
fn a_file_is_replaced_only_by_a_complete_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "clip.y4m", Clip::Y4m, 64, 48, 250);
    common::run_in(
        root,
        &[
            "run",
            "-i",
            "clip.y4m",
            "-o",
            "good.mkv",
            "--device",
            "cpu",
            "--no-progress",
        ],
    )
    .success();
    let good = std::fs::read(root.join("good.mkv")).unwrap();
    // -y, then SIGKILL mid-run: the old file is whole (the new one was still partial).
    let mut child = spawn_run(root, &realtime_config("good.mkv", true));
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(child.try_wait().unwrap().is_none(), "still running");
    assert_eq!(
        std::fs::read(root.join("good.mkv")).unwrap(),
        good,
        "kept while the new one is written"
    );
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(
        std::fs::read(root.join("good.mkv")).unwrap(),
        good,
        "kept after SIGKILL"
    );
    // Run to its end: the new file replaces the old one, complete.
    common::run_in(
        root,
        &[
            "run",
            "-i",
            "clip.y4m",
            "-o",
            "good.mkv",
            "-y",
            "--mask",
            "box",
            "--device",
            "cpu",
            "--no-progress",
        ],
    )
    .success();
    assert_ne!(std::fs::read(root.join("good.mkv")).unwrap(), good);
    assert_eq!(common::readable_frames(&root.join("good.mkv")), 250);
}

#[test]
fn output_nobody_can_read_is_never_a_success() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "clip.y4m", Clip::Y4m, 64, 48, 250);
    let shell = |script: &str| -> Run {
        std::process::Command::new("sh")
            .args(["-c", script, "sh", env!("CARGO_BIN_EXE_convstream")])
            .current_dir(root)
            .env_remove("RUST_LOG")
            .output()
            .unwrap()
            .into()
    };
    // stdout closed: `-o -` has nowhere to go.
    let run = shell("\"$1\" run -i clip.y4m -o - --device cpu --no-progress >&-");
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("stdout is closed"), "{}", run.stderr);
    // A file size limit: an error naming it, not a silent death by SIGXFSZ.
    let run = shell("ulimit -f 10; \"$1\" run -i clip.y4m -o big.y4m --device cpu --no-progress");
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("File too large"), "{}", run.stderr);
    // The output's folder deleted mid-run: what was written is gone, and the run says so.
    std::fs::create_dir(root.join("sub")).unwrap();
    let child = spawn_run(root, &realtime_config("sub/out.mkv", false).replace("250", "50"));
    std::thread::sleep(std::time::Duration::from_secs(1));
    std::fs::remove_dir_all(root.join("sub")).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("was removed or replaced while it was written"),
        "{stderr}"
    );
}

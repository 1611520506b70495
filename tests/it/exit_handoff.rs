//! A command's end through the GPU exit hand-off (`src/cli/exit.rs`: a helper task keeps the
//! process's memory and descriptors while the process `_exit`s), forced on a host without a GPU
//! with `CONVSTREAM_EXIT_HANDOFF=always`: the file output is whole (every frame, the trailer),
//! the summary printed, a y4m written to a pipe arrives whole, and the exit status is the one
//! the usual exit gives (a success's 0, a missing input's, a refused flag's).

use crate::common;

use std::path::Path;
use std::process::Stdio;

use common::{convstream, make_clip, video_pts, Clip, Run};

/// `convstream ARGS` in `dir`, with the hand-off forced or not, its stdout piped.
fn run(dir: &Path, args: &[&str], handoff: bool) -> Run {
    let mut command = convstream();
    if handoff {
        command.env("CONVSTREAM_EXIT_HANDOFF", "always");
    }
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
        .into()
}

#[test]
fn a_run_that_hands_off_its_teardown_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "in.mp4", Clip::H264Mp4, 160, 96, 30);
    let filtered = [
        "run",
        "--device",
        "cpu",
        "--no-progress",
        "-i",
        "in.mp4",
        "--mask",
        "gaussian:size=5",
    ];

    let to_file = [&filtered[..], &["-o", "out.mkv"][..]].concat();
    let finished = run(root, &to_file, true).success();
    assert_eq!(
        video_pts(&root.join("out.mkv")).len(),
        30,
        "every frame in a finished file"
    );
    assert!(
        finished.stderr.contains("30 frames"),
        "the summary: {}",
        finished.stderr
    );

    // y4m on stdout, read through a pipe: every frame, and the pipe's end came (output()
    // returned) without the reader waiting on the helper.
    let to_pipe = [&filtered[..], &["-o", "-"][..]].concat();
    let piped = run(root, &to_pipe, true).success();
    let usual = run(root, &to_pipe, false).success();
    assert_eq!(piped.stdout.windows(6).filter(|w| w == b"FRAME\n").count(), 30);
    assert_eq!(piped.stdout, usual.stdout, "the same bytes as the usual exit's");

    // Failures keep their status: a missing input, a refused flag.
    for args in [
        &["run", "--device", "cpu", "-i", "missing.mp4", "-o", "x.mkv"][..],
        &[
            "run",
            "--device",
            "cpu",
            "-i",
            "in.mp4",
            "-o",
            "x.mkv",
            "--mask",
            "gaussian:size=4",
        ][..],
    ] {
        let handed = run(root, args, true);
        let usual = run(root, args, false);
        handed.assert_no_panic();
        assert_ne!(usual.code, Some(0), "{args:?}: {}", usual.stderr);
        assert_eq!(handed.code, usual.code, "{args:?}: {}", handed.stderr);
        assert_eq!(handed.stderr, usual.stderr, "{args:?}");
    }
}

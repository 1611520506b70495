//! Runs that write no frame (an input with nothing in the part asked for): they never
//! replace an existing file, even with `-y`, and leave no file behind, in every container;
//! `--allow-empty` keeps the empty output on purpose.

use crate::common;

use std::path::Path;

use common::{make_clip, Clip};

/// The files in `dir`, sorted: no temporary or empty output may stay behind.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_empty_run_never_replaces_a_file_nor_leaves_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.mkv", Clip::Ffv1Mkv, 64, 48, 10);
    for ext in ["mkv", "mp4", "ts", "nut", "y4m"] {
        let keep = format!("keep.{ext}");
        let made = common::run_in(root, &["run", "-i", "v.mkv", "-o", &keep, "--device", "cpu"]);
        assert_eq!(made.code, Some(0), "{keep}: {}", made.stderr);
        let before = std::fs::read(root.join(&keep)).unwrap();
        assert!(!before.is_empty());
        let names_before = names_in(root);

        // Nothing in the part asked for, with consent to replace: the old file stays whole.
        let empty = common::run_in(
            root,
            &[
                "run", "--ss", "100", "-i", "v.mkv", "-y", "-o", &keep, "--device", "cpu",
            ],
        );
        empty.assert_no_panic();
        assert_eq!(empty.code, Some(1), "{keep}: {}", empty.stderr);
        assert!(
            empty.stderr.contains("no frame was written"),
            "{keep}: {}",
            empty.stderr
        );
        assert_eq!(std::fs::read(root.join(&keep)).unwrap(), before, "{keep} was changed");
        assert_eq!(names_in(root), names_before, "{keep}: a file was left behind");

        // A new name: no empty file is created.
        let fresh = format!("fresh.{ext}");
        let empty = common::run_in(
            root,
            &["run", "--ss", "100", "-i", "v.mkv", "-o", &fresh, "--device", "cpu"],
        );
        assert_eq!(empty.code, Some(1), "{fresh}: {}", empty.stderr);
        assert!(!root.join(&fresh).exists(), "{fresh} was created empty");
        assert_eq!(names_in(root), names_before, "{fresh}: a file was left behind");
    }
}

#[test]
fn allow_empty_keeps_an_empty_output_on_purpose() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.mkv", Clip::Ffv1Mkv, 64, 48, 5);
    let run = common::run_in(
        root,
        &[
            "run",
            "--ss",
            "100",
            "-i",
            "v.mkv",
            "-o",
            "e.mkv",
            "--allow-empty",
            "--device",
            "cpu",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(root.join("e.mkv").is_file(), "--allow-empty asked for the empty output");
}

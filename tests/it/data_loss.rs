//! Files a run writes or reads beside its video: `--stats-json` and `--trace` replace a file
//! whole or not at all and never share one; the files a concat list names and the config
//! file itself are inputs no output may write.

use crate::common;

use std::path::Path;

use common::{make_clip, Clip, Run};

/// Runs `script` under `sh` in `dir`, `$1` being the convstream binary.
fn shell(dir: &Path, script: &str) -> Run {
    std::process::Command::new("sh")
        .args(["-c", script, "sh", env!("CARGO_BIN_EXE_convstream")])
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
        .into()
}

/// The names in `dir` that start with a dot: temporary files left behind.
fn hidden_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect()
}

#[test]
fn stats_and_trace_files_are_replaced_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.mkv", Clip::Ffv1Mkv, 64, 48, 40);
    for flag in ["--trace", "--stats-json"] {
        std::fs::write(root.join("side.json"), b"the old file").unwrap();
        // 2 KiB per file: the video goes nowhere, the side file (3-5 KB) cannot be written.
        let script = format!("ulimit -f 2; \"$1\" run -i v.mkv -o null --device cpu --no-progress {flag} side.json -y");
        let run = shell(root, &script);
        run.assert_no_panic();
        assert_ne!(run.code, Some(0), "{flag}: {}", run.stderr);
        assert_eq!(
            std::fs::read(root.join("side.json")).unwrap(),
            b"the old file",
            "{flag}: the old file was changed"
        );
        assert!(hidden_files(root).is_empty(), "{flag}: {:?}", hidden_files(root));
        // With room, it is replaced by a complete one.
        let run = common::run_in(
            root,
            &[
                "run",
                "-i",
                "v.mkv",
                "-o",
                "null",
                "--device",
                "cpu",
                flag,
                "side.json",
                "-y",
            ],
        );
        assert_eq!(run.code, Some(0), "{flag}: {}", run.stderr);
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("side.json")).unwrap()).unwrap();
        assert!(written.is_object(), "{flag}");
    }
    let run = common::run_in(
        root,
        &[
            "run",
            "-i",
            "v.mkv",
            "-o",
            "null",
            "--stats-json",
            "x.json",
            "--trace",
            "./x.json",
        ],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("name one file"), "{}", run.stderr);
    assert!(!root.join("x.json").exists());
}

#[test]
fn a_concat_list_naming_the_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.ts", Clip::Mpeg2Ts, 64, 48, 10);
    make_clip(root, "other.ts", Clip::Mpeg2Ts, 64, 48, 5);
    let before = std::fs::read(root.join("v.ts")).unwrap();
    std::fs::create_dir(root.join("lists")).unwrap();
    std::fs::write(root.join("list.txt"), "file 'other.ts'\nfile 'v.ts'\n").unwrap();
    // Relative to the list's folder, quoted as the demuxer quotes.
    std::fs::write(root.join("lists/up.txt"), "file '../other.ts'\nfile ..'/'v.ts\n").unwrap();
    // FFmpeg picks the concat demuxer by itself for a list that says what it is.
    std::fs::write(root.join("list.ffconcat"), "ffconcat version 1.0\nfile v.ts\n").unwrap();
    for args in [
        &["--input-format", "concat", "-i", "list.txt"][..],
        &["--input-format", "concat", "-i", "lists/up.txt"][..],
        &["-i", "list.ffconcat"][..],
    ] {
        let mut full = vec!["run"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "v.ts", "-y", "--device", "cpu", "--no-progress"]);
        let run = common::run_in(root, &full);
        run.assert_no_panic();
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("would destroy that input"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(std::fs::read(root.join("v.ts")).unwrap(), before, "{args:?}");
    }
    // A list that names other files is read as usual.
    let run = common::run_in(
        root,
        &[
            "run",
            "--input-format",
            "concat",
            "-i",
            "list.txt",
            "-o",
            "joined.ts",
            "--device",
            "cpu",
            "--no-progress",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn the_config_file_is_never_the_output_of_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    make_clip(root, "v.mkv", Clip::Ffv1Mkv, 64, 48, 5);
    std::os::unix::fs::symlink("cfg.toml", root.join("link.toml")).unwrap();
    for sink in ["cfg.toml", "./cfg.toml", "link.toml"] {
        let config = format!(
            "[[pipeline]]\nname = \"main\"\n[pipeline.source]\nurl = \"v.mkv\"\n[pipeline.filter]\ndevice = \"cpu\"\n\
             [pipeline.sink]\nurl = \"{sink}\"\nformat = \"matroska\"\noverwrite = true\n"
        );
        std::fs::write(root.join("cfg.toml"), &config).unwrap();
        for command in [
            &["run", "--config", "cfg.toml", "--no-progress"][..],
            &["check", "--config", "cfg.toml"][..],
        ] {
            let run = common::run_in(root, command);
            run.assert_no_panic();
            assert_eq!(run.code, Some(2), "{sink} {command:?}: {}", run.stderr);
            assert!(
                run.stderr.contains("is the config file itself"),
                "{sink}: {}",
                run.stderr
            );
            assert_eq!(
                std::fs::read_to_string(root.join("cfg.toml")).unwrap(),
                config,
                "{sink}"
            );
        }
    }
}

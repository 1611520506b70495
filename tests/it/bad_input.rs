//! Bad input, one test each: the binary exits with the documented code (2 for usage and
//! configuration errors, 1 for runtime failures, 0 for damaged input that still filters),
//! says what was wrong and where in one short message, and never panics. The failures that
//! differ only in their input are one table of cases ([`Case`]), a test per case.
//!
//! `CONVSTREAM_BAD_INPUT_LOG=FILE cargo test --test it -- bad_input:: --test-threads=1` appends
//! every case's command, exit code and exact stderr to FILE.
//!
//! One job, kept whole: the hostile inputs, one case after another; the table of cases, the
//! damaged-media tests and the expectations they share (`expect_failure`, `assert_mentions`)
//! read together, and a split would part the cases from their checks.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::{make_clip, run_in, stats, Clip, Run};
use convstream_testkit::tempdir;

/// Runs `convstream ARGS` in `dir`, records the case when asked to, and checks the parts
/// every error shares: the exit code, one `error:` message, no panic or backtrace.
fn expect_failure(case: &str, dir: &Path, args: &[&str], code: i32) -> String {
    let run = run_in(dir, args);
    record(case, args, &run);
    run.assert_no_panic();
    assert_eq!(run.code, Some(code), "{case}: exit code\n{}", run.stderr);
    assert!(
        run.stderr.contains("error: "),
        "{case}: an error message\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("stack backtrace"), "{case}\n{}", run.stderr);
    run.stderr
}

/// A run that must succeed despite damaged input; returns stderr.
fn expect_success(case: &str, dir: &Path, args: &[&str]) -> String {
    let run = run_in(dir, args);
    record(case, args, &run);
    run.success().stderr
}

fn record(case: &str, args: &[&str], run: &Run) {
    let Ok(path) = std::env::var("CONVSTREAM_BAD_INPUT_LOG") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the log file opens");
    let _ = writeln!(
        file,
        "## {case}\n$ convstream {}\nexit code {}\n{}",
        args.join(" "),
        run.code
            .map_or("none (killed by a signal)".to_string(), |c| c.to_string()),
        run.stderr
    );
}

fn assert_mentions(stderr: &str, words: &[&str]) {
    for word in words {
        assert!(stderr.contains(word), "expected {word:?} in:\n{stderr}");
    }
}

/// A small clip to filter in the mask and config cases (which fail before reading it).
fn with_clip() -> tempfile::TempDir {
    let dir = tempdir();
    make_clip(dir.path(), "in.y4m", Clip::Y4m, 32, 24, 2);
    dir
}

fn run_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--device",
        "cpu",
        "--no-progress",
        "-i",
        "in.y4m",
        "-o",
        "out.y4m",
    ];
    args.extend_from_slice(extra);
    args
}

/// Frames ffprobe decodes from `path` (proves the file is finalised and playable).
fn playable_frames(path: &Path) -> u64 {
    let output = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=nb_read_frames", "-of", "csv=p=0"])
        .arg(path)
        .output()
        .expect("ffprobe runs");
    assert!(
        output.status.success(),
        "{} does not play:\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .trim_end_matches(',')
        .parse()
        .unwrap_or_else(|_| panic!("ffprobe frame count of {}", path.display()))
}

// ---- failures, one case each ----

/// Where a case's command runs.
#[derive(Clone, Copy)]
enum Folder {
    /// A new empty folder.
    Empty,
    /// A new folder holding `in.y4m`, a small clip (the mask and config cases fail before
    /// reading it).
    WithClip,
    /// The repository (for commands that read no files).
    Repo,
}

/// A file a case writes into its folder before the run.
#[derive(Clone, Copy)]
enum Content {
    Text(&'static str),
    /// A text repeated `n` times.
    Repeated(&'static str, usize),
    /// 64 KiB of repeatable binary noise.
    Noise,
    /// Half a second of sine tone with no video (made by the `ffmpeg` CLI).
    Tone,
}

/// The command line after `convstream`.
#[derive(Clone, Copy)]
enum Args {
    /// Exactly these.
    Exact(&'static [&'static str]),
    /// `run --device cpu --no-progress -i in.y4m -o out.y4m` and these.
    Run(&'static [&'static str]),
}

/// One bad input that must fail: a folder, a command, and what the binary must answer.
struct Case {
    /// What the case is, as the log of `CONVSTREAM_BAD_INPUT_LOG` names it.
    what: &'static str,
    folder: Folder,
    /// Files written into the folder first.
    files: &'static [(&'static str, Content)],
    args: Args,
    /// The exit code: 2 for usage and configuration errors, 1 for runtime failures.
    code: i32,
    /// Fragments the message must hold.
    says: &'static [&'static str],
    /// Fragments the message must hold exactly once (a problem reported once).
    says_once: &'static [&'static str],
    /// Files the failed run must not leave behind.
    leaves_no: &'static [&'static str],
}

impl Case {
    const DEFAULT: Case = Case {
        what: "",
        folder: Folder::WithClip,
        files: &[],
        args: Args::Exact(&[]),
        code: 2,
        says: &[],
        says_once: &[],
        leaves_no: &[],
    };

    fn check(&self) {
        let temporary = match self.folder {
            Folder::Empty => Some(tempdir()),
            Folder::WithClip => Some(with_clip()),
            Folder::Repo => None,
        };
        let dir = temporary
            .as_ref()
            .map_or(Path::new(env!("CARGO_MANIFEST_DIR")), |t| t.path());
        for (name, content) in self.files {
            match *content {
                Content::Text(text) => std::fs::write(dir.join(name), text).unwrap(),
                Content::Repeated(text, n) => std::fs::write(dir.join(name), text.repeat(n)).unwrap(),
                Content::Noise => {
                    let noise: Vec<u8> = (0..64 * 1024u32)
                        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                        .collect();
                    std::fs::write(dir.join(name), noise).unwrap();
                }
                Content::Tone => common::ffmpeg(dir, &["-f", "lavfi", "-i", "sine=duration=0.5", name]),
            }
        }
        let args = match self.args {
            Args::Exact(args) => args.to_vec(),
            Args::Run(extra) => run_args(extra),
        };
        let stderr = expect_failure(self.what, dir, &args, self.code);
        assert_mentions(&stderr, self.says);
        for fragment in self.says_once {
            assert_eq!(
                stderr.matches(fragment).count(),
                1,
                "{}: {fragment:?} reported once:\n{stderr}",
                self.what
            );
        }
        for file in self.leaves_no {
            assert!(
                !dir.join(file).exists(),
                "{}: no output is left behind ({file})",
                self.what
            );
        }
    }
}

/// One test per case, named after it, so a failure names its case.
macro_rules! failing_cases {
    ($($name:ident: $case:expr;)*) => {$(
        #[test]
        fn $name() {
            $case.check();
        }
    )*};
}

const NOT_A_VIDEO: &str = "these are notes, not a video\n";

const RAGGED_INLINE_MATRIX: &str = r#"
[masks.lumpy]
matrix = [[1, 2, 1], [2, 4, 2, 9], [1, 2, 1]]

[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.y4m"
[pipeline.filter]
mask = "lumpy"
[pipeline.sink]
url = "out.y4m"
"#;

const ZERO_SUM_MATRIX_WITH_NORMALIZE: &str = r#"
[[pipeline]]
name = "edges"
[pipeline.source]
url = "in.y4m"
[pipeline.filter.mask]
matrix = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]
normalize = true
[pipeline.sink]
url = "out.y4m"
"#;

const CONFIG_FIELD_TYPO: &str = r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.y4m"
[pipeline.filter]
mask = "box"
boarder = "wrap"
[pipeline.sink]
url = "out.y4m"
"#;

const MASK_TABLE_FIELD_TYPO: &str = "[masks.soft]\npreset = \"gaussian\"\nsigmaa = 2\n\n[[pipeline]]\nname = \"a\"\n[pipeline.source]\nurl = \"in.y4m\"\n[pipeline.sink]\nurl = \"out.y4m\"\n";

const SEVERAL_PROBLEMS: &str = r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.y4m"
[pipeline.filter]
mask = "box:size=14"
device = "tpu"
streams = 99
frames_per_stream = 0
[pipeline.sink]
url = "out.y4m"

[[pipeline]]
name = "cam2"
[pipeline.source]
url = ""
[pipeline.filter]
mask = "sobell"
[pipeline.sink]
url = "out2.y4m"
"#;

failing_cases! {
    // ---- inputs ----
    missing_input_file: Case {
        what: "missing input file",
        folder: Folder::Empty,
        args: Args::Exact(&["run", "--device", "cpu", "-i", "no-such-clip.mp4", "-o", "out.mp4"]),
        code: 1,
        says: &["cannot open input no-such-clip.mp4", "No such file or directory"],
        leaves_no: &["out.mp4"],
        ..Case::DEFAULT
    };
    not_a_video: Case {
        what: "not a video (a text file)",
        folder: Folder::Empty,
        files: &[("notes.txt", Content::Repeated(NOT_A_VIDEO, 20))],
        args: Args::Exact(&["run", "--device", "cpu", "-i", "notes.txt", "-o", "out.mp4"]),
        code: 1,
        says: &["cannot open input notes.txt", "text file, not a video"],
        ..Case::DEFAULT
    };
    not_a_video_binary_noise: Case {
        what: "not a video (binary noise)",
        folder: Folder::Empty,
        files: &[("noise.bin", Content::Noise)],
        args: Args::Exact(&["run", "--device", "cpu", "-i", "noise.bin", "-o", "out.mp4"]),
        code: 1,
        says: &["cannot open input noise.bin"],
        ..Case::DEFAULT
    };
    not_a_video_with_a_video_name: Case {
        what: "not a video (a text file named .mp4)",
        folder: Folder::Empty,
        files: &[("clip.mp4", Content::Repeated(NOT_A_VIDEO, 20))],
        args: Args::Exact(&["run", "--device", "cpu", "-i", "clip.mp4", "-o", "out.mkv"]),
        code: 1,
        says: &["cannot open input clip.mp4", "not a media file"],
        ..Case::DEFAULT
    };
    audio_only_input: Case {
        what: "an input without video",
        folder: Folder::Empty,
        files: &[("tone.m4a", Content::Tone)],
        args: Args::Exact(&["run", "--device", "cpu", "-i", "tone.m4a", "-o", "out.mp4"]),
        code: 1,
        says: &["tone.m4a has no video stream"],
        ..Case::DEFAULT
    };

    // ---- outputs ----
    unwritable_output_path: Case {
        what: "unwritable output path",
        args: Args::Exact(&["run", "--device", "cpu", "-i", "in.y4m", "-o", "/nonexistent-dir/out.mp4"]),
        code: 1,
        says: &["cannot open output /nonexistent-dir/out.mp4", "No such file or directory"],
        ..Case::DEFAULT
    };
    // Caught by validation, before anything is opened (as `check` catches it).
    unknown_output_container: Case {
        what: "output name without a known container",
        args: Args::Exact(&["run", "--device", "cpu", "-i", "in.y4m", "-o", "out.unknown"]),
        // A run of flags is told about its flags: `--output`, not `sink.url`.
        says: &["--output `out.unknown`: cannot tell the container from the name", "--format"],
        leaves_no: &["out.unknown"],
        ..Case::DEFAULT
    };

    // ---- masks ----
    even_mask_size: Case {
        what: "even mask size",
        args: Args::Run(&["--mask", "box:size=4"]),
        says: &["--mask: size: 4 is even", "1..=63"],
        says_once: &["is even"],
        leaves_no: &["out.y4m"],
        ..Case::DEFAULT
    };
    zero_mask_size: Case {
        what: "zero mask size",
        args: Args::Run(&["--mask", "gaussian:size=0"]),
        says: &["size: 0 is zero", "1..=63"],
        ..Case::DEFAULT
    };
    mask_size_over_63: Case {
        what: "mask size over 63",
        args: Args::Run(&["--mask", "box:size=65"]),
        says: &["size: 65 is too large", "1..=63"],
        ..Case::DEFAULT
    };
    even_custom_matrix: Case {
        what: "even custom matrix",
        files: &[("even.txt", Content::Text("1 1\n1 1\n"))],
        args: Args::Run(&["--mask", "custom:file=even.txt"]),
        says: &["matrix is 2x2", "even", "1..=63"],
        ..Case::DEFAULT
    };
    nan_in_a_custom_matrix: Case {
        what: "NaN in a custom matrix",
        files: &[("nan.txt", Content::Text("# a bad mask\n1 2 1\n2 nan 2\n1 2 1\n"))],
        args: Args::Run(&["--mask", "custom:file=nan.txt"]),
        says: &["row 2, column 2 is NaN", "finite"],
        ..Case::DEFAULT
    };
    infinity_in_a_custom_matrix: Case {
        what: "infinity in a custom matrix",
        files: &[("inf.txt", Content::Text("1, 2, 1\n2, 4, 2\n1, 2, -inf\n"))],
        args: Args::Run(&["--mask", "custom:file=inf.txt"]),
        says: &["row 3, column 3 is -inf", "finite"],
        ..Case::DEFAULT
    };
    ragged_matrix_rows: Case {
        what: "ragged matrix rows",
        files: &[("ragged.txt", Content::Text("1 2 1\n2 4\n1 2 1\n"))],
        args: Args::Run(&["--mask", "custom:file=ragged.txt"]),
        says: &["row 2 has 2 values but row 1 has 3"],
        ..Case::DEFAULT
    };
    ragged_inline_matrix_in_a_config: Case {
        what: "ragged rows in an inline matrix",
        files: &[("ragged.toml", Content::Text(RAGGED_INLINE_MATRIX))],
        args: Args::Exact(&["check", "--config", "ragged.toml"]),
        says: &["1 problem", "masks.lumpy: matrix row 2 has 4 values but row 1 has 3"],
        ..Case::DEFAULT
    };
    unknown_preset_suggests_the_nearest: Case {
        what: "unknown preset",
        args: Args::Run(&["--mask", "gausian:size=5"]),
        says: &["unknown mask `gausian`", "did you mean `gaussian`?", "presets are identity"],
        ..Case::DEFAULT
    };
    unknown_key_suggests_the_nearest: Case {
        what: "unknown mask key",
        args: Args::Run(&["--mask", "gaussian:sigm=2"]),
        says: &["unknown key `sigm`", "did you mean `sigma`?", "keys are size"],
        ..Case::DEFAULT
    };
    key_the_preset_does_not_take: Case {
        what: "a key the preset does not take",
        args: Args::Run(&["--mask", "box:sigma=2"]),
        says: &["preset `box` takes no key `sigma`"],
        ..Case::DEFAULT
    };
    zero_sum_mask_with_normalize: Case {
        what: "zero-sum mask with normalize",
        args: Args::Run(&["--mask", "laplacian:normalize=true"]),
        says: &["normalize = true but the coefficients sum to 0", "divisor"],
        ..Case::DEFAULT
    };
    zero_sum_custom_matrix_with_normalize_in_a_config: Case {
        what: "zero-sum custom matrix with normalize = true in a config",
        files: &[("zero.toml", Content::Text(ZERO_SUM_MATRIX_WITH_NORMALIZE))],
        args: Args::Exact(&["run", "--config", "zero.toml"]),
        says: &["pipeline \"edges\": filter.mask: normalize = true but the coefficients sum to 0"],
        ..Case::DEFAULT
    };
    show_bad_mask: Case {
        what: "masks show with a bad SPEC",
        folder: Folder::Repo,
        args: Args::Exact(&["masks", "show", "sharpen:amout=2"]),
        says: &["unknown key `amout`", "did you mean `amount`?"],
        ..Case::DEFAULT
    };

    // ---- configs ----
    unknown_config_field: Case {
        what: "unknown config field (run)",
        files: &[("typo.toml", Content::Text(CONFIG_FIELD_TYPO))],
        args: Args::Exact(&["run", "--config", "typo.toml"]),
        says: &["typo.toml", "unknown field `boarder`", "`border`"],
        ..Case::DEFAULT
    };
    unknown_config_field_in_check: Case {
        what: "unknown config field (check)",
        files: &[("typo.toml", Content::Text(CONFIG_FIELD_TYPO))],
        args: Args::Exact(&["check", "--config", "typo.toml"]),
        says: &["unknown field `boarder`"],
        ..Case::DEFAULT
    };
    unknown_field_in_a_mask_table: Case {
        what: "unknown field in a [masks.NAME] table",
        files: &[("typo.toml", Content::Text(MASK_TABLE_FIELD_TYPO))],
        args: Args::Exact(&["check", "--config", "typo.toml"]),
        says: &["unknown field `sigmaa`"],
        ..Case::DEFAULT
    };
    several_config_problems_at_once: Case {
        what: "several problems in one config",
        files: &[("bad.toml", Content::Text(SEVERAL_PROBLEMS))],
        args: Args::Exact(&["check", "--config", "bad.toml"]),
        says: &[
            "6 problems in the configuration",
            "pipeline \"cam1\": filter.mask: size: 14 is even; mask sizes must be odd, 1..=63",
            "pipeline \"cam1\": filter.device: `tpu` is not a device",
            "pipeline \"cam1\": filter.streams: 99 is out of range",
            "pipeline \"cam1\": filter.frames_per_stream: 0 is out of range; allowed 1..=4",
            "pipeline \"cam2\": source.url is empty",
            "pipeline \"cam2\": filter.mask: unknown mask `sobell` (did you mean `sobel`?)",
        ],
        ..Case::DEFAULT
    };
    missing_config_file: Case {
        what: "missing config file",
        folder: Folder::Empty,
        args: Args::Exact(&["check", "--config", "nope.toml"]),
        says: &["cannot read config nope.toml", "No such file or directory"],
        ..Case::DEFAULT
    };
    unknown_pipeline_name: Case {
        what: "--pipeline names no pipeline",
        args: Args::Exact(&[
            "run",
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/examples/custom-matrix.toml"),
            "--pipeline",
            "ridge",
        ]),
        says: &["--pipeline \"ridge\": no such pipeline; the config has ridges, emboss"],
        ..Case::DEFAULT
    };
}

// ---- damaged input that still filters ----

#[test]
fn truncated_file_filters_what_decodes_and_reports_the_damage() {
    let dir = tempdir();
    let full = make_clip(dir.path(), "full.mkv", Clip::Ffv1Mkv, 160, 120, 30);
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(dir.path().join("cut.mkv"), &bytes[..bytes.len() * 6 / 10]).unwrap();
    let stderr = expect_success(
        "truncated file (an FFV1 Matroska clip of 30 frames cut at 60%)",
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "-i",
            "cut.mkv",
            "-o",
            "out.mkv",
            "--stats-json",
            "stats.json",
        ],
    );
    let stats = stats(&dir.path().join("stats.json"));
    let frames_out = stats["frames_out"].as_u64().unwrap();
    assert!(frames_out > 5 && frames_out < 30, "{stats}");
    assert_eq!(stats["frames_in"], stats["frames_out"]);
    assert!(stats["ended_early"].is_object(), "{stats}");
    assert_mentions(
        &stderr,
        &["input damage", "truncated", "of the 1.20 s its container announces"],
    );
    assert_eq!(
        playable_frames(&dir.path().join("out.mkv")),
        frames_out,
        "the output is finalised"
    );
}

#[test]
fn truncated_mpegts_filters_what_decodes() {
    let dir = tempdir();
    let full = make_clip(dir.path(), "full.ts", Clip::Mpeg2Ts, 160, 120, 30);
    let bytes = std::fs::read(&full).unwrap();
    std::fs::write(dir.path().join("cut.ts"), &bytes[..bytes.len() * 6 / 10]).unwrap();
    expect_success(
        "truncated file (an MPEG-TS clip of 30 frames cut at 60%)",
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "-i",
            "cut.ts",
            "-o",
            "out.mp4",
            "--stats-json",
            "stats.json",
        ],
    );
    // MPEG-TS announces no length, so a cut is only visible when it breaks a frame.
    let stats = stats(&dir.path().join("stats.json"));
    let frames_out = stats["frames_out"].as_u64().unwrap();
    assert!(frames_out > 5 && frames_out < 30, "{stats}");
    assert_eq!(stats["frames_in"], stats["frames_out"]);
    assert_eq!(
        playable_frames(&dir.path().join("out.mp4")),
        frames_out,
        "the output is finalised"
    );
}

#[test]
fn corrupt_packets_in_the_middle_are_skipped() {
    let dir = tempdir();
    let clean = make_clip(dir.path(), "clean.ts", Clip::H264Ts, 160, 120, 30);
    let mut bytes = std::fs::read(&clean).unwrap();
    // 4 KiB of noise in the middle (a fixed pattern, so the test is repeatable).
    let middle = bytes.len() / 2;
    let mut state = 0x2545_f491_u32;
    for byte in &mut bytes[middle..middle + 4096] {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        *byte = state as u8;
    }
    std::fs::write(dir.path().join("corrupt.ts"), &bytes).unwrap();
    let stderr = expect_success(
        "corrupt packets in the middle (4 KiB of noise in an H.264 MPEG-TS clip of 30 frames)",
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "-i",
            "corrupt.ts",
            "-o",
            "out.mkv",
            "--stats-json",
            "stats.json",
        ],
    );
    let stats = stats(&dir.path().join("stats.json"));
    let frames_out = stats["frames_out"].as_u64().unwrap();
    let damage = stats["corrupt_packets"].as_u64().unwrap()
        + stats["read_errors"].as_u64().unwrap()
        + stats["damaged_frames"].as_u64().unwrap();
    assert!(damage > 0 || frames_out < 30, "the damage shows: {stats}");
    assert!(frames_out > 10, "the run went on past the damage: {stats}");
    assert_eq!(stats["frames_in"], stats["frames_out"]);
    if damage > 0 {
        assert_mentions(&stderr, &["input damage"]);
    }
    assert_eq!(
        playable_frames(&dir.path().join("out.mkv")),
        frames_out,
        "the output is finalised"
    );
}

// ---- timestamps ----

#[test]
fn timestamps_that_step_back_mid_stream_do_not_stop_the_output() {
    // Two TS clips back to back: the second starts its clock over, as a restarted live
    // sender does. Encoders and muxers refuse time going back; every frame must still come out.
    let dir = tempdir();
    let first = make_clip(dir.path(), "first.ts", Clip::Mpeg2Ts, 96, 64, 20);
    let second = make_clip(dir.path(), "second.ts", Clip::Mpeg2Ts, 96, 64, 20);
    let mut joined = std::fs::read(first).unwrap();
    joined.extend(std::fs::read(second).unwrap());
    std::fs::write(dir.path().join("joined.ts"), joined).unwrap();
    expect_success(
        "timestamps step back",
        dir.path(),
        &[
            "run",
            "-i",
            "joined.ts",
            "-o",
            "out.mkv",
            "--device",
            "cpu",
            "--no-progress",
            "--stats-json",
            "stats.json",
        ],
    );
    let stats = stats(&dir.path().join("stats.json"));
    assert_eq!(stats["frames_out"], 40, "{stats}");
    let pts = common::video_pts(&dir.path().join("out.mkv"));
    assert_eq!(pts.len(), 40, "the output plays every frame");
    let times: Vec<f64> = pts.iter().map(|t| t.parse().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[1] > w[0]),
        "timestamps only move forward: {times:?}"
    );
}

// ---- decoders and waits that must end ----

#[test]
fn nvdec_that_cannot_be_asked_is_a_usage_error_with_the_reason() {
    if std::env::var_os("CONVSTREAM_TEST_GPU").is_some() {
        return; // a GPU host answers; tests/it/gpu.rs and scripts/gpu-check.sh engines cover it there
    }
    let dir = tempdir();
    make_clip(dir.path(), "in.mp4", Clip::H264Mp4, 64, 48, 3);
    let started = std::time::Instant::now();
    let stderr = expect_failure(
        "nvdec without a GPU",
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "--decoder",
            "nvdec",
            "-i",
            "in.mp4",
            "-o",
            "out.y4m",
        ],
        2,
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "it fails at once"
    );
    // Either this FFmpeg has no h264_cuvid, or the driver could not be asked: both say so
    // and point to the software decoder.
    assert!(stderr.contains("NVDEC") || stderr.contains("h264_cuvid"), "{stderr}");
    assert_mentions(&stderr, &["decoder = \"software\""]);
    assert!(!dir.path().join("out.y4m").exists(), "no output is left behind");
}

#[test]
fn an_unknown_protocol_is_not_retried_even_when_live() {
    let dir = tempdir();
    let config = dir.path().join("live.toml");
    std::fs::write(
        &config,
        "[[pipeline]]\nname = \"cam\"\n[pipeline.source]\nurl = \"foo://bar\"\nlive = true\n\
         reconnect = { initial = 0.1, max = 0.2 }\n[pipeline.filter]\nmask = \"box:size=3\"\ndevice = \"cpu\"\n\
         [pipeline.sink]\nurl = \"null\"\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let stderr = expect_failure(
        "unknown protocol, live",
        dir.path(),
        &["run", "--config", "live.toml", "--no-progress"],
        2,
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "no retry loop");
    assert_mentions(&stderr, &["foo://bar", "no `foo` protocol"]);
    assert!(!stderr.contains("trying again"), "{stderr}");
}

#[test]
fn realtime_pacing_goes_on_after_a_timestamp_jump() {
    // The second half of the clip starts 50,000 s later: paced by its timestamps, the run
    // would sleep for 14 hours (and ignore a stop). It re-anchors at the jump instead.
    let dir = tempdir();
    make_clip(dir.path(), "first.ts", Clip::H264Ts, 64, 48, 10);
    make_clip(dir.path(), "second.ts", Clip::H264Ts, 64, 48, 10);
    common::ffmpeg(
        dir.path(),
        &[
            "-i",
            "second.ts",
            "-c",
            "copy",
            "-output_ts_offset",
            "50000",
            "-f",
            "mpegts",
            "later.ts",
        ],
    );
    let mut joined = std::fs::read(dir.path().join("first.ts")).unwrap();
    joined.extend(std::fs::read(dir.path().join("later.ts")).unwrap());
    std::fs::write(dir.path().join("jump.ts"), joined).unwrap();
    std::fs::write(
        dir.path().join("paced.toml"),
        "[[pipeline]]\nname = \"paced\"\n[pipeline.source]\nurl = \"jump.ts\"\nrealtime = true\n\
         [pipeline.filter]\nmask = \"box:size=3\"\ndevice = \"cpu\"\n[pipeline.sink]\nurl = \"null\"\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    expect_success(
        "realtime pacing over a timestamp jump",
        dir.path(),
        &[
            "run",
            "--config",
            "paced.toml",
            "--no-progress",
            "--stats-json",
            "stats.json",
        ],
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(15), "paced 20 frames in {took:?}");
    assert!(took >= std::time::Duration::from_millis(600), "still paced: {took:?}");
    assert_eq!(stats(&dir.path().join("stats.json"))["frames_out"], 20);
}

//! `convstream bench --quick --device cpu`: the smoke test CI runs. It checks that every
//! suite that can run without a GPU runs, that the JSON it writes parses and holds figures,
//! and that every plot is written as SVG and as PNG; it makes no speed claim.

use std::path::Path;
use std::process::Command;

#[test]
fn quick_cpu_bench_writes_results_that_parse() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let started = std::time::Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_convstream"))
        .args(["bench", "--quick", "--device", "cpu", "--out"])
        .arg(out.path())
        .output()
        .expect("convstream runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed: {stderr}");
    println!(
        "bench --quick --device cpu took {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let text = std::fs::read_to_string(out.path().join("results.json")).expect("results.json written");
    let results: serde_json::Value = serde_json::from_str(&text).expect("results.json parses");
    assert_eq!(results["run"]["device"], "cpu");
    assert_eq!(results["run"]["quick"], true);
    let kernel = results["kernel"].as_array().expect("kernel rows");
    assert!(!kernel.is_empty());
    assert!(kernel.iter().all(|k| k["median_us"].as_f64().is_some_and(|t| t > 0.0)));
    let overlap = results["overlap"].as_array().expect("overlap rows");
    assert!(overlap.iter().all(|o| o["fps"].as_f64().is_some_and(|f| f > 0.0)));
    let e2e = results["e2e"].as_array().expect("e2e rows");
    assert_eq!(e2e.len(), 2, "a smooth and a textured clip");
    assert_eq!(e2e[0]["input"], "smooth-320x180-30.mp4");
    assert_eq!(e2e[1]["input"], "textured-320x180-30.mp4");
    for row in e2e {
        assert_eq!(row["frames"], 30, "every frame of the generated clip is filtered");
        assert!(row["decode_only_fps"].as_f64().is_some_and(|f| f > 0.0));
    }
    let skipped = results["skipped"].as_array().expect("skipped list");
    assert!(
        skipped
            .iter()
            .any(|s| s.as_str().is_some_and(|s| s.starts_with("transfer"))),
        "the transfer suite says why it did not run"
    );

    let markdown = std::fs::read_to_string(out.path().join("results.md")).expect("results.md written");
    assert!(markdown.contains("## Kernel") && markdown.contains("## End to end"));
    for plot in ["kernel.svg", "overlap.svg"] {
        let svg = std::fs::read_to_string(out.path().join(plot)).expect("plot written");
        assert!(svg.starts_with("<svg"), "{plot} is an SVG");
    }
    for plot in ["kernel.png", "overlap.png"] {
        assert_png(&out.path().join(plot));
    }
}

/// `bench --suite e2e --quick --device cpu`: FFmpeg's CLI (Debian's, on PATH, as
/// scripts/install-deps.sh installs it) and `convstream run` timed as whole commands in
/// alternating rounds, for both generated clips; every figure positive, every round kept, the
/// ratios the quotients of the medians.
#[test]
fn quick_e2e_suite_times_whole_commands_against_ffmpeg() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let results = quick_e2e(out.path(), &["--rounds", "2"]);
    let rows = results["e2e"].as_array().expect("e2e rows");
    assert_eq!(rows.len(), 2, "a smooth and a textured clip: {results}");
    for row in rows {
        let cli = &row["cli"];
        let version = cli["ffmpeg_version"].as_str().unwrap_or_default();
        assert!(
            version.starts_with("ffmpeg version"),
            "FFmpeg's CLI was found (this test needs `ffmpeg` on PATH: scripts/install-deps.sh): {}",
            results["skipped"]
        );
        for program in ["ffmpeg", "convstream"] {
            let measure = &cli[program];
            for figure in ["wall_seconds", "wall_fps", "steady_fps"] {
                assert!(
                    measure[figure].as_f64().is_some_and(|f| f > 0.0),
                    "{program} {figure} in {}: {measure}",
                    row["input"]
                );
            }
            let rounds = measure["rounds"].as_array().expect("rounds kept");
            assert_eq!(rounds.len(), 2, "{program}: every round kept");
            for round in rounds {
                assert_eq!(round["frames"], 30, "{program} decoded the whole clip: {round}");
                assert!(round["note"].is_null(), "{program}: {round}");
            }
        }
        assert!(cli["ffmpeg"]["command"]
            .as_str()
            .is_some_and(|c| c.contains("-benchmark") && c.contains("-f null -")));
        assert!(cli["convstream"]["command"]
            .as_str()
            .is_some_and(|c| c.contains(" run ") && c.contains("--mask edge:size=13,sigma=2")));
        for (ratio, figure) in [("wall_ratio", "wall_fps"), ("steady_ratio", "steady_fps")] {
            let quotient = cli["convstream"][figure].as_f64().unwrap() / cli["ffmpeg"][figure].as_f64().unwrap();
            let reported = cli[ratio].as_f64().expect("the ratio is reported");
            assert!(
                (reported - quotient).abs() <= 1e-9 * quotient,
                "{ratio} {reported} vs {quotient}"
            );
        }
    }
    let skipped = results["skipped"].as_array().expect("skipped list");
    assert!(skipped.is_empty(), "nothing skipped: {skipped:?}");
    let markdown = std::fs::read_to_string(out.path().join("results.md")).expect("results.md written");
    assert!(markdown.contains("### Whole commands") && markdown.contains("| textured-320x180-30.mp4 | software |"));
    let svg = std::fs::read_to_string(out.path().join("e2e.svg")).expect("the whole-command plot written");
    assert!(svg.starts_with("<svg") && svg.contains("textured 320x180 software"));
    assert_png(&out.path().join("e2e.png"));
}

/// With `--ffmpeg` naming nothing, the FFmpeg column is skipped with the reason in the
/// report's `skipped` list; convstream's whole commands are still timed.
#[test]
fn quick_e2e_suite_reports_a_missing_ffmpeg() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let results = quick_e2e(out.path(), &["--rounds", "1", "--ffmpeg", "/nonexistent"]);
    let skipped: Vec<&str> = results["skipped"]
        .as_array()
        .expect("skipped list")
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    for clip in ["smooth-320x180-30.mp4", "textured-320x180-30.mp4"] {
        assert!(
            skipped
                .iter()
                .any(|s| s.contains(clip) && s.contains("FFmpeg CLI column") && s.contains("--ffmpeg /nonexistent")),
            "{clip}: the reason is reported: {skipped:?}"
        );
    }
    for row in results["e2e"].as_array().expect("e2e rows") {
        let cli = &row["cli"];
        assert!(cli["ffmpeg"].is_null() && cli["wall_ratio"].is_null(), "{cli}");
        assert!(cli["convstream"]["wall_fps"].as_f64().is_some_and(|f| f > 0.0), "{cli}");
    }
    let markdown = std::fs::read_to_string(out.path().join("results.md")).expect("results.md written");
    assert!(markdown.contains("## Not measured") && markdown.contains("--ffmpeg /nonexistent"));
}

/// Runs `bench --suite e2e --quick --device cpu` with `extra` arguments into `out` and
/// returns its results.json.
fn quick_e2e(out: &Path, extra: &[&str]) -> serde_json::Value {
    let started = std::time::Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_convstream"))
        .args(["bench", "--suite", "e2e", "--quick", "--device", "cpu"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .expect("convstream runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed: {stderr}");
    println!(
        "bench --suite e2e --quick {extra:?} took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json written");
    serde_json::from_str(&text).expect("results.json parses")
}

/// The published GPU results read back into the report type and draw again, so their plots
/// can be made from `results.json` alone; checks that the PNGs beside them exist too.
#[test]
fn published_results_replot() {
    let published = Path::new(env!("CARGO_MANIFEST_DIR")).join("benchmarks/results/2026-11-22-first-engine");
    let report = convstream_bench::read_report(&published.join("results.json")).expect("published results parse");
    assert!(!report.kernel.is_empty() && !report.overlap.is_empty());
    let out = tempfile::tempdir().expect("a temporary folder");
    let written = convstream_bench::write_plots(&report, out.path()).expect("plots drawn");
    let names: Vec<_> = written.iter().filter_map(|p| p.file_name()?.to_str()).collect();
    assert_eq!(names, ["kernel.svg", "kernel.png", "overlap.svg", "overlap.png"]);
    for plot in ["kernel.png", "overlap.png"] {
        assert_png(&out.path().join(plot));
        assert_png(&published.join(plot));
    }
}

/// A real PNG: the signature, an IHDR of the size the bench draws (1800x1200), and more bytes
/// than a blank image of that size compresses to.
fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} starts with the PNG signature",
        path.display()
    );
    assert_eq!(&bytes[12..16], b"IHDR", "{}: IHDR first", path.display());
    let width = u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes"));
    let height = u32::from_be_bytes(bytes[20..24].try_into().expect("4 bytes"));
    assert_eq!((width, height), (1800, 1200), "{}: size", path.display());
    assert!(
        (20_000..5_000_000).contains(&bytes.len()),
        "{}: {} bytes is not a drawn plot",
        path.display(),
        bytes.len()
    );
}

/// `bench --suite scale --quick --device cpu` (what CI runs): paced pipelines in one process,
/// their rows in results.json with sane figures, the table in results.md and the plot.
#[test]
fn quick_cpu_scale_suite_reports_paced_pipelines() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let output = Command::new(env!("CARGO_BIN_EXE_convstream"))
        .args([
            "bench",
            "--suite",
            "scale",
            "--quick",
            "--device",
            "cpu",
            "--pipelines",
            "1,2",
        ])
        .args(["--scale-seconds", "1.5", "--out"])
        .arg(out.path())
        .output()
        .expect("convstream runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench failed: {stderr}");
    let text = std::fs::read_to_string(out.path().join("results.json")).expect("results.json written");
    let results: serde_json::Value = serde_json::from_str(&text).expect("results.json parses");
    let rows = results["scale"]["rows"].as_array().expect("scale rows");
    assert!(!rows.is_empty(), "at least the first step ran: {stderr}");
    for row in rows {
        assert_eq!(row["decoder"], "software");
        let rate = row["frame_rate"].as_f64().expect("the clip's frame rate");
        assert!((rate - 30.0).abs() < 0.01, "the generated clip is 30 fps: {row}");
        let (min, median) = (row["fps_min"].as_f64().unwrap(), row["fps_median"].as_f64().unwrap());
        // Paced: never faster than the clip's rate (a little slack for the window's edges).
        assert!(min > 0.0 && min <= median && median <= rate * 1.05, "{row}");
        assert!(row["latency_p99_ms"].as_f64().is_some_and(|p| p > 0.0), "{row}");
        assert!(row["resident_bytes"].as_u64().is_some_and(|b| b > 0), "{row}");
        assert!(row["gpu_busy_percent"].is_null(), "no GPU figure on the CPU: {row}");
    }
    let max = results["scale"]["max_pipelines"]["software"]
        .as_u64()
        .expect("max_pipelines for software");
    let passed = rows.iter().filter(|r| r["failure"].is_null()).count() as u64;
    assert!(
        max <= 2 && (max > 0) == (passed > 0),
        "max_pipelines {max} agrees with the rows"
    );
    // The host's own decode capacity, measured in the same run: two unpaced 4 s decodes of
    // the 30 fps clip, so far faster than two live streams.
    let capacity = &results["scale"]["decode_capacity"][0];
    assert_eq!(capacity["decoder"], "software", "{capacity}");
    assert_eq!(capacity["parallel"], 2, "{capacity}");
    let fps = capacity["frames_per_second"].as_f64().expect("a decode rate");
    let streams = capacity["live_streams"].as_f64().expect("live streams");
    assert!(fps > 60.0 && (streams - fps / 30.0).abs() < 1e-6, "{capacity}");
    let markdown = std::fs::read_to_string(out.path().join("results.md")).expect("results.md written");
    assert!(markdown.contains("## Streams per host") && markdown.contains("max_pipelines, software decoder"));
    assert!(
        markdown.contains("the host's own decode capacity, software: 2 unpaced decodes"),
        "{markdown}"
    );
    assert!(std::fs::read_to_string(out.path().join("scale.svg"))
        .expect("plot written")
        .starts_with("<svg"));
    assert_png(&out.path().join("scale.png"));
}

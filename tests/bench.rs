//! `convstream bench --quick --device cpu`: the smoke test CI runs. It checks that every
//! suite that can run without a GPU runs, and that the JSON it writes parses and holds
//! figures; it makes no speed claim.

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
    assert_eq!(e2e.len(), 1);
    assert_eq!(e2e[0]["frames"], 30, "every frame of the generated clip is filtered");
    assert!(e2e[0]["decode_only_fps"].as_f64().is_some_and(|f| f > 0.0));
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
}

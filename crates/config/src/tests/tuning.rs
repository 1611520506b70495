//! Unit tests of `[pipeline.filter.gpu]`: the CUDA engine's spin-wait and tilings, their
//! defaults, their ranges and their unknown keys.

use super::*;
use convstream_core::{GpuTuning, TileShape};

fn pipeline_with_gpu(table: &str) -> String {
    format!(
        r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
[pipeline.sink]
url = "out.mp4"
[pipeline.filter]
streams = 2
[pipeline.filter.gpu]
{table}
"#
    )
}

fn settings(text: &str) -> Settings {
    ConfigFile::parse(text, "test.toml", NO_OUTPUT_CHECK)
        .and_then(|config| config.validate(None, NO_OUTPUT_CHECK))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Every problem of a config, whether found parsing it or validating it.
fn all_problems(text: &str) -> Vec<String> {
    let error = ConfigFile::parse(text, "test.toml", NO_OUTPUT_CHECK)
        .and_then(|config| config.validate(None, NO_OUTPUT_CHECK))
        .map(|_| ())
        .expect_err("the config should be refused");
    match error {
        ConfigError::Invalid(problems) | ConfigError::InvalidFile { problems, .. } => super::texts(&problems),
        other => panic!("expected a list of problems, got {other}"),
    }
}

#[test]
fn without_a_gpu_table_the_defaults_hold_and_are_not_written_back() {
    let text = pipeline_with_gpu("").replace("[pipeline.filter.gpu]\n", "");
    let settings = settings(&text);
    let pipeline = &settings.pipelines[0];
    assert_eq!(pipeline.gpu, GpuTuning::default());
    // Unset: the engine spins 300 us for a live or paced input and not for a file read at
    // full speed (`GpuTuning::spin`).
    assert_eq!(pipeline.gpu.spin_us, None);
    let written = toml::to_string(&pipeline.config).unwrap();
    assert!(!written.contains("gpu"), "{written}");
}

#[test]
fn spin_and_tilings_are_read_into_the_settings() {
    let text = pipeline_with_gpu(
        r#"spin_us = 0
dense_tiling = "32x8x8x4"
separable_tiling = "16x16x4x2""#,
    );
    let settings = settings(&text);
    let gpu = settings.pipelines[0].gpu;
    assert_eq!(gpu.spin_us, Some(0));
    assert_eq!(
        gpu.dense_tiling,
        Some(TileShape {
            block_x: 32,
            block_y: 8,
            px: 8,
            py: 4,
        })
    );
    assert_eq!(
        gpu.separable_tiling.map(|t| t.to_string()).as_deref(),
        Some("16x16x4x2")
    );
    // Written back as read: reload comparisons and the API see the same table.
    let written = toml::to_string(&settings.pipelines[0].config).unwrap();
    let again: PipelineConfig = toml::from_str(&written).unwrap();
    assert_eq!(again.filter.gpu, gpu);
}

#[test]
fn a_spin_out_of_range_is_a_problem_with_the_range_beside_the_others() {
    let text = pipeline_with_gpu("spin_us = 20000").replace("streams = 2", "streams = 99");
    let problems = all_problems(&text);
    assert!(
        problems.iter().any(|p| p
            == "pipeline \"cam1\": filter.gpu.spin_us: 20000 is out of range; allowed 0..=10000 (microseconds; 0 blocks at once)"),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("filter.streams: 99 is out of range")),
        "every problem at once: {problems:?}"
    );
}

#[test]
fn a_malformed_tiling_says_what_is_wrong_and_where() {
    for (tiling, reason) in [
        ("32x8x6x4", "PX must be a multiple of 4"),
        ("32x8x4", "four whole numbers"),
        ("64x32x4x4", "1024 threads"),
    ] {
        let text = pipeline_with_gpu(&format!("dense_tiling = \"{tiling}\""));
        let problems = all_problems(&text);
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("pipeline \"cam1\": filter.gpu:") && p.contains(reason) && p.contains(tiling)),
            "{tiling}: {problems:?}"
        );
    }
    let problems = all_problems(&pipeline_with_gpu("spin_us = -1"));
    assert!(
        problems.iter().any(|p| p.starts_with("pipeline \"cam1\": filter.gpu:")),
        "{problems:?}"
    );
}

#[test]
fn an_unknown_gpu_key_is_refused_with_the_keys_allowed() {
    let problems = all_problems(&pipeline_with_gpu("spin = 100"));
    assert!(
        problems.iter().any(|p| p.starts_with("pipeline \"cam1\": filter.gpu:")
            && p.contains("unknown field `spin`")
            && p.contains("spin_us")
            && p.contains("dense_tiling")
            && p.contains("separable_tiling")),
        "{problems:?}"
    );
    // The environment no longer tunes the engine: the old variables' names are not keys.
    let problems = all_problems(&pipeline_with_gpu("CONVSTREAM_SPIN_US = 0"));
    assert!(problems.iter().any(|p| p.contains("unknown field")), "{problems:?}");
}

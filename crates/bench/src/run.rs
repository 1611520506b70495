//! `convstream bench`'s order of work: the report's run information, then each chosen suite
//! in turn (kernel, transfer, overlap, e2e, scale), their figures gathered in one report.

use super::error::BenchError;
use super::options::{BenchOptions, Suite};
use super::results::{BenchReport, ScaleResults};
use super::suites;

/// Runs the chosen suites and returns every figure.
pub fn run(options: &BenchOptions) -> Result<BenchReport, BenchError> {
    std::fs::create_dir_all(&options.out).map_err(|e| BenchError::Write {
        path: options.out.display().to_string(),
        reason: e.to_string(),
    })?;
    let gpu = suites::gpu_ordinal(options.device)?;
    let mut report = BenchReport {
        run: suites::run_info(options, gpu)?,
        kernel: Vec::new(),
        transfer: Vec::new(),
        overlap: Vec::new(),
        e2e: Vec::new(),
        scale: ScaleResults::default(),
        skipped: Vec::new(),
    };
    if options.suite.includes(Suite::Kernel) {
        tracing::info!("kernel suite");
        report.kernel = suites::kernel(options, gpu, &mut report.skipped)?;
    }
    if options.suite.includes(Suite::Transfer) {
        tracing::info!("transfer suite");
        report.transfer = suites::transfer(options, gpu, &mut report.skipped)?;
    }
    if options.suite.includes(Suite::Overlap) {
        tracing::info!("overlap suite");
        report.overlap = suites::overlap(options, gpu)?;
    }
    if options.suite.includes(Suite::E2e) {
        tracing::info!("e2e suite");
        report.e2e = suites::e2e(options, gpu, &mut report.skipped)?;
    }
    if options.suite.includes(Suite::Scale) {
        tracing::info!("scale suite");
        report.scale = suites::scale(options, gpu, &mut report.skipped)?;
    }
    Ok(report)
}

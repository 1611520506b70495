//! `convstream bench`: makes speed a measured, reproducible property. Five suites (kernel,
//! transfer, overlap and e2e, each with a baseline measured in the same run, and scale), run
//! in turn by [`run`] here and written as `results.json`, `results.md`, SVG and PNG plots and
//! a Chrome trace of one overlap run. What is asked is `options.rs`, what comes back
//! `results.rs`; the suites measure, the report writes.

mod error;
mod options;
pub mod report;
mod results;
mod suites;

pub use error::BenchError;
pub use options::{BenchOptions, Suite};
pub use report::{read_report, write_outputs, write_plots};
pub use results::{
    compare_with_eight_bit, BenchReport, CliComparison, CliMeasure, CliRound, E2eRow, KernelRow, OverlapRow, RunInfo,
    ScaleResults, ScaleRow, TransferRow,
};
pub use suites::utc_now;

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

//! `convstream bench`: makes speed a measured, reproducible property. Five suites (kernel,
//! transfer, overlap and e2e, each with a baseline measured in the same run, and scale), run
//! in turn by [`run`] (`run.rs`) and written as `results.json`, `results.md`, SVG and PNG
//! plots and a Chrome trace of one overlap run. What is asked is `options.rs`, what comes
//! back `results.rs`; the suites measure, the report writes.

mod error;
mod options;
pub mod report;
mod results;
mod run;
mod suites;

pub use error::BenchError;
pub use options::{BenchOptions, Suite};
pub use report::{read_report, write_outputs, write_plots};
pub use results::{
    compare_with_eight_bit, BenchReport, CliComparison, CliMeasure, CliRound, E2eRow, KernelRow, OverlapRow, RunInfo,
    ScaleResults, ScaleRow, TransferRow,
};
pub use run::run;
pub use suites::utc_now;

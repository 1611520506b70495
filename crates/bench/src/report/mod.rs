//! Writes a benchmark report: `results.json` (every figure), `results.md` (tables,
//! `markdown.rs`) and plots of kernel time against mask size, of frames/s against streams,
//! of the scale suite and of the e2e suite's whole commands, each as SVG and as PNG
//! (`plot.rs`, `e2e_plot.rs`, `png.rs`, sharing `style.rs`); `files.rs` writes and reads them.

mod e2e_plot;
mod files;
mod markdown;
mod plot;
mod png;
mod style;

pub use files::{read_report, write_outputs, write_plots};
pub use markdown::markdown;

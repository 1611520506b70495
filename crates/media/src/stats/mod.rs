//! Counters a pipeline's stages update while they run and the summary made from them.
//!
//! - `counters`: the live counters, their histograms and snapshots.
//! - `latency`, `startup`, `recent_rate`: per-frame latencies, start-up marks, the recent rate.
//! - `latency_histogram`: latencies bucketed for quantiles without sorting (live readers).
//! - `report`: the summary of a finished run; `rounding`: how its numbers are written.
//! - [`process`]: what this process uses (CPU time, memory), from `/proc`.

mod counters;
mod latency;
mod latency_histogram;
pub mod process;
mod recent_rate;
mod report;
mod rounding;
mod startup;

pub use self::counters::{CounterSnapshot, Counters, EndedEarly, SLOWEST_FRAMES};
pub use self::latency::FrameLatency;
pub use self::latency_histogram::quantile_ms_of;
pub use self::report::PipelineReport;
pub use self::startup::{StartupMarks, StartupTimes};

//! Wires source -> engine -> sink as named threads joined by bounded channels. Dropping a
//! sender is the end-of-stream signal: the engine drains its lanes, the sink flushes the
//! encoder and writes the trailer. A stop flag (signals) ends reading the same way.
//!
//! The run's steps are modules of their own: `run` (the order of a run's steps), `opening`
//! (warm-up, input, its turn through `start_gate`, frame pool, engine, output), `threads`
//! (the stages' threads and queues), `filter_stage` (with `held_up`, its frames held up), `monitor`, `report`; its options, errors, progress and sizes
//! are in leaf modules every step imports. This file declares them and re-exports the
//! public ones.

mod after_stage;
mod capacity;
mod decode_only;
mod error;
mod filter_stage;
mod held_up;
mod monitor;
mod nvdec_admission;
mod opening;
mod options;
mod panics;
mod progress;
mod report;
mod run;
mod seat_pace;
pub mod snapshot;
mod start_gate;
mod threads;

#[cfg(test)]
mod test_config;

pub use after_stage::AfterFilters;
pub use capacity::pooled_frames;
pub use decode_only::{decode_only, decode_only_on};
pub use error::PipelineError;
pub use monitor::{EngineStatus, FilterSwitch, PipelineMonitor, PipelineState};
pub use nvdec_admission::{
    seats_of, GpuLearned, GpuSeats, Learned, LearnedListener, NvdecSeat, PaceGauge, PaceReading, SeatBoard, SeatSource,
    SeatWanted,
};
pub use opening::fit_to_filter;
pub use options::{OutputPolicy, RunOptions};
pub use panics::panic_message;
pub use progress::{Progress, RunProgress};
pub use run::{cut_short_by_stop, run_all, run_monitored, run_pipeline};
pub use start_gate::{StartGate, StartTurn, LONGEST_TURN};

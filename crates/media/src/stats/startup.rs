//! A pipeline's start, step by step: when its input was open, its engine ready (and settled:
//! the GPU taking over from a start on the CPU), its output open and its first frame
//! written, each counted from the pipeline's start. The last one is the time to first frame
//! that users of short clips and operators starting cameras feel.

use serde::Serialize;
use std::sync::OnceLock;
use std::time::Instant;

/// The moments a pipeline's start passed, each set once (the stages set them as they go).
#[derive(Debug, Default)]
pub struct StartupMarks {
    /// When the input was open.
    pub input_opened: OnceLock<Instant>,
    /// When the engine was made.
    pub engine_ready: OnceLock<Instant>,
    /// When the engine that runs the rest of the pipeline took over: the GPU engine after a
    /// start on the CPU (`run` in a fresh process), else the moment the engine was ready.
    pub engine_settled: OnceLock<Instant>,
    /// When the output was open.
    pub output_opened: OnceLock<Instant>,
    /// When the first frame was written.
    pub first_frame_written: OnceLock<Instant>,
}

/// Seconds from a pipeline's start to each step of it (`None`: not reached).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StartupTimes {
    /// See `StartupMarks::input_opened`.
    #[serde(serialize_with = "super::rounding::optional_seconds")]
    pub input_opened: Option<f64>,
    /// See `StartupMarks::engine_ready`.
    #[serde(serialize_with = "super::rounding::optional_seconds")]
    pub engine_ready: Option<f64>,
    /// See `StartupMarks::engine_settled`.
    #[serde(serialize_with = "super::rounding::optional_seconds")]
    pub engine_settled: Option<f64>,
    /// See `StartupMarks::output_opened`.
    #[serde(serialize_with = "super::rounding::optional_seconds")]
    pub output_opened: Option<f64>,
    /// See `StartupMarks::first_frame_written`.
    #[serde(serialize_with = "super::rounding::optional_seconds")]
    pub first_frame: Option<f64>,
}

impl StartupMarks {
    /// Marks `step` now, unless it was marked before; returns its mark.
    pub fn mark(step: &OnceLock<Instant>) -> Instant {
        *step.get_or_init(Instant::now)
    }

    /// Each step's seconds after `started`.
    pub fn since(&self, started: Instant) -> StartupTimes {
        let after = |step: &OnceLock<Instant>| step.get().map(|at| at.saturating_duration_since(started).as_secs_f64());
        StartupTimes {
            input_opened: after(&self.input_opened),
            engine_ready: after(&self.engine_ready),
            engine_settled: after(&self.engine_settled),
            output_opened: after(&self.output_opened),
            first_frame: after(&self.first_frame_written),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn steps_are_counted_from_the_start_and_marked_once() {
        let started = Instant::now();
        let marks = StartupMarks::default();
        assert_eq!(marks.since(started), StartupTimes::default());
        std::thread::sleep(Duration::from_millis(5));
        StartupMarks::mark(&marks.input_opened);
        let first = marks.since(started).input_opened.unwrap();
        assert!(first >= 0.005, "{first}");
        std::thread::sleep(Duration::from_millis(5));
        StartupMarks::mark(&marks.input_opened);
        assert_eq!(marks.since(started).input_opened, Some(first), "the first mark stays");
        assert_eq!(marks.since(started).first_frame, None);
    }
}

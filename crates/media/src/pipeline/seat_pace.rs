//! A pipeline's pace as NVDEC admission reads it (`nvdec_admission::PaceGauge`): its frames
//! late past their due time and its drops, and the share of its input's frame rate it writes.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::nvdec_admission::{PaceGauge, PaceReading};
use crate::stats::Counters;

/// A real-time pipeline's counters, read as its pace.
pub(super) struct CountersPace {
    counters: Arc<Counters>,
    /// The input's frames per second.
    frame_rate: f64,
}

impl CountersPace {
    pub(super) fn new(counters: Arc<Counters>, frame_rate: f64) -> CountersPace {
        CountersPace { counters, frame_rate }
    }
}

impl PaceGauge for CountersPace {
    fn read(&self, now: Instant) -> PaceReading {
        let counters = &self.counters;
        let setbacks = counters.frames_late.load(Ordering::Relaxed) + counters.frames_dropped.load(Ordering::Relaxed);
        // An input that does not say its rate is counted as keeping it: its share is unknown.
        let share_kept = match self.frame_rate > 0.0 {
            true => counters.written_rate.per_second(now) / self.frame_rate,
            false => 1.0,
        };
        PaceReading {
            first_frame: counters.startup.first_frame_written.get().copied(),
            setbacks,
            share_kept,
        }
    }
}

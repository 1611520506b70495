//! How admission learns what a host's NVDEC engines sustain: by watching the pace of the
//! pipelines it seated. A real-time NVDEC pipeline shows its setbacks (frames later than
//! their due time, frames dropped) and the share of its input's rate it writes; once it has
//! run a while after the host's last admission, a window of [`WINDOW`] with
//! [`BEHIND_SETBACKS`] or more setbacks is a window behind, and [`BEHIND_WINDOWS`] of them in
//! a row is a pipeline that fell behind. A start (decoders made, kernels compiled, every
//! pipeline warming up at once) is not judged: only pipelines whose first frame and the
//! host's last admission are [`SETTLE`] old count, so a full host's start teaches nothing
//! wrong. The judge is pure over the times it is given, so tests drive it with made-up
//! gauges and instants.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a seated pipeline shows of its pace (the pipeline's counters: `CountersPace`).
pub trait PaceGauge: Send + Sync {
    /// Its pace as of `now`.
    fn read(&self, now: Instant) -> PaceReading;
}

/// One look at a pipeline's pace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaceReading {
    /// When it wrote its first frame (`None`: not yet).
    pub first_frame: Option<Instant>,
    /// Frames late past their due time and frames dropped, since it started.
    pub setbacks: u64,
    /// Frames it wrote per second lately over its input's frame rate: 1.0 keeps pace.
    pub share_kept: f64,
}

/// How long a window of setbacks is.
pub const WINDOW: Duration = Duration::from_secs(5);
/// How long after its first frame, and after the host's last admission, a pipeline's pace
/// starts to count: a start's warm-up is no measure of the host.
pub const SETTLE: Duration = Duration::from_secs(10);
/// Setbacks in one window that make it a window behind: 10 of a 25 fps input's 125 frames.
/// A thread woken late once, or one burst of a busy moment, stays under it.
pub const BEHIND_SETBACKS: u64 = 10;
/// Windows behind in a row that make a pipeline fallen behind (10 s at [`WINDOW`]).
pub const BEHIND_WINDOWS: u32 = 2;

struct Watched {
    ordinal: usize,
    gauge: Arc<dyn PaceGauge>,
    window_start: Instant,
    setbacks_at_start: u64,
    windows_behind: u32,
}

/// The pace of every seated pipeline that shows one, by seat.
#[derive(Default)]
pub(super) struct PaceJudge {
    watched: BTreeMap<u64, Watched>,
    last_admission: Option<Instant>,
}

impl std::fmt::Debug for PaceJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaceJudge")
            .field("watched", &self.watched.len())
            .field("last_admission", &self.last_admission)
            .finish()
    }
}

/// What the pipelines seated on one GPU kept when one of the host's fell behind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct GpuPace {
    pub ordinal: usize,
    /// Pipelines on it whose pace is watched.
    pub watched: usize,
    /// The sum of their shares of their inputs' rates, each at most 1: the pipelines'
    /// worth of frames the GPU's NVDEC kept.
    pub kept: f64,
}

impl PaceJudge {
    /// Watches seat `id` on GPU `ordinal` from `now` on.
    pub fn watch(&mut self, id: u64, ordinal: usize, gauge: Arc<dyn PaceGauge>, now: Instant) {
        let setbacks = gauge.read(now).setbacks;
        self.watched.insert(
            id,
            Watched {
                ordinal,
                gauge,
                window_start: now,
                setbacks_at_start: setbacks,
                windows_behind: 0,
            },
        );
    }

    /// Seat `id` was given back.
    pub fn forget(&mut self, id: u64) {
        self.watched.remove(&id);
    }

    /// A seat was taken at `now`: the others' pace waits [`SETTLE`] before it counts again.
    pub fn admitted(&mut self, now: Instant) {
        self.last_admission = Some(now);
    }

    /// Whether a watched pipeline's last window was behind: admission holds until it is on
    /// time again or judged fallen behind.
    pub fn any_behind(&self) -> bool {
        self.watched.values().any(|watched| watched.windows_behind > 0)
    }

    /// Closes the windows that are [`WINDOW`] old at `now`. When a pipeline fell behind,
    /// returns what each GPU's watched pipelines kept (every GPU with one), and starts every
    /// pipeline's count again, so that one overload is judged once.
    pub fn look(&mut self, now: Instant) -> Option<Vec<GpuPace>> {
        let host_settled = self
            .last_admission
            .is_none_or(|at| now.saturating_duration_since(at) >= SETTLE);
        let mut fell_behind = false;
        for watched in self.watched.values_mut() {
            let reading = watched.gauge.read(now);
            let settled = host_settled
                && reading
                    .first_frame
                    .is_some_and(|first| now.saturating_duration_since(first) >= SETTLE);
            if !settled {
                watched.window_start = now;
                watched.setbacks_at_start = reading.setbacks;
                watched.windows_behind = 0;
                continue;
            }
            if now.saturating_duration_since(watched.window_start) < WINDOW {
                continue;
            }
            let setbacks = reading.setbacks.saturating_sub(watched.setbacks_at_start);
            watched.windows_behind = match setbacks >= BEHIND_SETBACKS {
                true => watched.windows_behind + 1,
                false => 0,
            };
            watched.window_start = now;
            watched.setbacks_at_start = reading.setbacks;
            fell_behind |= watched.windows_behind >= BEHIND_WINDOWS;
        }
        if !fell_behind {
            return None;
        }
        let mut gpus: BTreeMap<usize, GpuPace> = BTreeMap::new();
        for watched in self.watched.values_mut() {
            watched.windows_behind = 0;
            let share = watched.gauge.read(now).share_kept;
            let gpu = gpus.entry(watched.ordinal).or_insert(GpuPace {
                ordinal: watched.ordinal,
                watched: 0,
                kept: 0.0,
            });
            gpu.watched += 1;
            gpu.kept += if share.is_finite() { share.clamp(0.0, 1.0) } else { 0.0 };
        }
        Some(gpus.into_values().collect())
    }
}

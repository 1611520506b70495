//! When a source must give up a blocking call: on a stop, or (live inputs) when no data came
//! for `idle_timeout`. FFmpeg's interrupt callback and the pipe reader both ask it; the
//! source's own waits (before reconnecting, pacing) end on a stop too.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use convstream_config::SourceConfig;

/// Decides when FFmpeg must give up a blocking open or read: on a stop, or (live inputs)
/// when no data came for `idle_timeout`.
pub(super) struct Watchdog {
    stop: Arc<AtomicBool>,
    started: Instant,
    /// Microseconds after `started` past which a blocked call is interrupted; `u64::MAX`: never.
    deadline_us: AtomicU64,
    pub(super) idle_timeout: Option<Duration>,
}

impl Watchdog {
    pub(super) fn new(stop: Arc<AtomicBool>, config: &SourceConfig) -> Watchdog {
        Watchdog {
            stop,
            started: Instant::now(),
            deadline_us: AtomicU64::new(u64::MAX),
            idle_timeout: config.is_live().then(|| Duration::from_secs_f64(config.idle_timeout)),
        }
    }

    /// Starts the idle clock for the next blocking call.
    pub(super) fn arm(&self) {
        if let Some(timeout) = self.idle_timeout {
            let deadline = (self.started.elapsed() + timeout).as_micros() as u64;
            self.deadline_us.store(deadline, Ordering::Relaxed);
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether a blocked call must give up now (a stop, or a live input gone quiet).
    pub(super) fn interrupted(&self) -> bool {
        self.stopped() || self.expired()
    }

    pub(super) fn expired(&self) -> bool {
        self.started.elapsed().as_micros() as u64 > self.deadline_us.load(Ordering::Relaxed)
    }

    /// Why a call was interrupted when it was not a stop: the input went quiet.
    pub(super) fn idle_reason(&self) -> String {
        let seconds = self.idle_timeout.map_or(0.0, |t| t.as_secs_f64());
        format!("no data for {seconds} s (source.idle_timeout)")
    }
}

/// Sleeps for `time` unless `stop` is set first; false when stopped.
pub(super) fn sleep_unless_stopped(time: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + time;
    while !stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    false
}

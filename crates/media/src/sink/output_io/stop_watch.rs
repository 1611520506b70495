//! How a stop reaches blocked output I/O: [`StopWatch`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a stop reaches blocked output I/O: once `stop` has been set for `grace`, writes
/// that cannot go on fail instead of waiting (the drain before that writes normally).
#[derive(Clone, Debug)]
pub struct StopWatch {
    stop: Arc<AtomicBool>,
    grace: Duration,
    /// Nanoseconds after `epoch` at which the stop was first seen (0: not yet).
    seen_at: Arc<AtomicU64>,
    epoch: Instant,
}

impl StopWatch {
    /// Watches `stop`: blocked I/O gives up once it has been set for `grace`.
    pub fn new(stop: Arc<AtomicBool>, grace: Duration) -> StopWatch {
        StopWatch {
            stop,
            grace,
            seen_at: Arc::new(AtomicU64::new(0)),
            epoch: Instant::now(),
        }
    }

    /// Whether a stop was asked for.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether the stop has waited its grace: blocked I/O gives up.
    pub fn expired(&self) -> bool {
        if !self.stopping() {
            return false;
        }
        let now = self.epoch.elapsed().as_nanos().max(1) as u64;
        let seen = match self
            .seen_at
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => now,
            Err(earlier) => earlier,
        };
        Duration::from_nanos(now.saturating_sub(seen)) >= self.grace
    }
}

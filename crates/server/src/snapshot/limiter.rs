//! The per-pipeline budget of snapshots: a token bucket per name, the idlest forgotten
//! beyond a bound.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::limits::{REMEMBERED_PIPELINES, SNAPSHOTS_PER_SECOND};

/// A token bucket per pipeline name.
#[derive(Debug, Default)]
pub struct SnapshotLimiter {
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl SnapshotLimiter {
    /// Whether one more snapshot of `name` may be served now.
    pub fn admit(&self, name: &str) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        if buckets.len() >= REMEMBERED_PIPELINES && !buckets.contains_key(name) {
            // A bucket idle for a second is full again: as good as forgotten.
            buckets.retain(|_, (_, at)| now.duration_since(*at) < Duration::from_secs(1));
        }
        let (tokens, at) = buckets.entry(name.to_string()).or_insert((SNAPSHOTS_PER_SECOND, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * SNAPSHOTS_PER_SECOND).min(SNAPSHOTS_PER_SECOND);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_beyond_the_limit_is_refused_per_pipeline() {
        let limiter = SnapshotLimiter::default();
        let served = (0..100).filter(|_| limiter.admit("cam")).count();
        assert_eq!(served, SNAPSHOTS_PER_SECOND as usize);
        assert!(limiter.admit("other"), "each pipeline has its own budget");
    }
}

//! A frame rate over the last few seconds, for the metrics and the API: a live input that
//! waited a minute for its sender and now receives 25 fps reads 25, not the average since
//! the start.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The window the rate is taken over.
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Whole seconds kept: the window, the second in progress, and one spare so the oldest slot
/// is never the one being written.
const SLOTS: usize = RATE_WINDOW.as_secs() as usize + 2;

/// Events counted per wall-clock second since `origin`, in a ring of `SLOTS` seconds.
/// One writer (the sink thread) and occasional readers: an uncontended lock per frame costs
/// tens of nanoseconds, next to milliseconds of encoding.
#[derive(Debug)]
pub struct RecentRate {
    origin: Instant,
    /// Per slot: the second it counts (since `origin`) and its count.
    slots: Mutex<[(u64, u64); SLOTS]>,
}

impl Default for RecentRate {
    fn default() -> Self {
        RecentRate::new(Instant::now())
    }
}

impl RecentRate {
    /// A rate with no events yet, its times counted from `origin`.
    pub fn new(origin: Instant) -> RecentRate {
        RecentRate {
            origin,
            slots: Mutex::new([(u64::MAX, 0); SLOTS]),
        }
    }

    /// Counts one event at `now`.
    pub fn record(&self, now: Instant) {
        let second = now.saturating_duration_since(self.origin).as_secs();
        if let Ok(mut slots) = self.slots.lock() {
            let slot = &mut slots[(second % SLOTS as u64) as usize];
            if slot.0 != second {
                *slot = (second, 0);
            }
            slot.1 += 1;
        }
    }

    /// Events per second over the last [`RATE_WINDOW`] before `now` (the second in
    /// progress included), or over the time since `origin` when that is shorter.
    pub fn per_second(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.origin);
        let current = elapsed.as_secs();
        let window = RATE_WINDOW.as_secs();
        // The window starts at the beginning of a whole second, so it spans 5 s plus the
        // part of the current second gone by.
        let first = current.saturating_sub(window);
        let span = elapsed.as_secs_f64() - first as f64;
        if span <= 0.0 {
            return 0.0;
        }
        let Ok(slots) = self.slots.lock() else { return 0.0 };
        let counted: u64 = slots
            .iter()
            .filter(|(second, _)| (first..=current).contains(second))
            .map(|(_, count)| count)
            .sum();
        counted as f64 / span
    }
}

#[cfg(test)]
mod tests {
    use super::RecentRate;
    use std::time::{Duration, Instant};

    /// Records `fps` events per second from `from` to `to` seconds.
    fn feed(rate: &RecentRate, origin: Instant, fps: u64, from: u64, to: u64) {
        for second in from..to {
            for frame in 0..fps {
                rate.record(origin + Duration::from_secs(second) + Duration::from_millis(frame * 1000 / fps));
            }
        }
    }

    #[test]
    fn the_rate_follows_the_input_not_the_average_since_the_start() {
        let origin = Instant::now();
        let rate = RecentRate::new(origin);
        let at = |seconds: f64| origin + Duration::from_secs_f64(seconds);
        assert_eq!(rate.per_second(origin), 0.0, "nothing yet");

        // A live input idle for a minute, then at 25 fps.
        feed(&rate, origin, 25, 60, 80);
        let steady = rate.per_second(at(80.0));
        assert!((steady - 25.0).abs() < 0.01, "steady 25 fps reads {steady}");
        // Mid-second, the partial second counts with its share of the span.
        let mid = rate.per_second(at(80.5));
        assert!((mid - 125.0 / 5.5).abs() < 0.01, "{mid}");

        // It stops: within the window the rate falls, after it the rate is zero.
        let falling = rate.per_second(at(82.0));
        assert!((falling - 75.0 / 5.0).abs() < 0.01, "{falling}");
        assert_eq!(rate.per_second(at(86.0)), 0.0);
        // Old slots do not come back when the ring wraps around.
        feed(&rate, origin, 10, 100, 103);
        let restarted = rate.per_second(at(103.0));
        assert!((restarted - 30.0 / 5.0).abs() < 0.01, "{restarted}");
    }

    #[test]
    fn a_young_pipeline_divides_by_its_age() {
        let origin = Instant::now();
        let rate = RecentRate::new(origin);
        feed(&rate, origin, 30, 0, 2);
        let young = rate.per_second(origin + Duration::from_secs(2));
        assert!((young - 30.0).abs() < 0.01, "{young}");
    }
}

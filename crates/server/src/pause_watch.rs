//! Notices the whole process standing still. A thread sleeps [`TICK`] at a time; when it wakes
//! [`PAUSED_AFTER`] or more late, nothing of the process ran meanwhile either: the host paused
//! it (a virtual machine paused or migrated, a frozen cgroup, SIGSTOP) or gave it no CPU.
//! Real-time pipelines then fall behind their input's pace and drop frames on the way back;
//! the warning says why, and `convstream_process_pauses_total` and
//! `convstream_process_paused_seconds_total` count it.

use std::sync::Weak;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::metrics::ServerCounters;

/// How long the watching thread sleeps at a time.
pub const TICK: Duration = Duration::from_millis(100);

/// Woken this much later than asked, the process was paused: ten ticks, far past what a busy
/// scheduler delays a sleeping thread.
pub const PAUSED_AFTER: Duration = Duration::from_secs(1);

/// Starts the thread; it ends within a [`TICK`] once `counters` is dropped (the server gone).
pub fn start(counters: Weak<ServerCounters>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("pause-watch".into()).spawn(move || loop {
        let before = Instant::now();
        std::thread::sleep(TICK);
        let Some(counters) = counters.upgrade() else { return };
        if let Some(paused) = paused_for(before.elapsed()) {
            counters.pauses.inc();
            counters.paused_seconds.inc_by(paused.as_secs_f64());
            tracing::warn!(
                "the process stood still for {:.1} s (the host paused it or gave it no CPU): real-time pipelines fell behind and may drop frames catching up",
                paused.as_secs_f64()
            );
        }
    })
}

/// How long the process stood still, when a [`TICK`]'s sleep took `slept`.
fn paused_for(slept: Duration) -> Option<Duration> {
    slept.checked_sub(TICK).filter(|late| *late >= PAUSED_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_a_second_or_more_late_is_a_pause_of_that_length() {
        assert_eq!(paused_for(TICK), None);
        assert_eq!(paused_for(TICK + Duration::from_millis(999)), None);
        assert_eq!(paused_for(TICK + PAUSED_AFTER), Some(PAUSED_AFTER));
        assert_eq!(
            paused_for(TICK + Duration::from_secs(10)),
            Some(Duration::from_secs(10))
        );
        assert_eq!(paused_for(Duration::ZERO), None, "an early wake-up is no pause");
    }
}

//! The threads that set a GPU up in the background (the warm-up, an engine made while `run`
//! takes its first frames) are counted while they work, so that a process can wait for them
//! before it exits: a process that exits while one of its threads is inside the driver's
//! initialisation or a context's creation can be aborted by the driver's own exit handlers
//! (seen once on an H200 host: a run whose clip ended before a slow GPU start, SIGABRT).

use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The number of background GPU starts under way, and the wake-up when one ends.
struct Counter {
    running: Mutex<usize>,
    ended: Condvar,
}

fn counter() -> &'static Counter {
    static COUNTER: OnceLock<Counter> = OnceLock::new();
    COUNTER.get_or_init(|| Counter {
        running: Mutex::new(0),
        ended: Condvar::new(),
    })
}

/// One background GPU start, counted until dropped. Made before its thread is spawned and
/// moved into it, so no moment exists where the work runs uncounted.
pub struct GpuStart(());

impl GpuStart {
    pub fn begin() -> GpuStart {
        *counter().running.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        GpuStart(())
    }
}

impl Drop for GpuStart {
    fn drop(&mut self) {
        let counter = counter();
        let mut running = counter.running.lock().unwrap_or_else(|e| e.into_inner());
        *running = running.saturating_sub(1);
        counter.ended.notify_all();
    }
}

/// Waits until no background GPU start is under way, for at most `timeout` (a driver that
/// hangs must not keep the process); true when none is.
pub fn wait_for_gpu_starts(timeout: Duration) -> bool {
    let counter = counter();
    let until = Instant::now() + timeout;
    let mut running = counter.running.lock().unwrap_or_else(|e| e.into_inner());
    while *running > 0 {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        running = counter
            .ended
            .wait_timeout(running, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_when_the_starts_end_or_at_its_timeout() {
        let start = GpuStart::begin();
        let began = Instant::now();
        assert!(!wait_for_gpu_starts(Duration::from_millis(30)), "one is under way");
        assert!(began.elapsed() >= Duration::from_millis(30));
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(start);
        });
        assert!(wait_for_gpu_starts(Duration::from_secs(10)));
        worker.join().unwrap();
        assert!(wait_for_gpu_starts(Duration::ZERO), "none left");
    }
}

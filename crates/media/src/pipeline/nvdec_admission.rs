//! Admission of NVDEC pipelines. A GPU's NVDEC engines carry only so many live streams
//! (about 8 live 1080p25 H.264 streams each on an H100); one more makes every pipeline on
//! them fall behind and drop frames, where before it each kept its rate. So a pipeline asking
//! for NVDEC takes a seat on its GPU first, and past the GPU's predicted capacity waits for
//! one (stopping ends the wait) instead of opening a decoder that would slow the others.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// NVDEC pipelines running on each GPU, and the wake-up for those waiting for a seat.
#[derive(Default)]
struct Seats {
    taken: Mutex<HashMap<usize, usize>>,
    freed: Condvar,
}

fn seats() -> &'static Seats {
    static SEATS: OnceLock<Seats> = OnceLock::new();
    SEATS.get_or_init(Seats::default)
}

/// One pipeline's seat on a GPU's NVDEC engines, given back when dropped.
pub struct NvdecSeat {
    ordinal: usize,
}

impl Drop for NvdecSeat {
    fn drop(&mut self) {
        let seats = seats();
        let mut taken = seats.taken.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = taken.get_mut(&self.ordinal) {
            *count = count.saturating_sub(1);
        }
        seats.freed.notify_all();
    }
}

/// How long a waiting pipeline sleeps between looks at its stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// A seat on GPU `ordinal`'s NVDEC engines, which carry `capacity` pipelines (`None`:
/// unknown, so no limit): at once when one is free, else once another pipeline gives its
/// seat back. `None` when `stop` was set first.
pub fn admit(ordinal: usize, capacity: Option<usize>, stop: &AtomicBool) -> Option<NvdecSeat> {
    let seats = seats();
    let mut taken = seats.taken.lock().unwrap_or_else(|e| e.into_inner());
    let mut said = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let count = taken.entry(ordinal).or_default();
        if capacity.is_none_or(|capacity| *count < capacity) {
            *count += 1;
            return Some(NvdecSeat { ordinal });
        }
        if !said {
            tracing::warn!(
                "NVDEC on cuda:{ordinal} carries about {} live pipelines, and that many run: waiting for one to end \
                 (decoder = \"software\" decodes on the CPU instead)",
                capacity.unwrap_or_default()
            );
            said = true;
        }
        taken = seats
            .freed
            .wait_timeout(taken, STOP_CHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    // Each test uses its own GPU number: the seats are the process's.

    #[test]
    fn seats_up_to_the_capacity_are_given_at_once_and_the_next_waits_for_one_back() {
        let stop = AtomicBool::new(false);
        let first = admit(1000, Some(2), &stop).expect("a free seat");
        let _second = admit(1000, Some(2), &stop).expect("a free seat");
        let waiting = std::thread::spawn(|| {
            let started = Instant::now();
            let seat = admit(1000, Some(2), &AtomicBool::new(false));
            (seat.is_some(), started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
        let (seated, waited) = waiting.join().unwrap();
        assert!(seated);
        assert!(
            waited >= Duration::from_millis(250),
            "it waited for the seat: {waited:?}"
        );
    }

    #[test]
    fn a_stop_ends_the_wait_without_a_seat() {
        let stop = Arc::new(AtomicBool::new(false));
        let _only = admit(1001, Some(1), &stop).expect("a free seat");
        let waiting = {
            let stop = stop.clone();
            std::thread::spawn(move || admit(1001, Some(1), &stop).is_some())
        };
        std::thread::sleep(Duration::from_millis(150));
        stop.store(true, Ordering::Relaxed);
        assert!(!waiting.join().unwrap(), "stopped, not seated");
    }

    #[test]
    fn an_unknown_capacity_admits_every_pipeline() {
        let stop = AtomicBool::new(false);
        let seats: Vec<_> = (0..100).filter_map(|_| admit(1002, None, &stop)).collect();
        assert_eq!(seats.len(), 100);
    }
}

//! Pipelines starting a few at a time ([`StartGate`]): a full host started at once (a
//! service's start, a node's restart, a reload) makes every decoder, engine and frame pool
//! at the same moment, and every pipeline then drops frames for seconds while the cores
//! and the driver catch up. Through the gate, at most `at_once` pipelines are in their
//! start at a time: from their input open (and their NVDEC seat, which they wait for
//! outside the gate) to their first frame written, or [`LONGEST_TURN`], whichever comes
//! first. The others wait, saying so, and a stop ends their wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::monitor::PipelineMonitor;
use crate::stats::Counters;

/// The longest a pipeline holds its turn: one whose first frame is slow to come (a live
/// input with no sender yet, a slow network) lets the next one start.
pub const LONGEST_TURN: Duration = Duration::from_secs(5);

/// How often a waiting pipeline looks again (and at its stop flag).
const LOOK_AGAIN: Duration = Duration::from_millis(20);

/// See the module's text. Shared by the pipelines of one service.
#[derive(Debug)]
pub struct StartGate {
    at_once: usize,
    /// The pipelines in their start now.
    starting: Mutex<Vec<Starting>>,
}

/// One pipeline in its start.
#[derive(Debug)]
struct Starting {
    /// Its counters, which say when its first frame is written.
    counters: Arc<Counters>,
    /// Set when its [`StartTurn`] is dropped (its run ended, or failed to start).
    ended: Arc<AtomicBool>,
    began: Instant,
}

/// A pipeline's turn, held by its run: dropping it (the run's end) ends the turn if the
/// first frame or [`LONGEST_TURN`] has not already.
#[derive(Debug)]
pub struct StartTurn {
    ended: Arc<AtomicBool>,
}

impl Drop for StartTurn {
    fn drop(&mut self) {
        self.ended.store(true, Ordering::Relaxed);
    }
}

impl StartGate {
    /// A gate letting `at_once` pipelines (at least 1) start at a time.
    pub fn new(at_once: usize) -> Arc<StartGate> {
        Arc::new(StartGate {
            at_once: at_once.max(1),
            starting: Mutex::new(Vec::new()),
        })
    }

    /// Half the host's cores, at least 2: what `[server] starting_at_once` means when unset.
    pub fn default_at_once() -> usize {
        (std::thread::available_parallelism().map_or(2, |n| n.get()) / 2).max(2)
    }

    /// How many pipelines may start at a time.
    pub fn at_once(&self) -> usize {
        self.at_once
    }

    /// Waits for `monitor`'s pipeline's turn to start; `None` when `stop` was set first.
    /// While it waits, the monitor says what for.
    pub fn wait_for_turn(&self, monitor: &PipelineMonitor, stop: &AtomicBool) -> Option<StartTurn> {
        let mut said = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                monitor.set_waiting_for(None);
                return None;
            }
            if let Some(turn) = self.try_take_turn(&monitor.counters, Instant::now()) {
                if said {
                    monitor.set_waiting_for(None);
                }
                return Some(turn);
            }
            if !said {
                monitor.set_waiting_for(Some(format!(
                    "its turn to start ({} pipelines start at a time: [server] starting_at_once)",
                    self.at_once
                )));
                said = true;
            }
            std::thread::sleep(LOOK_AGAIN);
        }
    }

    /// Takes a turn for the pipeline counting in `counters` when fewer than `at_once`
    /// pipelines are still in their start at `now`.
    fn try_take_turn(&self, counters: &Arc<Counters>, now: Instant) -> Option<StartTurn> {
        let mut starting = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        starting.retain(|pipeline| pipeline.still_starting(now));
        if starting.len() >= self.at_once {
            return None;
        }
        let ended = Arc::new(AtomicBool::new(false));
        starting.push(Starting {
            counters: counters.clone(),
            ended: ended.clone(),
            began: now,
        });
        Some(StartTurn { ended })
    }
}

impl Starting {
    /// Whether the pipeline still holds its turn at `now`: until its first frame is
    /// written, its run ends, or [`LONGEST_TURN`] has passed.
    fn still_starting(&self, now: Instant) -> bool {
        self.counters.startup.first_frame_written.get().is_none()
            && !self.ended.load(Ordering::Relaxed)
            && now.saturating_duration_since(self.began) < LONGEST_TURN
    }
}

#[cfg(test)]
mod tests {
    use super::{StartGate, LONGEST_TURN};
    use crate::pipeline::PipelineMonitor;
    use crate::stats::StartupMarks;
    use convstream_core::FilterSpec;
    use convstream_core::Mask;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn monitor(name: &str) -> Arc<PipelineMonitor> {
        let identity = Mask::from_spec("identity").expect("a preset");
        let filter = FilterSpec::uniform(identity, Default::default(), Default::default());
        Arc::new(PipelineMonitor::new(name, &filter))
    }

    #[test]
    fn a_turn_ends_with_the_first_frame_the_end_of_the_run_or_the_longest_turn() {
        let gate = StartGate::new(2);
        let (a, b, c) = (monitor("a"), monitor("b"), monitor("c"));
        let now = Instant::now();
        let _a_turn = gate.try_take_turn(&a.counters, now).expect("first of two");
        let b_turn = gate.try_take_turn(&b.counters, now).expect("second of two");
        assert!(gate.try_take_turn(&c.counters, now).is_none(), "two at a time");
        StartupMarks::mark(&a.counters.startup.first_frame_written);
        let _c_turn = gate
            .try_take_turn(&c.counters, now)
            .expect("a's first frame ends its turn");
        let d = monitor("d");
        assert!(gate.try_take_turn(&d.counters, now).is_none());
        drop(b_turn);
        let _d_turn = gate
            .try_take_turn(&d.counters, now)
            .expect("a run that ended ends its turn");
        let e = monitor("e");
        assert!(gate.try_take_turn(&e.counters, now).is_none());
        let later = now + LONGEST_TURN + Duration::from_millis(1);
        assert!(
            gate.try_take_turn(&e.counters, later).is_some(),
            "a start slower than the longest turn lets the next one go"
        );
    }

    #[test]
    fn a_stop_ends_the_wait_and_the_wait_is_said() {
        let gate = StartGate::new(1);
        let (first, waiting) = (monitor("first"), monitor("waiting"));
        let _turn = gate
            .wait_for_turn(&first, &AtomicBool::new(false))
            .expect("a free gate");
        let stop = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (gate, waiting, stop) = (gate.clone(), waiting.clone(), stop.clone());
            std::thread::spawn(move || gate.wait_for_turn(&waiting, &stop))
        };
        let until = Instant::now() + Duration::from_secs(10);
        while waiting.waiting_for().is_none() {
            assert!(Instant::now() < until, "the wait was never said");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(waiting.waiting_for().unwrap_or_default().contains("its turn to start"));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(waiter.join().expect("the waiter ends").is_none(), "a stop is no turn");
        assert_eq!(waiting.waiting_for(), None);
    }
}

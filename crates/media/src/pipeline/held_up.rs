//! Frames held up on their way through the filter: a frame that took [`HELD_UP_AFTER`] or
//! more from decoded to filtered is counted (`frames_held_up`) and said in the log, at most
//! once per [`SAY_AT_MOST_EVERY`] for a pipeline, with where its time went. A real-time
//! pipeline drops frames after such a hold-up (its queue overflows meanwhile); the warning
//! says why. GPU time small against the engine's time means the CUDA driver held the calls
//! (another process, a page-locked allocation, the host), not the kernels. A pipeline's start
//! is left out (until its engine has settled, and [`START_GRACE`] after): frames are slow then
//! by design (kernels compiling, pools growing, pipelines starting in turns) and `/readyz`
//! covers it, so the count and the warning mean a hold-up of a running pipeline.

use std::time::{Duration, Instant};

use crate::stats::FrameLatency;

/// A frame this long from decoded to filtered is held up: about 25 frame intervals at 25 fps,
/// far past what any filter of a single frame takes.
pub const HELD_UP_AFTER: Duration = Duration::from_secs(1);

/// A pipeline says its held-up frames at most this often; the count covers the rest.
pub const SAY_AT_MOST_EVERY: Duration = Duration::from_secs(60);

/// How long after its engine has settled a pipeline's frames begin to be watched.
pub const START_GRACE: Duration = Duration::from_secs(10);

/// One pipeline's held-up frames since it last said so.
#[derive(Debug, Default)]
pub struct HeldUpFrames {
    /// The first frame seen with the engine settled: frames are watched from
    /// [`START_GRACE`] after it.
    settled_at: Option<Instant>,
    said_at: Option<Instant>,
    unsaid: u64,
}

/// What to do with a frame [`HeldUpFrames::note`] found held up.
#[derive(Debug, PartialEq)]
pub struct HeldUp {
    /// The warning to log now, if it is time to say one.
    pub say: Option<String>,
}

impl HeldUpFrames {
    /// Frames watched as if the engine had settled at `at` (tests of the stage around it).
    #[cfg(test)]
    pub(super) fn settled_at(at: Instant) -> HeldUpFrames {
        HeldUpFrames {
            settled_at: Some(at),
            ..HeldUpFrames::default()
        }
    }

    /// Looks at a frame's latency, taken `now` with the engine `settled` or not (`device`
    /// names where it was filtered, asked only for a warning). None when the frame was not
    /// held up or the pipeline is starting; else it is to be counted, with a warning when
    /// none was said in the last [`SAY_AT_MOST_EVERY`].
    pub fn note(
        &mut self,
        latency: &FrameLatency,
        settled: bool,
        device: impl FnOnce() -> String,
        now: Instant,
    ) -> Option<HeldUp> {
        if !settled {
            self.settled_at = None;
            return None;
        }
        let settled_at = *self.settled_at.get_or_insert(now);
        let starting = now.saturating_duration_since(settled_at) < START_GRACE;
        if starting || latency.ms < HELD_UP_AFTER.as_secs_f64() * 1e3 {
            return None;
        }
        self.unsaid += 1;
        let due = self
            .said_at
            .is_none_or(|said| now.saturating_duration_since(said) >= SAY_AT_MOST_EVERY);
        if !due {
            return Some(HeldUp { say: None });
        }
        let others = match self.unsaid - 1 {
            0 => String::new(),
            n => format!("; {n} more held up since last said"),
        };
        self.said_at = Some(now);
        self.unsaid = 0;
        Some(HeldUp {
            say: Some(format!(
                "frame held up {:.1} s on {} from decoded to filtered ({}){}{others}",
                latency.ms / 1e3,
                device(),
                latency.describe(),
                cause(latency)
            )),
        })
    }
}

/// Where the time went, when one part of it says: the GPU's own time against the engine's,
/// or the queue before the filter.
fn cause(latency: &FrameLatency) -> &'static str {
    let long = HELD_UP_AFTER.as_secs_f64() * 1e3 / 2.0;
    if latency.handoff_ms.is_some_and(|handoff| handoff >= long) {
        return ": its work was done, then it waited to be taken back (copying it out of the lane, or the filter thread held up handing on the frames behind it)";
    }
    match (latency.engine_ms, latency.gpu_ms, latency.waited_ms, latency.submit_ms) {
        (Some(engine), Some(gpu), _, _) if engine >= long && gpu < engine / 2.0 => {
            ": the GPU worked a fraction of it, so its driver held the calls (another process on the GPU, a page-locked allocation, a paused host)"
        }
        (Some(engine), Some(gpu), _, _) if engine >= long && gpu >= engine / 2.0 => {
            ": the GPU itself took that long (a busy or throttled GPU)"
        }
        (_, _, _, Some(submit)) if submit >= long => {
            ": handing it to the engine took that long (the GPU's queue full, or its driver holding calls)"
        }
        (_, _, Some(waited), _) if waited >= long => {
            ": it waited before the filter (the filter stage busy, or the process not running)"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(ms: f64, waited: f64, submit: f64, engine: f64, gpu: Option<f64>) -> FrameLatency {
        FrameLatency {
            frame: 7,
            ms,
            waited_ms: Some(waited),
            submit_ms: Some(submit),
            engine_ms: Some(engine),
            gpu_ms: gpu,
            handoff_ms: Some(ms - waited - submit - engine),
        }
    }

    fn on(device: &str) -> impl FnOnce() -> String + '_ {
        move || device.to_string()
    }

    /// Frames watched from `now` on: the engine settled [`START_GRACE`] before.
    fn watched(now: Instant) -> HeldUpFrames {
        let mut frames = HeldUpFrames::default();
        let fast = latency(2.0, 0.1, 0.1, 1.7, Some(0.4));
        assert_eq!(frames.note(&fast, true, on("cuda:0"), now - START_GRACE), None);
        frames
    }

    #[test]
    fn a_frame_under_a_second_is_not_held_up() {
        let now = Instant::now() + START_GRACE;
        let mut frames = watched(now);
        let almost = latency(999.0, 1.0, 1.0, 996.0, Some(990.0));
        assert_eq!(frames.note(&almost, true, on("cuda:0"), now), None);
        let fast = latency(2.0, 0.1, 0.1, 1.7, Some(0.4));
        assert_eq!(frames.note(&fast, true, on("cuda:0"), now), None);
    }

    #[test]
    fn a_starting_pipeline_is_watched_once_its_engine_settled_and_the_grace_passed() {
        let start = Instant::now();
        let slow = latency(3_000.0, 0.1, 0.2, 2_999.0, Some(0.4));
        let mut frames = HeldUpFrames::default();
        assert_eq!(frames.note(&slow, false, on("cpu"), start), None, "the GPU starting");
        let settled = start + Duration::from_secs(5);
        assert_eq!(frames.note(&slow, true, on("cuda:0"), settled), None, "just settled");
        let almost = settled + START_GRACE - Duration::from_millis(1);
        assert_eq!(frames.note(&slow, true, on("cuda:0"), almost), None, "in the grace");
        assert!(frames.note(&slow, true, on("cuda:0"), settled + START_GRACE).is_some());
    }

    #[test]
    fn a_held_up_frame_is_said_once_a_minute_with_the_count_of_those_between() {
        let now = Instant::now() + START_GRACE;
        let mut frames = watched(now);
        let slow = latency(9_800.0, 0.1, 0.2, 9_799.0, Some(0.4));
        let first = frames
            .note(&slow, true, on("cuda:1"), now)
            .expect("held up")
            .say
            .expect("said");
        assert!(first.contains("9.8 s on cuda:1"), "{first}");
        assert!(first.contains("GPU 0.40"), "the split is given: {first}");
        assert!(first.contains("its driver held the calls"), "{first}");
        assert!(!first.contains("more held up"), "{first}");
        // Within the minute: counted, not said.
        for seconds in [1, 30, 59] {
            let held = frames.note(&slow, true, on("cuda:1"), now + Duration::from_secs(seconds));
            assert_eq!(held, Some(HeldUp { say: None }));
        }
        let later = frames
            .note(&slow, true, on("cuda:1"), now + Duration::from_secs(60))
            .and_then(|held| held.say)
            .expect("said again after a minute");
        assert!(later.contains("; 3 more held up since last said"), "{later}");
    }

    #[test]
    fn the_cause_follows_where_the_time_went() {
        let gpu_slow = latency(1_500.0, 0.1, 0.1, 1_499.0, Some(1_450.0));
        assert!(cause(&gpu_slow).contains("the GPU itself"));
        let queued = latency(1_500.0, 1_490.0, 0.1, 9.0, Some(0.4));
        assert!(cause(&queued).contains("waited before the filter"));
        let submit = latency(1_500.0, 0.1, 1_490.0, 9.0, Some(0.4));
        assert!(cause(&submit).contains("handing it to the engine"));
        // What the soaks showed: done on the GPU in no time, taken back seconds later.
        let handoff = latency(3_300.0, 0.1, 295.0, 2.3, Some(0.3));
        assert!(
            cause(&handoff).contains("waited to be taken back"),
            "{}",
            cause(&handoff)
        );
        // The CPU engine has no GPU time: the engine's part alone says nothing of a driver.
        let cpu = latency(1_500.0, 0.1, 0.1, 1_499.0, None);
        assert_eq!(cause(&cpu), "");
    }
}

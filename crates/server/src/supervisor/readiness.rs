//! What `/readyz` means: every pipeline keeps up. A live pipeline (one its senders push to)
//! is ready from its start, since senders routed to ready instances only (a Kubernetes
//! Service) would otherwise never reach it. Any other pipeline is ready once it has written
//! frames for [`STEADY_FOR`] without dropping one and, for a real-time input, without
//! falling behind its pace: the seconds after a full host's start, when every decoder and
//! engine warms up at once, are not "ready". A pipeline behind its input drops nothing until
//! its queue fills, which it does when it catches up (a burst), so the drops alone would
//! call it ready seconds too soon. Once every pipeline is
//! steady at the same moment they all count as ready for good (later drops are for the
//! metrics and the logs to show, not a reason to take the instance out of service); one that
//! ended (finished, stopped, failed) counts as ready, as the operator or its input chose that;
//! but an instance whose every pipeline failed is not ready (see `Supervisor::not_ready`).

use std::time::{Duration, Instant};

use convstream_media::{PipelineMonitor, PipelineState};

/// How long a pipeline writes frames without a drop (and on time) before it counts as ready.
pub const STEADY_FOR: Duration = Duration::from_secs(3);

/// Whether a pipeline is ready at `now`, or what it still waits for.
pub(super) fn readiness(live: bool, monitor: &PipelineMonitor, now: Instant) -> Result<(), String> {
    let counters = &monitor.counters;
    steady(
        live,
        monitor.state(),
        monitor.waiting_for(),
        counters.startup.first_frame_written.get().copied(),
        Setbacks {
            last_drop: counters.last_drop(),
            last_behind: counters.last_behind(),
        },
        now,
    )
}

/// When a pipeline last dropped a frame and last fell behind its input's pace, if it did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Setbacks {
    pub last_drop: Option<Instant>,
    pub last_behind: Option<Instant>,
}

/// See [`readiness`], on the values it reads.
pub(super) fn steady(
    live: bool,
    state: PipelineState,
    waiting_for: Option<String>,
    first_frame: Option<Instant>,
    setbacks: Setbacks,
    now: Instant,
) -> Result<(), String> {
    if live || state.has_ended() || state == PipelineState::Stopping {
        return Ok(());
    }
    if state == PipelineState::Starting {
        return Err(match waiting_for {
            Some(what) => format!("starting: waits for {what}"),
            None => "starting".to_string(),
        });
    }
    let Some(first_frame) = first_frame else {
        return Err("no frame written yet".to_string());
    };
    // Setbacks before the first frame written (a queue full while the engine was made, an
    // input behind while it waited for its turn to start) count from that frame.
    let drop = setbacks.last_drop.filter(|&at| at >= first_frame);
    let behind = setbacks.last_behind.filter(|&at| at >= first_frame);
    let latest = [Some(first_frame), drop, behind]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(first_frame);
    let since = now.saturating_duration_since(latest);
    if since >= STEADY_FOR {
        return Ok(());
    }
    let ago = |at: Instant| now.saturating_duration_since(at).as_secs_f64();
    let wait = STEADY_FOR.as_secs();
    Err(match (drop, behind) {
        (_, Some(behind)) if behind == latest => format!(
            "behind its input's real-time pace {:.1} s ago; ready after {wait} s on time without a drop",
            ago(behind)
        ),
        (Some(drop), _) if drop == latest => format!(
            "dropped a frame {:.1} s ago; ready after {wait} s without a drop",
            ago(drop)
        ),
        _ => format!(
            "warming up: first frame {:.1} s ago; ready after {wait} s without a drop",
            since.as_secs_f64()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::{steady, Setbacks, STEADY_FOR};
    use convstream_media::PipelineState;
    use std::time::{Duration, Instant};

    #[test]
    fn a_pipeline_is_ready_after_frames_without_drops_for_a_while() {
        let start = Instant::now();
        let running = |first, last_drop, now| {
            let setbacks = Setbacks {
                last_drop,
                last_behind: None,
            };
            steady(false, PipelineState::Running, None, first, setbacks, now)
        };
        assert!(running(None, None, start).unwrap_err().contains("no frame"));
        let first = Some(start);
        let early = running(first, None, start + Duration::from_secs(1)).unwrap_err();
        assert!(early.contains("warming up"), "{early}");
        assert!(running(first, None, start + STEADY_FOR).is_ok());
        let dropped = Some(start + Duration::from_secs(2));
        let after_drop = running(first, dropped, start + STEADY_FOR).unwrap_err();
        assert!(after_drop.contains("dropped a frame 1.0 s ago"), "{after_drop}");
        assert!(running(first, dropped, start + Duration::from_secs(2) + STEADY_FOR).is_ok());
        // Drops before the first frame written (a queue full while the engine was made)
        // count from that frame.
        let before = Some(start - Duration::from_secs(1));
        assert!(running(first, before, start + STEADY_FOR).is_ok());
    }

    #[test]
    fn a_pipeline_behind_its_inputs_pace_is_not_ready_until_on_time_for_a_while() {
        let start = Instant::now();
        let at = |seconds: f64| start + Duration::from_secs_f64(seconds);
        let running = |last_drop, last_behind, now| {
            let setbacks = Setbacks { last_drop, last_behind };
            steady(false, PipelineState::Running, None, Some(start), setbacks, now)
        };
        // Behind without a drop (its queue not full yet): not ready, and it says why.
        let behind = running(None, Some(at(3.5)), at(4.0)).unwrap_err();
        assert!(
            behind.contains("behind its input's real-time pace 0.5 s ago"),
            "{behind}"
        );
        assert!(running(None, Some(at(3.5)), at(3.5) + STEADY_FOR).is_ok());
        // The later setback is the one that counts, and named.
        let dropped_since = running(Some(at(3.8)), Some(at(3.5)), at(4.0)).unwrap_err();
        assert!(dropped_since.contains("dropped a frame 0.2 s ago"), "{dropped_since}");
        assert!(running(Some(at(3.8)), Some(at(3.5)), at(3.5) + STEADY_FOR).is_err());
        let behind_since = running(Some(at(3.5)), Some(at(3.8)), at(4.0)).unwrap_err();
        assert!(behind_since.contains("behind"), "{behind_since}");
        // Behind before its first frame (waiting for its turn to start) counts from that frame.
        let before = Some(start - Duration::from_secs(1));
        assert!(running(None, before, start + STEADY_FOR).is_ok());
        assert!(running(None, before, at(1.0)).unwrap_err().contains("warming up"));
    }

    #[test]
    fn live_and_ended_pipelines_are_ready_and_a_starting_one_says_what_it_waits_for() {
        let now = Instant::now();
        assert!(steady(true, PipelineState::Starting, None, None, Setbacks::default(), now).is_ok());
        for ended in [
            PipelineState::Stopping,
            PipelineState::Finished,
            PipelineState::Stopped,
            PipelineState::Failed,
        ] {
            assert!(
                steady(false, ended, None, None, Setbacks::default(), now).is_ok(),
                "{ended:?}"
            );
        }
        let waiting = steady(
            false,
            PipelineState::Starting,
            Some("an NVDEC seat".into()),
            None,
            Setbacks::default(),
            now,
        );
        assert_eq!(waiting.unwrap_err(), "starting: waits for an NVDEC seat");
    }
}

//! What `/readyz` means: every pipeline keeps up. A live pipeline (one its senders push to)
//! is ready from its start, since senders routed to ready instances only (a Kubernetes
//! Service) would otherwise never reach it. Any other pipeline is ready once it has written
//! frames for [`STEADY_FOR`] without dropping one: the seconds after a full host's start,
//! when every decoder and engine warms up at once, are not "ready". Once every pipeline is
//! steady at the same moment they all count as ready for good (later drops are for the
//! metrics and the logs to show, not a reason to take the instance out of service); one that
//! ended (finished, stopped, failed) counts as ready, as the operator or its input chose that.

use std::time::{Duration, Instant};

use convstream_media::pipeline::{PipelineMonitor, PipelineState};

/// How long a pipeline writes frames without a drop before it counts as ready.
pub const STEADY_FOR: Duration = Duration::from_secs(3);

/// Whether a pipeline is ready at `now`, or what it still waits for.
pub(super) fn readiness(live: bool, monitor: &PipelineMonitor, now: Instant) -> Result<(), String> {
    let counters = &monitor.counters;
    steady(
        live,
        monitor.state(),
        monitor.waiting_for(),
        counters.startup.first_frame_written.get().copied(),
        counters.last_drop(),
        now,
    )
}

/// See [`readiness`], on the values it reads.
pub(super) fn steady(
    live: bool,
    state: PipelineState,
    waiting_for: Option<String>,
    first_frame: Option<Instant>,
    last_drop: Option<Instant>,
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
    let since = now.saturating_duration_since(last_drop.map_or(first_frame, |drop| drop.max(first_frame)));
    if since >= STEADY_FOR {
        return Ok(());
    }
    Err(match last_drop {
        Some(drop) if drop >= first_frame => format!(
            "dropped a frame {:.1} s ago; ready after {} s without a drop",
            now.saturating_duration_since(drop).as_secs_f64(),
            STEADY_FOR.as_secs()
        ),
        _ => format!(
            "warming up: first frame {:.1} s ago; ready after {} s without a drop",
            since.as_secs_f64(),
            STEADY_FOR.as_secs()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::{steady, STEADY_FOR};
    use convstream_media::pipeline::PipelineState;
    use std::time::{Duration, Instant};

    #[test]
    fn a_pipeline_is_ready_after_frames_without_drops_for_a_while() {
        let start = Instant::now();
        let running = |first, drop, now| steady(false, PipelineState::Running, None, first, drop, now);
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
    fn live_and_ended_pipelines_are_ready_and_a_starting_one_says_what_it_waits_for() {
        let now = Instant::now();
        assert!(steady(true, PipelineState::Starting, None, None, None, now).is_ok());
        for ended in [
            PipelineState::Stopping,
            PipelineState::Finished,
            PipelineState::Stopped,
            PipelineState::Failed,
        ] {
            assert!(steady(false, ended, None, None, None, now).is_ok(), "{ended:?}");
        }
        let waiting = steady(
            false,
            PipelineState::Starting,
            Some("an NVDEC seat".into()),
            None,
            None,
            now,
        );
        assert_eq!(waiting.unwrap_err(), "starting: waits for an NVDEC seat");
    }
}

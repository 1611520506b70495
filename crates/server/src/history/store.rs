//! Every pipeline's recent past ([`PipelineHistory`]): one point every [`HISTORY_INTERVAL`]
//! with the frame rate, the frames dropped and the 99th-percentile filter latency of that
//! interval, at most [`HISTORY_POINTS`] per pipeline (10 minutes). Memory is bounded by the
//! pipeline count: a ring of points and one copy of the latency histogram's counts each.
//!
//! Points are kept by [`PipelineId`], not by name: a pipeline deleted and added again under
//! its name between two points is another pipeline, and starts with none of the old one's.
//! Its restarts (a stop and start, a reload's) are the same pipeline: its points go on.

use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::pipeline_logs::PipelineLogs;
use crate::supervisor::{Listed, PipelineId, Supervisor};
use convstream_media::PipelineState;
use convstream_media::{quantile_ms_of, Counters};

/// How often a point is taken.
pub const HISTORY_INTERVAL: Duration = Duration::from_secs(5);
/// Points kept per pipeline: 10 minutes at [`HISTORY_INTERVAL`].
pub const HISTORY_POINTS: usize = 120;

/// One interval of one pipeline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistoryPoint {
    /// When the point was taken, in seconds since the Unix epoch.
    pub at: f64,
    /// The pipeline's state then.
    pub state: PipelineState,
    /// Frames written per second over the interval.
    pub fps: f64,
    /// Frames dropped during the interval.
    pub frames_dropped: u64,
    /// The 99th percentile of the filter latency of the interval's frames, in
    /// milliseconds; `null` when no frame was filtered.
    pub latency_p99_ms: Option<f64>,
}

/// One pipeline's points and what the next point is measured from.
struct Track {
    points: VecDeque<HistoryPoint>,
    /// The run the baselines belong to: a restart brings new counters, measured from zero.
    counters: Weak<Counters>,
    taken_at: Instant,
    written: u64,
    dropped: u64,
    latencies: Vec<u64>,
}

/// Every pipeline's points (see the module's docs).
#[derive(Default)]
pub struct PipelineHistory {
    tracks: Mutex<HashMap<PipelineId, Track>>,
}

impl PipelineHistory {
    /// Takes a point of every pipeline in `listed` at `now` (`wall` for its timestamp);
    /// forgets pipelines no longer there.
    pub fn sample(&self, listed: &[Listed], now: Instant, wall: SystemTime) {
        let at = wall.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let mut tracks = self.tracks.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        tracks.retain(|id, _| listed.iter().any(|pipeline| pipeline.id == *id));
        for Listed { id, monitor } in listed {
            let counters = &monitor.counters;
            let written = Counters::get(&counters.frames_written);
            let dropped = Counters::get(&counters.frames_dropped);
            let latencies = counters.filter_latency.counts();
            let track = tracks.entry(*id).or_insert_with(|| Track {
                points: VecDeque::with_capacity(HISTORY_POINTS),
                counters: Weak::new(),
                taken_at: monitor.started_at,
                written: 0,
                dropped: 0,
                latencies: Vec::new(),
            });
            if !std::ptr::eq(track.counters.as_ptr(), Arc::as_ptr(counters)) {
                // A new run (or the first look): measured from its start.
                track.counters = Arc::downgrade(counters);
                track.taken_at = monitor.started_at;
                track.written = 0;
                track.dropped = 0;
                track.latencies = Vec::new();
            }
            let seconds = now.saturating_duration_since(track.taken_at).as_secs_f64();
            let since: Vec<u64> = latencies
                .iter()
                .enumerate()
                .map(|(i, &count)| count.saturating_sub(track.latencies.get(i).copied().unwrap_or(0)))
                .collect();
            let point = HistoryPoint {
                at,
                state: monitor.state(),
                fps: if seconds > 0.0 {
                    written.saturating_sub(track.written) as f64 / seconds
                } else {
                    0.0
                },
                frames_dropped: dropped.saturating_sub(track.dropped),
                latency_p99_ms: quantile_ms_of(&since, 0.99),
            };
            if track.points.len() == HISTORY_POINTS {
                track.points.pop_front();
            }
            track.points.push_back(point);
            (track.taken_at, track.written, track.dropped, track.latencies) = (now, written, dropped, latencies);
        }
    }

    /// The points of pipeline `id`, oldest first (empty before its first).
    pub fn points(&self, id: PipelineId) -> Vec<HistoryPoint> {
        let tracks = self.tracks.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        tracks
            .get(&id)
            .map(|track| track.points.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Takes a point of every pipeline now and then every [`HISTORY_INTERVAL`], for as long
    /// as the task runs (`serve` ends it), and forgets the log lines of pipelines gone.
    pub async fn keep(self: Arc<Self>, supervisor: Arc<Supervisor>) {
        let mut ticker = tokio::time::interval(HISTORY_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let listed = supervisor.listed();
            self.sample(&listed, Instant::now(), SystemTime::now());
            // The last log lines of pipelines gone go with them.
            PipelineLogs::global().retain(|id| listed.iter().any(|pipeline| pipeline.id == id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_core::Mask;
    use convstream_core::{BorderMode, FilterSpec, PlaneSelection};
    use convstream_media::{FrameLatency, PipelineMonitor};

    /// A run of pipeline `id`, named `name`.
    fn run(id: u64, name: &str) -> Listed {
        let mask = Mask::from_spec("box").expect("a preset");
        let filter = FilterSpec::uniform(mask, BorderMode::default(), PlaneSelection::default());
        Listed {
            id: PipelineId(id),
            monitor: Arc::new(PipelineMonitor::new(name, &filter)),
        }
    }

    fn frames(monitor: &PipelineMonitor, count: u64, latency_ms: f64) {
        for frame in 0..count {
            monitor.counters.count_written();
            monitor.counters.record_latency(FrameLatency {
                frame,
                ms: latency_ms,
                waited_ms: None,
                submit_ms: None,
                engine_ms: None,
                gpu_ms: None,
                handoff_ms: None,
            });
        }
    }

    #[test]
    fn each_point_measures_its_own_interval_and_the_ring_stays_bounded() {
        let history = PipelineHistory::default();
        let cam = run(1, "cam");
        let start = cam.monitor.started_at;
        let wall = SystemTime::now();
        frames(&cam.monitor, 50, 40.0);
        history.sample(std::slice::from_ref(&cam), start + HISTORY_INTERVAL, wall);
        frames(&cam.monitor, 100, 2.0);
        cam.monitor
            .counters
            .frames_dropped
            .store(7, std::sync::atomic::Ordering::Relaxed);
        history.sample(std::slice::from_ref(&cam), start + HISTORY_INTERVAL * 2, wall);
        let points = history.points(cam.id);
        assert_eq!(points.len(), 2);
        assert!((points[0].fps - 10.0).abs() < 1e-9, "{points:?}");
        assert!((points[1].fps - 20.0).abs() < 1e-9, "{points:?}");
        assert!((points[0].latency_p99_ms.unwrap() - 40.0).abs() < 1.0, "{points:?}");
        assert!(
            (points[1].latency_p99_ms.unwrap() - 2.0).abs() < 0.05,
            "the interval's frames only: {points:?}"
        );
        assert_eq!((points[0].frames_dropped, points[1].frames_dropped), (0, 7));

        for step in 3..500u32 {
            history.sample(std::slice::from_ref(&cam), start + HISTORY_INTERVAL * step, wall);
        }
        let points = history.points(cam.id);
        assert_eq!(points.len(), HISTORY_POINTS, "bounded");
        assert_eq!(points.last().map(|p| p.fps), Some(0.0));
        assert_eq!(points.last().and_then(|p| p.latency_p99_ms), None, "no frame, no p99");
    }

    #[test]
    fn a_restart_is_measured_from_zero_and_a_removed_pipeline_is_forgotten() {
        let history = PipelineHistory::default();
        let first = run(1, "cam");
        frames(&first.monitor, 500, 5.0);
        let wall = SystemTime::now();
        let after = |run: &Listed| run.monitor.started_at + HISTORY_INTERVAL;
        history.sample(std::slice::from_ref(&first), after(&first), wall);
        // The same pipeline, started again: a new run under the same id.
        let restarted = Listed {
            id: first.id,
            ..run(1, "cam")
        };
        frames(&restarted.monitor, 25, 5.0);
        history.sample(std::slice::from_ref(&restarted), after(&restarted), wall);
        let points = history.points(first.id);
        assert_eq!(points.len(), 2, "one track for the pipeline across its runs");
        assert!((points[1].fps - 5.0).abs() < 1e-9, "{points:?}");
        history.sample(&[], Instant::now(), wall);
        assert!(history.points(first.id).is_empty());
    }

    #[test]
    fn a_pipeline_added_again_under_a_deleted_ones_name_starts_with_no_points() {
        let history = PipelineHistory::default();
        let wall = SystemTime::now();
        let deleted = run(1, "h1");
        frames(&deleted.monitor, 250, 5.0);
        history.sample(
            std::slice::from_ref(&deleted),
            deleted.monitor.started_at + HISTORY_INTERVAL,
            wall,
        );
        history.sample(
            std::slice::from_ref(&deleted),
            deleted.monitor.started_at + HISTORY_INTERVAL * 2,
            wall,
        );
        // Deleted and added again between two points: the keeper never saw the name unlisted.
        let added = run(2, "h1");
        assert!(history.points(added.id).is_empty(), "none of the deleted one's points");
        frames(&added.monitor, 25, 5.0);
        history.sample(
            std::slice::from_ref(&added),
            added.monitor.started_at + HISTORY_INTERVAL,
            wall,
        );
        let points = history.points(added.id);
        assert_eq!(points.len(), 1, "its own point only: {points:?}");
        assert!((points[0].fps - 5.0).abs() < 1e-9, "{points:?}");
        assert!(history.points(deleted.id).is_empty(), "the deleted one is forgotten");
    }
}

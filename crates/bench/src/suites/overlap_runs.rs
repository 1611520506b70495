//! What the overlap suite and its GPU side share: where a run's frames live, how many there
//! are, how long a stage kept the GPU busy per frame, and the row a run gives.

use crate::results::OverlapRow;

/// Microseconds per frame during which at least one span of `stage` was under way: the
/// union of the spans' intervals over `frames`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the GPU side uses it
pub(super) fn busy_us_per_frame(spans: &[convstream_core::TraceSpan], stage: &str, frames: u64) -> f64 {
    let mut intervals: Vec<(f64, f64)> = spans
        .iter()
        .filter(|s| s.stage == stage)
        .map(|s| (s.start_us, s.start_us + s.duration_us))
        .collect();
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut busy, mut covered_to) = (0.0, f64::NEG_INFINITY);
    for (start, end) in intervals {
        busy += (end - start.max(covered_to)).max(0.0);
        covered_to = covered_to.max(end);
    }
    busy / frames.max(1) as f64
}

/// Synthetic frames the overlap suite cycles through (more than any lane count, so inputs
/// rotate).
pub(super) const OVERLAP_FRAMES: usize = 24;

/// Where the overlap suite's frames live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum FramesIn {
    /// The engine's page-locked frame pool: what the source decodes into.
    Pool,
    /// Ordinary memory: the lanes copy through their pinned staging buffers.
    Heap,
}

impl FramesIn {
    pub(super) fn name(self) -> &'static str {
        match self {
            FramesIn::Pool => "pool",
            FramesIn::Heap => "heap",
        }
    }
}

/// One run of the overlap suite: where its frames live, the lanes it has, the frames' size.
#[derive(Debug, Clone, Copy)]
pub(super) struct OverlapCase {
    pub(super) frames_in: FramesIn,
    pub(super) streams: usize,
    pub(super) frames_per_stream: usize,
    pub(super) width: usize,
    pub(super) height: usize,
}

/// What a run measured per frame, in microseconds.
#[derive(Debug, Clone, Copy)]
pub(super) struct StageTimes {
    /// CPU copy into pinned memory (staged frames only) and enqueue.
    pub(super) host_copy_in_us: f64,
    pub(super) upload_us: Option<f64>,
    pub(super) kernels_us: Option<f64>,
    pub(super) download_us: Option<f64>,
    /// CPU wait and copy out.
    pub(super) host_copy_out_us: f64,
    /// The busiest stage: its inverse is what perfect overlap would give.
    pub(super) busiest_us: f64,
}

impl OverlapCase {
    /// The row of `frames` frames through this case in `seconds`. Its speed-up over one
    /// stream is 1 until the suite compares it with its one-stream run.
    pub(super) fn row(&self, frames: u64, seconds: f64, stages: StageTimes, pinned_bytes: usize) -> OverlapRow {
        OverlapRow {
            frame: format!("{}x{} yuv420p", self.width, self.height),
            frames_in: self.frames_in.name().into(),
            streams: self.streams,
            frames_per_stream: self.frames_per_stream,
            frames,
            fps: frames as f64 / seconds,
            speedup_vs_one_stream: 1.0,
            host_copy_in_us: stages.host_copy_in_us,
            upload_us: stages.upload_us,
            kernels_us: stages.kernels_us,
            download_us: stages.download_us,
            host_copy_out_us: stages.host_copy_out_us,
            ideal_fps: 1e6 / stages.busiest_us,
            pinned_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::busy_us_per_frame;
    use convstream_core::TraceSpan;

    fn span(stage: &'static str, start_us: f64, duration_us: f64) -> TraceSpan {
        TraceSpan {
            stream: 0,
            frame: 0,
            stage,
            start_us,
            duration_us,
        }
    }

    #[test]
    fn busy_time_counts_overlapping_spans_once() {
        let spans = [
            span("upload", 0.0, 60.0),
            span("upload", 40.0, 60.0),  // overlaps the first: 40 more
            span("upload", 50.0, 10.0),  // inside both: nothing more
            span("upload", 200.0, 30.0), // after a gap: 30 more
            span("kernels", 0.0, 500.0), // another stage: not counted
        ];
        assert_eq!(busy_us_per_frame(&spans, "upload", 4), 130.0 / 4.0);
        assert_eq!(busy_us_per_frame(&spans, "download", 4), 0.0);
    }
}

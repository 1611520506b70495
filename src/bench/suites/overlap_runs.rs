//! What the overlap suite and its GPU side share: where a run's frames live, how many there
//! are, and how long a stage kept the GPU busy per frame.

/// Microseconds per frame during which at least one span of `stage` was under way: the
/// union of the spans' intervals over `frames`.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // the GPU side uses it
pub(super) fn busy_us_per_frame(spans: &[crate::engine::TraceSpan], stage: &str, frames: u64) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::busy_us_per_frame;
    use crate::engine::TraceSpan;

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

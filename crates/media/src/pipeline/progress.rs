//! A run's progress as it writes frames, told to whoever shows it ([`Progress`]: `run`
//! draws a progress line), and how many frames the run will write, as far as known.

use std::sync::Arc;

use convstream_config::SourceConfig;

/// Shows runs' progress. A run tells it when it starts writing, then each frame written,
/// then its end; several pipelines run at once each get their own [`RunProgress`].
pub trait Progress: Send + Sync {
    /// The run of `pipeline` has every part open and starts writing. `expected` is how many
    /// frames it will write, when known (the input's length cut by `start`, `duration` and
    /// `frames`); `frame_rate` is the input's frames per second (0 when unknown).
    fn start(&self, pipeline: &str, expected: Option<u64>, frame_rate: f64) -> Arc<dyn RunProgress>;
}

/// One run's progress, told from the run's threads (the sink's counts the frames).
pub trait RunProgress: Send + Sync {
    /// One more frame was written.
    fn frame_written(&self);
    /// Every stage ended without a failure: what was shown may go. A run whose stages
    /// failed only drops this value.
    fn finish(&self);
}

/// Frames the run will write, as far as known: the input's, cut by `start`, `duration`
/// and `frames`.
pub(super) fn trimmed_length(expected: Option<u64>, source: &SourceConfig, frame_rate: f64) -> Option<u64> {
    let at_rate = |seconds: f64| (seconds * frame_rate).round().max(0.0) as u64;
    let after_start = match (expected, source.start) {
        (Some(n), Some(start)) => Some(n.saturating_sub(at_rate(start))),
        (n, _) => n,
    };
    let by_duration = source.duration.filter(|_| frame_rate > 0.0).map(at_rate);
    let lengths = [after_start, by_duration, source.frames];
    // Looping repeats the input: only `frames` bounds it, or a count of passes.
    if source.looping {
        let passes = source.loop_count.and_then(|count| count.checked_add(1));
        let repeated = match (expected, passes, source.start, source.duration) {
            (Some(n), Some(passes), None, None) => n.checked_mul(passes),
            _ => None,
        };
        return [repeated, source.frames].into_iter().flatten().min();
    }
    lengths.into_iter().flatten().min()
}

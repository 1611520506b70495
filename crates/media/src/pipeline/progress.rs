//! The run's progress as it writes frames: how many it will write, as far as known, and the
//! progress line drawn on a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

use crate::config::SourceConfig;

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
    // Looping repeats the input: only `frames` bounds it.
    if source.looping {
        return source.frames;
    }
    lengths.into_iter().flatten().min()
}

/// The progress line: frames, frames per second and speed against real time, as
/// FFmpeg's (`fps=250 speed=10x`).
pub(super) fn progress_bar(enabled: bool, expected: Option<u64>, frame_rate: f64, name: &str) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let rate = |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{:.0} fps", state.per_sec());
    };
    let speed = move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        if frame_rate > 0.0 {
            let _ = write!(w, "{:.2}x", state.per_sec() / frame_rate);
        }
    };
    let bar = match expected {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} frames, {rate}, speed {speed}, ETA {eta}")
                .expect("valid template")
                .with_key("rate", rate)
                .with_key("speed", speed)
                .progress_chars("=> "),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{prefix} {spinner} {pos} frames, {rate}, speed {speed}")
                .expect("valid template")
                .with_key("rate", rate)
                .with_key("speed", speed),
        ),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    bar.with_prefix(name.to_string())
}

//! The progress line `run` draws on a terminal for each pipeline: frames, frames per second
//! and speed against real time, as FFmpeg's (`fps=250 speed=10x`).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;

use convstream_media::{Progress, RunProgress};

/// Draws each run's progress line on stderr, when stderr is a terminal.
pub(crate) struct TerminalProgress;

impl Progress for TerminalProgress {
    fn start(&self, pipeline: &str, expected: Option<u64>, frame_rate: f64) -> Arc<dyn RunProgress> {
        Arc::new(ProgressLine(progress_bar(expected, frame_rate, pipeline)))
    }
}

/// One run's line. Dropped without [`RunProgress::finish`] (a failed run), it stays drawn
/// as it was.
struct ProgressLine(ProgressBar);

impl RunProgress for ProgressLine {
    fn frame_written(&self) {
        self.0.inc(1);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// The progress line: a bar when the run's length is known, a spinner otherwise; hidden
/// when stderr is not a terminal.
fn progress_bar(expected: Option<u64>, frame_rate: f64, name: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
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

//! How a run is watched and stopped ([`RunOptions`]), and what its outputs do with a file
//! already at their path ([`OutputPolicy`]).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::progress::Progress;
use crate::sink::{FileId, WhenExists};

/// How a pipeline run is watched and stopped.
#[derive(Clone)]
pub struct RunOptions {
    /// Set by a signal: stop reading, drain, finalise.
    pub stop: Arc<AtomicBool>,
    /// Shown the run's progress as it writes frames (`run` draws a progress line); `None`
    /// shows nothing.
    pub progress: Option<Arc<dyn Progress>>,
    /// Write a Chrome trace of every frame's engine stages here (either engine).
    pub trace: Option<std::path::PathBuf>,
    /// Time every frame's engine stages (for metrics); costs a few CUDA events per frame.
    pub stage_times: bool,
    /// How outputs treat a file already at their path.
    pub outputs: OutputPolicy,
    /// How long a stop lets output I/O block (a FIFO nobody reads) before it gives up.
    pub io_grace: Duration,
    /// Files no output may write, under any name (`serve`: its own config file).
    pub protected: Vec<FileId>,
    /// Take frames while a GPU engine is made, when the process has no GPU context yet
    /// (`run`: a fresh process waits about 0.2 s for the driver and the context): the first
    /// filtered on the CPU, the next held in memory for the GPU (`engine::starting`).
    /// `serve` leaves it off: its GPU context is made once for all its pipelines, and many
    /// starting at once would each hold frames.
    pub overlap_gpu_start: bool,
    /// Keep an output no frame was written to (`run --allow-empty`). Otherwise such an output
    /// is discarded at the end: it never replaces an existing file and leaves no file behind.
    pub keep_empty_outputs: bool,
    /// Pipelines start through this gate, a few at a time (`serve`); `None` starts at once.
    pub start_gate: Option<Arc<super::start_gate::StartGate>>,
}

/// Who runs the pipeline, which decides what happens to a file already at its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPolicy {
    /// `run`: refuse an existing file unless the sink has `overwrite` (FFmpeg's -n / -y).
    Command,
    /// `serve`: keep an existing file and write the next free name beside it; `overwrite`
    /// replaces a file from before the service started the pipeline, never what the
    /// pipeline itself wrote before a restart. MP4 is fragmented so a crash leaves it playable.
    Service {
        /// Whether the service started this pipeline before (a restart or a reload).
        restarted: bool,
    },
}

impl OutputPolicy {
    /// What an output with `overwrite` set as given does with an existing file.
    pub(super) fn when_exists(self, overwrite: bool) -> WhenExists {
        match (self, overwrite) {
            (OutputPolicy::Command, true) | (OutputPolicy::Service { restarted: false }, true) => WhenExists::Replace,
            (OutputPolicy::Command, false) => WhenExists::Refuse,
            (OutputPolicy::Service { .. }, _) => WhenExists::NextFreeName,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{OutputPolicy, WhenExists};

    #[test]
    fn an_existing_file_is_replaced_only_with_consent_and_never_by_a_restart() {
        assert_eq!(OutputPolicy::Command.when_exists(false), WhenExists::Refuse);
        assert_eq!(OutputPolicy::Command.when_exists(true), WhenExists::Replace);
        let first = OutputPolicy::Service { restarted: false };
        assert_eq!(first.when_exists(false), WhenExists::NextFreeName);
        assert_eq!(first.when_exists(true), WhenExists::Replace);
        let again = OutputPolicy::Service { restarted: true };
        assert_eq!(again.when_exists(false), WhenExists::NextFreeName);
        assert_eq!(again.when_exists(true), WhenExists::NextFreeName);
    }
}

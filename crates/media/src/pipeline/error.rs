//! Why a pipeline run failed, or ended before it began: [`PipelineError`].

use crate::sink::SinkError;
use crate::source::SourceError;
use convstream_core::EngineError;

/// Why a pipeline could not run to the end of its input, each variant naming the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    // The cause is part of the message, not a `source()`, so that a chain printed whole
    // (`{:#}`) names it once.
    /// The input could not be opened or read.
    #[error("pipeline {pipeline:?}: {error}")]
    Source {
        /// The pipeline's name.
        pipeline: String,
        /// What went wrong with the input.
        error: SourceError,
    },
    /// The output could not be opened or written.
    #[error("pipeline {pipeline:?}: {error}")]
    Sink {
        /// The pipeline's name.
        pipeline: String,
        /// What went wrong with the output.
        error: SinkError,
    },
    /// The engine could not be made or failed while filtering.
    #[error("pipeline {pipeline:?}: {error}")]
    Engine {
        /// The pipeline's name.
        pipeline: String,
        /// What went wrong in the engine.
        error: EngineError,
    },
    /// The pipeline's own machinery failed (a thread that would not start, a trace that
    /// could not be written).
    #[error("pipeline {pipeline:?}: {message}")]
    Setup {
        /// The pipeline's name.
        pipeline: String,
        /// What failed, and why.
        message: String,
    },
    /// The filter asks for what the input's frames cannot give (a plane they lack).
    #[error("pipeline {pipeline:?}: filter: {message}")]
    FilterUnsuitable {
        /// The pipeline's name.
        pipeline: String,
        /// Every way the filter cannot work on the input's frames.
        message: String,
    },
    /// FFmpeg's filters after the engine failed on a frame.
    #[error("pipeline {pipeline:?}: FFmpeg's filters after the convolution: {message}")]
    AfterFilters {
        /// The pipeline's name.
        pipeline: String,
        /// FFmpeg's reason.
        message: String,
    },
    /// A stage's thread (or the pipeline's own) panicked; the others were joined.
    #[error("pipeline {pipeline:?}: the {stage} thread panicked: {message}")]
    Panicked {
        /// The pipeline's name.
        pipeline: String,
        /// `pipeline`, `source`, `filter` or `sink`.
        stage: &'static str,
        /// The panic's message.
        message: String,
    },
    /// The input is a file the service never reads as media (its config file), under
    /// whatever name or link.
    #[error("pipeline {pipeline:?}: the input {path:?} is the service's config file (the same device and inode); it is never read as media")]
    ProtectedInput {
        /// The pipeline's name.
        pipeline: String,
        /// The input's path as given.
        path: String,
    },
    /// A stop came while the input was still opening (a live input that has not sent, a
    /// FIFO with no writer): nothing went wrong, and nothing was written. An error only in
    /// that there is no report to give.
    #[error("pipeline {pipeline:?}: stopped while opening its input; nothing was written")]
    StoppedBeforeInput {
        /// The pipeline's name.
        pipeline: String,
    },
}

impl PipelineError {
    /// Whether the pipeline could never have run as configured (an unknown protocol, a
    /// stream the chosen decoder cannot take, an odd size for a 4:2:0 encoder): a usage
    /// error, exit code 2 for `run`.
    pub fn is_usage(&self) -> bool {
        match self {
            PipelineError::Source { error, .. } => error.is_usage(),
            PipelineError::Sink { error, .. } => error.is_usage(),
            PipelineError::FilterUnsuitable { .. } => true,
            _ => false,
        }
    }

    /// Whether the run ended because it was asked to stop, not because anything failed.
    pub fn is_stop(&self) -> bool {
        matches!(self, PipelineError::StoppedBeforeInput { .. })
    }
}

//! Why a benchmark run failed.

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Engine(#[from] convstream_core::EngineError),
    #[error(transparent)]
    Pipeline(#[from] convstream_media::PipelineError),
    #[error(transparent)]
    Source(#[from] convstream_media::SourceError),
    #[error("{0}")]
    Other(String),
    #[error("writing {path}: {reason}")]
    Write { path: String, reason: String },
}

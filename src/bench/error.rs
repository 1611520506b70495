//! Why a benchmark run failed.

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    #[error("{0}")]
    Other(String),
    #[error("writing {path}: {reason}")]
    Write { path: String, reason: String },
}

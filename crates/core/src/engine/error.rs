//! The one error every engine returns, [`EngineError`]: what was asked that cannot be done,
//! a missing GPU, a failed CUDA or NVRTC call, a kernel that does not compile, GPU memory
//! running out, or the engine's own bug. A leaf: nothing of the engine above it is needed.

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Something asked of the engine that it or the device cannot do.
    #[error("{0}")]
    Unsupported(String),
    #[error("CUDA support was not compiled into this build (enable the `cuda` feature)")]
    NotCompiledWithCuda,
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// A CUDA driver or NVRTC call failed; `error` keeps its code.
    #[cfg(feature = "cuda")]
    #[error("CUDA error in {context}: {error}")]
    Cuda {
        context: String,
        error: super::cuda::CudaError,
    },
    #[error("kernel compilation failed for {variant}: {log}")]
    Compile { variant: String, log: String },
    #[error("GPU out of memory in {context}: asked for {requested} bytes, {free} bytes free of {total}")]
    OutOfMemory {
        context: String,
        requested: usize,
        free: usize,
        total: usize,
    },
    /// The engine broke its own rules (a thread of it stopped, a lock poisoned): a bug,
    /// nothing the request could change.
    #[error("{0}")]
    Internal(String),
}

impl EngineError {
    /// Whether the failure is the engine's own (a bug), not the request's or the device's.
    pub fn is_internal(&self) -> bool {
        matches!(self, EngineError::Internal(_))
    }
}

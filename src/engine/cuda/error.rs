//! CUDA errors turned into [`EngineError`]s that say which call failed and where.

use cudarc::driver::{sys, CudaContext, DriverError};

use crate::engine::EngineError;

/// `CUDA_ERROR_X: description`.
pub fn driver_error(error: &DriverError) -> String {
    let name = error
        .error_name()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", error.0));
    let text = error
        .error_string()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name}: {text}")
}

pub trait CudaResultExt<T> {
    /// Attaches what was being done (`lane 2: copying frame 17 to the GPU`).
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EngineError>;
}

impl<T> CudaResultExt<T> for Result<T, DriverError> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EngineError> {
        self.map_err(|e| EngineError::Cuda {
            context: what(),
            message: driver_error(&e),
        })
    }
}

/// An allocation failure; out-of-memory says how much was asked and how much is free.
pub fn allocation_error(error: DriverError, context: &CudaContext, what: String, requested: usize) -> EngineError {
    if error.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        let (free, total) = context.mem_get_info().unwrap_or((0, 0));
        EngineError::OutOfMemory {
            context: what,
            requested,
            free,
            total,
        }
    } else {
        EngineError::Cuda {
            context: what,
            message: driver_error(&error),
        }
    }
}

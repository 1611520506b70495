//! CUDA failures turned into [`EngineError`]s that say which call failed and where, keeping
//! the driver's or NVRTC's error code; out of memory says how much was asked and was free.

use cudarc::driver::{sys, CudaContext, DriverError};

use super::error::CudaError;
use crate::engine::EngineError;

pub trait CudaResultExt<T> {
    /// Attaches what was being done (`lane 2: copying frame 17 to the GPU`).
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EngineError>;
}

impl<T> CudaResultExt<T> for Result<T, DriverError> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, EngineError> {
        self.map_err(|e| EngineError::Cuda {
            context: what(),
            error: CudaError::Driver(e),
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
            error: CudaError::Driver(error),
        }
    }
}

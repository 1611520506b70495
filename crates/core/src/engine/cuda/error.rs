//! CUDA errors turned into [`EngineError`]s that say which call failed and where, keeping
//! the driver's or NVRTC's error code.

use cudarc::driver::{sys, CudaContext, DriverError};
use cudarc::nvrtc::result::NvrtcError;
use std::fmt;

use crate::engine::EngineError;

/// What a CUDA driver or NVRTC call returned, as its error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaError {
    Driver(DriverError),
    Nvrtc(NvrtcError),
}

impl CudaError {
    /// The driver's result code, for a driver call.
    pub fn driver_code(&self) -> Option<sys::CUresult> {
        match self {
            CudaError::Driver(error) => Some(error.0),
            CudaError::Nvrtc(_) => None,
        }
    }
}

/// `CUDA_ERROR_X: description` for the driver, NVRTC's code for NVRTC. Part of the
/// [`EngineError`]'s message rather than its `source()`, so that it is printed once.
impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::Driver(error) => f.write_str(&driver_error(error)),
            CudaError::Nvrtc(error) => write!(f, "{error:?}"),
        }
    }
}

impl From<DriverError> for CudaError {
    fn from(error: DriverError) -> CudaError {
        CudaError::Driver(error)
    }
}

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

//! What a failed CUDA driver or NVRTC call returned ([`CudaError`]) and how it reads. A leaf
//! that the engine's error holds; turning failures into engine errors is `engine_error.rs`.

use cudarc::driver::{sys, DriverError};
use cudarc::nvrtc::result::NvrtcError;
use std::fmt;

/// What a CUDA driver or NVRTC call returned, as its error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaError {
    /// A driver call's error.
    Driver(DriverError),
    /// An NVRTC call's error.
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
/// [`EngineError`](crate::engine::EngineError)'s message rather than its `source()`, so that it is printed once.
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

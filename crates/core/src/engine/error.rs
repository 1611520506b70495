//! The one error every engine returns, [`EngineError`]: what was asked that cannot be done
//! ([`UnsupportedRequest`]), a missing GPU ([`NoGpuReason`]), a failed CUDA or NVRTC call, a
//! kernel that does not compile, GPU memory running out, or the engine's own bug. A leaf:
//! nothing of the engine above it is needed.

/// Why an engine could not be made or could not take a frame or a filter. Callers branch on
/// the variant: a missing GPU lets `auto` fall back to the CPU, an internal error is the
/// server's fault rather than the request's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Something asked of the engine that it or the device cannot do.
    #[error("{request}")]
    Unsupported {
        /// What was asked, and what is allowed instead.
        request: UnsupportedRequest,
    },
    /// A GPU engine was asked of a build without the `cuda` feature.
    #[error("CUDA support was not compiled into this build (enable the `cuda` feature)")]
    NotCompiledWithCuda,
    /// No GPU can be used here; `auto` falls back to the CPU engine on this one.
    #[error("no usable GPU: {reason}")]
    NoGpu {
        /// What is missing: the driver, NVRTC, any device, or the device asked for.
        reason: NoGpuReason,
    },
    /// A CUDA driver or NVRTC call failed; `error` keeps its code.
    #[cfg(feature = "cuda")]
    #[error("CUDA error in {context}: {error}")]
    Cuda {
        /// What was being done (`lane 2: copying frame 17 to the GPU`).
        context: String,
        /// The call's own error code.
        error: super::cuda::error::CudaError,
    },
    /// NVRTC could not compile a kernel variant.
    #[error("kernel compilation failed for {variant}: {log}")]
    Compile {
        /// The variant, as `Variant::describe` writes it (`13x13 mask, 1 channel(s) of 8 bits, ...`).
        variant: String,
        /// NVRTC's log.
        log: String,
    },
    /// A GPU allocation failed for lack of memory.
    #[error("GPU out of memory in {context}: asked for {requested} bytes, {free} bytes free of {total}")]
    OutOfMemory {
        /// What the memory was for.
        context: String,
        /// Bytes asked for.
        requested: usize,
        /// Bytes free on the GPU when it failed (0 when the driver would not say).
        free: usize,
        /// The GPU's memory in bytes (0 when the driver would not say).
        total: usize,
    },
    /// The engine broke its own rules (a thread of it stopped, a lock poisoned): a bug,
    /// nothing the request could change.
    #[error("{what}")]
    Internal {
        /// What went wrong, for the log.
        what: String,
    },
}

impl EngineError {
    /// Whether the failure is the engine's own (a bug), not the request's or the device's.
    pub fn is_internal(&self) -> bool {
        matches!(self, EngineError::Internal { .. })
    }
}

/// Something asked of an engine that it or its device cannot do, with what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedRequest {
    /// A setting past its limits (`streams`, `frames_per_stream`), which start at 1.
    #[error("{setting} = {value} is out of range; allowed 1..={max}")]
    OutOfRange {
        /// The setting's name as a config writes it.
        setting: &'static str,
        /// The value asked for.
        value: usize,
        /// The largest value allowed.
        max: usize,
    },
    /// Frames of another size or format came while earlier ones were still in flight.
    #[error("frame geometry changed with frames in flight")]
    GeometryChangedInFlight,
    /// A filter switch that changes which planes go to the GPU, with frames in flight.
    #[error("the planes to filter can only change with no frame in flight")]
    PlanesChangedInFlight,
    /// The separable kernel forced on a mask that is not rank one.
    #[error("the separable kernel needs a rank-one mask; {mask} is not")]
    NotRankOne {
        /// The mask, as its description reads.
        mask: String,
    },
    /// A kernel variant that needs more shared memory per block than the device has.
    #[error("{variant} needs {needed} bytes of shared memory per block; {device} allows {allowed}")]
    SharedMemory {
        /// The kernel variant, described.
        variant: String,
        /// Bytes of shared memory it needs per block.
        needed: usize,
        /// The device's name.
        device: String,
        /// Bytes of shared memory the device allows per block.
        allowed: usize,
    },
}

/// Why no GPU can be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoGpuReason {
    /// The driver's library does not load.
    #[error("the NVIDIA driver library (libcuda.so.1) could not be loaded; is an NVIDIA driver installed, and in a container, is the GPU passed through (--gpus / NVIDIA container toolkit)?")]
    DriverMissing,
    /// NVRTC's library does not load, so no kernel can be compiled.
    #[error("the CUDA runtime compiler library (libnvrtc.so.13 or .12) could not be loaded; install the CUDA NVRTC runtime (e.g. the cuda-nvrtc package) or add its folder to LD_LIBRARY_PATH")]
    NvrtcMissing,
    /// The driver loads but does not initialise.
    #[error("CUDA initialisation failed: {detail}")]
    InitFailed {
        /// The driver's error, `CUDA_ERROR_X: description`.
        detail: String,
    },
    /// The driver initialises and reports no device.
    #[error("the NVIDIA driver reports no CUDA device")]
    NoDevice,
    /// `cuda:N` names a device this host does not have.
    #[error(
        "cuda:{ordinal} does not exist; this host has {count} CUDA device(s): cuda:0..cuda:{}",
        count.saturating_sub(1)
    )]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the host has (at least one).
        count: usize,
    },
    /// No GPU was left to place the pipeline on.
    #[error("no CUDA device to place the pipeline on")]
    NothingToPlaceOn,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_as_they_always_have() {
        let no_such = EngineError::NoGpu {
            reason: NoGpuReason::NoSuchDevice { ordinal: 3, count: 2 },
        };
        assert_eq!(
            no_such.to_string(),
            "no usable GPU: cuda:3 does not exist; this host has 2 CUDA device(s): cuda:0..cuda:1"
        );
        let streams = EngineError::Unsupported {
            request: UnsupportedRequest::OutOfRange {
                setting: "streams",
                value: 17,
                max: 16,
            },
        };
        assert_eq!(streams.to_string(), "streams = 17 is out of range; allowed 1..=16");
        let internal = EngineError::Internal {
            what: "the GPU completion thread stopped".into(),
        };
        assert_eq!(internal.to_string(), "the GPU completion thread stopped");
        assert!(internal.is_internal() && !streams.is_internal());
    }
}

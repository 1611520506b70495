//! Filter engines: something frames are submitted to and come back from, filtered, in
//! submission order. The CPU engine is the reference; the CUDA engine keeps several
//! frames in flight on its lanes.
//!
//! Here: the modules and what they give the crates above. The contract every engine keeps
//! and its options are in `contract.rs`, its error in `error.rs`, choosing and making an
//! engine (with the GPU's start-up) in `build.rs`.

mod build;
mod contract;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod error;
mod gpu_starts;
pub mod placement;
pub mod starting;
pub mod trace;
mod tuning;

pub use build::{
    build_engine, gpu_context, gpu_driver_present, gpu_inventory, gpu_usage, nvdec_probe, warm_up, GpuNvdec,
};
pub use contract::predicted_nvdec_pipelines;
pub use contract::{
    DeviceChoice, Engine, EngineOptions, FilterPreparer, FrameShape, GpuContext, GpuUsage, StageTimes,
    DEFAULT_FRAMES_PER_STREAM, MAX_FRAMES_PER_STREAM, MAX_STREAMS, PIPELINES_PER_NVDEC_ENGINE,
};
pub use cpu::CpuEngine;
pub use error::{EngineError, NoGpuReason, UnsupportedRequest};
pub use gpu_starts::wait_for_gpu_starts;
pub use trace::TraceSpan;
pub use tuning::{GpuTuning, KernelPath, TileShape, DEFAULT_SPIN_US, MAX_SPIN_US};

//! Filter engines: something frames are submitted to and come back from, filtered, in
//! submission order. The CPU engine is the reference; the CUDA engine keeps several
//! frames in flight on its lanes.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;

use crate::filter::FilterSpec;
use crate::frame::Frame;

pub use cpu::CpuEngine;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Unsupported(String),
    #[error("CUDA support was not compiled into this build (enable the `cuda` feature)")]
    NotCompiledWithCuda,
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    #[error("CUDA error in {context}: {message}")]
    Cuda { context: String, message: String },
    #[error("kernel compilation failed for {variant}: {log}")]
    Compile { variant: String, log: String },
    #[error("GPU out of memory in {context}: asked for {requested} bytes, {free} bytes free of {total}")]
    OutOfMemory {
        context: String,
        requested: usize,
        free: usize,
        total: usize,
    },
}

/// The contract every engine keeps: `submit` takes a frame while `in_flight() < capacity()`,
/// `receive` blocks for the oldest frame still in flight and returns it filtered, or `None`
/// when nothing is in flight. Frames come back in exactly the order they went in.
pub trait Engine: Send {
    /// A short name for logs and stats (`cpu`, `cuda:0 (NVIDIA H100)`).
    fn name(&self) -> String;
    /// How many frames may be in flight at once.
    fn capacity(&self) -> usize;
    fn in_flight(&self) -> usize;
    fn submit(&mut self, frame: Frame) -> Result<(), EngineError>;
    fn receive(&mut self) -> Result<Option<Frame>, EngineError>;
    /// Replaces the filter for frames submitted from now on.
    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError>;
}

/// Which engine a pipeline asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// CUDA when a usable GPU is present, else the CPU engine with a warning.
    Auto,
    Cpu,
    /// CUDA on this device ordinal.
    Cuda(usize),
}

impl DeviceChoice {
    /// Parses `auto`, `cpu`, `cuda` or `cuda:N`.
    pub fn parse(text: &str) -> Option<DeviceChoice> {
        match text {
            "auto" => Some(DeviceChoice::Auto),
            "cpu" => Some(DeviceChoice::Cpu),
            "cuda" | "gpu" => Some(DeviceChoice::Cuda(0)),
            _ => text
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(DeviceChoice::Cuda),
        }
    }
}

/// Options an engine is built with besides the filter.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub device: DeviceChoice,
    /// CUDA lanes (streams); ignored by the CPU engine.
    pub streams: usize,
    /// Names the pipeline in errors and logs.
    pub pipeline: String,
}

/// Builds the engine `options.device` asks for. With `auto`, a missing GPU falls back to the
/// CPU engine and says so once.
pub fn build_engine(filter: FilterSpec, options: &EngineOptions) -> Result<Box<dyn Engine>, EngineError> {
    match options.device {
        DeviceChoice::Cpu => Ok(Box::new(CpuEngine::new(filter))),
        DeviceChoice::Cuda(ordinal) => build_cuda(filter, options, ordinal),
        DeviceChoice::Auto => match build_cuda(filter.clone(), options, 0) {
            Ok(engine) => Ok(engine),
            Err(e) => {
                tracing::warn!(pipeline = %options.pipeline, "no usable GPU ({e}); using the CPU engine");
                Ok(Box::new(CpuEngine::new(filter)))
            }
        },
    }
}

#[cfg(feature = "cuda")]
fn build_cuda(filter: FilterSpec, options: &EngineOptions, ordinal: usize) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(cuda::CudaEngine::new(filter, options, ordinal)?))
}

#[cfg(not(feature = "cuda"))]
fn build_cuda(_filter: FilterSpec, _options: &EngineOptions, _ordinal: usize) -> Result<Box<dyn Engine>, EngineError> {
    Err(EngineError::NotCompiledWithCuda)
}

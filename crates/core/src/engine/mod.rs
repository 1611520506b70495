//! Filter engines: something frames are submitted to and come back from, filtered, in
//! submission order. The CPU engine is the reference; the CUDA engine keeps several
//! frames in flight on its lanes.
//!
//! One job at some length (about 500 lines): the engine trait, its options and errors, and
//! `build_engine` with the GPU's start-up (warm-up, placement, the CPU until the GPU is
//! ready) that choosing an engine needs.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod gpu_starts;
pub mod placement;
pub mod starting;
pub mod trace;
mod tuning;

use crate::filter::FilterSpec;
use crate::frame::{Frame, PixelFormat};
use crate::host_buffers::BufferPool;
use std::sync::Arc;
use std::time::Duration;

pub use trace::TraceSpan;
pub use tuning::{GpuTuning, TileShape, TileShapeError, DEFAULT_SPIN_US, MAX_SPIN_US};

pub use cpu::CpuEngine;
pub use gpu_starts::wait_for_gpu_starts;

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
    Cuda { context: String, error: cuda::CudaError },
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

/// A CUDA context a decoder can put its pictures in, for the engine to take them there.
#[derive(Clone)]
pub struct GpuContext {
    pub ordinal: usize,
    /// The driver's `CUcontext` handle.
    pub handle: usize,
    /// Keeps the context alive for as long as anything holds this.
    pub keeper: Arc<dyn std::any::Any + Send + Sync>,
}

/// The contract every engine keeps: `submit` takes a frame while `in_flight() < capacity()`,
/// `receive` blocks for the oldest frame still in flight and returns it filtered, or `None`
/// when it has none to give yet (nothing in flight, or a [`starting::StartingEngine`]
/// holding frames for a GPU engine still being made: it waits a moment first, and the
/// caller calls again). Frames come back in exactly the order they went in.
pub trait Engine: Send {
    /// A short name for logs and stats (`cpu`, `cuda:0 (NVIDIA H100)`).
    fn name(&self) -> String;
    /// How many frames may be in flight at once.
    fn capacity(&self) -> usize;
    fn in_flight(&self) -> usize;
    fn submit(&mut self, frame: Frame) -> Result<(), EngineError>;
    fn receive(&mut self) -> Result<Option<Frame>, EngineError>;
    /// Replaces the filter for frames submitted from now on. Quick once the filter's
    /// kernels were prepared (see [`Engine::preparer`]).
    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError>;
    /// Timed stages of the frames filtered so far (when tracing was asked for), drained.
    fn take_trace(&mut self) -> Vec<TraceSpan> {
        Vec::new()
    }
    /// Where the engine runs, as metrics label it: `cpu` or `cuda:N`.
    fn device(&self) -> String;
    /// How long each stage took for the frame `receive` returned last, when measured
    /// (`EngineOptions::stage_times`).
    fn last_stage_times(&self) -> Option<StageTimes> {
        None
    }
    /// Page-locked host memory the engine holds (its frame pool included).
    fn pinned_bytes(&self) -> usize {
        0
    }
    /// Buffers to make frames in so that `submit` needs no copy (the CUDA engine lends
    /// page-locked memory, once it knows the frame geometry: [`EngineOptions::shape`] or
    /// the first frame); `None` when any memory serves as well.
    fn frame_pool(&self) -> Option<Arc<BufferPool>> {
        None
    }
    /// The GPU (and its CUDA context) whose decoded pictures `submit` takes where they
    /// are, in GPU memory ([`crate::frame::DevicePicture`]); `None` when frames must be in
    /// host memory.
    fn device_pictures_on(&self) -> Option<GpuContext> {
        None
    }
    /// Something another thread can call to do the slow part of a filter change (compiling
    /// kernels) ahead of time, so that `set_filter` on the frame path stays quick.
    fn preparer(&self) -> FilterPreparer {
        Arc::new(|_| Ok(()))
    }
    /// No more frames will be submitted: what is in flight is all there is to finish, so an
    /// engine holding frames back (for a GPU still starting) should filter them now.
    fn input_ended(&mut self) {}
    /// Whether the engine will go on as it is now: false while a [`starting::StartingEngine`]
    /// filters on the CPU for a GPU engine not ready yet (its name, device and preparer
    /// change at the switch).
    fn settled(&self) -> bool {
        true
    }
}

/// See [`Engine::preparer`].
pub type FilterPreparer = Arc<dyn Fn(&FilterSpec) -> Result<(), EngineError> + Send + Sync>;

/// One frame's time in each engine stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StageTimes {
    /// CUDA: copy in, kernels and copy out, from CUDA events on the lane's stream.
    Gpu {
        upload: Duration,
        kernels: Duration,
        download: Duration,
    },
    /// The CPU engine's convolution.
    Cpu { filter: Duration },
}

/// Which GPU kernel filters the planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum KernelPath {
    /// Shared-memory tile with halo, register blocked.
    Dense,
    /// Row pass then column pass, fused in shared memory (rank-one masks).
    Separable,
    /// One thread per output, taps read from global memory: the baseline.
    Global,
}

/// The geometry of the frames a pipeline will submit, known once the source is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameShape {
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
}

/// Which engine a pipeline asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// CUDA on the least loaded GPU when a usable one is present, else the CPU engine
    /// with a warning.
    Auto,
    Cpu,
    /// CUDA on the GPU with the fewest active pipelines (see [`placement`]).
    AnyCuda,
    /// CUDA on this device ordinal.
    Cuda(usize),
}

impl DeviceChoice {
    /// Parses `auto`, `cpu`, `cuda` or `cuda:N`.
    pub fn parse(text: &str) -> Option<DeviceChoice> {
        match text {
            "auto" => Some(DeviceChoice::Auto),
            "cpu" => Some(DeviceChoice::Cpu),
            "cuda" | "gpu" => Some(DeviceChoice::AnyCuda),
            _ => text
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(DeviceChoice::Cuda),
        }
    }
}

/// Most CUDA streams a pipeline may ask for.
pub const MAX_STREAMS: usize = 16;
/// Most frames a pipeline may queue on one CUDA stream.
pub const MAX_FRAMES_PER_STREAM: usize = 4;

/// Frames queued on each CUDA stream unless the config says otherwise: with two, a stream
/// holds the next frame's work when one finishes, so it never waits for the host to notice.
pub const DEFAULT_FRAMES_PER_STREAM: usize = 2;

/// Options an engine is built with besides the filter.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub device: DeviceChoice,
    /// CUDA streams; ignored by the CPU engine.
    pub streams: usize,
    /// Frames queued on each stream at once (the engine holds `streams x frames_per_stream`
    /// frames in flight); ignored by the CPU engine.
    pub frames_per_stream: usize,
    /// Names the pipeline in errors and logs.
    pub pipeline: String,
    /// Frame geometry, so buffers are sized and kernels compiled before the first frame.
    pub shape: Option<FrameShape>,
    /// Record each frame's stages for a Chrome trace (GPU copies and kernels per CUDA
    /// stream; the CPU engine's filtering).
    pub trace: bool,
    /// Time each frame's stages (CUDA events), for [`Engine::last_stage_times`].
    pub stage_times: bool,
    /// Use this kernel instead of the one the mask calls for (benchmarks, tests).
    pub force_path: Option<KernelPath>,
    /// Fill GPU output buffers with a poison value before each frame (tests: unwritten
    /// pixels show).
    pub poison: bool,
    /// Alignment of rows in GPU buffers, in bytes (1 packs rows tightly). Frames from the
    /// pool go to the GPU without a copy only with the default, [`crate::frame::POOLED_ROW_ALIGN`].
    pub pitch_align: usize,
    /// How many frames' worth of page-locked buffers the engine may lend through
    /// [`Engine::frame_pool`] (0: no pool, every frame is staged). A pipeline asks for as
    /// many as it can hold at once: its queues plus the lanes.
    pub pooled_frames: usize,
    /// The pool the frames are already being made in (a pipeline's, made before the engine
    /// so that decoding starts at once): the CUDA engine puts its page-locked memory in it
    /// instead of making a pool of its own. Ignored by the CPU engine.
    pub frame_pool: Option<crate::host_buffers::LatePool>,
    /// Take frames while the GPU's engine is made, when its GPU is not ready yet (a fresh
    /// process: the driver and the context take about 0.2 s): the first one filtered on the
    /// CPU and out at once, the next ones held for the GPU up to [`held_for_gpu`] bytes,
    /// the rest filtered on the CPU (see [`starting`]).
    ///
    /// [`held_for_gpu`]: EngineOptions::held_for_gpu
    pub overlap_gpu_start: bool,
    /// See [`overlap_gpu_start`](EngineOptions::overlap_gpu_start): 0 filters every frame
    /// on the CPU until the GPU is ready.
    pub held_for_gpu: usize,
    /// Spin-wait and tilings of the CUDA engine; ignored by the CPU engine.
    pub tuning: GpuTuning,
}

impl EngineOptions {
    pub fn new(device: DeviceChoice, streams: usize, pipeline: &str) -> EngineOptions {
        EngineOptions {
            device,
            streams,
            frames_per_stream: DEFAULT_FRAMES_PER_STREAM,
            pipeline: pipeline.to_string(),
            shape: None,
            trace: false,
            stage_times: false,
            force_path: None,
            poison: false,
            pitch_align: crate::frame::POOLED_ROW_ALIGN,
            pooled_frames: 0,
            frame_pool: None,
            overlap_gpu_start: false,
            held_for_gpu: starting::HELD_BYTES,
            tuning: GpuTuning::default(),
        }
    }
}

/// Builds the engine `options.device` asks for, placing `cuda` and `auto` on the GPU with
/// the fewest active pipelines. With `auto`, a missing GPU falls back to the CPU engine and
/// says so once.
pub fn build_engine(filter: FilterSpec, options: &EngineOptions) -> Result<Box<dyn Engine>, EngineError> {
    if options.overlap_gpu_start && !options.trace && gpu_still_starting(options.device) {
        return start_while_the_gpu_starts(filter, options);
    }
    match options.device {
        DeviceChoice::Cpu => Ok(Box::new(cpu_engine(filter, options))),
        DeviceChoice::Cuda(ordinal) => build_cuda(filter, options, Some(ordinal)),
        DeviceChoice::AnyCuda => build_cuda(filter, options, None),
        // Only a missing GPU falls back to the CPU: any other failure on a GPU host (a
        // kernel that does not compile, out of memory) is an error to see.
        DeviceChoice::Auto => match build_cuda(filter.clone(), options, None) {
            Ok(engine) => Ok(engine),
            Err(e @ (EngineError::NoGpu(_) | EngineError::NotCompiledWithCuda)) => {
                tracing::warn!("{e}; using the CPU engine");
                Ok(Box::new(cpu_engine(filter, options)))
            }
            Err(e) => Err(e),
        },
    }
}

/// Whether a GPU engine on `device` would wait for the driver or its context now (none is
/// open in this process yet), on a host that has a driver.
#[cfg(feature = "cuda")]
fn gpu_still_starting(device: DeviceChoice) -> bool {
    match device {
        DeviceChoice::Cpu => false,
        _ if !cuda::device::driver_present() => false,
        DeviceChoice::Cuda(ordinal) => !cuda::device::is_open(ordinal),
        DeviceChoice::Auto | DeviceChoice::AnyCuda => !cuda::device::any_open(),
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_still_starting(_device: DeviceChoice) -> bool {
    false
}

/// A [`starting::StartingEngine`]: the CPU engine for the first frame, the one
/// `options.device` asks for from when a thread of its own has made it.
fn start_while_the_gpu_starts(filter: FilterSpec, options: &EngineOptions) -> Result<Box<dyn Engine>, EngineError> {
    let (deliver, coming) = crossbeam_channel::bounded(1);
    let gpu_options = EngineOptions {
        overlap_gpu_start: false,
        ..options.clone()
    };
    let gpu_filter = filter.clone();
    let counted = gpu_starts::GpuStart::begin();
    std::thread::Builder::new()
        .name(format!("{}-gpu-start", options.pipeline))
        .spawn(move || {
            let _counted = counted;
            // The receiver may be gone (the run ended first): the engine is then dropped.
            let _ = deliver.send(build_engine(gpu_filter, &gpu_options));
        })
        .map_err(|e| EngineError::Internal(format!("cannot start a thread to make the GPU engine: {e}")))?;
    let cpu = cpu_engine(filter.clone(), options);
    Ok(Box::new(starting::StartingEngine::new(
        filter,
        cpu,
        coming,
        options.device == DeviceChoice::Auto,
        options.held_for_gpu,
    )))
}

/// The CPU engine, traced when the options ask for a trace (which `--trace` writes
/// whichever engine runs).
fn cpu_engine(filter: FilterSpec, options: &EngineOptions) -> CpuEngine {
    let engine = CpuEngine::new(filter);
    if options.trace {
        engine.traced()
    } else {
        engine
    }
}

/// A CUDA engine on `ordinal`, or on the least loaded GPU when `None`.
#[cfg(feature = "cuda")]
fn build_cuda(
    filter: FilterSpec,
    options: &EngineOptions,
    ordinal: Option<usize>,
) -> Result<Box<dyn Engine>, EngineError> {
    let placements = placement::Placements::global();
    let seat = match ordinal {
        Some(ordinal) => placements.take(ordinal),
        None => {
            let devices = cuda::device::probe()?;
            placements
                .take_least_loaded(devices)
                .ok_or_else(|| EngineError::NoGpu("no CUDA device to place the pipeline on".into()))?
        }
    };
    let engine = cuda::CudaEngine::new(filter, options, seat.ordinal)?;
    tracing::info!(
        "placed on cuda:{} (active pipelines per GPU: {:?})",
        seat.ordinal,
        placements.active()
    );
    Ok(Box::new(engine.with_seat(seat)))
}

#[cfg(not(feature = "cuda"))]
fn build_cuda(
    _filter: FilterSpec,
    _options: &EngineOptions,
    _ordinal: Option<usize>,
) -> Result<Box<dyn Engine>, EngineError> {
    Err(EngineError::NotCompiledWithCuda)
}

/// The GPU a pipeline on `device` would be placed on now: the one named, or the least
/// loaded for `auto` and `cuda`, without taking a seat; `None` on the CPU or without a GPU.
#[cfg(feature = "cuda")]
fn likely_ordinal(device: DeviceChoice) -> Option<usize> {
    match device {
        DeviceChoice::Cpu => None,
        DeviceChoice::Cuda(ordinal) => Some(ordinal),
        DeviceChoice::Auto | DeviceChoice::AnyCuda => {
            let devices = cuda::device::probe().ok()?;
            let mut active = placement::Placements::global().active();
            active.resize(active.len().max(devices), 0);
            placement::least_loaded(&active[..devices])
        }
    }
}

/// Starts, on a thread of its own, the GPU set-up a pipeline on `device` needs that
/// depends on nothing of its input: the driver's initialisation, the GPU's CUDA context
/// (shared by the process's pipelines) and NVRTC. The caller opens its input meanwhile;
/// [`build_engine`] then finds them ready (or waits for the rest). Nothing for the CPU, or
/// where no driver is installed.
#[cfg(feature = "cuda")]
pub fn warm_up(device: DeviceChoice) {
    if device == DeviceChoice::Cpu || !cuda::device::driver_present() {
        return;
    }
    let counted = gpu_starts::GpuStart::begin();
    let warming = std::thread::Builder::new().name("cuda-warm-up".into()).spawn(move || {
        let _counted = counted;
        if let Some(ordinal) = likely_ordinal(device) {
            cuda::device::warm(ordinal);
        }
    });
    if let Err(e) = warming {
        tracing::debug!("cannot start the CUDA warm-up thread: {e}");
    }
}

#[cfg(not(feature = "cuda"))]
pub fn warm_up(_device: DeviceChoice) {}

/// Whether the GPU driver's library can be loaded here (a quick check, no driver call).
#[cfg(feature = "cuda")]
pub fn gpu_driver_present() -> bool {
    cuda::device::driver_present()
}

#[cfg(not(feature = "cuda"))]
pub fn gpu_driver_present() -> bool {
    false
}

/// The CUDA context a pipeline on `device` will most likely run in (see [`warm_up`]), for an
/// NVDEC decoder to leave its pictures in from its first opening; `None` on the CPU or when
/// no GPU can be opened (the engine then says why).
#[cfg(feature = "cuda")]
pub fn likely_gpu_context(device: DeviceChoice) -> Option<GpuContext> {
    let ordinal = likely_ordinal(device)?;
    let context = cuda::device::open(ordinal).ok()?;
    Some(GpuContext {
        ordinal,
        handle: context.cu_ctx() as usize,
        keeper: context,
    })
}

/// Live 1080p25 H.264 pipelines one NVDEC engine carried with 0 drops and p99 under 50 ms
/// (`bench --suite scale --decoder nvdec` on an H100: 56 pipelines on 7 engines; 64 fell
/// behind; BENCHMARKS.md, "Streams per host").
pub const PIPELINES_PER_NVDEC_ENGINE: usize = 8;

/// How many live NVDEC pipelines GPU `ordinal` carries, predicted from its NVDEC engines
/// ([`PIPELINES_PER_NVDEC_ENGINE`] each); `None` when that is unknown.
#[cfg(feature = "cuda")]
pub fn nvdec_capacity(ordinal: usize) -> Option<usize> {
    let context = cuda::device::open(ordinal).ok()?;
    let name = context.name().ok()?;
    cuda::nvml::decoder_engines(&name).map(|engines| engines.count as usize * PIPELINES_PER_NVDEC_ENGINE)
}

#[cfg(not(feature = "cuda"))]
pub fn nvdec_capacity(_ordinal: usize) -> Option<usize> {
    None
}

#[cfg(not(feature = "cuda"))]
pub fn likely_gpu_context(_device: DeviceChoice) -> Option<GpuContext> {
    None
}

/// One GPU as NVML sees it: what could be read of its load and memory (None where the
/// driver would not say).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuUsage {
    /// NVML's index (PCI order, which `CUDA_DEVICE_ORDER=PCI_BUS_ID` gives CUDA too).
    pub index: u32,
    pub uuid: String,
    /// Percent of the last sample period a kernel ran.
    pub busy_percent: Option<u32>,
    /// Percent of the last sample period NVDEC was decoding.
    pub decoder_busy_percent: Option<u32>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
}

/// Every GPU's load and memory, from NVML; empty without a driver (or without CUDA support).
#[cfg(feature = "cuda")]
pub fn gpu_usage() -> Vec<GpuUsage> {
    cuda::nvml::gpu_usage()
}

#[cfg(not(feature = "cuda"))]
pub fn gpu_usage() -> Vec<GpuUsage> {
    Vec::new()
}

/// What answers "can NVDEC decode this stream?" in this build: the driver when built with
/// CUDA, else a probe whose every answer says why it cannot be asked.
#[cfg(feature = "cuda")]
pub fn nvdec_probe() -> std::sync::Arc<dyn crate::nvdec::NvdecProbe> {
    cuda::nvdec::CudaNvdecProbe::global()
}

#[cfg(not(feature = "cuda"))]
pub fn nvdec_probe() -> std::sync::Arc<dyn crate::nvdec::NvdecProbe> {
    struct WithoutCuda;
    impl crate::nvdec::NvdecProbe for WithoutCuda {
        fn capabilities(
            &self,
            _: crate::nvdec::NvdecCodec,
            _: crate::nvdec::Chroma,
            _: u32,
        ) -> Result<crate::nvdec::NvdecCaps, crate::nvdec::ProbeError> {
            Err(crate::nvdec::ProbeError::new(EngineError::NotCompiledWithCuda))
        }
    }
    std::sync::Arc::new(WithoutCuda)
}

//! What every engine is and is built with: the [`Engine`] trait and its [`FilterPreparer`],
//! the [`EngineOptions`] a pipeline asks for (device, streams, frames in flight, the frame
//! pool) with their limits and defaults, and the small types engines hand back
//! ([`StageTimes`], [`GpuContext`], [`GpuUsage`]).

use std::sync::Arc;
use std::time::Duration;

use super::error::EngineError;
use super::trace::TraceSpan;
use super::tuning::{GpuTuning, KernelPath};
use crate::filter::FilterSpec;
use crate::frame::{Frame, PixelFormat};
use crate::host_buffers::{BufferPool, LatePool};

/// A CUDA context a decoder can put its pictures in, for the engine to take them there.
#[derive(Clone)]
pub struct GpuContext {
    /// The GPU's device ordinal.
    pub ordinal: usize,
    /// The driver's `CUcontext` handle.
    pub handle: usize,
    /// Keeps the context alive for as long as anything holds this.
    pub keeper: Arc<dyn std::any::Any + Send + Sync>,
}

/// The contract every engine keeps: `submit` takes a frame while `in_flight() < capacity()`,
/// `receive` blocks for the oldest frame still in flight and returns it filtered, or `None`
/// when it has none to give yet (nothing in flight, or a `StartingEngine`
/// holding frames for a GPU engine still being made: it waits a moment first, and the
/// caller calls again). Frames come back in exactly the order they went in.
pub trait Engine: Send {
    /// A short name for logs and stats (`cpu`, `cuda:0 (NVIDIA H100)`).
    fn name(&self) -> String;
    /// How many frames may be in flight at once.
    fn capacity(&self) -> usize;
    /// How many frames were submitted and not yet received.
    fn in_flight(&self) -> usize;
    /// Takes a frame to filter; only while `in_flight() < capacity()`.
    fn submit(&mut self, frame: Frame) -> Result<(), EngineError>;
    /// The oldest frame in flight, filtered (see the trait's text for `None`).
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
    /// GPU memory the engine's frames go through (its lanes' buffers), in bytes.
    fn device_bytes(&self) -> usize {
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
    /// The run is over and every frame has been received. An engine still waiting for a GPU
    /// the caller asked for by name learns here whether it came: a GPU that cannot be made
    /// fails the run even when the frames were all filtered on the CPU before it answered.
    fn finish(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    /// Whether the engine will go on as it is now: false while a `StartingEngine`
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
        /// Copying the frame to the GPU.
        upload: Duration,
        /// The kernels of every filtered plane.
        kernels: Duration,
        /// Copying the result back.
        download: Duration,
    },
    /// The CPU engine's convolution.
    Cpu {
        /// Filtering the frame's planes.
        filter: Duration,
    },
}

/// The geometry of the frames a pipeline will submit, known once the source is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameShape {
    /// Pixel format.
    pub format: PixelFormat,
    /// Pixels across.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

/// Which engine a pipeline asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    /// CUDA on the least loaded GPU when a usable one is present, else the CPU engine
    /// with a warning.
    Auto,
    /// The CPU engine.
    Cpu,
    /// CUDA on the GPU with the fewest active pipelines (see `placement`).
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

/// Memory the frames held for the GPU may take where holding pays: about the GPU's start
/// of 1080p frames decoded by 16 cores (164 frames of 3.1 MB), or 41 at 2160p. Frames past
/// it are filtered on the CPU rather than held (see `super::starting`).
pub const HELD_BYTES: usize = 512 << 20;

/// Live 1080p25 H.264 pipelines one NVDEC engine carried with 0 drops and p99 under 50 ms
/// on a host with one GPU (`bench --suite scale --decoder nvdec` on an H100: 56 pipelines on
/// 7 engines; 64 fell behind; BENCHMARKS.md, "Streams per host"; an H100 host ran 56 at 25.0
/// fps with 0 drops under `serve` too).
pub const PIPELINES_PER_NVDEC_ENGINE: usize = 8;

/// Live NVDEC pipelines predicted for one GPU of `engines` NVDEC engines, before anything ran
/// on it: what one such GPU alone sustains (56 on an H100 or H200). It is a ceiling to start
/// from, not a promise: a host whose GPUs share one NVDEC ceiling (two H200s kept 24 to 32 in
/// all: BENCHMARKS.md, "NVDEC's host-wide ceiling") shows it by falling behind, and
/// admission learns its real seats from that (`nvdec_admission` in the media crate). A
/// prediction below one GPU's own figure would leave pipelines a single GPU keeps up with
/// waiting for good.
pub fn predicted_nvdec_pipelines(engines: usize) -> usize {
    engines * PIPELINES_PER_NVDEC_ENGINE
}

/// Options an engine is built with besides the filter.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Which engine to build.
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
    pub frame_pool: Option<LatePool>,
    /// Take frames while the GPU's engine is made, when its GPU is not ready yet (a fresh
    /// process: the driver and the context take about 0.2 s): the first one filtered on the
    /// CPU and out at once, the next ones held for the GPU up to [`held_for_gpu`] bytes,
    /// the rest filtered on the CPU (see `starting`).
    ///
    /// [`held_for_gpu`]: EngineOptions::held_for_gpu
    pub overlap_gpu_start: bool,
    /// See [`overlap_gpu_start`](EngineOptions::overlap_gpu_start): 0 filters every frame
    /// on the CPU until the GPU is ready.
    pub held_for_gpu: usize,
    /// Spin-wait and tilings of the CUDA engine; ignored by the CPU engine.
    pub tuning: GpuTuning,
    /// Whether a frame's latency matters more than the host's cores: frames that come at
    /// their pace (a live input, a file read at its frame rate) or a call that waits for its
    /// result, rather than frames read as fast as they decode. The spin-wait's default
    /// depends on it ([`GpuTuning::spin`]).
    pub low_latency: bool,
}

impl EngineOptions {
    /// Options for `pipeline` on `device` with `streams` CUDA streams; everything else at its default.
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
            held_for_gpu: HELD_BYTES,
            tuning: GpuTuning::default(),
            low_latency: false,
        }
    }
}

/// One GPU as NVML sees it: what could be read of its load and memory (None where the
/// driver would not say).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuUsage {
    /// NVML's index (PCI order, which `CUDA_DEVICE_ORDER=PCI_BUS_ID` gives CUDA too).
    pub index: u32,
    /// The GPU's UUID, as NVML reports it.
    pub uuid: String,
    /// Percent of the last sample period a kernel ran.
    pub busy_percent: Option<u32>,
    /// Percent of the last sample period NVDEC was decoding.
    pub decoder_busy_percent: Option<u32>,
    /// Bytes of GPU memory in use.
    pub memory_used_bytes: Option<u64>,
    /// Bytes of GPU memory in all.
    pub memory_total_bytes: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One H100's or H200's seven engines are predicted what one such GPU alone kept up with
    /// (56), so no config a single GPU carries waits for a seat before anything ran.
    #[test]
    fn nvdec_predictions_are_what_one_gpu_alone_sustains() {
        assert_eq!(predicted_nvdec_pipelines(7), 56);
        assert_eq!(predicted_nvdec_pipelines(1), PIPELINES_PER_NVDEC_ENGINE);
        assert_eq!(predicted_nvdec_pipelines(0), 0);
    }
}

//! convstream's core: what a frame is (pixel formats, planes, host buffers), what a filter is
//! (masks, borders, planes), and the engines that apply it, the CPU reference and CUDA lanes.
//! Nothing here knows FFmpeg, an async runtime or HTTP: the media crate feeds the engines
//! decoded frames, and the binary, the GStreamer element and Python build on both.
//!
//! An [`Engine`] takes frames and gives them back filtered, in the order they
//! came; the CPU engine is the reference every GPU result is checked against:
//!
//! ```
//! use convstream_core::{BorderMode, CpuEngine, Engine, FilterSpec, Frame, Mask, PixelFormat, PlaneSelection};
//!
//! let mask = Mask::from_spec("box:size=3").unwrap();
//! let mut engine = CpuEngine::new(FilterSpec::uniform(mask, BorderMode::Reflect, PlaneSelection::All));
//! let mut frame = Frame::new(PixelFormat::GRAY8, 8, 4);
//! frame.planes[0].row_mut(1)[3] = 90; // one bright pixel
//! engine.submit(frame).unwrap();
//! let filtered = engine.receive().unwrap().expect("the frame comes back");
//! // A 3x3 box spreads it over its neighbours: a ninth each.
//! assert_eq!(filtered.planes[0].row(0)[2..5], [10, 10, 10]);
//! assert_eq!(filtered.planes[0].row(1)[3], 10);
//! ```

#![deny(missing_docs)]

mod engine;
mod filter;
mod format;
mod frame;
mod host_buffers;
mod mask;
mod nvdec;
mod side_file;
mod text;

// The crate's surface: everything other crates use, named here and nowhere else. The modules
// are private; `engine` holds the engines, `mask` and `filter` what they compute, `format`,
// `frame` and `host_buffers` what they compute it on, `text` how user strings are shown.
pub use engine::cpu::{
    convolve_plane, convolve_plane_into, convolve_view_into, Pitches, PlaneView, ViewError, ViewSamples,
};
pub use engine::placement::Placements;
pub use engine::starting::HELD_BYTES;
pub use engine::trace::write_chrome_trace;
pub use engine::{
    build_engine, gpu_context, gpu_driver_present, gpu_inventory, gpu_usage, nvdec_probe, predicted_nvdec_pipelines,
    wait_for_gpu_starts, warm_up, CpuEngine, DeviceChoice, Engine, EngineError, EngineOptions, FilterPreparer,
    FrameShape, GpuContext, GpuNvdec, GpuTuning, GpuUsage, KernelPath, NoGpuReason, StageTimes, TileShape, TraceSpan,
    UnsupportedRequest, DEFAULT_FRAMES_PER_STREAM, DEFAULT_SPIN_US, MAX_FRAMES_PER_STREAM, MAX_SPIN_US, MAX_STREAMS,
    PIPELINES_PER_NVDEC_ENGINE,
};
pub use filter::{BorderMode, FilterSpec, PlaneMasks, PlaneName, PlaneSelection};
pub use format::{PixelFormat, PixelLayout, PlaneShape, SampleDepth, POOLED_ROW_ALIGN};
pub use frame::{DevicePicture, DevicePlane, Frame, Plane, Timeline};
pub use host_buffers::pinned_budget::PinnedBudget;
pub use host_buffers::trim::{give_back_freed_memory, TRIM_EVERY as HEAP_TRIM_EVERY};
pub use host_buffers::{BufferPool, HeapMemory, LatePool, PlaneData, IDLE_WINDOW};
pub use mask::{
    nearest, preset_list, show_mask, show_spec, Mask, MaskError, MaskMode, MaskParams, SpecRefused, MAX_SIDE, PRESETS,
};
pub use nvdec::{Chroma, NvdecCaps, NvdecCodec, NvdecProbe, ProbeError};
pub use side_file::write_whole;
pub use text::{
    escape_control, for_display, for_terminal, must_escape, quoted, quoted_up_to, redact_credentials, RedactingWriter,
};

/// The CUDA engine's own parts, for the crates that drive a GPU directly: the benchmarks'
/// kernel timings, `doctor`'s report, Python's calls on the caller's stream.
#[cfg(feature = "cuda")]
pub use engine::cuda::{
    copy_picture_to_host,
    device::{
        any_open as cuda_context_open, driver_version as cuda_driver_version, nvrtc_available,
        open as open_cuda_device, probe as cuda_devices, DeviceInfo,
    },
    kernel_pack::{
        build_pack as build_kernel_pack, build_pack_of as build_kernel_pack_of, catalogue as kernel_catalogue,
        PackBuilt, DEFAULT_ARCHITECTURES,
    },
    kernels::{
        cache_dir as kernel_cache_dir, compile as compile_kernels, kernel_origins, nvrtc_version,
        pack::{
            candidates as kernel_pack_candidates, write as write_kernel_pack, Pack as KernelPack,
            PackEntry as KernelPackEntry, FILE_NAME as KERNEL_PACK_FILE_NAME,
        },
        pack_key as kernel_pack_key, pack_key_for_source, program_source as kernel_program_source,
        source_hash as kernel_source_hash, source_hash_of, supported_architectures as nvrtc_architectures,
        KernelOrigins, SampleValues, Variant,
    },
    measure::{Bench, KernelCheck, TimingPlan},
    nvdec::CudaNvdecProbe,
    nvml::decoder_engines,
    stream_call::{DeviceBatch, DeviceCallError, StreamFilter},
    CudaEngine,
};

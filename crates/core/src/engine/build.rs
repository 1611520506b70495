//! Making an engine: [`build_engine`] for what a pipeline asks (the CPU, a GPU, or the CPU
//! until the GPU is ready), and the GPU's start-up around it: [`warm_up`], what the driver
//! reports ([`gpu_usage`], [`gpu_inventory`], [`nvdec_probe`]). Each has a twin without the
//! `cuda` feature that says there is no GPU.

use super::contract::{DeviceChoice, Engine, EngineOptions, GpuContext, GpuUsage};
use super::cpu::CpuEngine;
use super::error::EngineError;
#[cfg(feature = "cuda")]
use super::error::NoGpuReason;
#[cfg(feature = "cuda")]
use super::{contract::predicted_nvdec_pipelines, cuda, placement};
use super::{gpu_starts, starting};
use crate::filter::FilterSpec;

/// Builds the engine `options.device` asks for, placing `cuda` and `auto` on the GPU with
/// the fewest active pipelines. With `auto`, a missing GPU falls back to the CPU engine and
/// says so once.
pub fn build_engine(filter: FilterSpec, options: &EngineOptions) -> Result<Box<dyn Engine>, EngineError> {
    super::cpu::name_shared_workers();
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
            Err(e @ (EngineError::NoGpu { .. } | EngineError::NotCompiledWithCuda)) => {
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
        .map_err(|e| EngineError::Internal {
            what: format!("cannot start a thread to make the GPU engine: {e}"),
        })?;
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
            placements.take_least_loaded(devices).ok_or(EngineError::NoGpu {
                reason: NoGpuReason::NothingToPlaceOn,
            })?
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

/// Without CUDA support there is no GPU to warm up.
#[cfg(not(feature = "cuda"))]
pub fn warm_up(_device: DeviceChoice) {}

/// Whether the GPU driver's library can be loaded here (a quick check, no driver call).
#[cfg(feature = "cuda")]
pub fn gpu_driver_present() -> bool {
    cuda::device::driver_present()
}

/// Without CUDA support no driver is ever loaded: false.
#[cfg(not(feature = "cuda"))]
pub fn gpu_driver_present() -> bool {
    false
}

/// The CUDA context of GPU `ordinal` (shared by the process's pipelines), for an NVDEC
/// decoder seated there to leave its pictures in; `None` when it cannot be opened.
#[cfg(feature = "cuda")]
pub fn gpu_context(ordinal: usize) -> Option<GpuContext> {
    let context = cuda::device::open(ordinal).ok()?;
    Some(GpuContext {
        ordinal,
        handle: context.cu_ctx() as usize,
        keeper: context,
    })
}

/// Without CUDA support there is no GPU context.
#[cfg(not(feature = "cuda"))]
pub fn gpu_context(_ordinal: usize) -> Option<GpuContext> {
    None
}

/// Every GPU of the host with its predicted NVDEC capacity (see `predicted_nvdec_pipelines`), in
/// ordinal order; empty without a driver.
#[cfg(feature = "cuda")]
pub fn gpu_inventory() -> Vec<GpuNvdec> {
    let devices = cuda::device::probe().unwrap_or(0);
    (0..devices)
        .map(|ordinal| {
            let model = cuda::device::open(ordinal).ok().and_then(|context| context.name().ok());
            GpuNvdec {
                ordinal,
                nvdec_capacity: model.as_deref().and_then(predicted_nvdec_capacity),
                model,
            }
        })
        .collect()
}

/// Without CUDA support: no GPU.
#[cfg(not(feature = "cuda"))]
pub fn gpu_inventory() -> Vec<GpuNvdec> {
    Vec::new()
}

/// One GPU as NVDEC admission sees it: its ordinal, its model and how many live NVDEC
/// pipelines it carries (`None`: unknown, so no limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuNvdec {
    /// The GPU's CUDA ordinal.
    pub ordinal: usize,
    /// The GPU's model as CUDA names it (`NVIDIA H100 80GB HBM3`): seats measured on one
    /// GPU of a model apply to every GPU of it.
    pub model: Option<String>,
    /// Live NVDEC pipelines it carries; `None`: unknown.
    pub nvdec_capacity: Option<usize>,
}

/// The live NVDEC pipelines a GPU of `model` is predicted to carry before anything ran on it.
#[cfg(feature = "cuda")]
fn predicted_nvdec_capacity(model: &str) -> Option<usize> {
    cuda::nvml::decoder_engines(model).map(|engines| predicted_nvdec_pipelines(engines.count as usize))
}

/// Every GPU's load and memory, from NVML; empty without a driver (or without CUDA support).
#[cfg(feature = "cuda")]
pub fn gpu_usage() -> Vec<GpuUsage> {
    cuda::nvml::gpu_usage()
}

/// Without CUDA support: no GPU.
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

/// Without CUDA support: a probe whose every answer is [`EngineError::NotCompiledWithCuda`].
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

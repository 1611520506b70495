//! Finding a usable GPU without panicking: the driver and NVRTC libraries are probed before
//! any cudarc call that would panic on their absence, and device facts are read for logs,
//! `convstream doctor` and kernel tuning.

use cudarc::driver::{sys, CudaContext};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::engine_error::CudaResultExt;
use super::error::driver_error;
use crate::engine::{EngineError, NoGpuReason};

/// Whether libcuda and libnvrtc can be loaded, checked once per process.
fn libraries() -> &'static (bool, bool) {
    static PRESENT: OnceLock<(bool, bool)> = OnceLock::new();
    // SAFETY: the probes only dlopen and dlclose the candidate library names.
    PRESENT.get_or_init(|| unsafe { (sys::is_culib_present(), cudarc::nvrtc::sys::is_culib_present()) })
}

/// Whether NVRTC can be loaded (kernels compile without a GPU, e.g. in CI).
pub fn nvrtc_available() -> bool {
    libraries().1
}

/// Checks that the driver, NVRTC and at least one device are there; the error says which is not.
pub fn probe() -> Result<usize, EngineError> {
    let (driver, nvrtc) = *libraries();
    if !driver {
        return Err(EngineError::NoGpu {
            reason: NoGpuReason::DriverMissing,
        });
    }
    if !nvrtc {
        return Err(EngineError::NoGpu {
            reason: NoGpuReason::NvrtcMissing,
        });
    }
    let count = CudaContext::device_count().map_err(|e| EngineError::NoGpu {
        reason: NoGpuReason::InitFailed {
            detail: driver_error(&e),
        },
    })?;
    if count <= 0 {
        return Err(EngineError::NoGpu {
            reason: NoGpuReason::NoDevice,
        });
    }
    Ok(count as usize)
}

/// A device's context once made, behind a lock held while it is being made.
type ContextSlot = Arc<Mutex<Option<Arc<CudaContext>>>>;

/// Opens device `ordinal` after probing, with a clear error for a missing ordinal. Every
/// caller in the process shares one context per device (the device's primary context,
/// retained once and kept until the process ends): creating it costs about a quarter of a
/// second (the driver's initialisation and the context), which a second pipeline, a
/// restart or a filter switch then never pays again, and `engine::warm_up` can pay it beside
/// other start-up work.
pub fn open(ordinal: usize) -> Result<Arc<CudaContext>, EngineError> {
    let count = probe()?;
    if ordinal >= count {
        return Err(EngineError::NoGpu {
            reason: NoGpuReason::NoSuchDevice { ordinal, count },
        });
    }
    // One slot per device, locked while its context is made: a second caller waits for the
    // first one's context instead of making its own.
    let slot = slots()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(ordinal)
        .or_default()
        .clone();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(context) = slot.as_ref() {
        return Ok(context.clone());
    }
    let context = CudaContext::new(ordinal).context(|| format!("opening cuda:{ordinal}"))?;
    // Lanes order their own work: a lane queues all of a frame's work on its stream (lanes
    // take the engine's streams in turn, so several lanes may share one), and the CPU touches
    // a lane's buffers and its frame only once the lane's done event has completed, or its
    // stream has been synchronised (a dropped `LaneTicket`). cudarc's per-buffer event
    // tracking (which also makes pinned-buffer views wait) would only add waits on top.
    // SAFETY: every device buffer is used only on the stream of the lane that owns it, in
    // stream order, and host memory a copy reads or writes is left alone until the copy's
    // lane is done (see engine::cuda::completion).
    unsafe { context.disable_event_tracking() };
    *slot = Some(context.clone());
    Ok(context)
}

/// Every device slot made so far, by ordinal.
fn slots() -> &'static Mutex<HashMap<usize, ContextSlot>> {
    static OPENED: OnceLock<Mutex<HashMap<usize, ContextSlot>>> = OnceLock::new();
    OPENED.get_or_init(Default::default)
}

/// Whether `ordinal`'s context is open in this process (without waiting for one being made).
pub fn is_open(ordinal: usize) -> bool {
    let slot = slots().lock().unwrap_or_else(|e| e.into_inner()).get(&ordinal).cloned();
    slot.is_some_and(|slot| slot.try_lock().is_ok_and(|context| context.is_some()))
}

/// Whether any device's context is open in this process (without waiting).
pub fn any_open() -> bool {
    let ordinals: Vec<usize> = slots()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .keys()
        .copied()
        .collect();
    ordinals.into_iter().any(is_open)
}

/// Whether the driver library can be loaded (a quick check, no driver call).
pub fn driver_present() -> bool {
    libraries().0
}

/// Opens `ordinal`'s context and loads NVRTC, for a pipeline's engine to find both ready
/// (see `engine::warm_up`, which calls this on a thread of its own). Failures are left for
/// the engine to meet and report.
pub fn warm(ordinal: usize) {
    let started = std::time::Instant::now();
    let opened = open(ordinal);
    if nvrtc_available() {
        // Loading the library is the slow part (about 10 ms; 200 from a cold disk).
        let _ = super::kernels::nvrtc_version();
    }
    tracing::debug!(
        "cuda:{ordinal} warmed up in {:.1} ms{}",
        started.elapsed().as_secs_f64() * 1e3,
        opened.err().map_or(String::new(), |e| format!(" (failed: {e})"))
    );
}

/// Facts about one GPU.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    /// The device ordinal (`cuda:N`).
    pub ordinal: usize,
    /// The driver's name for it (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability, major and minor.
    pub compute_capability: (i32, i32),
    /// Bytes of memory in all.
    pub total_memory: usize,
    /// Bytes of memory free when read.
    pub free_memory: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
    /// The core clock in kHz.
    pub clock_khz: i32,
    /// Copy engines, so how many copies can overlap kernels.
    pub copy_engines: i32,
    /// Bytes of shared memory a block may opt in to.
    pub max_shared_per_block: usize,
}

impl DeviceInfo {
    /// Reads the facts of device `ordinal` through its `context`.
    pub fn read(context: &Arc<CudaContext>, ordinal: usize) -> Result<DeviceInfo, EngineError> {
        use sys::CUdevice_attribute as A;
        let what = || format!("reading the properties of cuda:{ordinal}");
        let (free, total) = context.mem_get_info().context(what)?;
        Ok(DeviceInfo {
            ordinal,
            name: context.name().context(what)?,
            compute_capability: context.compute_capability().context(what)?,
            total_memory: total,
            free_memory: free,
            multiprocessors: context
                .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .context(what)?,
            clock_khz: context.attribute(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).context(what)?,
            copy_engines: context
                .attribute(A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
                .context(what)?,
            max_shared_per_block: context
                .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .context(what)? as usize,
        })
    }

    /// The NVRTC target for this device, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }

    /// FP32 peak in FLOP/s (2 per FMA, 128 FP32 lanes per SM on Ampere and later).
    pub fn fp32_peak(&self) -> f64 {
        let lanes = if self.compute_capability.0 >= 8 { 128.0 } else { 64.0 };
        2.0 * lanes * self.multiprocessors as f64 * self.clock_khz as f64 * 1e3
    }
}

/// The driver's CUDA version as (major, minor), e.g. (13, 0).
pub fn driver_version() -> Result<(i32, i32), EngineError> {
    probe()?;
    let mut version = 0i32;
    // SAFETY: the driver library is present (probed); the call writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .context(|| "reading the driver version".into())?;
    Ok((version / 1000, (version % 1000) / 10))
}

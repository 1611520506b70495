//! Filtering planes another library holds in GPU memory (a PyTorch tensor, a CuPy array),
//! where they are and on that library's CUDA stream: [`StreamFilter::launch`] checks that
//! both buffers are device memory of this filter's GPU, large enough for the planes, and
//! that the stream belongs to the device's primary context (the one PyTorch and CuPy use,
//! as cudarc does), then queues ONE kernel launch for the whole batch (`gridDim.z` planes)
//! on that stream and returns: no copy, no allocation, no host wait unless asked.
//!
//! What a launch needs besides the addresses (the kernel variant loaded with the mask's taps,
//! its path and bias) is planned once per sample kind and plane size and kept,
//! so a later call at that size costs the checks and the launch only.

use cudarc::driver::{sys, CudaContext};
use std::collections::HashMap;
use std::sync::Arc;

use super::device::{self, DeviceInfo};
use super::engine_error::CudaResultExt;
use super::kernels::{KernelSet, PlaneGeometry, SampleValues, Variant};
use crate::engine::{EngineError, KernelPath, UnsupportedRequest};
use crate::filter::BorderMode;
use crate::format::SampleDepth;
use crate::mask::Mask;

/// The most planes one launch takes (`gridDim.z`'s limit); larger batches take several.
const MAX_PLANES_PER_LAUNCH: usize = 65_535;

/// Planes in GPU memory, filtered from `src` into `dst`: `planes` planes of `height` rows of
/// `width` pixels of `channels` interleaved samples (1 for a plane; 3 for a channels-last
/// RGB image, each channel filtered on its own), rows `*_pitch` bytes apart, planes
/// `*_plane` bytes apart.
#[derive(Debug, Clone, Copy)]
pub struct DeviceBatch {
    /// The first source plane's device address.
    pub src: u64,
    /// The first output plane's device address.
    pub dst: u64,
    /// Pixels per row.
    pub width: usize,
    /// Interleaved samples per pixel, 1 to 4.
    pub channels: usize,
    /// Rows per plane.
    pub height: usize,
    /// Bytes between source rows.
    pub src_pitch: usize,
    /// Bytes between source pixels: `channels` samples when they follow each other, more for
    /// a strided view (every other column of a tensor), read where it is.
    pub src_pixel: usize,
    /// Bytes between output rows.
    pub dst_pitch: usize,
    /// Planes in the batch.
    pub planes: usize,
    /// Bytes between source planes.
    pub src_plane: usize,
    /// Bytes between output planes.
    pub dst_plane: usize,
    /// Integer samples (of `depth`) or float values.
    pub values: SampleValues,
    /// The integer samples' depth (8 bits for float values, which ignore it).
    pub depth: SampleDepth,
}

impl DeviceBatch {
    /// Bytes per sample.
    fn sample_bytes(&self) -> usize {
        match self.values {
            SampleValues::Integer => self.depth.bytes(),
            SampleValues::Float32 => 4,
            SampleValues::Float16 => 2,
        }
    }

    /// Bytes from a buffer's first sample to just past its last: what it must hold, its
    /// pixels `pixel` bytes apart.
    fn extent(&self, pitch: usize, plane: usize, pixel: usize) -> Option<usize> {
        let last_plane = (self.planes - 1).checked_mul(plane)?;
        let last_row = (self.height - 1).checked_mul(pitch)?;
        let last_pixel = (self.width - 1).checked_mul(pixel)?;
        let pixel_bytes = self.channels.checked_mul(self.sample_bytes())?;
        last_plane
            .checked_add(last_row)?
            .checked_add(last_pixel)?
            .checked_add(pixel_bytes)
    }
}

/// Why a call was refused or failed.
#[derive(Debug)]
pub enum DeviceCallError {
    /// The arguments do not describe planes this filter can take (a host pointer, another
    /// GPU's memory, a buffer too small, a stream of another context): the caller's to fix.
    Refused(String),
    /// A CUDA call failed, or the GPU cannot be used.
    Engine(EngineError),
}

impl From<EngineError> for DeviceCallError {
    fn from(error: EngineError) -> Self {
        DeviceCallError::Engine(error)
    }
}

/// The context that was current on the calling thread, made current again on drop: a caller
/// whose thread works in a context of its own (not the primary one) finds it as it was.
struct CurrentContext(Option<sys::CUcontext>);

impl CurrentContext {
    fn make_current(context: &CudaContext) -> Result<CurrentContext, cudarc::driver::DriverError> {
        let before = cudarc::driver::result::ctx::get_current()?;
        context.bind_to_thread()?;
        Ok(CurrentContext(before.filter(|c| *c != context.cu_ctx())))
    }
}

impl Drop for CurrentContext {
    fn drop(&mut self) {
        if let Some(before) = self.0 {
            // SAFETY: the handle was current on this thread a moment ago; a context destroyed
            // since makes the call fail, which leaves ours current and harms nothing.
            let _ = unsafe { cudarc::driver::result::ctx::set_current(before) };
        }
    }
}

/// What a launch at one sample kind and plane size needs, made once.
struct Plan {
    set: Arc<KernelSet>,
    path: KernelPath,
    bias: f32,
}

/// One filter (mask, border) on one GPU, launched on streams its caller owns.
pub struct StreamFilter {
    mask: Mask,
    border: BorderMode,
    context: Arc<CudaContext>,
    device: DeviceInfo,
    /// Plans by (sample kind, depth, width, height, channels).
    plans: HashMap<(SampleValues, SampleDepth, usize, usize, usize), Plan>,
    /// Loaded kernel sets by variant: plane sizes with the same variant share one.
    sets: HashMap<Variant, Arc<KernelSet>>,
}

impl StreamFilter {
    /// Opens GPU `ordinal` (its primary context, shared with the rest of the process).
    pub fn new(mask: Mask, border: BorderMode, ordinal: usize) -> Result<StreamFilter, EngineError> {
        let context = device::open(ordinal)?;
        let device = DeviceInfo::read(&context, ordinal)?;
        Ok(StreamFilter {
            mask,
            border,
            context,
            device,
            plans: HashMap::new(),
            sets: HashMap::new(),
        })
    }

    /// The GPU's ordinal.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal
    }

    /// The GPU as `convstream doctor` names it (`cuda:0 (NVIDIA H100 ...)`).
    pub fn name(&self) -> String {
        format!("cuda:{} ({})", self.device.ordinal, self.device.name)
    }

    /// Waits until `stream` (a `CUstream` of this GPU's primary context) has run everything
    /// queued on it so far.
    pub fn synchronize(&self, stream: u64) -> Result<(), DeviceCallError> {
        let _restore = CurrentContext::make_current(&self.context)
            .context(|| format!("making cuda:{}'s context current", self.ordinal()))?;
        self.check_stream(stream)?;
        // SAFETY: the caller owns `stream`, a stream of this context (checked above), and
        // keeps it alive for the call; the wrapper does not destroy it when dropped.
        let borrowed = unsafe { self.context.wrap_borrowed_stream(stream as sys::CUstream) };
        borrowed
            .synchronize()
            .context(|| "waiting for the caller's stream".into())?;
        Ok(())
    }

    /// Queues `batch`'s filtering on `stream` (a `CUstream` of this GPU's primary context; 0
    /// is the legacy default stream) and returns once it is queued, or, with `sync`, once it
    /// has run. The caller keeps both buffers alive until the stream has run the work, and
    /// orders any other stream's use of them after it (as for its own library's kernels).
    pub fn launch(&mut self, batch: &DeviceBatch, stream: u64, sync: bool) -> Result<(), DeviceCallError> {
        if batch.planes == 0 || batch.width == 0 || batch.height == 0 {
            return Ok(());
        }
        let refuse = |what: String| Err(DeviceCallError::Refused(what));
        let bytes = batch.sample_bytes();
        if !(1..=4).contains(&batch.channels) {
            return refuse(format!("{} channels a pixel: 1 to 4 are taken", batch.channels));
        }
        let fits = |n: usize| i32::try_from(n).is_ok();
        let row_samples = batch.width.checked_mul(batch.channels).filter(|n| fits(*n));
        if row_samples.is_none() || !fits(batch.height) || !fits(batch.src_pitch) || !fits(batch.dst_pitch) {
            return refuse(format!(
                "a {} x {} plane with rows {} and {} bytes apart is too large for one launch",
                batch.height, batch.width, batch.src_pitch, batch.dst_pitch
            ));
        }
        let pixel_bytes = batch.channels * bytes;
        // The source is only read: its rows and pixels may lie anywhere (a transposed or
        // strided view), whole samples apart. The output's rows are written side by side.
        for (what, apart) in [("rows", batch.src_pitch), ("pixels", batch.src_pixel)] {
            if apart == 0 || !apart.is_multiple_of(bytes) || !fits(apart) {
                return refuse(format!(
                    "the source's {what} are {apart} bytes apart: give whole samples of {bytes} bytes, more than none"
                ));
            }
        }
        if batch.dst_pitch < batch.width * pixel_bytes || !batch.dst_pitch.is_multiple_of(bytes) {
            return refuse(format!(
                "the output's rows are {} bytes apart: they overlap or split samples \
                 ({} samples of {bytes} bytes a row)",
                batch.dst_pitch,
                batch.width * batch.channels
            ));
        }
        let src_extent = batch.extent(batch.src_pitch, batch.src_plane, batch.src_pixel);
        let dst_extent = batch.extent(batch.dst_pitch, batch.dst_plane, pixel_bytes);
        let (Some(src_extent), Some(dst_extent)) = (src_extent, dst_extent) else {
            return refuse("the planes span more bytes than an address holds".into());
        };
        let _restore = CurrentContext::make_current(&self.context)
            .context(|| format!("making cuda:{}'s context current", self.ordinal()))?;
        self.check_buffer("source", batch.src, src_extent)?;
        self.check_buffer("output", batch.dst, dst_extent)?;
        self.check_stream(stream)?;
        let key = (batch.values, batch.depth, batch.width, batch.height, batch.channels);
        if !self.plans.contains_key(&key) {
            let plan = self.plan(batch)?;
            self.plans.insert(key, plan);
        }
        let plan = &self.plans[&key];
        // SAFETY: the caller owns `stream`, a stream of this context (checked above), and
        // keeps it alive for the call; the wrapper does not destroy it when dropped.
        let borrowed = unsafe { self.context.wrap_borrowed_stream(stream as sys::CUstream) };
        let mut first = 0;
        while first < batch.planes {
            let count = (batch.planes - first).min(MAX_PLANES_PER_LAUNCH);
            let geometry = PlaneGeometry {
                width: batch.width as i32,
                height: batch.height as i32,
                src_pitch: batch.src_pitch as i32,
                dst_pitch: batch.dst_pitch as i32,
                // 0: side by side, the kernels' fast path.
                src_pixel: if batch.src_pixel == pixel_bytes {
                    0
                } else {
                    batch.src_pixel as i32
                },
                bias: plan.bias,
                src_plane: batch.src_plane as i64,
                dst_plane: batch.dst_plane as i64,
            };
            let src = batch.src + (first * batch.src_plane) as u64;
            let dst = batch.dst + (first * batch.dst_plane) as u64;
            // SAFETY: both buffers are device memory of this context holding every plane's
            // extent (checked above), and the caller keeps them until the stream runs this.
            unsafe {
                plan.set
                    .launch_batch(&borrowed, plan.path, src, dst, geometry, count as u32)
            }
            .context(|| format!("launching the {:?} kernel on {count} plane(s)", plan.path))?;
            first += count;
        }
        if sync {
            borrowed
                .synchronize()
                .context(|| "waiting for the caller's stream".into())?;
        }
        Ok(())
    }

    /// Refuses `address` unless it is device memory of this GPU (or managed memory) with
    /// `extent` bytes from it inside one allocation.
    fn check_buffer(&self, name: &str, address: u64, extent: usize) -> Result<(), DeviceCallError> {
        let ordinal = self.ordinal();
        use sys::CUpointer_attribute as A;
        let mut attributes = [
            A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            A::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        ];
        // Each attribute is written as at most 8 bytes (an int, a device pointer or a size)
        // into its own zeroed 8-byte slot.
        let mut values = [0u64; 4];
        let mut slots: [*mut std::ffi::c_void; 4] = [std::ptr::null_mut(); 4];
        for (slot, value) in slots.iter_mut().zip(values.iter_mut()) {
            *slot = (value as *mut u64).cast();
        }
        // SAFETY: four attributes and four valid, writable 8-byte slots; an address that is
        // not CUDA memory leaves the slots at zero (memory type 0) and succeeds.
        let read = unsafe {
            sys::cuPointerGetAttributes(
                attributes.len() as u32,
                attributes.as_mut_ptr(),
                slots.as_mut_ptr(),
                address,
            )
        }
        .result();
        let [memory_type, device_ordinal, start, size] = values;
        if read.is_err() || memory_type == 0 {
            return Err(DeviceCallError::Refused(format!(
                "the {name} at {address:#x} is not CUDA memory this process knows (host memory, or freed)"
            )));
        }
        let memory_type = memory_type as u32;
        let device_memory = memory_type == sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
            || memory_type == sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
        if !device_memory {
            return Err(DeviceCallError::Refused(format!(
                "the {name} at {address:#x} is host memory, not device memory of cuda:{ordinal}"
            )));
        }
        // The attribute is a 32-bit int written into the slot's low half.
        let on = device_ordinal as u32 as usize;
        if on != ordinal {
            return Err(DeviceCallError::Refused(format!(
                "the {name} is on cuda:{on} but this call runs on cuda:{ordinal}"
            )));
        }
        let end = address.checked_add(extent as u64);
        if end.is_none_or(|end| end > start.saturating_add(size)) {
            return Err(DeviceCallError::Refused(format!(
                "the {name}'s planes span {extent} bytes from {address:#x}, past the end of its allocation"
            )));
        }
        Ok(())
    }

    /// Refuses a stream of another context (another GPU's, or a context of its own).
    fn check_stream(&self, stream: u64) -> Result<(), DeviceCallError> {
        // 0, 1 and 2 are the default streams (legacy and per-thread) of the current context.
        if stream <= 2 {
            return Ok(());
        }
        let mut owner: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the call writes one context handle; a handle that is not a stream is refused
        // with an error code.
        let asked = unsafe { sys::cuStreamGetCtx(stream as sys::CUstream, &mut owner) }.result();
        if asked.is_err() || owner != self.context.cu_ctx() {
            return Err(DeviceCallError::Refused(format!(
                "stream {stream:#x} is not a stream of cuda:{}'s primary context \
                 (the context PyTorch and CuPy use)",
                self.ordinal()
            )));
        }
        Ok(())
    }

    /// The kernel variant, path and bias for planes like `batch`'s, loading the variant's
    /// kernels (compiled once per process and cached on disk) the first time it is needed.
    fn plan(&mut self, batch: &DeviceBatch) -> Result<Plan, EngineError> {
        let max_shared = self.device.max_shared_per_block;
        let mask = &self.mask;
        // As the engine's planner: FFmpeg's edges are its 3x3 rule only, and a mask with
        // FFmpeg's `rdiv` finishes with FFmpeg's arithmetic (integer samples; float values
        // keep the float result).
        let border = self.border.for_mask(mask.width(), mask.height());
        let variant_for = |path| {
            Variant::new(
                mask.width(),
                mask.height(),
                batch.channels,
                border,
                max_shared,
                path,
                batch.width * batch.height,
            )
            .with_magnitude(mask.is_magnitude())
            .with_depth(batch.depth)
            .with_values(batch.values)
            .with_ffmpeg_rdiv(mask.ffmpeg_rdiv())
        };
        let mut path = if mask.is_separable() {
            KernelPath::Separable
        } else {
            KernelPath::Dense
        };
        let mut variant = variant_for(path);
        if path == KernelPath::Separable && variant.shared_bytes(path) > max_shared {
            // The fused separable kernel holds two tiles; the dense one fits where it may not.
            path = KernelPath::Dense;
            variant = variant_for(path);
        }
        let needed = variant.shared_bytes(path);
        if needed > max_shared {
            return Err(EngineError::Unsupported {
                request: UnsupportedRequest::SharedMemory {
                    variant: variant.describe(),
                    needed,
                    device: self.device.name.clone(),
                    allowed: max_shared,
                },
            });
        }
        let set = match self.sets.get(&variant) {
            Some(set) => set.clone(),
            None => {
                let stream = self.context.default_stream();
                let set = Arc::new(KernelSet::load(
                    &self.context,
                    &stream,
                    variant,
                    &self.device.arch(),
                    mask,
                    max_shared,
                )?);
                self.sets.insert(variant, set.clone());
                set
            }
        };
        // Integer samples take the mask's 8-bit bias scaled to their depth (FFmpeg's
        // arithmetic: in their units); float values take it as written.
        let bias = match batch.values {
            SampleValues::Integer => mask.bias_at(batch.depth),
            SampleValues::Float32 | SampleValues::Float16 => mask.bias(),
        };
        Ok(Plan { set, path, bias })
    }
}

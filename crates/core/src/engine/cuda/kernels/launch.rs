//! Compiled kernels at work: the parameter struct the kernels take ([`PlaneGeometry`]), the
//! mask taps a module holds ([`constant_taps`]), and a module loaded with its dense, separable
//! and baseline kernels ([`KernelSet`]), launched on a lane's stream.

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use std::sync::Arc;

use super::compile::{compile, refuse_packed};
use super::variant::Variant;
use crate::engine::cuda::engine_error::CudaResultExt;
use crate::engine::{EngineError, KernelPath};
use crate::mask::Mask;

/// Mirrors `struct PlaneGeometry` in kernels/convolve.cuh.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaneGeometry {
    /// Pixels across.
    pub width: i32,
    /// Rows.
    pub height: i32,
    /// Bytes between source rows.
    pub src_pitch: i32,
    /// Bytes between output rows.
    pub dst_pitch: i32,
    /// Bytes between source pixels, for a strided view; 0 when a pixel's samples follow the
    /// previous pixel's (every plane the engine makes).
    pub src_pixel: i32,
    /// The mask's bias in sample units (its 8-bit bias scaled to the depth).
    pub bias: f32,
    /// Bytes between the source planes of a batch launch (`gridDim.z` planes).
    pub src_plane: i64,
    /// Bytes between the output planes of a batch launch.
    pub dst_plane: i64,
}

impl PlaneGeometry {
    /// The fields of a launch over one plane (no batch strides), for `..` completion.
    pub const ONE_PLANE: PlaneGeometry = PlaneGeometry {
        width: 0,
        height: 0,
        src_pitch: 0,
        dst_pitch: 0,
        src_pixel: 0,
        bias: 0.0,
        src_plane: 0,
        dst_plane: 0,
    };
}

// SAFETY: a plain #[repr(C)] struct of 32- and 64-bit fields, laid out as the CUDA struct
// (six 4-byte fields, then two 8-byte fields, in both).
unsafe impl DeviceRepr for PlaneGeometry {}

/// The taps a module's `c_taps` holds: correlation taps, then the separable row and column
/// taps (zeros when the mask is not separable), then a gradient magnitude's second taps,
/// then the divisor each sum is divided by (see `DIVISOR` in convolve.cuh).
pub fn constant_taps(mask: &Mask) -> Vec<f32> {
    let mut taps = mask.correlation_taps();
    match mask.correlation_factors() {
        Some((column, row)) => {
            taps.extend_from_slice(&row);
            taps.extend_from_slice(&column);
        }
        None => taps.extend(std::iter::repeat_n(0.0, mask.width() + mask.height())),
    }
    if let Some(second) = mask.second_correlation_taps() {
        taps.extend(second);
    }
    taps.push(mask.divisor());
    taps
}

/// A loaded module: the three kernels of one variant with one mask's taps in constant memory.
pub struct KernelSet {
    /// What the module was compiled for.
    pub variant: Variant,
    _module: Arc<CudaModule>,
    dense: CudaFunction,
    separable: CudaFunction,
    global: CudaFunction,
}

impl KernelSet {
    /// Compiles (or reads from the cache) and loads `variant`, uploads `mask`'s taps and
    /// waits for the upload, so the set is ready for any stream.
    pub fn load(
        context: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        variant: Variant,
        arch: &str,
        mask: &Mask,
        max_shared: usize,
    ) -> Result<KernelSet, EngineError> {
        let cubin = compile(&variant, arch)?;
        let what = || format!("loading kernels for {}", variant.describe());
        let module = match context.load_module(cudarc::nvrtc::Ptx::from_binary(cubin)) {
            // A driver older than the NVRTC that built the kernel pack refuses its code: this
            // process compiles instead, with the NVRTC it has.
            Err(_) if refuse_packed(&variant, arch) => {
                context.load_module(cudarc::nvrtc::Ptx::from_binary(compile(&variant, arch)?))
            }
            loaded => loaded,
        }
        .context(what)?;
        let taps = constant_taps(mask);
        {
            let mut symbol = module.get_global("c_taps", stream).context(what)?;
            // SAFETY: c_taps is a float array of exactly this many elements (see convolve.cuh).
            // The header sizes c_taps from the same defines the taps were made for: a
            // shorter symbol is a bug in this program, not anything a user did.
            let mut view = unsafe { symbol.transmute_mut::<f32>(taps.len()) }.ok_or_else(|| EngineError::Internal {
                what: format!("{}: c_taps is smaller than the mask", what()),
            })?;
            stream.memcpy_htod(&taps, &mut view).context(what)?;
        }
        stream.synchronize().context(what)?;
        let load = |name: &str, shared: usize| -> Result<CudaFunction, EngineError> {
            let function = module.load_function(name).context(what)?;
            // Past 48 KiB a kernel must opt in; one that cannot fit at all is never launched
            // (FilterKernels picks the path that fits).
            if shared > 48 * 1024 && shared <= max_shared {
                function
                    .set_attribute(
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        shared as i32,
                    )
                    .context(what)?;
            }
            Ok(function)
        };
        Ok(KernelSet {
            variant,
            dense: load("convolve_dense", variant.dense_shared_bytes())?,
            separable: load("convolve_separable", variant.separable_shared_bytes())?,
            global: load("convolve_global", 0)?,
            _module: module,
        })
    }

    /// Enqueues the convolution of `planes` planes, `geometry.src_plane` and
    /// `geometry.dst_plane` bytes apart from `src` and `dst`, in one launch on `stream`.
    ///
    /// # Safety
    ///
    /// `src` and `dst` are device memory of the stream's context holding every plane as the
    /// geometry lays it out, and stay allocated until the stream has run the kernel.
    pub(crate) unsafe fn launch_batch(
        &self,
        stream: &Arc<CudaStream>,
        path: KernelPath,
        src: u64,
        dst: u64,
        geometry: PlaneGeometry,
        planes: u32,
    ) -> Result<(), cudarc::driver::DriverError> {
        let (function, mut config) = self.function_and_config(path, geometry);
        config.grid_dim.2 = planes;
        let mut builder = stream.launch_builder(function);
        builder.arg(&src).arg(&dst).arg(&geometry);
        // SAFETY: the kernel signature is (const u8*, u8*, PlaneGeometry), pointers passed as
        // 64-bit device addresses; the caller vouches for the memory (see above), and the
        // shared memory size is the one the kernel's tile needs.
        unsafe { builder.launch(config) }.map(|_| ())
    }

    /// Enqueues one plane's convolution on `stream`.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        path: KernelPath,
        src: &CudaView<u8>,
        dst: &mut CudaViewMut<u8>,
        geometry: PlaneGeometry,
    ) -> Result<(), cudarc::driver::DriverError> {
        let (function, config) = self.function_and_config(path, geometry);
        let mut builder = stream.launch_builder(function);
        builder.arg(src).arg(dst).arg(&geometry);
        // SAFETY: the kernel signature is (const u8*, u8*, PlaneGeometry); src and dst hold
        // pitch * height bytes as the geometry says (checked by the caller), and the shared
        // memory size is the one the kernel's tile needs.
        unsafe { builder.launch(config) }.map(|_| ())
    }

    /// The kernel `path` takes and its launch shape over one plane of `geometry`.
    fn function_and_config(&self, path: KernelPath, geometry: PlaneGeometry) -> (&CudaFunction, LaunchConfig) {
        let row_bytes = geometry.width as u32 * self.variant.channels;
        let height = geometry.height as u32;
        match path {
            KernelPath::Global => (
                &self.global,
                LaunchConfig {
                    grid_dim: (row_bytes.div_ceil(32), height.div_ceil(8), 1),
                    block_dim: (32, 8, 1),
                    shared_mem_bytes: 0,
                },
            ),
            KernelPath::Dense | KernelPath::Separable => {
                let (tile_w, tile_h) = self.variant.tile();
                let (function, shared) = if path == KernelPath::Dense {
                    (&self.dense, self.variant.dense_shared_bytes())
                } else {
                    (&self.separable, self.variant.separable_shared_bytes())
                };
                let t = &self.variant.tiling;
                (
                    function,
                    LaunchConfig {
                        grid_dim: (row_bytes.div_ceil(tile_w), height.div_ceil(tile_h), 1),
                        block_dim: (t.block_x, t.block_y, 1),
                        shared_mem_bytes: shared as u32,
                    },
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PlaneGeometry;

    #[test]
    fn plane_geometry_is_laid_out_as_the_cuda_struct() {
        // kernels/convolve.cuh: six 4-byte fields, then two `long long`s.
        assert_eq!(std::mem::size_of::<PlaneGeometry>(), 40);
        assert_eq!(std::mem::align_of::<PlaneGeometry>(), 8);
        assert_eq!(std::mem::offset_of!(PlaneGeometry, src_pixel), 16);
        assert_eq!(std::mem::offset_of!(PlaneGeometry, bias), 20);
        assert_eq!(std::mem::offset_of!(PlaneGeometry, src_plane), 24);
        assert_eq!(std::mem::offset_of!(PlaneGeometry, dst_plane), 32);
        assert_eq!(PlaneGeometry::ONE_PLANE.src_plane, 0);
    }
}

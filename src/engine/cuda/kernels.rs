//! The convolution kernels: one variant per (mask size, channels, border, tiling), compiled
//! by NVRTC for the device's architecture with `-D` defines, cached on disk, loaded as a
//! module holding the dense, separable and baseline kernels plus the mask taps.

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaStream, CudaView, CudaViewMut, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::error::CudaResultExt;
use crate::engine::{EngineError, KernelPath};
use crate::filter::BorderMode;
use crate::mask::Mask;

const HEADER: &str = include_str!("../../../kernels/convolve.cuh");
const KERNELS: &str = include_str!("../../../kernels/convolve.cu");

/// The program NVRTC compiles: the kernels with the header pasted in place of its include.
pub fn program_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| KERNELS.replace("#include \"convolve.cuh\"", HEADER))
}

/// Mirrors `struct PlaneGeometry` in kernels/convolve.cuh.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaneGeometry {
    pub width: i32,
    pub height: i32,
    pub src_pitch: i32,
    pub dst_pitch: i32,
    pub bias: f32,
}

// SAFETY: a plain #[repr(C)] struct of 32-bit fields, laid out as the CUDA struct.
unsafe impl DeviceRepr for PlaneGeometry {}

/// How threads and outputs are laid out over a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tiling {
    pub block_x: u32,
    pub block_y: u32,
    /// Outputs per thread across (bytes; a multiple of 4) and down.
    pub px: u32,
    pub py: u32,
    pub unroll_rows: bool,
}

/// Everything a compiled module is specialised on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Variant {
    pub mask_width: u32,
    pub mask_height: u32,
    pub channels: u32,
    pub border: BorderMode,
    pub tiling: Tiling,
}

/// Tallest mask whose row loop is unrolled fully; taller masks keep it rolled to bound code size.
const MAX_UNROLLED_MASK_HEIGHT: u32 = 15;
/// Masks from this size up take wide tiles on large planes (dense path).
const LARGE_MASK: usize = 17;
/// Planes from this size up (a 2560x1600 plane, say) have tiles enough for wide ones.
const LARGE_PLANE_PIXELS: usize = 4_000_000;

impl Variant {
    /// The tiling that measured fastest for `path`, the mask and a plane of `plane_pixels`
    /// (BENCHMARKS.md, tiling sweep), on a device that allows `max_shared` bytes of shared
    /// memory per block, with fewer rows per thread if the kernel would not fit otherwise.
    pub fn new(
        mask_width: usize,
        mask_height: usize,
        channels: usize,
        border: BorderMode,
        max_shared: usize,
        path: KernelPath,
        plane_pixels: usize,
    ) -> Variant {
        let tiling = |block_x, block_y, px, py| Tiling {
            block_x,
            block_y,
            px,
            py,
            unroll_rows: mask_height as u32 <= MAX_UNROLLED_MASK_HEIGHT,
        };
        let large_mask = mask_width.max(mask_height) >= LARGE_MASK;
        let tiling = match path {
            // 512 threads of 4x2 outputs: twice the warps of 32x8x4x4 on the same tile hide
            // the two barriers' latency; 10-25% faster from 5x5 up, never slower.
            KernelPath::Separable => tiling(32, 16, 4, 2),
            // Wide tiles (8 outputs per row per thread) halve the shared loads per tap; they
            // pay off once taps dominate, on planes with enough tiles to fill the GPU.
            KernelPath::Dense if large_mask && plane_pixels >= LARGE_PLANE_PIXELS => tiling(32, 8, 8, 4),
            _ => tiling(32, 8, 4, 4),
        };
        let mut variant = Variant {
            mask_width: mask_width as u32,
            mask_height: mask_height as u32,
            channels: channels as u32,
            border,
            tiling,
        };
        if let Some(tiling) = tiling_override(path) {
            variant.tiling = Tiling {
                unroll_rows: variant.tiling.unroll_rows,
                ..tiling
            };
        }
        while variant.shared_bytes(path) > max_shared && variant.tiling.py > 1 {
            variant.tiling.py /= 2;
        }
        variant
    }

    pub fn tile(&self) -> (u32, u32) {
        (
            self.tiling.block_x * self.tiling.px,
            self.tiling.block_y * self.tiling.py,
        )
    }

    /// Mirrors SHARED_H and SHARED_PITCH of the kernels.
    fn shared_rows_and_pitch(&self) -> (usize, usize) {
        let (tile_w, tile_h) = self.tile();
        let halo_w = (self.mask_width - 1) * self.channels;
        // Rows start at the aligned column at or before the left halo (SHIFT in the kernel).
        let shift = (4 - (self.mask_width / 2 * self.channels) % 4) % 4;
        let v_vec = (shift + self.tiling.px + halo_w).div_ceil(4);
        (
            (tile_h + self.mask_height - 1) as usize,
            (tile_w - self.tiling.px + 4 * v_vec) as usize,
        )
    }

    /// Dynamic shared memory `path`'s kernel needs per block.
    pub fn shared_bytes(&self, path: KernelPath) -> usize {
        match path {
            KernelPath::Dense => self.dense_shared_bytes(),
            KernelPath::Separable => self.separable_shared_bytes(),
            KernelPath::Global => 0,
        }
    }

    pub fn dense_shared_bytes(&self) -> usize {
        let (rows, pitch) = self.shared_rows_and_pitch();
        rows * pitch * 4
    }

    pub fn separable_shared_bytes(&self) -> usize {
        let (rows, pitch) = self.shared_rows_and_pitch();
        (rows * pitch + rows * self.tile().0 as usize) * 4
    }

    fn border_define(&self) -> &'static str {
        match self.border {
            BorderMode::Constant => "BORDER_CONSTANT",
            BorderMode::Nearest => "BORDER_NEAREST",
            BorderMode::Reflect => "BORDER_REFLECT",
            BorderMode::Mirror => "BORDER_MIRROR",
            BorderMode::Wrap => "BORDER_WRAP",
        }
    }

    /// NVRTC options for this variant on `arch` (e.g. `sm_90`).
    pub fn options(&self, arch: &str) -> Vec<String> {
        let t = &self.tiling;
        vec![
            format!("--gpu-architecture={arch}"),
            "-std=c++17".into(),
            format!("-DMASK_W={}", self.mask_width),
            format!("-DMASK_H={}", self.mask_height),
            format!("-DCH={}", self.channels),
            format!("-DBORDER={}", self.border_define()),
            format!("-DPX={}", t.px),
            format!("-DPY={}", t.py),
            format!("-DBLOCK_X={}", t.block_x),
            format!("-DBLOCK_Y={}", t.block_y),
            format!("-DUNROLL_ROWS={}", t.unroll_rows as u8),
        ]
    }

    pub fn describe(&self) -> String {
        format!(
            "{}x{} mask, {} channel(s), {} border, {}x{} threads x {}x{} outputs",
            self.mask_width,
            self.mask_height,
            self.channels,
            self.border,
            self.tiling.block_x,
            self.tiling.block_y,
            self.tiling.px,
            self.tiling.py
        )
    }
}

/// NVRTC's version as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32), EngineError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (callers probe first); the call writes two ints.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| EngineError::Cuda {
            context: "reading the NVRTC version".into(),
            message: format!("{e:?}"),
        })?;
    Ok((major, minor))
}

/// Where compiled kernels are kept between runs: `$CONVSTREAM_KERNEL_CACHE` (`off` disables),
/// else `$XDG_CACHE_HOME/convstream/kernels`, else `~/.cache/convstream/kernels`.
pub fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("CONVSTREAM_KERNEL_CACHE") {
        Some(v) if v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|base| base.join("convstream").join("kernels")),
    }
}

/// FNV-1a: a stable hash, so cache file names survive rebuilds of the binary.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for byte in part.iter().chain(&[0xff]) {
            hash ^= *byte as u64;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// CUBINs compiled in this process, by architecture and cache key.
type CubinsByArchAndKey = HashMap<(String, u64), Vec<u8>>;

/// CUBIN for `variant` on `arch`, from the disk cache when a previous run compiled it.
pub fn compile(variant: &Variant, arch: &str) -> Result<Vec<u8>, EngineError> {
    let options = variant.options(arch);
    let (major, minor) = nvrtc_version()?;
    let version = format!("nvrtc {major}.{minor}");
    let key = fnv1a(&[
        program_source().as_bytes(),
        options.join(" ").as_bytes(),
        version.as_bytes(),
    ]);
    // Compiled once per process even without a disk cache: a filter prepared off the frame
    // path (a live switch) is then only loaded on it.
    static COMPILED: OnceLock<Mutex<CubinsByArchAndKey>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(Default::default);
    let memory_key = (arch.to_string(), key);
    if let Some(cubin) = compiled.lock().ok().and_then(|map| map.get(&memory_key).cloned()) {
        return Ok(cubin);
    }
    let remember = |cubin: &Vec<u8>| {
        if let Ok(mut map) = compiled.lock() {
            map.insert(memory_key.clone(), cubin.clone());
        }
    };
    let cached = cache_dir().map(|dir| dir.join(format!("convolve-{arch}-{key:016x}.cubin")));
    if let Some(path) = &cached {
        if let Ok(bytes) = std::fs::read(path) {
            tracing::debug!("kernel {} loaded from {}", variant.describe(), path.display());
            remember(&bytes);
            return Ok(bytes);
        }
    }
    let started = std::time::Instant::now();
    let cubin = compile_cubin(program_source(), &options).map_err(|log| EngineError::Compile {
        variant: variant.describe(),
        log,
    })?;
    tracing::debug!(
        "kernel {} compiled for {arch} in {:.0} ms",
        variant.describe(),
        started.elapsed().as_secs_f64() * 1e3
    );
    if let Some(path) = &cached {
        store_in_cache(path, &cubin);
    }
    remember(&cubin);
    Ok(cubin)
}

/// Writes a cache entry atomically (temporary file, then rename); failure only costs a recompile.
fn store_in_cache(path: &std::path::Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(&temporary, bytes))
        .and_then(|_| std::fs::rename(&temporary, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        static WARNED: OnceLock<()> = OnceLock::new();
        WARNED.get_or_init(|| {
            tracing::warn!(
                "kernel cache {} is not writable ({e}); kernels will be recompiled on every start",
                dir.display()
            )
        });
    }
}

/// Compiles `source` to CUBIN with NVRTC. The error is the compile log (or NVRTC's error).
fn compile_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, String> {
    let source = CString::new(source).map_err(|_| "kernel source contains a NUL byte".to_string())?;
    if options.iter().any(|o| o.contains('\0')) {
        return Err("a compile option contains a NUL byte".into());
    }
    let program = nvrtc_result::create_program(&source, Some(c"convolve.cu"))
        .map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    struct Program(nvrtc_sys::nvrtcProgram);
    impl Drop for Program {
        fn drop(&mut self) {
            // SAFETY: the program was created above and is destroyed once.
            let _ = unsafe { nvrtc_result::destroy_program(self.0) };
        }
    }
    let program = Program(program);
    let log = |program: &Program| -> String {
        // SAFETY: valid program; the log is a NUL-terminated buffer NVRTC filled.
        unsafe { nvrtc_result::get_program_log(program.0) }
            .map(|v| {
                unsafe { CStr::from_ptr(v.as_ptr()) }
                    .to_string_lossy()
                    .trim()
                    .to_string()
            })
            .unwrap_or_default()
    };
    // SAFETY: valid program and options without NUL bytes (checked above).
    if let Err(e) = unsafe { nvrtc_result::compile_program(program.0, options) } {
        return Err(format!("{e:?}: {}", log(&program)));
    }
    let mut size = 0usize;
    // SAFETY: valid, compiled program; the calls write the size, then that many bytes.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(program.0, &mut size) }
        .result()
        .map_err(|e| format!("nvrtcGetCUBINSize: {e:?}"))?;
    if size == 0 {
        return Err("NVRTC produced no CUBIN (is the architecture a real sm_XY?)".into());
    }
    let mut cubin = vec![0u8; size];
    unsafe { nvrtc_sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| format!("nvrtcGetCUBIN: {e:?}"))?;
    Ok(cubin)
}

/// The taps a module's `c_taps` holds: correlation taps, then the separable row and column
/// taps (zeros when the mask is not separable).
pub fn constant_taps(mask: &Mask) -> Vec<f32> {
    let mut taps = mask.correlation_taps();
    match mask.correlation_factors() {
        Some((column, row)) => {
            taps.extend_from_slice(&row);
            taps.extend_from_slice(&column);
        }
        None => taps.extend(std::iter::repeat_n(0.0, mask.width() + mask.height())),
    }
    taps
}

/// A loaded module: the three kernels of one variant with one mask's taps in constant memory.
pub struct KernelSet {
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
        let module = context
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .context(what)?;
        let taps = constant_taps(mask);
        {
            let mut symbol = module.get_global("c_taps", stream).context(what)?;
            // SAFETY: c_taps is a float array of exactly this many elements (see convolve.cuh).
            let mut view = unsafe { symbol.transmute_mut::<f32>(taps.len()) }.ok_or_else(|| EngineError::Cuda {
                context: what(),
                message: "c_taps is smaller than the mask".into(),
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

    /// Enqueues one plane's convolution on `stream`.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        path: KernelPath,
        src: &CudaView<u8>,
        dst: &mut CudaViewMut<u8>,
        geometry: PlaneGeometry,
    ) -> Result<(), cudarc::driver::DriverError> {
        let row_bytes = geometry.width as u32 * self.variant.channels;
        let height = geometry.height as u32;
        let (function, config) = match path {
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
        };
        let mut builder = stream.launch_builder(function);
        builder.arg(src).arg(dst).arg(&geometry);
        // SAFETY: the kernel signature is (const u8*, u8*, PlaneGeometry); src and dst hold
        // pitch * height bytes as the geometry says (checked by the caller), and the shared
        // memory size is the one the kernel's tile needs.
        unsafe { builder.launch(config) }.map(|_| ())
    }
}

/// A tiling from `CONVSTREAM_TILING_DENSE` or `CONVSTREAM_TILING_SEPARABLE`, written
/// `BLOCK_XxBLOCK_YxPXxPY` (`32x8x4x4` is the default): a knob for tuning with
/// `convstream bench`. A malformed value is ignored with a warning.
fn tiling_override(path: KernelPath) -> Option<Tiling> {
    let name = match path {
        KernelPath::Dense => "CONVSTREAM_TILING_DENSE",
        KernelPath::Separable => "CONVSTREAM_TILING_SEPARABLE",
        KernelPath::Global => return None,
    };
    let text = std::env::var(name).ok()?;
    let parsed: Option<Vec<u32>> = text.split('x').map(|n| n.trim().parse().ok()).collect();
    match parsed.as_deref() {
        Some(&[block_x, block_y, px, py])
            if block_x > 0 && block_y > 0 && block_x * block_y <= 1024 && px > 0 && px % 4 == 0 && py > 0 =>
        {
            Some(Tiling {
                block_x,
                block_y,
                px,
                py,
                unroll_rows: true,
            })
        }
        _ => {
            tracing::warn!("{name}={text:?} ignored: expected BLOCK_XxBLOCK_YxPXxPY, PX a multiple of 4");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOPPER_SHARED: usize = 232_448;
    const UHD: usize = 3840 * 2160;
    const HD: usize = 1920 * 1080;

    fn tiling(size: usize, path: KernelPath, pixels: usize) -> (u32, u32, u32, u32) {
        let t = Variant::new(size, size, 1, BorderMode::Reflect, HOPPER_SHARED, path, pixels).tiling;
        (t.block_x, t.block_y, t.px, t.py)
    }

    #[test]
    fn tilings_follow_the_sweep() {
        assert_eq!(tiling(13, KernelPath::Separable, UHD), (32, 16, 4, 2));
        assert_eq!(tiling(3, KernelPath::Separable, HD), (32, 16, 4, 2));
        assert_eq!(tiling(13, KernelPath::Dense, UHD), (32, 8, 4, 4), "13x13 stays narrow");
        assert_eq!(
            tiling(31, KernelPath::Dense, UHD),
            (32, 8, 8, 4),
            "large mask, large plane"
        );
        assert_eq!(
            tiling(31, KernelPath::Dense, HD),
            (32, 8, 4, 4),
            "a 1080p plane has too few wide tiles"
        );
    }

    #[test]
    fn tiles_that_do_not_fit_lose_rows_per_thread() {
        // 48 KiB without the opt-in: a 63x63 dense tile of 8x4 outputs does not fit.
        let v = Variant::new(63, 63, 1, BorderMode::Reflect, 48 * 1024, KernelPath::Dense, UHD);
        assert!(v.dense_shared_bytes() <= 48 * 1024 || v.tiling.py == 1);
        assert!(v.tiling.py < 4);
    }
}

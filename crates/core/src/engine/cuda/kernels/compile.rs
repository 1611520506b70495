//! Compiling kernel variants: NVRTC turns the kernel source, specialised by `-D` defines,
//! into CUBIN for the device's architecture; CUBINs are kept in memory for the process and
//! on disk between runs, and come ready-made from the kernel pack a build ships (`pack.rs`).

use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::pack::{self, Pack};
use super::variant::Variant;
use crate::engine::cuda::error::CudaError;
use crate::engine::EngineError;

const HEADER: &str = include_str!("../../../../kernels/convolve.cuh");
const KERNELS: &str = include_str!("../../../../kernels/convolve.cu");

/// The program NVRTC compiles: the kernels with the header pasted in place of its include.
pub fn program_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| KERNELS.replace("#include \"convolve.cuh\"", HEADER))
}

/// An NVRTC call's failure, with what was being done.
fn nvrtc_error(context: impl Into<String>) -> impl FnOnce(nvrtc_result::NvrtcError) -> EngineError {
    let context = context.into();
    move |error| EngineError::Cuda {
        context,
        error: CudaError::Nvrtc(error),
    }
}

/// NVRTC's version as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32), EngineError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded (callers probe first); the call writes two ints.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(nvrtc_error("reading the NVRTC version"))?;
    Ok((major, minor))
}

/// The architectures this NVRTC compiles for, as `sm_XY` names (`sm_90`, `sm_120`).
pub fn supported_architectures() -> Result<Vec<String>, EngineError> {
    let mut count = 0;
    // SAFETY: NVRTC is loaded (callers probe first); the call writes one int.
    unsafe { nvrtc_sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .map_err(nvrtc_error("counting NVRTC's architectures"))?;
    let mut archs = vec![0i32; count.max(0) as usize];
    // SAFETY: the buffer holds the `count` ints the call writes.
    unsafe { nvrtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(nvrtc_error("listing NVRTC's architectures"))?;
    Ok(archs.into_iter().map(|arch| format!("sm_{arch}")).collect())
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

/// CUBINs compiled in this process, by architecture and pack key.
type CubinsByArchAndKey = HashMap<(String, u64), Vec<u8>>;

/// One lock per variant being compiled, by architecture and pack key: held by the thread
/// compiling it, waited on by the others that want it.
type CompilingByArchAndKey = HashMap<(String, u64), Arc<Mutex<()>>>;

/// Where this process's kernels came from, counted for logs and checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelOrigins {
    /// Variants read from the kernel pack.
    pub packed: u64,
    /// Variants read from the disk cache.
    pub cached: u64,
    /// Variants NVRTC compiled.
    pub compiled: u64,
}

static PACKED: AtomicU64 = AtomicU64::new(0);
static CACHED: AtomicU64 = AtomicU64::new(0);
static COMPILED_BY_NVRTC: AtomicU64 = AtomicU64::new(0);

/// Where the kernels this process loaded so far came from.
pub fn kernel_origins() -> KernelOrigins {
    KernelOrigins {
        packed: PACKED.load(Ordering::Relaxed),
        cached: CACHED.load(Ordering::Relaxed),
        compiled: COMPILED_BY_NVRTC.load(Ordering::Relaxed),
    }
}

/// The hash of the kernel source, which a kernel pack must have been built from.
pub fn source_hash() -> u64 {
    source_hash_of(program_source())
}

/// The hash of kernel source `source` (a pack's header names the one it was built from).
pub fn source_hash_of(source: &str) -> u64 {
    fnv1a(&[source.as_bytes()])
}

/// A variant's key in the kernel pack and in this process: the source and the NVRTC options
/// (which name the architecture), not NVRTC's version, so a pack built by another NVRTC is
/// used and one built from other kernel sources is not.
pub fn pack_key(variant: &Variant, arch: &str) -> u64 {
    pack_key_for_source(program_source(), variant, arch)
}

/// [`pack_key`] for kernel source `source`.
pub fn pack_key_for_source(source: &str, variant: &Variant, arch: &str) -> u64 {
    fnv1a(&[source.as_bytes(), variant.options(arch).join(" ").as_bytes()])
}

fn compiled_in_process() -> &'static Mutex<CubinsByArchAndKey> {
    static COMPILED: OnceLock<Mutex<CubinsByArchAndKey>> = OnceLock::new();
    COMPILED.get_or_init(Default::default)
}

/// CUBIN for `variant` on `arch`: from this process's earlier calls, the kernel pack, the
/// disk cache (a previous run compiled it) or NVRTC, in that order.
pub fn compile(variant: &Variant, arch: &str) -> Result<Vec<u8>, EngineError> {
    // Compiled once per process even without a disk cache: a filter prepared off the frame
    // path (a live switch) is then only loaded on it.
    let compiled = compiled_in_process();
    let memory_key = (arch.to_string(), pack_key(variant, arch));
    if let Some(cubin) = compiled.lock().ok().and_then(|map| map.get(&memory_key).cloned()) {
        return Ok(cubin);
    }
    // Pipelines starting together want the same variant at once: the first compiles it, the
    // others wait for it instead of each running NVRTC (seconds of CPU each) on the same source.
    static COMPILING: OnceLock<Mutex<CompilingByArchAndKey>> = OnceLock::new();
    let turn = COMPILING
        .get_or_init(Default::default)
        .lock()
        .map(|mut map| map.entry(memory_key.clone()).or_default().clone())
        .unwrap_or_default();
    let _compiling = turn.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cubin) = compiled.lock().ok().and_then(|map| map.get(&memory_key).cloned()) {
        return Ok(cubin);
    }
    let cubin = match from_pack(variant, arch) {
        Some(cubin) => {
            PACKED.fetch_add(1, Ordering::Relaxed);
            cubin
        }
        None => cached_or_compiled(variant, arch)?,
    };
    if let Ok(mut map) = compiled.lock() {
        map.insert(memory_key, cubin.clone());
    }
    Ok(cubin)
}

/// CUBIN for `variant` on `arch` from the disk cache, else compiled by NVRTC and stored there.
fn cached_or_compiled(variant: &Variant, arch: &str) -> Result<Vec<u8>, EngineError> {
    let options = variant.options(arch);
    let (major, minor) = nvrtc_version()?;
    let version = format!("nvrtc {major}.{minor}");
    let key = fnv1a(&[
        program_source().as_bytes(),
        options.join(" ").as_bytes(),
        version.as_bytes(),
    ]);
    let cached = cache_dir().map(|dir| dir.join(format!("convolve-{arch}-{key:016x}.cubin")));
    if let Some(path) = &cached {
        if let Ok(bytes) = std::fs::read(path) {
            tracing::debug!("kernel {} loaded from {}", variant.describe(), path.display());
            CACHED.fetch_add(1, Ordering::Relaxed);
            return Ok(bytes);
        }
    }
    let started = std::time::Instant::now();
    let cubin = compile_cubin(program_source(), &options, variant)?;
    COMPILED_BY_NVRTC.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        "kernel {} compiled for {arch} in {:.0} ms",
        variant.describe(),
        started.elapsed().as_secs_f64() * 1e3
    );
    if let Some(path) = &cached {
        store_in_cache(path, &cubin);
    }
    Ok(cubin)
}

/// Compiles `variant` for `arch` with NVRTC alone (no pack, no cache, nothing remembered):
/// what a kernel pack is built from.
pub fn compile_for_pack(variant: &Variant, arch: &str) -> Result<Vec<u8>, EngineError> {
    compile_cubin(program_source(), &variant.options(arch), variant)
}

/// Whether kernels are taken from the pack: until the driver refuses one of its CUBINs.
static PACK_REFUSED: AtomicBool = AtomicBool::new(false);

/// The kernel pack this process uses, opened on first use: the first of
/// [`pack::candidates`] that exists, if it was built from this kernel source.
fn installed_pack() -> Option<&'static Pack> {
    static INSTALLED: OnceLock<Option<Pack>> = OnceLock::new();
    let pack = INSTALLED.get_or_init(|| {
        let path = pack::candidates().into_iter().find(|path| path.exists())?;
        let pack = Pack::open(&path)
            .map_err(|e| tracing::warn!("{e}; kernels are compiled as they are needed"))
            .ok()?;
        if pack.source_hash() != source_hash() {
            tracing::info!(
                "kernel pack {} was built from other kernel sources than this build's; kernels are compiled as they are needed",
                path.display()
            );
            return None;
        }
        tracing::debug!("kernel pack {}: {} kernels", path.display(), pack.len());
        Some(pack)
    });
    pack.as_ref().filter(|_| !PACK_REFUSED.load(Ordering::Relaxed))
}

/// The pack's CUBIN for `variant` on `arch`, else its CUBIN for the first architecture of
/// the same major version (`sm_80` code runs on `sm_86` and `sm_89` devices).
fn from_pack(variant: &Variant, arch: &str) -> Option<Vec<u8>> {
    let pack = installed_pack()?;
    let family = arch
        .strip_prefix("sm_")
        .filter(|digits| digits.len() >= 2)
        .map(|digits| format!("sm_{}0", &digits[..digits.len() - 1]));
    for candidate in std::iter::once(arch.to_string()).chain(family.filter(|f| f != arch)) {
        if let Some(cubin) = pack.get(&candidate, pack_key(variant, &candidate)) {
            tracing::debug!(
                "kernel {} for {arch} read from the kernel pack ({candidate} code)",
                variant.describe()
            );
            return Some(cubin);
        }
    }
    None
}

/// After the driver refused to load `variant`'s CUBIN on `arch`: true when that CUBIN came
/// from the kernel pack, which is then no longer used (this process compiles instead); the
/// caller may ask [`compile`] again.
pub fn refuse_packed(variant: &Variant, arch: &str) -> bool {
    if installed_pack().is_none() || from_pack(variant, arch).is_none() {
        return false;
    }
    PACK_REFUSED.store(true, Ordering::Relaxed);
    if let Ok(mut map) = compiled_in_process().lock() {
        map.remove(&(arch.to_string(), pack_key(variant, arch)));
    }
    tracing::warn!("the driver refused the kernel pack's code for {arch}; kernels are compiled as they are needed");
    true
}

/// Writes a cache entry atomically (temporary file, then rename); failure only costs a recompile.
fn store_in_cache(path: &std::path::Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    // Unique within the process too: two threads storing one entry must not share a file.
    static STORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let turn = STORED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = path.with_extension(format!("tmp{}-{turn}", std::process::id()));
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

/// An NVRTC program, destroyed on drop.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by `compile_cubin` and is destroyed once, here.
        let _ = unsafe { nvrtc_result::destroy_program(self.0) };
    }
}

impl Program {
    /// The compile log, empty when NVRTC has none to give.
    fn log(&self) -> String {
        // SAFETY: a valid program; NVRTC fills a buffer of the log's size.
        let log = unsafe { nvrtc_result::get_program_log(self.0) };
        log.map(|v| {
            // SAFETY: NVRTC's log is NUL-terminated within the buffer it filled.
            unsafe { CStr::from_ptr(v.as_ptr()) }
                .to_string_lossy()
                .trim()
                .to_string()
        })
        .unwrap_or_default()
    }
}

/// Compiles `source` to CUBIN with NVRTC. A program that does not compile is a
/// [`EngineError::Compile`] with NVRTC's log; a failing NVRTC call keeps NVRTC's error.
fn compile_cubin(source: &str, options: &[String], variant: &Variant) -> Result<Vec<u8>, EngineError> {
    let what = |action: &str| format!("{action} for {}", variant.describe());
    // The source is embedded and the options are made from numbers: a NUL byte is a bug.
    let source = CString::new(source).map_err(|_| EngineError::Internal {
        what: "kernel source contains a NUL byte".into(),
    })?;
    if options.iter().any(|o| o.contains('\0')) {
        return Err(EngineError::Internal {
            what: "a compile option contains a NUL byte".into(),
        });
    }
    let program = nvrtc_result::create_program(&source, Some(c"convolve.cu"))
        .map_err(nvrtc_error(what("creating the NVRTC program")))?;
    let program = Program(program);
    // SAFETY: valid program and options without NUL bytes (checked above).
    if let Err(e) = unsafe { nvrtc_result::compile_program(program.0, options) } {
        return Err(EngineError::Compile {
            variant: variant.describe(),
            log: format!("{e:?}: {}", program.log()),
        });
    }
    let mut size = 0usize;
    // SAFETY: valid, compiled program; the call writes the CUBIN's size.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(program.0, &mut size) }
        .result()
        .map_err(nvrtc_error(what("reading the CUBIN size")))?;
    if size == 0 {
        return Err(EngineError::Compile {
            variant: variant.describe(),
            log: "NVRTC produced no CUBIN (is the architecture a real sm_XY?)".into(),
        });
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: valid, compiled program; the call writes `size` bytes into `cubin`, which holds that many.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast()) }
        .result()
        .map_err(nvrtc_error(what("reading the CUBIN")))?;
    Ok(cubin)
}

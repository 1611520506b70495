//! What each GPU is doing, from NVML (`libnvidia-ml.so.1`, part of the driver, loaded at run
//! time like libcuda): compute and NVDEC utilisation and memory, for the metrics an operator
//! scales by. NVML numbers GPUs in PCI order; the `uuid` label ties them to `doctor`.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::sync::OnceLock;

use crate::engine::GpuUsage;

type Device = *mut c_void;

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// NVML's `NVML_SUCCESS`.
const SUCCESS: c_int = 0;

type Init = unsafe extern "C" fn() -> c_int;
type DeviceCount = unsafe extern "C" fn(*mut c_uint) -> c_int;
type HandleByIndex = unsafe extern "C" fn(c_uint, *mut Device) -> c_int;
type UtilizationRates = unsafe extern "C" fn(Device, *mut Utilization) -> c_int;
type DecoderUtilization = unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> c_int;
type MemoryInfo = unsafe extern "C" fn(Device, *mut Memory) -> c_int;
type Uuid = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int;

/// The library and the functions used, loaded and initialised once per process.
struct Nvml {
    /// Kept loaded for as long as the function pointers may be called.
    _library: libloading::Library,
    device_count: DeviceCount,
    handle_by_index: HandleByIndex,
    utilization: UtilizationRates,
    decoder_utilization: DecoderUtilization,
    memory: MemoryInfo,
    uuid: Uuid,
}

fn load() -> Option<Nvml> {
    // SAFETY: loading the NVIDIA driver's management library, whose initialisers only set up
    // the library; it stays loaded in the process-wide `Nvml`.
    let library = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.ok()?;
    // Each symbol has its C signature in every NVML since the `_v2` entry points (driver 325);
    // the pointers are used only while `library`, kept in `Nvml`, is loaded.
    // SAFETY: as above.
    let init = unsafe { *library.get::<Init>(b"nvmlInit_v2\0").ok()? };
    // SAFETY: as above.
    let device_count = unsafe { *library.get::<DeviceCount>(b"nvmlDeviceGetCount_v2\0").ok()? };
    // SAFETY: as above.
    let handle_by_index = unsafe { *library.get::<HandleByIndex>(b"nvmlDeviceGetHandleByIndex_v2\0").ok()? };
    // SAFETY: as above.
    let utilization = unsafe {
        *library
            .get::<UtilizationRates>(b"nvmlDeviceGetUtilizationRates\0")
            .ok()?
    };
    // SAFETY: as above.
    let decoder_utilization = unsafe {
        *library
            .get::<DecoderUtilization>(b"nvmlDeviceGetDecoderUtilization\0")
            .ok()?
    };
    // SAFETY: as above.
    let memory = unsafe { *library.get::<MemoryInfo>(b"nvmlDeviceGetMemoryInfo\0").ok()? };
    // SAFETY: as above.
    let uuid = unsafe { *library.get::<Uuid>(b"nvmlDeviceGetUUID\0").ok()? };
    let nvml = Nvml {
        _library: library,
        device_count,
        handle_by_index,
        utilization,
        decoder_utilization,
        memory,
        uuid,
    };
    // SAFETY: nvmlInit_v2 takes no arguments; calling it more than once is allowed.
    (unsafe { init() } == SUCCESS).then_some(nvml)
}

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(load).as_ref()
}

/// Every GPU NVML sees, with what could be read of it; empty without a driver.
pub fn gpu_usage() -> Vec<GpuUsage> {
    let Some(nvml) = nvml() else { return Vec::new() };
    let mut count: c_uint = 0;
    // SAFETY: NVML is initialised; `count` is a valid place for the answer.
    if unsafe { (nvml.device_count)(&mut count) } != SUCCESS {
        return Vec::new();
    }
    (0..count)
        .filter_map(|index| {
            let mut device: Device = std::ptr::null_mut();
            // SAFETY: `index` is below the count NVML gave; `device` receives its handle.
            if unsafe { (nvml.handle_by_index)(index, &mut device) } != SUCCESS {
                return None;
            }
            let mut uuid = [0 as c_char; 96];
            // SAFETY: the buffer is 96 bytes, above NVML's 80-byte UUID buffer size, and NVML
            // NUL-terminates what it writes.
            let uuid = match unsafe { (nvml.uuid)(device, uuid.as_mut_ptr(), uuid.len() as c_uint) } {
                // SAFETY: NUL-terminated within the buffer on success (see above).
                SUCCESS => unsafe { CStr::from_ptr(uuid.as_ptr()) }.to_string_lossy().into_owned(),
                _ => String::new(),
            };
            let mut rates = Utilization::default();
            // SAFETY: a valid handle and a place of the struct NVML writes.
            let busy = (unsafe { (nvml.utilization)(device, &mut rates) } == SUCCESS).then_some(rates.gpu);
            let (mut decoder, mut period) = (0, 0);
            // SAFETY: a valid handle and two places for the answers.
            let decoder_busy = (unsafe { (nvml.decoder_utilization)(device, &mut decoder, &mut period) } == SUCCESS)
                .then_some(decoder);
            let mut memory = Memory::default();
            // SAFETY: a valid handle and a place of the struct NVML writes.
            let memory = (unsafe { (nvml.memory)(device, &mut memory) } == SUCCESS).then_some(memory);
            Some(GpuUsage {
                index,
                uuid,
                busy_percent: busy,
                decoder_busy_percent: decoder_busy,
                memory_used_bytes: memory.as_ref().map(|m| m.used),
                memory_total_bytes: memory.as_ref().map(|m| m.total),
            })
        })
        .collect()
}

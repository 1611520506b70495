//! What each GPU is doing, from NVML (`libnvidia-ml.so.1`, part of the driver, loaded at run
//! time like libcuda): compute and NVDEC utilisation and memory, for the metrics an operator
//! scales by, and how many NVDEC engines a GPU has, for `doctor`. NVML numbers GPUs in PCI
//! order; the `uuid` label ties them to `doctor`.

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

/// NVML's `nvmlGpuInstanceProfileInfo_t` (version 1, the layout every NVML since R450 takes).
#[repr(C)]
#[derive(Default)]
struct InstanceProfile {
    id: c_uint,
    is_p2p_supported: c_uint,
    slice_count: c_uint,
    instance_count: c_uint,
    multiprocessor_count: c_uint,
    copy_engine_count: c_uint,
    decoder_count: c_uint,
    encoder_count: c_uint,
    jpeg_count: c_uint,
    ofa_count: c_uint,
    memory_size_mb: c_ulonglong,
}

/// NVML's `NVML_GPU_INSTANCE_PROFILE_7_SLICE` and `_8_SLICE`: the whole-GPU instance profiles
/// of MIG-capable GPUs (A100/H100/H200 and B200), whose engine counts are the whole GPU's.
const WHOLE_GPU_PROFILES: [c_uint; 2] = [0x4, 0x5];

/// NVML's `NVML_SUCCESS`.
const SUCCESS: c_int = 0;

type Init = unsafe extern "C" fn() -> c_int;
type DeviceCount = unsafe extern "C" fn(*mut c_uint) -> c_int;
type HandleByIndex = unsafe extern "C" fn(c_uint, *mut Device) -> c_int;
type UtilizationRates = unsafe extern "C" fn(Device, *mut Utilization) -> c_int;
type DecoderUtilization = unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> c_int;
type MemoryInfo = unsafe extern "C" fn(Device, *mut Memory) -> c_int;
type Uuid = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int;
type Name = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int;
type InstanceProfileInfo = unsafe extern "C" fn(Device, c_uint, *mut InstanceProfile) -> c_int;

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
    name: Name,
    /// Absent from NVML before MIG (R450).
    instance_profile: Option<InstanceProfileInfo>,
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
    // SAFETY: as above.
    let name = unsafe { *library.get::<Name>(b"nvmlDeviceGetName\0").ok()? };
    // SAFETY: as above.
    let instance_profile = unsafe {
        library
            .get::<InstanceProfileInfo>(b"nvmlDeviceGetGpuInstanceProfileInfo\0")
            .ok()
            .map(|f| *f)
    };
    let nvml = Nvml {
        _library: library,
        device_count,
        handle_by_index,
        utilization,
        decoder_utilization,
        memory,
        uuid,
        name,
        instance_profile,
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

/// How many NVDEC engines a GPU has, and where that figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderEngines {
    /// NVDEC engines.
    pub count: u32,
    /// Where the count comes from (NVML, or NVIDIA's published figures).
    pub from: &'static str,
}

/// NVDEC engines of the GPU named `name` (as CUDA names it): from NVML's whole-GPU instance
/// profile where the GPU has one, else from NVIDIA's published figures for the GPUs this
/// product is deployed on; `None` for a GPU in neither.
pub fn decoder_engines(name: &str) -> Option<DecoderEngines> {
    nvml_decoder_engines(name)
        .map(|count| DecoderEngines {
            count,
            from: "NVML's whole-GPU instance profile",
        })
        .or_else(|| {
            published_decoder_engines(name).map(|count| DecoderEngines {
                count,
                from: "NVIDIA's video codec support matrix",
            })
        })
}

fn nvml_decoder_engines(name: &str) -> Option<u32> {
    let nvml = nvml()?;
    let profile_info = nvml.instance_profile?;
    let mut count: c_uint = 0;
    // SAFETY: NVML is initialised; `count` is a valid place for the answer.
    if unsafe { (nvml.device_count)(&mut count) } != SUCCESS {
        return None;
    }
    (0..count).find_map(|index| {
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: `index` is below the count NVML gave; `device` receives its handle.
        if unsafe { (nvml.handle_by_index)(index, &mut device) } != SUCCESS {
            return None;
        }
        let mut device_name = [0 as c_char; 96];
        // SAFETY: a 96-byte buffer, NVML's NVML_DEVICE_NAME_V2_BUFFER_SIZE; NVML
        // NUL-terminates what it writes.
        if unsafe { (nvml.name)(device, device_name.as_mut_ptr(), device_name.len() as c_uint) } != SUCCESS {
            return None;
        }
        // SAFETY: NUL-terminated within the buffer on success (see above).
        if unsafe { CStr::from_ptr(device_name.as_ptr()) }.to_string_lossy() != name {
            return None;
        }
        WHOLE_GPU_PROFILES
            .iter()
            .filter_map(|profile| {
                let mut info = InstanceProfile::default();
                // SAFETY: a valid handle and a place of the version-1 struct NVML writes.
                (unsafe { profile_info(device, *profile, &mut info) } == SUCCESS).then_some(info.decoder_count)
            })
            .max()
            .filter(|count| *count > 0)
    })
}

/// NVDEC engines per GPU model, from NVIDIA's "Video Encode and Decode GPU Support Matrix",
/// for GPUs NVML gives no instance profile for. Models match whole words of the name, so
/// "L40S" is not read as "L4".
fn published_decoder_engines(name: &str) -> Option<u32> {
    const ENGINES: &[(&str, u32)] = &[
        ("H200", 7),
        ("H100", 7),
        ("A100", 5),
        ("A30", 4),
        ("L40S", 3),
        ("L40", 3),
        ("L4", 4),
        ("A10", 2),
        ("T4", 2),
    ];
    let words: Vec<&str> = name.split([' ', '-']).collect();
    ENGINES
        .iter()
        .find(|(model, _)| words.contains(model))
        .map(|(_, count)| *count)
}

#[cfg(test)]
mod tests {
    use super::published_decoder_engines;

    #[test]
    fn published_engine_counts_match_whole_model_names_only() {
        assert_eq!(published_decoder_engines("NVIDIA H100 80GB HBM3"), Some(7));
        assert_eq!(published_decoder_engines("NVIDIA L40S"), Some(3));
        assert_eq!(published_decoder_engines("NVIDIA L4"), Some(4));
        assert_eq!(published_decoder_engines("NVIDIA A100-SXM4-40GB"), Some(5));
        assert_eq!(published_decoder_engines("NVIDIA A10G"), None, "A10G is not the A10");
        assert_eq!(published_decoder_engines("NVIDIA GeForce RTX 4090"), None);
    }
}

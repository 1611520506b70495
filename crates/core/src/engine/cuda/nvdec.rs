//! Asks the driver what NVDEC decodes (`cuvidGetDecoderCaps` from libnvcuvid), so that a
//! stream NVDEC cannot take is refused, or decoded in software, before a decoder is made.

use cudarc::driver::CudaContext;
use std::collections::HashMap;
use std::ffi::c_uint;
use std::sync::{Arc, Mutex, OnceLock};

use super::device;
use super::error::driver_error;
use crate::engine::EngineError;
use crate::nvdec::{Chroma, NvdecCaps, NvdecCodec, NvdecProbe, ProbeError};

/// `CUVIDDECODECAPS` from the Video Codec SDK's `cuviddec.h`: inputs, outputs, and the
/// reserved words the driver may grow into (zeroed, as the SDK asks).
#[repr(C)]
#[derive(Default)]
struct DecodeCaps {
    codec: c_uint,
    chroma_format: c_uint,
    bit_depth_minus8: c_uint,
    reserved1: [c_uint; 3],
    is_supported: u8,
    nvdec_count: u8,
    output_format_mask: u16,
    max_width: c_uint,
    max_height: c_uint,
    max_mb_count: c_uint,
    min_width: u16,
    min_height: u16,
    is_histogram_supported: u8,
    counter_bit_depth: u8,
    max_histogram_bins: u16,
    reserved3: [c_uint; 10],
}

type GetDecoderCaps = unsafe extern "C" fn(*mut DecodeCaps) -> cudarc::driver::sys::CUresult;

/// libnvcuvid and the CUDA context the query runs in, loaded once per process.
struct Driver {
    /// Kept loaded for as long as `get_caps` may be called.
    _library: libloading::Library,
    get_caps: GetDecoderCaps,
    /// FFmpeg's cuvid decoders run on device 0 unless told otherwise; so are they asked.
    context: Arc<CudaContext>,
}

/// Why NVDEC could not be asked, with the driver's or the loader's error.
#[derive(Debug, thiserror::Error)]
enum QueryError {
    #[error(transparent)]
    NoDevice(EngineError),
    #[error("the NVDEC library (libnvcuvid.so.1) could not be loaded: {0}")]
    Library(libloading::Error),
    #[error("the NVIDIA driver is too old to report NVDEC capabilities: {0}")]
    TooOld(libloading::Error),
    #[error("cannot make cuda:0 current: {}", driver_error(.0))]
    Context(cudarc::driver::DriverError),
    #[error("cuvidGetDecoderCaps failed: {}", driver_error(.0))]
    Query(cudarc::driver::DriverError),
}

fn load() -> Result<Driver, ProbeError> {
    let context = device::open(0).map_err(|e| ProbeError::new(QueryError::NoDevice(e)))?;
    // SAFETY: loading the NVIDIA driver's own video decoding library, whose initialisers
    // only set up the library; it is kept loaded in the process-wide `Driver`.
    let library =
        unsafe { libloading::Library::new("libnvcuvid.so.1") }.map_err(|e| ProbeError::new(QueryError::Library(e)))?;
    // SAFETY: the symbol has this C signature in every driver since 378; the pointer is used
    // only while `library` is loaded.
    let get_caps = unsafe { library.get::<GetDecoderCaps>(b"cuvidGetDecoderCaps\0") }
        .map(|symbol| *symbol)
        .map_err(|e| ProbeError::new(QueryError::TooOld(e)))?;
    Ok(Driver {
        _library: library,
        get_caps,
        context,
    })
}

/// What is asked: codec, chroma format, bit depth.
type Question = (NvdecCodec, Chroma, u32);

/// The driver's answers, asked once per codec, chroma format and bit depth.
#[derive(Default)]
pub struct CudaNvdecProbe {
    answers: Mutex<HashMap<Question, Result<NvdecCaps, ProbeError>>>,
}

impl CudaNvdecProbe {
    /// The process's one probe, whose answers are kept for every pipeline.
    pub fn global() -> Arc<CudaNvdecProbe> {
        static PROBE: OnceLock<Arc<CudaNvdecProbe>> = OnceLock::new();
        PROBE.get_or_init(Default::default).clone()
    }

    fn ask(codec: NvdecCodec, chroma: Chroma, bit_depth: u32) -> Result<NvdecCaps, ProbeError> {
        static DRIVER: OnceLock<Result<Driver, ProbeError>> = OnceLock::new();
        let driver = DRIVER.get_or_init(load).as_ref().map_err(Clone::clone)?;
        driver
            .context
            .bind_to_thread()
            .map_err(|e| ProbeError::new(QueryError::Context(e)))?;
        let mut caps = DecodeCaps {
            codec: codec as c_uint,
            chroma_format: chroma as c_uint,
            bit_depth_minus8: bit_depth.saturating_sub(8),
            ..Default::default()
        };
        // SAFETY: `caps` is a valid, zeroed CUVIDDECODECAPS with its inputs set, and a CUDA
        // context is current on this thread, as cuvidGetDecoderCaps requires.
        let status = unsafe { (driver.get_caps)(&mut caps) };
        status.result().map_err(|e| ProbeError::new(QueryError::Query(e)))?;
        Ok(NvdecCaps {
            supported: caps.is_supported != 0,
            min_width: caps.min_width.into(),
            min_height: caps.min_height.into(),
            max_width: caps.max_width,
            max_height: caps.max_height,
            max_macroblocks: caps.max_mb_count,
        })
    }
}

impl NvdecProbe for CudaNvdecProbe {
    fn capabilities(&self, codec: NvdecCodec, chroma: Chroma, bit_depth: u32) -> Result<NvdecCaps, ProbeError> {
        let key = (codec, chroma, bit_depth);
        if let Some(answer) = self.answers.lock().ok().and_then(|answers| answers.get(&key).cloned()) {
            return answer;
        }
        let answer = Self::ask(codec, chroma, bit_depth);
        if let Ok(mut answers) = self.answers.lock() {
            answers.insert(key, answer.clone());
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caps_struct_has_the_sdk_layout() {
        // cuviddec.h: 6 words in, then 1+1+2 bytes, 3 words, 2+2+1+1+2 bytes, 10 words.
        assert_eq!(std::mem::size_of::<DecodeCaps>(), 24 + 4 + 12 + 8 + 40);
        assert_eq!(std::mem::offset_of!(DecodeCaps, is_supported), 24);
        assert_eq!(std::mem::offset_of!(DecodeCaps, max_width), 28);
        assert_eq!(std::mem::offset_of!(DecodeCaps, min_width), 40);
        assert_eq!(std::mem::offset_of!(DecodeCaps, reserved3), 48);
    }
}

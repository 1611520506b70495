//! NVDEC's vocabulary without FFmpeg: its codec and chroma numbers, the capabilities the
//! driver reports for them, and the trait of whatever asks the driver (the CUDA engine's
//! `engine::cuda::nvdec`). Whether a stream can be decoded is decided in the media crate,
//! which knows FFmpeg's streams.

use std::error::Error;
use std::sync::Arc;

/// NVDEC's codec numbers (`cudaVideoCodec` in the Video Codec SDK's `cuviddec.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvdecCodec {
    /// MPEG-1 video.
    Mpeg1 = 0,
    /// MPEG-2 video.
    Mpeg2 = 1,
    /// MPEG-4 Part 2.
    Mpeg4 = 2,
    /// VC-1.
    Vc1 = 3,
    /// H.264 (AVC).
    H264 = 4,
    /// JPEG.
    Jpeg = 5,
    /// HEVC (H.265).
    Hevc = 8,
    /// VP8.
    Vp8 = 9,
    /// VP9.
    Vp9 = 10,
    /// AV1.
    Av1 = 11,
}

impl NvdecCodec {
    /// The codec's common name (`H.264`), for messages.
    pub fn name(self) -> &'static str {
        match self {
            NvdecCodec::Mpeg1 => "MPEG-1",
            NvdecCodec::Mpeg2 => "MPEG-2",
            NvdecCodec::Mpeg4 => "MPEG-4 Part 2",
            NvdecCodec::Vc1 => "VC-1",
            NvdecCodec::H264 => "H.264",
            NvdecCodec::Jpeg => "JPEG",
            NvdecCodec::Hevc => "HEVC",
            NvdecCodec::Vp8 => "VP8",
            NvdecCodec::Vp9 => "VP9",
            NvdecCodec::Av1 => "AV1",
        }
    }
}

/// Chroma subsampling (`cudaVideoChromaFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Chroma {
    /// Luma only.
    Monochrome = 0,
    /// Chroma halved both ways.
    Yuv420 = 1,
    /// Chroma halved across.
    Yuv422 = 2,
    /// Chroma at full resolution.
    Yuv444 = 3,
}

impl Chroma {
    /// The format's common name (`4:2:0`), for messages.
    pub fn name(self) -> &'static str {
        match self {
            Chroma::Monochrome => "monochrome",
            Chroma::Yuv420 => "4:2:0",
            Chroma::Yuv422 => "4:2:2",
            Chroma::Yuv444 => "4:4:4",
        }
    }
}

/// What the driver says NVDEC does for one codec, chroma format and bit depth
/// (`CUVIDDECODECAPS`'s outputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvdecCaps {
    /// Whether NVDEC decodes this at all.
    pub supported: bool,
    /// The narrowest picture it decodes, in pixels.
    pub min_width: u32,
    /// The shortest picture it decodes, in pixels.
    pub min_height: u32,
    /// The widest picture it decodes, in pixels.
    pub max_width: u32,
    /// The tallest picture it decodes, in pixels.
    pub max_height: u32,
    /// Most 16x16 macroblocks in a picture.
    pub max_macroblocks: u32,
}

/// Why the driver could not be asked what NVDEC decodes (no driver, no NVDEC library, a
/// build without CUDA): the prober's own error, shared by the answers it keeps.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct ProbeError(Arc<dyn Error + Send + Sync + 'static>);

impl ProbeError {
    /// The prober's error, kept as it is.
    pub fn new(error: impl Error + Send + Sync + 'static) -> ProbeError {
        ProbeError(Arc::new(error))
    }
}

/// Asks the driver for NVDEC's capabilities. `Err` says why it could not be asked.
pub trait NvdecProbe: Send + Sync {
    /// What NVDEC does for `codec` in `chroma` at `bit_depth` bits, as the driver says.
    fn capabilities(&self, codec: NvdecCodec, chroma: Chroma, bit_depth: u32) -> Result<NvdecCaps, ProbeError>;
}

//! What NVDEC can decode: the traits of a video stream that decide it (codec, chroma format,
//! bit depth, size), the capabilities the driver reports for them, and the decision itself.
//!
//! The decision is pure so that it is tested without a GPU; NVDEC's own vocabulary and the
//! driver query behind [`NvdecProbe`] live in the core crate (`convstream_core::nvdec`, and
//! `engine::cuda::nvdec` with the other CUDA calls). FFmpeg's cuvid wrapper checks only 4:2:0
//! before creating a decoder, so without this check a 4:4:4 H.264 stream fails inside the
//! decoder instead of with a reason.

use ffmpeg::codec;
use ffmpeg_next as ffmpeg;

pub use convstream_core::{Chroma, NvdecCaps, NvdecCodec, NvdecProbe, ProbeError};

/// The NVDEC codec for an FFmpeg codec, if NVDEC has one.
pub fn codec_of(id: codec::Id) -> Option<NvdecCodec> {
    Some(match id {
        codec::Id::MPEG1VIDEO => NvdecCodec::Mpeg1,
        codec::Id::MPEG2VIDEO => NvdecCodec::Mpeg2,
        codec::Id::MPEG4 => NvdecCodec::Mpeg4,
        codec::Id::VC1 => NvdecCodec::Vc1,
        codec::Id::H264 => NvdecCodec::H264,
        codec::Id::MJPEG => NvdecCodec::Jpeg,
        codec::Id::HEVC => NvdecCodec::Hevc,
        codec::Id::VP8 => NvdecCodec::Vp8,
        codec::Id::VP9 => NvdecCodec::Vp9,
        codec::Id::AV1 => NvdecCodec::Av1,
        _ => return None,
    })
}

/// What decides whether NVDEC can decode a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTraits {
    /// The stream's codec.
    pub codec: codec::Id,
    /// Its chroma subsampling.
    pub chroma: Chroma,
    /// Bits per sample.
    pub bit_depth: u32,
    /// Picture width, in pixels.
    pub width: u32,
    /// Picture height, in pixels.
    pub height: u32,
}

impl StreamTraits {
    /// Reads the traits from a stream's codec parameters. A pixel format the demuxer could
    /// not tell is taken as 8-bit 4:2:0, what nearly every stream is (the decoder then still
    /// fails cleanly if it was wrong).
    pub fn of(parameters: &codec::Parameters) -> StreamTraits {
        // SAFETY: reading plain fields of valid codec parameters.
        let (format, width, height) = unsafe {
            let raw = &*parameters.as_ptr();
            (raw.format, raw.width, raw.height)
        };
        StreamTraits::from_format(parameters.id(), format, width, height)
    }

    /// The traits of a stream of `codec` whose pictures have FFmpeg's pixel format number
    /// `format` (as codec parameters and parsers hold it) and this size.
    pub fn from_format(codec: codec::Id, format: i32, width: i32, height: i32) -> StreamTraits {
        let descriptor = pixel_format_descriptor(format);
        let (chroma, bit_depth) = if descriptor.is_null() {
            (Chroma::Yuv420, 8)
        } else {
            // SAFETY: a non-null descriptor points into FFmpeg's static table.
            let d = unsafe { &*descriptor };
            let chroma = match (d.nb_components, d.log2_chroma_w, d.log2_chroma_h) {
                (1 | 2, _, _) => Chroma::Monochrome,
                (_, 1, 1) => Chroma::Yuv420,
                (_, 1, 0) => Chroma::Yuv422,
                _ => Chroma::Yuv444,
            };
            (chroma, d.comp[0].depth as u32)
        };
        StreamTraits {
            codec,
            chroma,
            bit_depth,
            width: width.max(0) as u32,
            height: height.max(0) as u32,
        }
    }

    /// "H.264 4:4:4 8-bit 1921x1081", for messages.
    pub fn describe(&self) -> String {
        let codec = codec_of(self.codec).map_or_else(|| self.codec.name().to_string(), |c| c.name().to_string());
        format!(
            "{codec} {} {}-bit {}x{}",
            self.chroma.name(),
            self.bit_depth,
            self.width,
            self.height
        )
    }
}

/// FFmpeg's descriptor of a pixel format given as the raw number codec parameters hold, or
/// null. The table is walked rather than indexed so that an unknown number is never turned
/// into the Rust enum (which would be undefined behaviour).
fn pixel_format_descriptor(format: i32) -> *const ffmpeg::ffi::AVPixFmtDescriptor {
    let mut descriptor = std::ptr::null();
    loop {
        // SAFETY: av_pix_fmt_desc_next takes null or a descriptor it returned, and returns
        // pointers into FFmpeg's static table, null after the last.
        descriptor = unsafe { ffmpeg::ffi::av_pix_fmt_desc_next(descriptor) };
        // SAFETY: a non-null descriptor from the table is valid.
        if descriptor.is_null() || unsafe { ffmpeg::ffi::av_pix_fmt_desc_get_id(descriptor) } as i32 == format {
            return descriptor;
        }
    }
}

/// Why NVDEC cannot decode a stream, worded for the user.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NvdecRefusal {
    /// NVDEC has no decoder for the codec at all.
    #[error("NVDEC has no decoder for {}", .0.name())]
    NoDecoder(codec::Id),
    // The probe's reason is part of the message, not a `source()`: printed once.
    /// The driver could not be asked (no GPU, no driver).
    #[error("cannot ask NVDEC whether it decodes {}: {reason}", .stream.describe())]
    CannotAsk {
        /// The stream.
        stream: StreamTraits,
        /// Why the driver could not be asked.
        reason: ProbeError,
    },
    /// The GPU's NVDEC does not decode this codec, chroma and depth.
    #[error("NVDEC on this GPU does not decode {}", .0.describe())]
    NotDecoded(StreamTraits),
    #[error(
        "{} would lose half its chroma: convstream takes NVDEC's pictures as 4:2:0 (NV12, P010, P016); software decoding keeps {}",
        .0.describe(), .0.chroma.name()
    )]
    /// NVDEC would give 4:2:0 pictures of a 4:2:2 or 4:4:4 stream.
    ChromaHalved(StreamTraits),
    #[error(
        "NVDEC on this GPU decodes {} {} from {}x{} up, and this stream is {}x{}",
        .codec.name(), .stream.chroma.name(), .caps.min_width, .caps.min_height, .stream.width, .stream.height
    )]
    /// The pictures are smaller than NVDEC decodes.
    TooSmall {
        /// The codec, in NVDEC's terms.
        codec: NvdecCodec,
        /// The stream.
        stream: StreamTraits,
        /// What the GPU decodes.
        caps: NvdecCaps,
    },
    #[error(
        "NVDEC on this GPU decodes {} {} up to {}x{}, and this stream is {}x{}",
        .codec.name(), .stream.chroma.name(), .caps.max_width, .caps.max_height, .stream.width, .stream.height
    )]
    /// The pictures are larger than NVDEC decodes.
    TooLarge {
        /// The codec, in NVDEC's terms.
        codec: NvdecCodec,
        /// The stream.
        stream: StreamTraits,
        /// What the GPU decodes.
        caps: NvdecCaps,
    },
    #[error(
        "{} has {macroblocks} macroblocks a picture, more than the {most} NVDEC on this GPU takes",
        .stream.describe()
    )]
    /// The pictures hold more macroblocks than NVDEC decodes.
    TooManyMacroblocks {
        /// The stream.
        stream: StreamTraits,
        /// Macroblocks in one of its pictures.
        macroblocks: u64,
        /// The most the GPU decodes.
        most: u32,
    },
}

/// Whether NVDEC can decode a stream with these traits; `Err` is the reason it cannot.
pub fn check(traits: &StreamTraits, probe: &dyn NvdecProbe) -> Result<(), NvdecRefusal> {
    let stream = *traits;
    let Some(codec) = codec_of(traits.codec) else {
        return Err(NvdecRefusal::NoDecoder(traits.codec));
    };
    let caps = probe
        .capabilities(codec, traits.chroma, traits.bit_depth)
        .map_err(|reason| NvdecRefusal::CannotAsk { stream, reason })?;
    if !caps.supported {
        return Err(NvdecRefusal::NotDecoded(stream));
    }
    if matches!(traits.chroma, Chroma::Yuv422 | Chroma::Yuv444) {
        return Err(NvdecRefusal::ChromaHalved(stream));
    }
    let (width, height) = (traits.width, traits.height);
    if width < caps.min_width || height < caps.min_height {
        return Err(NvdecRefusal::TooSmall { codec, stream, caps });
    }
    if width > caps.max_width || height > caps.max_height {
        return Err(NvdecRefusal::TooLarge { codec, stream, caps });
    }
    let macroblocks = u64::from(width.div_ceil(16)) * u64::from(height.div_ceil(16));
    if caps.max_macroblocks > 0 && macroblocks > u64::from(caps.max_macroblocks) {
        return Err(NvdecRefusal::TooManyMacroblocks {
            stream,
            macroblocks,
            most: caps.max_macroblocks,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A capability table like an H100's NVDEC (no H.264 4:4:4, no 4:2:2 below AV1).
    struct FakeNvdec(HashMap<(NvdecCodec, Chroma, u32), NvdecCaps>);

    const BIG: NvdecCaps = NvdecCaps {
        supported: true,
        min_width: 48,
        min_height: 16,
        max_width: 4096,
        max_height: 4096,
        max_macroblocks: 65536,
    };

    impl FakeNvdec {
        fn h100_like() -> FakeNvdec {
            let mut table = HashMap::new();
            table.insert((NvdecCodec::H264, Chroma::Yuv420, 8), BIG);
            table.insert(
                (NvdecCodec::Hevc, Chroma::Yuv420, 10),
                NvdecCaps {
                    min_width: 144,
                    min_height: 144,
                    max_width: 8192,
                    max_height: 8192,
                    max_macroblocks: 262144,
                    ..BIG
                },
            );
            FakeNvdec(table)
        }
    }

    impl NvdecProbe for FakeNvdec {
        fn capabilities(&self, codec: NvdecCodec, chroma: Chroma, bit_depth: u32) -> Result<NvdecCaps, ProbeError> {
            Ok(self.0.get(&(codec, chroma, bit_depth)).copied().unwrap_or(NvdecCaps {
                supported: false,
                min_width: 0,
                min_height: 0,
                max_width: 0,
                max_height: 0,
                max_macroblocks: 0,
            }))
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("libnvcuvid.so.1 could not be loaded")]
    struct NoLibrary;

    struct NoDriver;
    impl NvdecProbe for NoDriver {
        fn capabilities(&self, _: NvdecCodec, _: Chroma, _: u32) -> Result<NvdecCaps, ProbeError> {
            Err(ProbeError::new(NoLibrary))
        }
    }

    /// The check's answer with the reason as the user reads it.
    fn check(traits: &StreamTraits, probe: &dyn NvdecProbe) -> Result<(), String> {
        super::check(traits, probe).map_err(|refusal| refusal.to_string())
    }

    fn stream(codec: codec::Id, chroma: Chroma, bit_depth: u32, width: u32, height: u32) -> StreamTraits {
        StreamTraits {
            codec,
            chroma,
            bit_depth,
            width,
            height,
        }
    }

    #[test]
    fn a_plain_h264_stream_is_taken() {
        let probe = FakeNvdec::h100_like();
        assert_eq!(
            check(&stream(codec::Id::H264, Chroma::Yuv420, 8, 1920, 1080), &probe),
            Ok(())
        );
        assert_eq!(
            check(&stream(codec::Id::HEVC, Chroma::Yuv420, 10, 3840, 2160), &probe),
            Ok(())
        );
    }

    #[test]
    fn h264_444_is_refused_with_the_stream_named() {
        let probe = FakeNvdec::h100_like();
        let reason = check(&stream(codec::Id::H264, Chroma::Yuv444, 8, 1921, 1081), &probe).unwrap_err();
        assert_eq!(reason, "NVDEC on this GPU does not decode H.264 4:4:4 8-bit 1921x1081");
    }

    #[test]
    fn a_444_stream_nvdec_decodes_is_refused_rather_than_halved() {
        let mut probe = FakeNvdec::h100_like();
        probe.0.insert((NvdecCodec::Hevc, Chroma::Yuv444, 8), BIG);
        let reason = check(&stream(codec::Id::HEVC, Chroma::Yuv444, 8, 1920, 1080), &probe).unwrap_err();
        assert!(
            reason.contains("HEVC 4:4:4")
                && reason.contains("half its chroma")
                && reason.contains("software decoding keeps 4:4:4"),
            "{reason}"
        );
    }

    #[test]
    fn bit_depth_is_part_of_the_question() {
        let probe = FakeNvdec::h100_like();
        let reason = check(&stream(codec::Id::H264, Chroma::Yuv420, 10, 640, 480), &probe).unwrap_err();
        assert!(reason.contains("10-bit"), "{reason}");
    }

    #[test]
    fn sizes_outside_the_range_are_refused_with_the_range() {
        let probe = FakeNvdec::h100_like();
        let small = check(&stream(codec::Id::HEVC, Chroma::Yuv420, 10, 128, 128), &probe).unwrap_err();
        assert!(
            small.contains("from 144x144 up") && small.contains("128x128"),
            "{small}"
        );
        let large = check(&stream(codec::Id::H264, Chroma::Yuv420, 8, 4097, 2000), &probe).unwrap_err();
        assert!(
            large.contains("up to 4096x4096") && large.contains("4097x2000"),
            "{large}"
        );
    }

    #[test]
    fn the_macroblock_budget_is_checked() {
        let mut probe = FakeNvdec::h100_like();
        probe.0.insert(
            (NvdecCodec::H264, Chroma::Yuv420, 8),
            NvdecCaps {
                max_macroblocks: 8160,
                ..BIG
            },
        );
        assert_eq!(
            check(&stream(codec::Id::H264, Chroma::Yuv420, 8, 1920, 1080), &probe),
            Ok(())
        );
        let reason = check(&stream(codec::Id::H264, Chroma::Yuv420, 8, 1920, 1088 + 16), &probe).unwrap_err();
        assert!(reason.contains("8280 macroblocks"), "{reason}");
    }

    #[test]
    fn codecs_without_nvdec_and_missing_drivers_are_reasons_too() {
        let probe = FakeNvdec::h100_like();
        let reason = check(&stream(codec::Id::FFV1, Chroma::Yuv420, 8, 640, 480), &probe).unwrap_err();
        assert_eq!(reason, "NVDEC has no decoder for ffv1");
        let reason = check(&stream(codec::Id::H264, Chroma::Yuv420, 8, 640, 480), &NoDriver).unwrap_err();
        assert!(reason.contains("libnvcuvid.so.1"), "{reason}");
    }

    #[test]
    fn traits_come_from_the_pixel_format() {
        crate::ffmpeg::init();
        for (format, chroma, depth) in [
            (ffmpeg::format::Pixel::YUV420P, Chroma::Yuv420, 8),
            (ffmpeg::format::Pixel::YUV444P, Chroma::Yuv444, 8),
            (ffmpeg::format::Pixel::YUV422P10LE, Chroma::Yuv422, 10),
            (ffmpeg::format::Pixel::GRAY8, Chroma::Monochrome, 8),
            (ffmpeg::format::Pixel::None, Chroma::Yuv420, 8),
        ] {
            let mut parameters = codec::Parameters::new();
            // SAFETY: writing plain fields of parameters this test owns.
            unsafe {
                let raw = &mut *parameters.as_mut_ptr();
                raw.codec_id = ffmpeg::ffi::AVCodecID::AV_CODEC_ID_H264;
                raw.format = ffmpeg::ffi::AVPixelFormat::from(format) as i32;
                raw.width = 1921;
                raw.height = 1081;
            }
            let traits = StreamTraits::of(&parameters);
            assert_eq!((traits.chroma, traits.bit_depth), (chroma, depth), "{format:?}");
            assert_eq!(
                (traits.width, traits.height, traits.codec),
                (1921, 1081, codec::Id::H264)
            );
        }
    }
}

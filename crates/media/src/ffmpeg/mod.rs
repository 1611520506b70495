//! FFmpeg glue shared by the source and the sink: library start-up, pixel-format
//! mapping between FFmpeg and [`PixelFormat`], and copying planes in and out of
//! FFmpeg frames. The stream types the source hands the sink are in `stream`, FFmpeg's
//! log lines in [`log`].

pub mod encoders;
pub mod hdr;
pub mod log;
mod stream;

pub use hdr::HdrMetadata;
pub use stream::{ColorInfo, PassthroughPacket, PassthroughStream, SourceInfo};

use ffmpeg::format::Pixel;
use ffmpeg_next as ffmpeg;
use std::sync::{Arc, Once, OnceLock};

use convstream_core::frame::{Frame, PixelFormat, Plane};
use convstream_core::host_buffers::BufferPool;

/// Initialises FFmpeg once, with its log lines sent through tracing (see [`log`]).
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Cannot fail with the statically or dynamically linked libraries we build against.
        let _ = ffmpeg::init();
        ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Error);
        log::install();
    });
}

/// Every engine format with the FFmpeg format of the same name, made once.
fn format_table() -> &'static [(PixelFormat, Pixel)] {
    static TABLE: OnceLock<Vec<(PixelFormat, Pixel)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        PixelFormat::all()
            .map(|format| (format, format.name().parse().unwrap_or(Pixel::None)))
            .filter(|(_, pixel)| *pixel != Pixel::None)
            .collect()
    })
}

/// The engine format an FFmpeg pixel format maps to without conversion, if any.
pub fn engine_format(pixel: Pixel) -> Option<PixelFormat> {
    let pixel = match pixel {
        Pixel::YUVJ420P => Pixel::YUV420P,
        Pixel::YUVJ422P => Pixel::YUV422P,
        Pixel::YUVJ444P => Pixel::YUV444P,
        other => other,
    };
    format_table()
        .iter()
        .find(|(_, p)| *p == pixel)
        .map(|(format, _)| *format)
}

/// The FFmpeg pixel format of an engine format.
pub fn ffmpeg_format(format: PixelFormat) -> Pixel {
    format_table()
        .iter()
        .find(|(f, _)| *f == format)
        .map_or(Pixel::None, |(_, pixel)| *pixel)
}

/// The closest engine format for a pixel format the engines do not take: same chroma
/// subsampling where possible, at the sample depth FFmpeg has closest to the source's
/// (rounding up, 16 bits at most). Colour is kept: a palette (`pal8`, one component of
/// indices) becomes RGB, not grey; high-depth RGB becomes planar GBR at its depth; an alpha
/// channel is dropped.
pub fn nearest_engine_format(pixel: Pixel) -> PixelFormat {
    let Some(desc) = pixel.descriptor() else {
        return PixelFormat::YUV420P;
    };
    // SAFETY: the descriptor pointer comes from av_pix_fmt_desc_get and is static.
    let (flags, depth) = unsafe { ((*desc.as_ptr()).flags, (*desc.as_ptr()).comp[0].depth) };
    let rgb = flags & ffmpeg::ffi::AV_PIX_FMT_FLAG_RGB as u64 != 0;
    let palette = flags & ffmpeg::ffi::AV_PIX_FMT_FLAG_PAL as u64 != 0;
    let bits = if palette { 8 } else { depth.clamp(8, 16) as u8 };
    let format = if palette || rgb && bits == 8 {
        PixelFormat::RGB24
    } else if rgb {
        PixelFormat::GBRP
    } else if desc.nb_components() <= 2 {
        PixelFormat::GRAY8
    } else {
        match (desc.log2_chroma_w(), desc.log2_chroma_h()) {
            (0, 0) => PixelFormat::YUV444P,
            (1, 0) => PixelFormat::YUV422P,
            _ => PixelFormat::YUV420P,
        }
    };
    format.at_depth(bits)
}

/// Copies an FFmpeg frame whose format maps to `format` into engine planes: in `pool`'s
/// buffers when given, else tightly packed heap planes.
pub fn frame_from_ffmpeg(video: &ffmpeg::frame::Video, format: PixelFormat, pool: Option<&Arc<BufferPool>>) -> Frame {
    let (width, height) = (video.width() as usize, video.height() as usize);
    let mut frame = Frame::new_in(format, width, height, pool);
    for (index, plane) in frame.planes.iter_mut().enumerate() {
        copy_rows_in(video.data(index), video.stride(index), plane);
    }
    frame
}

fn copy_rows_in(source: &[u8], source_stride: usize, plane: &mut Plane) {
    let row_bytes = plane.row_bytes();
    if source_stride == plane.stride && plane.height > 0 {
        // Same row layout: one block copy (the last row without its padding, which the
        // source may not have).
        let len = plane.stride * (plane.height - 1) + row_bytes;
        plane.data[..len].copy_from_slice(&source[..len]);
        return;
    }
    for y in 0..plane.height {
        let start = y * source_stride;
        plane.row_mut(y).copy_from_slice(&source[start..start + row_bytes]);
    }
}

/// Whether an FFmpeg error is "try again".
pub fn is_again(error: &ffmpeg::Error) -> bool {
    matches!(error, ffmpeg::Error::Other { errno } if *errno == ffmpeg::util::error::EAGAIN)
}

/// The muxer an output gets: the one named `format`, else the one FFmpeg guesses from the
/// URL's extension (as `avformat_alloc_output_context2` does). `None`: no such muxer.
pub fn guess_muxer(url: &str, format: Option<&str>) -> Option<ffmpeg::format::Output> {
    init();
    let name = std::ffi::CString::new(url).ok()?;
    let format = format.map(std::ffi::CString::new).transpose().ok()?;
    // SAFETY: valid C strings; the answer is a static muxer description or null.
    let muxer = unsafe {
        match &format {
            Some(short) => ffmpeg::ffi::av_guess_format(short.as_ptr(), std::ptr::null(), std::ptr::null()),
            None => ffmpeg::ffi::av_guess_format(std::ptr::null(), name.as_ptr(), std::ptr::null()),
        }
    };
    // SAFETY: a non-null static AVOutputFormat.
    (!muxer.is_null()).then(|| unsafe { ffmpeg::format::Output::wrap(muxer as *mut _) })
}

/// Video codecs the MPEG-TS muxer writes with a stream type players know; it has no codec
/// list of its own, and anything else would be written as private data no player reads.
const MPEGTS_VIDEO: &[ffmpeg::codec::Id] = &[
    ffmpeg::codec::Id::MPEG1VIDEO,
    ffmpeg::codec::Id::MPEG2VIDEO,
    ffmpeg::codec::Id::MPEG4,
    ffmpeg::codec::Id::H264,
    ffmpeg::codec::Id::HEVC,
    ffmpeg::codec::Id::CAVS,
    ffmpeg::codec::Id::DIRAC,
    ffmpeg::codec::Id::VC1,
    ffmpeg::codec::Id::AV1,
];

/// Codecs FFmpeg 5.1's MP4 muxer lists but refuses at the header unless told to be
/// experimental ("flac in MP4 support is experimental"): a copied stream of them is left
/// out rather than failing the output.
const MP4_EXPERIMENTAL: &[ffmpeg::codec::Id] = &[
    ffmpeg::codec::Id::FLAC,
    ffmpeg::codec::Id::OPUS,
    ffmpeg::codec::Id::TRUEHD,
];

/// Whether the muxer can hold `id`. Muxers without a codec list answer "unknown": MPEG-TS
/// takes the video codecs of [`MPEGTS_VIDEO`]; the others the kind of stream they have a
/// default codec for.
pub fn muxer_takes(muxer: &ffmpeg::format::Output, id: ffmpeg::codec::Id) -> bool {
    if muxer.name() == "mp4" && MP4_EXPERIMENTAL.contains(&id) {
        return false;
    }
    // SAFETY: querying a static muxer description with a codec id; reading its fields.
    unsafe {
        let muxer_ptr = muxer.as_ptr();
        match ffmpeg::ffi::avformat_query_codec(muxer_ptr, id.into(), ffmpeg::ffi::FF_COMPLIANCE_NORMAL) {
            1 => true,
            0 => false,
            _ => {
                let kind = ffmpeg::ffi::avcodec_get_type(id.into());
                if muxer.name() == "mpegts" && kind == ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_VIDEO {
                    return MPEGTS_VIDEO.contains(&id);
                }
                let default = match kind {
                    ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_VIDEO => (*muxer_ptr).video_codec,
                    ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_AUDIO => (*muxer_ptr).audio_codec,
                    ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_SUBTITLE => (*muxer_ptr).subtitle_codec,
                    _ => ffmpeg::ffi::AVCodecID::AV_CODEC_ID_NONE,
                };
                default != ffmpeg::ffi::AVCodecID::AV_CODEC_ID_NONE
            }
        }
    }
}

/// Encoders that can encode losslessly, with the options that make them do so (none for
/// those that are lossless by design). `None`: the encoder has no lossless mode.
pub fn lossless_options(encoder: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match encoder {
        "ffv1" | "huffyuv" | "ffvhuff" | "utvideo" | "rawvideo" | "png" | "magicyuv" | "wrapped_avframe" => &[],
        "libx264" | "libx264rgb" => &[("qp", "0")],
        "libx265" => &[("x265-params", "lossless=1")],
        "libvpx-vp9" => &[("lossless", "1")],
        _ => return None,
    })
}

/// The video encoder named `name`, if this FFmpeg build has it.
pub fn video_encoder(name: &str) -> Option<ffmpeg::Codec> {
    init();
    encoder_named(name).filter(|c| c.is_video())
}

/// The encoder FFmpeg names `name`, if any. (ffmpeg-next's own lookup panics on a name with
/// a NUL byte, which a config or an API body can hold.)
pub fn encoder_named(name: &str) -> Option<ffmpeg::Codec> {
    (!name.contains('\0'))
        .then(|| ffmpeg::encoder::find_by_name(name))
        .flatten()
}

/// The decoder FFmpeg names `name`, if any (see [`encoder_named`]).
pub fn decoder_named(name: &str) -> Option<ffmpeg::Codec> {
    (!name.contains('\0'))
        .then(|| ffmpeg::decoder::find_by_name(name))
        .flatten()
}

/// Why `--lossless` cannot be honoured with the encoder `name`.
pub fn lossless_unavailable(name: &str) -> String {
    format!(
        "the {name} encoder has no lossless mode; for lossless output use ffv1 (.mkv, .nut, .avi, .mov), libx264 or libx265 (qp 0 / lossless=1), or leave out the codec"
    )
}

/// Why `--lossless` without a codec (FFV1) cannot go into `container`.
pub fn ffv1_unavailable(container: &str) -> String {
    // The containers of this FFmpeg build that take ffv1 (mov does only as an experiment).
    let takers: Vec<&str> = [("mkv", "matroska"), ("nut", "nut"), ("avi", "avi"), ("mov", "mov")]
        .into_iter()
        .filter(|(_, muxer)| guess_muxer("", Some(muxer)).is_some_and(|m| muxer_takes(&m, ffmpeg::codec::Id::FFV1)))
        .map(|(extension, _)| extension)
        .collect();
    let write = match takers.split_last() {
        Some((last, [])) => format!("write .{last}"),
        Some((last, rest)) => format!(
            "write {} or .{last}",
            rest.iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(", ")
        ),
        None => "no container of this FFmpeg build takes it".to_string(),
    };
    format!(
        "lossless output uses ffv1, which the {container} container cannot carry; {write}, or name an encoder with a lossless mode that {container} takes (e.g. --codec libx264)"
    )
}

//! Pixels between FFmpeg and the engines: the pixel format of each engine format and back,
//! the nearest engine format for one the engines do not take, and planes copied in from
//! FFmpeg frames.

use ffmpeg::format::Pixel;
use ffmpeg_next as ffmpeg;
use std::sync::{Arc, OnceLock};

use convstream_core::BufferPool;
use convstream_core::{Frame, PixelFormat, Plane};

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

//! FFmpeg glue shared by the source and the sink: library start-up, pixel-format
//! mapping between FFmpeg and [`PixelFormat`], and copying planes in and out of
//! FFmpeg frames.

use ffmpeg::format::Pixel;
use ffmpeg_next as ffmpeg;
use std::sync::{Arc, Once};

use crate::frame::{Frame, PixelFormat, Plane};
use crate::host_buffers::BufferPool;

/// Initialises FFmpeg once, with its log lines sent through tracing (see [`crate::ffmpeg_log`]).
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Cannot fail with the statically or dynamically linked libraries we build against.
        let _ = ffmpeg::init();
        ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Error);
        crate::ffmpeg_log::install();
    });
}

/// The engine format an FFmpeg pixel format maps to without conversion, if any.
pub fn engine_format(pixel: Pixel) -> Option<PixelFormat> {
    Some(match pixel {
        Pixel::YUV420P | Pixel::YUVJ420P => PixelFormat::Yuv420p,
        Pixel::YUV422P | Pixel::YUVJ422P => PixelFormat::Yuv422p,
        Pixel::YUV444P | Pixel::YUVJ444P => PixelFormat::Yuv444p,
        Pixel::NV12 => PixelFormat::Nv12,
        Pixel::GRAY8 => PixelFormat::Gray8,
        Pixel::RGB24 => PixelFormat::Rgb24,
        Pixel::BGR24 => PixelFormat::Bgr24,
        _ => return None,
    })
}

pub fn ffmpeg_format(format: PixelFormat) -> Pixel {
    match format {
        PixelFormat::Yuv420p => Pixel::YUV420P,
        PixelFormat::Yuv422p => Pixel::YUV422P,
        PixelFormat::Yuv444p => Pixel::YUV444P,
        PixelFormat::Nv12 => Pixel::NV12,
        PixelFormat::Gray8 => Pixel::GRAY8,
        PixelFormat::Rgb24 => Pixel::RGB24,
        PixelFormat::Bgr24 => Pixel::BGR24,
    }
}

/// The closest engine format for a pixel format the engines do not take: same chroma
/// subsampling where possible, 8 bits per sample.
pub fn nearest_engine_format(pixel: Pixel) -> PixelFormat {
    let Some(desc) = pixel.descriptor() else {
        return PixelFormat::Yuv420p;
    };
    // SAFETY: the descriptor pointer comes from av_pix_fmt_desc_get and is static.
    let flags = unsafe { (*desc.as_ptr()).flags };
    let rgb = flags & ffmpeg::ffi::AV_PIX_FMT_FLAG_RGB as u64 != 0;
    if rgb {
        PixelFormat::Rgb24
    } else if desc.nb_components() <= 2 {
        PixelFormat::Gray8
    } else {
        match (desc.log2_chroma_w(), desc.log2_chroma_h()) {
            (0, 0) => PixelFormat::Yuv444p,
            (1, 0) => PixelFormat::Yuv422p,
            _ => PixelFormat::Yuv420p,
        }
    }
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

/// Writes engine planes into an allocated FFmpeg frame of the same format and size.
pub fn frame_into_ffmpeg(frame: &Frame, video: &mut ffmpeg::frame::Video) {
    for (index, plane) in frame.planes.iter().enumerate() {
        let stride = video.stride(index);
        let data = video.data_mut(index);
        for y in 0..plane.height {
            data[y * stride..y * stride + plane.row_bytes()].copy_from_slice(plane.row(y));
        }
    }
}

/// Whether an FFmpeg error is "try again".
pub fn is_again(error: &ffmpeg::Error) -> bool {
    matches!(error, ffmpeg::Error::Other { errno } if *errno == ffmpeg::util::error::EAGAIN)
}

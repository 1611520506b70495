//! Frames lent to FFmpeg without a copy: each plane a read-only buffer that holds the frame
//! until the encoder, or a filter graph, lets go of it.

use ffmpeg_next as ffmpeg;
use std::ffi::c_void;
use std::sync::Arc;

use super::pixels::ffmpeg_format;
use convstream_core::Frame;

/// A frame as an FFmpeg picture that points at the frame's own planes: each plane becomes
/// a read-only reference-counted buffer holding the frame, which is dropped (its pooled
/// planes going back to their pool) when the encoder lets go of the last one. An encoder
/// that wants to write to its input copies it first, as FFmpeg's read-only flag tells it.
pub fn lend_to_ffmpeg(frame: Frame) -> Result<ffmpeg::frame::Video, ffmpeg::Error> {
    use ffmpeg::ffi;
    let format = ffmpeg_format(frame.format);
    let (width, height) = (frame.width as i32, frame.height as i32);
    let planes: Vec<(*const u8, usize, usize)> = frame
        .planes
        .iter()
        .map(|plane| (plane.data.as_ptr(), plane.stride, plane.data.len()))
        .collect();
    let owner = Arc::new(LentFrame { _frame: frame });
    let mut picture = ffmpeg::frame::Video::empty();
    // SAFETY: `picture` owns a freshly allocated AVFrame that nothing else references. Each
    // buffer points at a plane of the frame held by `owner`; its free callback drops one
    // count of that Arc (made by `into_raw` here), so the planes outlive every buffer, and
    // the buffers are read-only so no encoder writes to them. A buffer that cannot be made
    // gives its count back at once; the ones already attached are freed with `picture`.
    unsafe {
        let raw = picture.as_mut_ptr();
        (*raw).width = width;
        (*raw).height = height;
        (*raw).format = ffi::AVPixelFormat::from(format) as i32;
        for (index, (bytes, stride, len)) in planes.into_iter().enumerate() {
            let opaque = Arc::into_raw(owner.clone()) as *mut c_void;
            let buffer = ffi::av_buffer_create(
                bytes as *mut u8,
                len,
                Some(release_lent_frame),
                opaque,
                ffi::AV_BUFFER_FLAG_READONLY,
            );
            if buffer.is_null() {
                drop(Arc::from_raw(opaque as *const LentFrame));
                return Err(ffmpeg::Error::Other {
                    errno: ffmpeg::util::error::ENOMEM,
                });
            }
            (*raw).buf[index] = buffer;
            (*raw).data[index] = bytes as *mut u8;
            (*raw).linesize[index] = stride as i32;
        }
    }
    Ok(picture)
}

/// A frame whose planes FFmpeg buffers point at (see [`lend_to_ffmpeg`]).
struct LentFrame {
    /// Held, never read: its planes are what the buffers point at.
    _frame: Frame,
}

/// FFmpeg's free callback of a lent plane: one count of its frame goes.
unsafe extern "C" fn release_lent_frame(opaque: *mut c_void, _data: *mut u8) {
    // SAFETY: `opaque` is a count made by `Arc::into_raw` in `lend_to_ffmpeg`, given back
    // exactly once, here, when FFmpeg frees the buffer.
    drop(unsafe { Arc::from_raw(opaque as *const LentFrame) });
}

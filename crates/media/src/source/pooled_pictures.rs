//! Decoding straight into the engine's frame pool: the decoder's `get_buffer2` takes its
//! pictures' planes from the pool (page-locked memory when the engine is CUDA), and a decoded
//! picture becomes a frame whose planes borrow that memory read-only. The source thread then
//! copies nothing: the GPU reads the decoder's own picture, and the filtered result goes to
//! a fresh plane, because the decoder may still read the picture as a reference.
//!
//! Planes get the engine's row pitch where FFmpeg's alignment allows, so the copy to the GPU
//! is one block. Formats the engines do not take, and decoders that do not call
//! `get_buffer2`, are left to FFmpeg; their frames are copied as before.

use ffmpeg::ffi;
use ffmpeg_next as ffmpeg;
use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use crate::ffmpeg::ffmpeg_format;
use convstream_core::BufferPool;
use convstream_core::{Frame, PixelFormat, Plane, PlaneData, POOLED_ROW_ALIGN};

/// FFmpeg reads up to this many bytes past a plane's end in its SIMD code (its own pools
/// add `16 + STRIDE_ALIGN - 1`; STRIDE_ALIGN is at most 64).
const OVERREAD_PADDING: usize = 16 + 64;
/// Planes start on this boundary, as FFmpeg's aligned SIMD loads and stores need (pinned
/// blocks are page-aligned already; heap blocks, taken past the pool's limit, may not be).
pub(super) const PLANE_ALIGN: usize = 64;

/// The pool a decoder's pictures come from, and the buffers it has handed out.
pub(super) struct PooledPictures {
    pool: Arc<BufferPool>,
    /// Addresses of the [`LentBlock`]s alive now: tells a picture in our memory from one
    /// FFmpeg allocated itself (formats we leave to it, decoders that do not call us).
    live: Arc<Mutex<HashSet<usize>>>,
}

/// One plane's block, owned by an FFmpeg buffer until its last reference goes.
struct LentBlock {
    data: PlaneData,
    live: Arc<Mutex<HashSet<usize>>>,
}

/// A reference to an FFmpeg buffer, dropped with the frame plane that reads it.
struct BufferRef(*mut ffi::AVBufferRef);

// SAFETY: FFmpeg's buffer references are reference counted atomically; this one is only
// unreferenced (once, on drop), which FFmpeg allows from any thread.
unsafe impl Send for BufferRef {}
// SAFETY: no method reads or writes through `&BufferRef`.
unsafe impl Sync for BufferRef {}

impl Drop for BufferRef {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a reference made by `av_buffer_ref` and owned by this value.
        unsafe { ffi::av_buffer_unref(&mut self.0) };
    }
}

impl PooledPictures {
    pub(super) fn new(pool: Arc<BufferPool>) -> Arc<PooledPictures> {
        Arc::new(PooledPictures {
            pool,
            live: Arc::default(),
        })
    }

    /// Makes the codec context (not open yet) take its pictures from `this`. The context
    /// keeps a plain pointer: `this` must outlive it (the decoder holds both, the context
    /// dropped first).
    ///
    /// # Safety
    /// `context` must be a valid, not yet opened AVCodecContext that nothing else uses now.
    pub(super) unsafe fn install(this: &Arc<PooledPictures>, context: *mut ffi::AVCodecContext) {
        // SAFETY: the caller's contract; both fields are plain data read by the decoder.
        unsafe {
            (*context).opaque = Arc::as_ptr(this) as *mut c_void;
            (*context).get_buffer2 = Some(get_buffer);
            // `get_buffer` is thread-safe (the pool and the set are behind mutexes), so
            // frame threads may call it themselves instead of waiting for the caller's thread.
            #[allow(deprecated)]
            {
                (*context).thread_safe_callbacks = 1;
            }
        }
    }

    /// The decoded picture as an engine frame whose planes borrow its memory, when every
    /// plane is in a block this pool lent (else `None`: the caller copies).
    pub(super) fn lend(&self, decoded: &ffmpeg::frame::Video, format: PixelFormat) -> Option<Frame> {
        let (width, height) = (decoded.width() as usize, decoded.height() as usize);
        let shapes = format.plane_shapes(width, height);
        let mut planes = Vec::with_capacity(shapes.len());
        // SAFETY: `decoded` is a valid frame; only its buffer and plane pointers are read.
        let raw = unsafe { &*decoded.as_ptr() };
        for (index, shape) in shapes.into_iter().enumerate() {
            let buffer = raw.buf[index];
            if buffer.is_null() {
                return None;
            }
            // SAFETY: `buffer` is a valid reference held by `decoded`.
            let opaque = unsafe { ffi::av_buffer_get_opaque(buffer) } as usize;
            let block = {
                let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
                if !live.contains(&opaque) {
                    return None;
                }
                // SAFETY: the address is in `live`, so it is a LentBlock that FFmpeg's buffer
                // (held by `decoded`, and `keeper` below) still owns.
                unsafe { &(*(opaque as *const LentBlock)).data }
            };
            let stride = usize::try_from(raw.linesize[index]).ok()?;
            if stride < shape.row_bytes() {
                return None;
            }
            let len = stride * shape.height;
            // SAFETY: `buffer` is valid; the new reference keeps the block alive.
            let keeper = BufferRef(unsafe { ffi::av_buffer_ref(buffer) });
            if keeper.0.is_null() {
                return None;
            }
            // SAFETY: `get_buffer` made this plane `stride` x (at least) `shape.height` bytes
            // inside the block, which the reference keeps alive; a decoder does not change a
            // picture it has output (it only reads it as a reference later).
            let data = unsafe { PlaneData::lent_from(block, raw.data[index], len, Box::new(keeper)) };
            planes.push(Plane::of_data(shape, stride, data));
        }
        Some(Frame::of_planes(format, width, height, planes))
    }

    /// Takes one plane's block and wraps it in an FFmpeg buffer; null when FFmpeg cannot.
    fn buffer(&self, len: usize) -> (*mut ffi::AVBufferRef, *mut u8) {
        let mut block = Box::new(LentBlock {
            data: self.pool.take(len),
            live: self.live.clone(),
        });
        let bytes = block.data.as_mut_ptr();
        let opaque = Box::into_raw(block);
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(opaque as usize);
        // SAFETY: `bytes` points to `len` bytes owned by the block, which `release` frees
        // when the buffer's last reference goes.
        let buffer = unsafe { ffi::av_buffer_create(bytes, len, Some(release), opaque.cast(), 0) };
        if buffer.is_null() {
            // SAFETY: FFmpeg did not take the block: it is still ours to free.
            unsafe { release(opaque.cast(), bytes) };
        }
        (buffer, bytes)
    }
}

/// Frees a [`LentBlock`] when FFmpeg drops its buffer's last reference.
unsafe extern "C" fn release(opaque: *mut c_void, _data: *mut u8) {
    // SAFETY: `opaque` is the block `PooledPictures::buffer` leaked for this buffer.
    let block = unsafe { Box::from_raw(opaque.cast::<LentBlock>()) };
    block
        .live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(opaque as usize));
}

/// The engine formats' FFmpeg numbers: the pictures worth putting in the pool.
fn engine_format_of(format: c_int) -> Option<ffi::AVPixelFormat> {
    PixelFormat::all()
        .map(|f| ffi::AVPixelFormat::from(ffmpeg_format(f)))
        .find(|f| *f as c_int == format)
}

/// `AVCodecContext.get_buffer2`: the picture's planes from the pool, laid out as FFmpeg's
/// own allocator would (aligned size, aligned rows, padding after), with rows rounded up to
/// the engine's pitch.
unsafe extern "C" fn get_buffer(context: *mut ffi::AVCodecContext, frame: *mut ffi::AVFrame, flags: c_int) -> c_int {
    // SAFETY: FFmpeg passes a valid context and frame; `opaque` is the PooledPictures that
    // `install` set, alive while the context is.
    unsafe {
        let this = &*((*context).opaque as *const PooledPictures);
        let fallback = || ffi::avcodec_default_get_buffer2(context, frame, flags);
        let Some(format) = engine_format_of((*frame).format) else {
            return fallback();
        };
        if !(*frame).hw_frames_ctx.is_null() {
            return fallback();
        }
        let (mut width, mut height) = ((*frame).width, (*frame).height);
        let mut align = [0 as c_int; ffi::AV_NUM_DATA_POINTERS as usize];
        ffi::avcodec_align_dimensions2(context, &mut width, &mut height, align.as_mut_ptr());
        let mut linesizes = [0 as c_int; 4];
        if ffi::av_image_fill_linesizes(linesizes.as_mut_ptr(), format, width) < 0 {
            return fallback();
        }
        let mut pitches = [0isize; 4];
        for (i, line) in linesizes.iter_mut().enumerate() {
            if *line > 0 {
                let step = (POOLED_ROW_ALIGN as c_int).max(align[i]).max(1);
                *line = (*line + step - 1) / step * step;
                pitches[i] = *line as isize;
            }
        }
        let mut sizes = [0usize; 4];
        if ffi::av_image_fill_plane_sizes(sizes.as_mut_ptr(), format, height, pitches.as_ptr()) < 0 {
            return fallback();
        }
        for i in 0..4 {
            if sizes[i] == 0 {
                continue;
            }
            let (buffer, block) = this.buffer(sizes[i] + OVERREAD_PADDING + PLANE_ALIGN);
            if buffer.is_null() {
                let made = &mut (*frame).buf;
                for buffer in &mut made[..i] {
                    ffi::av_buffer_unref(buffer);
                }
                return ffi::AVERROR(libc::ENOMEM);
            }
            (*frame).buf[i] = buffer;
            // Inside the block: at most PLANE_ALIGN - 1 bytes in, of the PLANE_ALIGN added.
            (*frame).data[i] = block.add(block.align_offset(PLANE_ALIGN));
            (*frame).linesize[i] = linesizes[i];
        }
        (*frame).extended_data = (*frame).data.as_mut_ptr();
        0
    }
}

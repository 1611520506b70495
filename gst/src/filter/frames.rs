//! Between GStreamer buffers and engine frames: an input buffer's planes as a frame (lent where
//! upstream wrote them, or copied), a filtered frame as an output buffer (its own planes as the
//! buffer's memories, or copied into the caps' default layout), and the timing and flags an
//! input buffer gives its filtered buffer.

use gst::glib::translate::IntoGlib;
use gst_video::prelude::*;

use convstream_core::{BufferPool, PlaneData};
use convstream_core::{Frame, PixelFormat, Plane};

/// What an input buffer carries besides its pixels, given back to its filtered buffer.
#[derive(Debug, Clone, Copy)]
pub struct BufferTiming {
    pts: Option<gst::ClockTime>,
    dts: Option<gst::ClockTime>,
    duration: Option<gst::ClockTime>,
    offset: u64,
    offset_end: u64,
    flags: gst::BufferFlags,
}

impl BufferTiming {
    pub fn of(buffer: &gst::BufferRef) -> BufferTiming {
        BufferTiming {
            pts: buffer.pts(),
            dts: buffer.dts(),
            duration: buffer.duration(),
            offset: buffer.offset(),
            offset_end: buffer.offset_end(),
            flags: buffer.flags(),
        }
    }

    pub fn apply(&self, buffer: &mut gst::BufferRef) {
        buffer.set_pts(self.pts);
        buffer.set_dts(self.dts);
        buffer.set_duration(self.duration);
        buffer.set_offset(self.offset);
        buffer.set_offset_end(self.offset_end);
        // The input's flags exactly (set_flags adds to those there: TAG_MEMORY from building
        // the buffer, say).
        buffer.unset_flags(buffer.flags() - self.flags);
        buffer.set_flags(self.flags);
    }
}

/// A filtered plane lent to GStreamer as a buffer's memory, for as long as downstream holds it.
struct PlaneMemory(Plane);

impl AsRef<[u8]> for PlaneMemory {
    fn as_ref(&self) -> &[u8] {
        &self.0.data
    }
}

/// A copy of `buffer`'s planes (as `info` describes them) in a frame of `format`, in `pool`
/// when there is one (the CUDA engine's pinned pool: no staging on the way to the GPU).
pub fn copied_frame(
    buffer: &gst::BufferRef,
    info: &gst_video::VideoInfo,
    format: PixelFormat,
    pool: Option<&std::sync::Arc<BufferPool>>,
) -> Result<Frame, String> {
    let video = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, info)
        .map_err(|_| "cannot map the input buffer as the negotiated video".to_string())?;
    let (width, height) = (info.width() as usize, info.height() as usize);
    let mut frame = Frame::new_in(format, width, height, pool);
    for (index, plane) in frame.planes.iter_mut().enumerate() {
        let data = video
            .plane_data(index as u32)
            .map_err(|_| format!("the input buffer has no plane {index}"))?;
        let stride = video.plane_stride()[index] as usize;
        let row_bytes = plane.row_bytes();
        for y in 0..plane.height {
            let row = data
                .get(y * stride..y * stride + row_bytes)
                .ok_or_else(|| format!("plane {index} of the input buffer is shorter than its caps say"))?;
            plane.row_mut(y).copy_from_slice(row);
        }
    }
    Ok(frame)
}

/// A frame whose planes are `buffer`'s own bytes, read-only, held by a reference to the
/// buffer until the engine lets the frame go. Only for buffers of the element's own pool
/// (`page_locked` is what the pool recorded of the buffer's block).
pub fn lent_frame(
    buffer: &gst::Buffer,
    info: &gst_video::VideoInfo,
    format: PixelFormat,
    page_locked: bool,
) -> Result<Frame, String> {
    let video = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), info)
        .map_err(|_| "cannot map the input buffer as the negotiated video".to_string())?;
    let (width, height) = (info.width() as usize, info.height() as usize);
    let mut planes = Vec::new();
    for (index, shape) in format.plane_shapes(width, height).into_iter().enumerate() {
        let stride = video.plane_stride()[index] as usize;
        let data = video
            .plane_data(index as u32)
            .map_err(|_| format!("the input buffer has no plane {index}"))?;
        let len = stride * shape.height;
        if stride < shape.row_bytes() || data.len() < len {
            return Err(format!(
                "plane {index} of the input buffer is shorter than its caps say"
            ));
        }
        // SAFETY: `len` bytes from `data`'s start lie in the buffer's one memory, a block of
        // the element's pool. Upstream pushed the buffer, so it writes it no more (a decoder
        // keeping it as a reference only reads it); the keeper holds a reference, so the pool
        // cannot take the block back (nor anyone write it) until the plane is dropped;
        // `page_locked` is what the pool recorded.
        let bytes = unsafe { PlaneData::lent(data.as_ptr(), len, page_locked, Box::new(buffer.clone())) };
        planes.push(Plane::of_data(shape, stride, bytes));
    }
    Ok(Frame::of_planes(format, width, height, planes))
}

/// The frame's own planes as the buffer's memories, described by a VideoMeta: no copy.
/// Pooled planes go back to the engine's pool when downstream lets the buffer go (while
/// downstream holds more than the pool has, new frames use ordinary memory).
pub fn planes_as_buffer(mut frame: Frame, info: &gst_video::VideoInfo) -> Result<gst::Buffer, String> {
    let mut buffer = gst::Buffer::new();
    let writable = buffer.get_mut().ok_or("a fresh buffer is not writable")?;
    let planes = std::mem::take(&mut frame.planes);
    if planes.len() > gst_video::ffi::GST_VIDEO_MAX_PLANES as usize {
        return Err(format!("{} planes are more than a VideoMeta describes", planes.len()));
    }
    let mut offsets = [0usize; gst_video::ffi::GST_VIDEO_MAX_PLANES as usize];
    let mut strides = [0i32; gst_video::ffi::GST_VIDEO_MAX_PLANES as usize];
    let (n_planes, mut offset) = (planes.len() as u32, 0);
    for (index, plane) in planes.into_iter().enumerate() {
        offsets[index] = offset;
        strides[index] = i32::try_from(plane.stride).map_err(|_| "a plane's stride is too large")?;
        offset += plane.data.len();
        writable.append_memory(gst::Memory::from_slice(PlaneMemory(plane)));
    }
    // Added through the C function: gstreamer-video's safe `VideoMeta::add_full` wants the
    // buffer as large as the caps' default layout, and the CPU engine's planes are packed
    // tighter than GStreamer pads rows. Every plane lies inside the buffer at its offset,
    // which is all a VideoMeta reader (gst_video_frame_map) needs.
    // SAFETY: `writable` is a valid, writable buffer; `offsets` and `strides` hold
    // GST_VIDEO_MAX_PLANES entries each, of which `n_planes` are read (and copied).
    let meta = unsafe {
        gst_video::ffi::gst_buffer_add_video_meta_full(
            writable.as_mut_ptr(),
            gst_video::ffi::GST_VIDEO_FRAME_FLAG_NONE,
            info.format().into_glib(),
            info.width(),
            info.height(),
            n_planes,
            &offsets,
            &strides,
        )
    };
    if meta.is_null() {
        return Err("cannot describe the filtered planes with a VideoMeta".to_string());
    }
    Ok(buffer)
}

/// A copy of the frame in the caps' default layout, in a buffer from `pool` (recycled: no
/// fresh pages to fault in per frame) when there is one.
pub fn copy_into_buffer(
    frame: &Frame,
    info: &gst_video::VideoInfo,
    pool: Option<&gst::BufferPool>,
) -> Result<gst::Buffer, String> {
    let mut buffer = match pool {
        Some(pool) => pool
            .acquire_buffer(None)
            .map_err(|e| format!("cannot take an output buffer from the pool: {e:?}"))?,
        None => gst::Buffer::with_size(info.size()).map_err(|_| "cannot allocate an output buffer")?,
    };
    {
        let writable = buffer.get_mut().ok_or("a fresh buffer is not writable")?;
        let mut video = gst_video::VideoFrameRef::from_buffer_ref_writable(writable, info)
            .map_err(|_| "cannot map the output buffer".to_string())?;
        for (index, plane) in frame.planes.iter().enumerate() {
            let stride = video.plane_stride()[index] as usize;
            let data = video
                .plane_data_mut(index as u32)
                .map_err(|_| format!("the output buffer has no plane {index}"))?;
            let row_bytes = plane.row_bytes();
            for y in 0..plane.height {
                data[y * stride..y * stride + row_bytes].copy_from_slice(plane.row(y));
            }
        }
    }
    Ok(buffer)
}

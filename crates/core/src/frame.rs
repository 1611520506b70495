//! Decoded frames as the engines see them ([`Frame`]): [`Plane`]s of 8- to 16-bit samples
//! with their geometry, the presentation timestamp, the position in the stream and the
//! [`Timeline`] latency is split by; a picture NVDEC left on the GPU ([`DevicePicture`]).
//! What a pixel format is lives in [`crate::format`].

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::host_buffers::BufferPool;
pub use crate::host_buffers::PlaneData;
// The pixel-format vocabulary frames are made of, under the names the engines and the media
// crate use (`frame::PixelFormat`...).
pub use crate::format::{PixelFormat, PlaneShape, SampleDepth, POOLED_ROW_ALIGN};

/// One plane. Rows are `stride` bytes apart; the first `width * channels` samples of a row
/// (one byte each at 8 bits, else a little-endian word) are pixels, the rest is padding that
/// engines never read (and whose content is unspecified in pooled planes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plane {
    /// Samples across.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Interleaved channels per pixel.
    pub channels: usize,
    /// How each sample is stored.
    pub depth: SampleDepth,
    /// Bytes from one row's start to the next's.
    pub stride: usize,
    /// The bytes, at least `stride * height`.
    pub data: PlaneData,
}

impl Plane {
    /// A zeroed plane with rows packed tightly.
    pub fn new(shape: PlaneShape) -> Plane {
        Plane::with_stride(shape, shape.row_bytes())
    }

    /// A plane whose bytes are all `fill` and whose rows are `stride` bytes apart
    /// (`stride >= shape.row_bytes()`).
    pub fn filled(shape: PlaneShape, stride: usize, fill: u8) -> Plane {
        assert!(stride >= shape.row_bytes(), "stride shorter than a row");
        Plane::of_data(shape, stride, vec![fill; stride * shape.height].into())
    }

    /// A plane of `shape` whose rows are `stride` bytes apart in `data` (at least
    /// `stride * shape.height` bytes: memory a pool or another owner lends, say).
    pub fn of_data(shape: PlaneShape, stride: usize, data: PlaneData) -> Plane {
        Plane {
            width: shape.width,
            height: shape.height,
            channels: shape.channels,
            depth: shape.depth,
            stride,
            data,
        }
    }

    /// A plane in memory lent by `pool`, rows aligned to [`POOLED_ROW_ALIGN`]. Its bytes are
    /// whatever the block's last user left: write every row before reading it.
    pub fn pooled(shape: PlaneShape, pool: &Arc<BufferPool>) -> Plane {
        Plane::of_data(shape, shape.pooled_stride(), pool.take(shape.pooled_bytes()))
    }

    /// Like [`Plane::pooled`], but only in page-locked memory the pool has to give now.
    pub fn pooled_page_locked(shape: PlaneShape, pool: &Arc<BufferPool>) -> Option<Plane> {
        let data = pool.take_page_locked(shape.pooled_bytes())?;
        Some(Plane::of_data(shape, shape.pooled_stride(), data))
    }

    /// A plane with no memory yet, for pixels written later (see [`PlaneData::pending`]):
    /// whoever writes it gives it memory first, as the CUDA engine does with its pool.
    pub fn pending(shape: PlaneShape) -> Plane {
        Plane::of_data(
            shape,
            shape.row_bytes(),
            PlaneData::pending(shape.row_bytes() * shape.height),
        )
    }

    /// A zeroed plane whose rows are `stride` bytes apart.
    pub fn with_stride(shape: PlaneShape, stride: usize) -> Plane {
        Plane::filled(shape, stride, 0)
    }

    /// Its size, channels and depth.
    pub fn shape(&self) -> PlaneShape {
        PlaneShape {
            width: self.width,
            height: self.height,
            channels: self.channels,
            depth: self.depth,
        }
    }

    /// Bytes of pixels in one row.
    pub fn row_bytes(&self) -> usize {
        self.shape().row_bytes()
    }

    /// Row `y`'s pixels, without its padding.
    pub fn row(&self, y: usize) -> &[u8] {
        let start = y * self.stride;
        &self.data[start..start + self.row_bytes()]
    }

    /// Row `y`'s pixels, without its padding, to write.
    pub fn row_mut(&mut self, y: usize) -> &mut [u8] {
        let start = y * self.stride;
        let len = self.row_bytes();
        &mut self.data[start..start + len]
    }

    /// Whether the pixels (not the padding) are equal.
    pub fn same_pixels(&self, other: &Plane) -> bool {
        self.shape() == other.shape() && (0..self.height).all(|y| self.row(y) == other.row(y))
    }
}

/// A decoded picture on its way through the pipeline. Two frames are equal when their
/// pictures, timestamps and positions are: the timeline only says when one passed by.
#[derive(Debug, Clone)]
pub struct Frame {
    /// How the planes are laid out and their depth.
    pub format: PixelFormat,
    /// Pixels across.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// One to three planes, as the format lays them out.
    pub planes: Vec<Plane>,
    /// Presentation timestamp in the source stream's time base.
    pub pts: Option<i64>,
    /// Position in decode order, from 0; engines return frames in this order.
    pub index: u64,
    /// When it passed the points its filter latency is split at.
    pub timeline: Timeline,
    /// The decoded picture in GPU memory, when the decoder left it there (NVDEC feeding the
    /// CUDA engine on the same device). The host planes then have no memory (see
    /// [`Plane::pending`]) until the engine gives them some and filters the picture into
    /// them; only the CUDA engine takes such a frame, and it lets the picture go once done
    /// with it.
    pub device: Option<Arc<DevicePicture>>,
}

/// A picture in GPU memory: the device it is on and where each plane starts. It holds the
/// decoder's surface (through `keeper`) until dropped.
pub struct DevicePicture {
    /// The GPU it is on.
    pub ordinal: usize,
    /// Where each plane starts, in the format's plane order.
    pub planes: Vec<DevicePlane>,
    /// Where the filtered picture goes when it is to stay on the GPU (an array of a caller's
    /// library, say): the CUDA engine then copies every plane there, device to device, and
    /// the frame's host planes stay unwritten. `None`: the picture comes back to the host.
    pub output: Option<Vec<DevicePlane>>,
    /// Held, never read: keeps the surface allocated and unchanged.
    _keeper: Box<dyn Send + Sync>,
}

/// One plane of a [`DevicePicture`]: its device address and row pitch in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePlane {
    /// The plane's device address.
    pub address: u64,
    /// Bytes from one row's start to the next's.
    pub pitch: usize,
}

impl DevicePicture {
    /// A picture whose planes `keeper` keeps allocated and unchanged on device `ordinal`.
    pub fn new(ordinal: usize, planes: Vec<DevicePlane>, keeper: Box<dyn Send + Sync>) -> DevicePicture {
        DevicePicture {
            ordinal,
            planes,
            output: None,
            _keeper: keeper,
        }
    }

    /// The same picture, filtered into `output` (one plane each, on the same device) instead
    /// of the frame's host planes.
    pub fn with_output(mut self, output: Vec<DevicePlane>) -> DevicePicture {
        self.output = Some(output);
        self
    }

    /// Whether the filtered picture stays on the GPU (see [`DevicePicture::output`]).
    pub fn stays_on_device(&self) -> bool {
        self.output.is_some()
    }
}

impl fmt::Debug for DevicePicture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevicePicture")
            .field("ordinal", &self.ordinal)
            .field("planes", &self.planes)
            .field("output", &self.output)
            .finish()
    }
}

impl PartialEq for Frame {
    fn eq(&self, other: &Frame) -> bool {
        (self.format, self.width, self.height, self.pts, self.index)
            == (other.format, other.width, other.height, other.pts, other.index)
            && self.planes == other.planes
    }
}

impl Eq for Frame {}

/// When a frame passed each point its filter latency is split at, on the host's clock;
/// a point not passed (or not measured) is unset. Latency runs from `decoded` to the
/// moment the filter stage takes the filtered frame back from the engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The source finished decoding it (and pacing it, for a real-time input).
    pub decoded: Option<Instant>,
    /// The filter stage began handing it to the engine.
    pub submitted: Option<Instant>,
    /// The engine had queued all its work (the CPU engine: had filtered it).
    pub enqueued: Option<Instant>,
    /// The engine saw its work done (the CUDA engine: its done event had passed).
    pub finished: Option<Instant>,
}

impl Frame {
    /// A zeroed frame with tightly packed planes.
    pub fn new(format: PixelFormat, width: usize, height: usize) -> Frame {
        Frame::new_in(format, width, height, None)
    }

    /// A frame whose planes come from `pool` when given (unwritten: see [`Plane::pooled`]),
    /// else a zeroed frame with tightly packed planes.
    pub fn new_in(format: PixelFormat, width: usize, height: usize, pool: Option<&Arc<BufferPool>>) -> Frame {
        let shapes = format.plane_shapes(width, height).into_iter();
        let planes = match pool {
            Some(pool) => shapes.map(|shape| Plane::pooled(shape, pool)).collect(),
            None => shapes.map(Plane::new).collect(),
        };
        Frame::of_planes(format, width, height, planes)
    }

    /// A frame of these planes, with no timestamp yet, at position 0.
    pub fn of_planes(format: PixelFormat, width: usize, height: usize, planes: Vec<Plane>) -> Frame {
        Frame {
            format,
            width,
            height,
            planes,
            pts: None,
            index: 0,
            timeline: Timeline::default(),
            device: None,
        }
    }

    /// A frame whose planes have no memory yet (see [`Plane::pending`]): for a picture on
    /// the GPU, whose host planes only the engine writes, so a frame waiting for its turn
    /// holds no host memory.
    pub fn pending(format: PixelFormat, width: usize, height: usize) -> Frame {
        let planes = format
            .plane_shapes(width, height)
            .into_iter()
            .map(Plane::pending)
            .collect();
        Frame::of_planes(format, width, height, planes)
    }

    /// A copy of this frame (pixels, timestamps, position) made in `pool`'s buffers.
    pub fn copied_into(&self, pool: &Arc<BufferPool>) -> Frame {
        let mut copy = Frame::new_in(self.format, self.width, self.height, Some(pool));
        for (to, from) in copy.planes.iter_mut().zip(&self.planes) {
            for y in 0..from.height {
                to.row_mut(y).copy_from_slice(from.row(y));
            }
        }
        copy.with_planes_of(self)
    }

    /// These planes with `other`'s timestamps and position.
    fn with_planes_of(self, other: &Frame) -> Frame {
        Frame {
            pts: other.pts,
            index: other.index,
            timeline: other.timeline,
            ..self
        }
    }

    /// The same frame header (format, size, timestamps) with other planes.
    pub fn with_planes(&self, planes: Vec<Plane>) -> Frame {
        Frame {
            format: self.format,
            width: self.width,
            height: self.height,
            planes,
            pts: self.pts,
            index: self.index,
            timeline: self.timeline,
            device: None,
        }
    }

    /// Bytes of pixel data (without row padding).
    pub fn pixel_bytes(&self) -> usize {
        self.planes.iter().map(|p| p.row_bytes() * p.height).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_buffers::HeapMemory;

    #[test]
    fn frames_are_equal_by_picture_and_position_not_by_timeline() {
        let frame = Frame::new(PixelFormat::YUV420P, 8, 6);
        let mut marked = frame.clone();
        marked.timeline.enqueued = Some(Instant::now());
        assert_eq!(marked, frame, "when a frame passed by is not what it is");
        let mut moved = frame.clone();
        moved.index = 1;
        assert_ne!(moved, frame);
        let mut changed = frame.clone();
        changed.planes[2].row_mut(0)[0] = 1;
        assert_ne!(changed, frame);
    }

    #[test]
    fn a_copy_into_a_pool_keeps_pixels_and_timestamps_with_aligned_rows() {
        let mut frame = Frame::new(PixelFormat::YUV420P, 33, 17);
        for (i, plane) in frame.planes.iter_mut().enumerate() {
            for y in 0..plane.height {
                plane
                    .row_mut(y)
                    .iter_mut()
                    .enumerate()
                    .for_each(|(x, v)| *v = (x + 3 * y + 7 * i) as u8);
            }
        }
        frame.pts = Some(42);
        frame.index = 5;
        let pool = BufferPool::new(Box::new(HeapMemory), 1 << 20);
        let copy = frame.copied_into(&pool);
        assert_eq!((copy.pts, copy.index), (Some(42), 5));
        for (a, b) in frame.planes.iter().zip(&copy.planes) {
            assert!(a.same_pixels(b));
            assert_eq!(b.stride % POOLED_ROW_ALIGN, 0);
            assert_eq!(b.data.len(), b.shape().pooled_bytes());
        }
        assert_eq!(
            pool.allocated_bytes(),
            copy.planes.iter().map(|p| p.data.len()).sum::<usize>()
        );
    }
}

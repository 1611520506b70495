//! Decoded frames as the engines see them: planes of 8- to 16-bit samples with their geometry, plus the
//! presentation timestamp and position in the stream.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::filter::PlaneName;
use crate::host_buffers::BufferPool;
pub use crate::host_buffers::PlaneData;

/// Row alignment of planes taken from a [`BufferPool`]: the GPU engine's row pitch, so a
/// pooled plane is copied to and from the GPU as one block.
pub const POOLED_ROW_ALIGN: usize = 64;

/// How the planes of a frame are arranged, whatever the sample depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PixelLayout {
    /// Y, U and V planes, chroma halved both ways.
    Yuv420,
    /// Y, U and V planes, chroma halved across.
    Yuv422,
    Yuv444,
    /// Y plane plus one interleaved UV plane at half resolution (NV12; P010 and P016 at 10
    /// and 16 bits, whose samples sit in the high bits of each 16-bit word).
    SemiPlanar420,
    Gray,
    /// One packed plane, three interleaved channels; each channel is filtered on its own.
    Rgb,
    Bgr,
    /// G, B and R planes, in FFmpeg's order.
    Gbr,
}

impl PixelLayout {
    /// Every layout, in the order [`PixelFormat::all`] lists them.
    pub const ALL: [PixelLayout; 8] = [
        PixelLayout::Yuv420,
        PixelLayout::Yuv422,
        PixelLayout::Yuv444,
        PixelLayout::SemiPlanar420,
        PixelLayout::Gray,
        PixelLayout::Rgb,
        PixelLayout::Bgr,
        PixelLayout::Gbr,
    ];

    /// The sample depths FFmpeg has this layout at (little-endian words above 8 bits).
    pub fn depths(self) -> &'static [u8] {
        match self {
            PixelLayout::SemiPlanar420 => &[8, 10, 16],
            PixelLayout::Rgb | PixelLayout::Bgr => &[8, 16],
            _ => &[8, 9, 10, 12, 14, 16],
        }
    }
}

/// How one plane's samples are stored: `bits` significant bits in a byte (8 bits) or in a
/// little-endian 16-bit word (9 to 16 bits), shifted left by `shift` within the word (P010
/// keeps its 10 bits in the high ones). Engines compute on the unshifted value, 0..=max.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SampleDepth {
    pub bits: u8,
    pub shift: u8,
}

impl SampleDepth {
    pub const EIGHT: SampleDepth = SampleDepth { bits: 8, shift: 0 };

    /// Bytes per sample: 1 or 2.
    pub fn bytes(self) -> usize {
        if self.bits > 8 {
            2
        } else {
            1
        }
    }

    /// The largest sample value, 2^bits - 1.
    pub fn max_value(self) -> u32 {
        (1u32 << self.bits) - 1
    }

    /// What a bias given in 8-bit units is multiplied by at this depth: 2^(bits - 8), so one
    /// config means the same on 8- and 10-bit sources (128 is mid-grey at every depth).
    pub fn bias_scale(self) -> f32 {
        (1u32 << self.bits.saturating_sub(8)) as f32
    }
}

/// The pixel formats engines take directly: a layout at a sample depth. Anything else is
/// converted by the source. Made only through [`PixelFormat::new`] and the constants, so
/// every value names a format FFmpeg has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PixelFormat {
    layout: PixelLayout,
    bits: u8,
}

/// Shape of one plane: size in pixels, interleaved channels per pixel and sample depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneShape {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub depth: SampleDepth,
}

impl PlaneShape {
    /// An 8-bit plane's shape.
    pub fn eight_bit(width: usize, height: usize, channels: usize) -> PlaneShape {
        PlaneShape {
            width,
            height,
            channels,
            depth: SampleDepth::EIGHT,
        }
    }

    /// Bytes of pixels in one row.
    pub fn row_bytes(&self) -> usize {
        self.width * self.channels * self.depth.bytes()
    }

    /// Row stride of the plane when made in a [`BufferPool`].
    pub fn pooled_stride(&self) -> usize {
        self.row_bytes().next_multiple_of(POOLED_ROW_ALIGN)
    }

    /// Bytes of the plane when made in a [`BufferPool`].
    pub fn pooled_bytes(&self) -> usize {
        self.pooled_stride() * self.height
    }
}

impl PixelFormat {
    pub const YUV420P: PixelFormat = PixelFormat::eight_bit(PixelLayout::Yuv420);
    pub const YUV422P: PixelFormat = PixelFormat::eight_bit(PixelLayout::Yuv422);
    pub const YUV444P: PixelFormat = PixelFormat::eight_bit(PixelLayout::Yuv444);
    pub const NV12: PixelFormat = PixelFormat::eight_bit(PixelLayout::SemiPlanar420);
    pub const GRAY8: PixelFormat = PixelFormat::eight_bit(PixelLayout::Gray);
    pub const RGB24: PixelFormat = PixelFormat::eight_bit(PixelLayout::Rgb);
    pub const BGR24: PixelFormat = PixelFormat::eight_bit(PixelLayout::Bgr);
    pub const GBRP: PixelFormat = PixelFormat::eight_bit(PixelLayout::Gbr);
    pub const P010: PixelFormat = PixelFormat {
        layout: PixelLayout::SemiPlanar420,
        bits: 10,
    };

    const fn eight_bit(layout: PixelLayout) -> PixelFormat {
        PixelFormat { layout, bits: 8 }
    }

    /// `layout` at `bits` per sample, if FFmpeg has that format (see [`PixelLayout::depths`]).
    pub fn new(layout: PixelLayout, bits: u8) -> Option<PixelFormat> {
        layout.depths().contains(&bits).then_some(PixelFormat { layout, bits })
    }

    /// Every format the engines take.
    pub fn all() -> impl Iterator<Item = PixelFormat> {
        PixelLayout::ALL
            .into_iter()
            .flat_map(|layout| layout.depths().iter().map(move |&bits| PixelFormat { layout, bits }))
    }

    pub fn layout(self) -> PixelLayout {
        self.layout
    }

    /// Significant bits per sample.
    pub fn bits(self) -> u8 {
        self.bits
    }

    /// The same layout at the depth FFmpeg has closest to `bits` (rounding up, so nothing
    /// is lost; 16 at most).
    pub fn at_depth(self, bits: u8) -> PixelFormat {
        let depths = self.layout.depths();
        let bits = depths
            .iter()
            .copied()
            .find(|&d| d >= bits)
            .unwrap_or(depths[depths.len() - 1]);
        PixelFormat { bits, ..self }
    }

    /// These pictures at exactly `bits` per sample: the same layout where FFmpeg has it at
    /// that depth, else its planar form (P010 has no 12-bit sibling, so 12-bit NV12 becomes
    /// yuv420p12le; packed RGB below 16 bits becomes gbrp). `None` for a depth FFmpeg has
    /// no planar format at (11 bits, say).
    pub fn with_depth(self, bits: u8) -> Option<PixelFormat> {
        PixelFormat::new(self.layout, bits).or_else(|| {
            let planar = match self.layout {
                PixelLayout::SemiPlanar420 => PixelLayout::Yuv420,
                PixelLayout::Rgb | PixelLayout::Bgr => PixelLayout::Gbr,
                other => other,
            };
            PixelFormat::new(planar, bits)
        })
    }

    /// How every plane's samples are stored.
    pub fn sample_depth(self) -> SampleDepth {
        let shift = match self.layout {
            PixelLayout::SemiPlanar420 if self.bits > 8 => 16 - self.bits,
            _ => 0,
        };
        SampleDepth { bits: self.bits, shift }
    }

    /// Plane shapes of a `width` x `height` frame (chroma sizes round up, as FFmpeg's do).
    pub fn plane_shapes(self, width: usize, height: usize) -> Vec<PlaneShape> {
        let depth = self.sample_depth();
        let shape = |width, height, channels| PlaneShape {
            width,
            height,
            channels,
            depth,
        };
        let (half_w, half_h) = (width.div_ceil(2), height.div_ceil(2));
        match self.layout {
            PixelLayout::Yuv420 => vec![
                shape(width, height, 1),
                shape(half_w, half_h, 1),
                shape(half_w, half_h, 1),
            ],
            PixelLayout::Yuv422 => vec![
                shape(width, height, 1),
                shape(half_w, height, 1),
                shape(half_w, height, 1),
            ],
            PixelLayout::Yuv444 | PixelLayout::Gbr => vec![shape(width, height, 1); 3],
            PixelLayout::SemiPlanar420 => vec![shape(width, height, 1), shape(half_w, half_h, 2)],
            PixelLayout::Gray => vec![shape(width, height, 1)],
            PixelLayout::Rgb | PixelLayout::Bgr => vec![shape(width, height, 3)],
        }
    }

    /// The planes (or, interleaved, the channels) plane `index` holds, by name.
    pub fn channel_names(self, index: usize) -> &'static [PlaneName] {
        use PlaneName::*;
        let planes: &'static [&'static [PlaneName]] = match self.layout {
            PixelLayout::Yuv420 | PixelLayout::Yuv422 | PixelLayout::Yuv444 => &[&[Y], &[U], &[V]],
            PixelLayout::SemiPlanar420 => &[&[Y], &[U, V]],
            PixelLayout::Gray => &[&[Y]],
            PixelLayout::Rgb => &[&[R, G, B]],
            PixelLayout::Bgr => &[&[B, G, R]],
            PixelLayout::Gbr => &[&[G], &[B], &[R]],
        };
        planes.get(index).copied().unwrap_or(&[])
    }

    /// Whether plane 0 is luma (so `planes = luma|chroma` means something).
    pub fn has_luma_plane(self) -> bool {
        !self.is_rgb()
    }

    /// Whether the channels are R, G and B (packed or planar).
    pub fn is_rgb(self) -> bool {
        matches!(self.layout, PixelLayout::Rgb | PixelLayout::Bgr | PixelLayout::Gbr)
    }

    /// FFmpeg's name of the format (`yuv420p`, `yuv420p10le`, `p010le`, `gbrp12le`...).
    pub fn name(self) -> String {
        let high = self.bits > 8;
        match self.layout {
            PixelLayout::Yuv420 | PixelLayout::Yuv422 | PixelLayout::Yuv444 | PixelLayout::Gbr => {
                let base = match self.layout {
                    PixelLayout::Yuv420 => "yuv420p",
                    PixelLayout::Yuv422 => "yuv422p",
                    PixelLayout::Yuv444 => "yuv444p",
                    _ => "gbrp",
                };
                if high {
                    format!("{base}{}le", self.bits)
                } else {
                    base.to_string()
                }
            }
            PixelLayout::SemiPlanar420 if high => format!("p0{}le", self.bits),
            PixelLayout::SemiPlanar420 => "nv12".to_string(),
            PixelLayout::Gray if high => format!("gray{}le", self.bits),
            PixelLayout::Gray => "gray".to_string(),
            PixelLayout::Rgb if high => "rgb48le".to_string(),
            PixelLayout::Rgb => "rgb24".to_string(),
            PixelLayout::Bgr if high => "bgr48le".to_string(),
            PixelLayout::Bgr => "bgr24".to_string(),
        }
    }
}

impl fmt::Display for PixelFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// One plane. Rows are `stride` bytes apart; the first `width * channels` samples of a row
/// (one byte each at 8 bits, else a little-endian word) are pixels, the rest is padding that
/// engines never read (and whose content is unspecified in pooled planes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub depth: SampleDepth,
    pub stride: usize,
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

    pub fn with_stride(shape: PlaneShape, stride: usize) -> Plane {
        Plane::filled(shape, stride, 0)
    }

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

    pub fn row(&self, y: usize) -> &[u8] {
        let start = y * self.stride;
        &self.data[start..start + self.row_bytes()]
    }

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
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    pub planes: Vec<Plane>,
    /// Presentation timestamp in the source stream's time base.
    pub pts: Option<i64>,
    /// Position in decode order, from 0; engines return frames in this order.
    pub index: u64,
    /// When it passed the points its filter latency is split at.
    pub timeline: Timeline,
    /// The decoded picture in GPU memory, when the decoder left it there (NVDEC feeding the
    /// CUDA engine on the same device). The host planes are then allocated but unwritten
    /// until the engine has filtered the picture into them; only the CUDA engine takes such
    /// a frame, and it lets the picture go once done with it.
    pub device: Option<Arc<DevicePicture>>,
}

/// A picture in GPU memory: the device it is on and where each plane starts. It holds the
/// decoder's surface (through `keeper`) until dropped.
pub struct DevicePicture {
    pub ordinal: usize,
    pub planes: Vec<DevicePlane>,
    /// Held, never read: keeps the surface allocated and unchanged.
    _keeper: Box<dyn Send + Sync>,
}

/// One plane of a [`DevicePicture`]: its device address and row pitch in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePlane {
    pub address: u64,
    pub pitch: usize,
}

impl DevicePicture {
    /// A picture whose planes `keeper` keeps allocated and unchanged on device `ordinal`.
    pub fn new(ordinal: usize, planes: Vec<DevicePlane>, keeper: Box<dyn Send + Sync>) -> DevicePicture {
        DevicePicture {
            ordinal,
            planes,
            _keeper: keeper,
        }
    }
}

impl fmt::Debug for DevicePicture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevicePicture")
            .field("ordinal", &self.ordinal)
            .field("planes", &self.planes)
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

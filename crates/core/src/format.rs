//! Pixel formats as the engines take them ([`PixelFormat`]): how planes are laid out
//! ([`PixelLayout`]), how a plane stores its samples ([`SampleDepth`]), the shape of each
//! plane ([`PlaneShape`]), and the names of planes and channels a per-plane mask can take
//! ([`PlaneName`]). Frames ([`crate::frame`]) are made of these; filters ([`crate::filter`])
//! name them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Row alignment of planes taken from a [`BufferPool`](crate::host_buffers::BufferPool): the GPU engine's row pitch, so a
/// pooled plane is copied to and from the GPU as one block.
pub const POOLED_ROW_ALIGN: usize = 64;

/// How the planes of a frame are arranged, whatever the sample depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PixelLayout {
    /// Y, U and V planes, chroma halved both ways.
    Yuv420,
    /// Y, U and V planes, chroma halved across.
    Yuv422,
    /// Y, U and V planes, all at full resolution.
    Yuv444,
    /// Y plane plus one interleaved UV plane at half resolution (NV12; P010 and P016 at 10
    /// and 16 bits, whose samples sit in the high bits of each 16-bit word).
    SemiPlanar420,
    /// One plane of luma (grey) only.
    Gray,
    /// One packed plane, three interleaved channels; each channel is filtered on its own.
    Rgb,
    /// As [`PixelLayout::Rgb`], the channels in B, G, R order.
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
    /// Significant bits per sample, 8 to 16.
    pub bits: u8,
    /// How far those bits sit from the word's lowest bit (6 for P010, else 0).
    pub shift: u8,
}

impl SampleDepth {
    /// Eight bits in a byte, no shift.
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
    /// Samples across.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Interleaved channels per pixel: 1, 2 (NV12's UV) or 3 (packed RGB).
    pub channels: usize,
    /// How each sample is stored.
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

    /// Row stride of the plane when made in a [`BufferPool`](crate::host_buffers::BufferPool).
    pub fn pooled_stride(&self) -> usize {
        self.row_bytes().next_multiple_of(POOLED_ROW_ALIGN)
    }

    /// Bytes of the plane when made in a [`BufferPool`](crate::host_buffers::BufferPool).
    pub fn pooled_bytes(&self) -> usize {
        self.pooled_stride() * self.height
    }
}

impl PixelFormat {
    /// Planar 4:2:0, 8 bits.
    pub const YUV420P: PixelFormat = PixelFormat::eight_bit(PixelLayout::Yuv420);
    /// Planar 4:2:2, 8 bits.
    pub const YUV422P: PixelFormat = PixelFormat::eight_bit(PixelLayout::Yuv422);
    /// Planar 4:4:4, 8 bits.
    pub const YUV444P: PixelFormat = PixelFormat::eight_bit(PixelLayout::Yuv444);
    /// Y plus interleaved UV at half resolution, 8 bits.
    pub const NV12: PixelFormat = PixelFormat::eight_bit(PixelLayout::SemiPlanar420);
    /// Grey, 8 bits.
    pub const GRAY8: PixelFormat = PixelFormat::eight_bit(PixelLayout::Gray);
    /// Packed R, G, B, 8 bits each.
    pub const RGB24: PixelFormat = PixelFormat::eight_bit(PixelLayout::Rgb);
    /// Packed B, G, R, 8 bits each.
    pub const BGR24: PixelFormat = PixelFormat::eight_bit(PixelLayout::Bgr);
    /// Planar G, B, R, 8 bits.
    pub const GBRP: PixelFormat = PixelFormat::eight_bit(PixelLayout::Gbr);
    /// NV12's layout at 10 bits, in the high bits of 16-bit words.
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

    /// How the planes are arranged.
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

/// A plane, or a channel of an interleaved plane, that `plane_masks` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlaneName {
    /// Luma.
    Y,
    /// The first chroma plane (Cb).
    U,
    /// The second chroma plane (Cr).
    V,
    /// Red.
    R,
    /// Green.
    G,
    /// Blue.
    B,
}

impl PlaneName {
    /// The keys `plane_masks` takes, and what each stands for (`uv` is both chroma planes).
    pub const KEYS: [(&'static str, &'static [PlaneName]); 7] = [
        ("y", &[PlaneName::Y]),
        ("u", &[PlaneName::U]),
        ("v", &[PlaneName::V]),
        ("uv", &[PlaneName::U, PlaneName::V]),
        ("r", &[PlaneName::R]),
        ("g", &[PlaneName::G]),
        ("b", &[PlaneName::B]),
    ];

    /// The planes a `plane_masks` key names; `None` for an unknown key.
    pub fn parse_key(key: &str) -> Option<&'static [PlaneName]> {
        PlaneName::KEYS.iter().find(|(k, _)| *k == key).map(|(_, names)| *names)
    }

    /// The name as `plane_masks` writes it (`y`).
    pub fn name(self) -> &'static str {
        match self {
            PlaneName::Y => "y",
            PlaneName::U => "u",
            PlaneName::V => "v",
            PlaneName::R => "r",
            PlaneName::G => "g",
            PlaneName::B => "b",
        }
    }

    pub(crate) fn is_chroma(self) -> bool {
        matches!(self, PlaneName::U | PlaneName::V)
    }
}

impl fmt::Display for PlaneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

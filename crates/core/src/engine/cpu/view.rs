//! Planes as the band loops read them ([`PlaneView`]): samples anywhere in a byte slice, rows,
//! pixels and channels each a pitch apart (negative pitches too: a view NumPy flipped), of
//! integer samples of a depth or float32 values. A packed row (pixels side by side, their
//! channels too) is read as one slice; any other layout is read sample by sample into the
//! band's lanes, one row at a time, so a view is never copied whole. Every sample a view
//! names is checked to lie inside its slice when the view is made.

use std::fmt;

use crate::format::SampleDepth;
use crate::frame::Plane;

/// How a view's samples are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewSamples {
    /// Integer samples of a depth: a byte each at 8 bits, else a little-endian word.
    Integer(SampleDepth),
    /// float32 values in the host's byte order, filtered as floats: neither rounded nor
    /// clamped.
    Float32,
}

impl ViewSamples {
    /// Bytes a sample takes.
    pub fn bytes(self) -> usize {
        match self {
            ViewSamples::Integer(depth) => depth.bytes(),
            ViewSamples::Float32 => 4,
        }
    }
}

/// Bytes from one row, pixel and channel of a view to the next (negative where the view runs
/// backwards through memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pitches {
    /// Bytes from a row to the next.
    pub row: isize,
    /// Bytes from a pixel to the next within a row.
    pub pixel: isize,
    /// Bytes from a channel to the next within a pixel.
    pub channel: isize,
}

/// Why a view was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewError(String);

impl fmt::Display for ViewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ViewError {}

/// A plane of `height` rows of `width` pixels of `channels` samples, read from a byte slice.
#[derive(Debug, Clone, Copy)]
pub struct PlaneView<'a> {
    data: &'a [u8],
    /// The byte of sample (row 0, pixel 0, channel 0).
    origin: usize,
    /// Pixels across.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Channels a pixel.
    pub channels: usize,
    pitches: Pitches,
    samples: ViewSamples,
}

impl<'a> PlaneView<'a> {
    /// The view of `data` whose first sample is at byte `origin`; refused unless every sample
    /// of every row, pixel and channel lies inside `data`.
    pub fn new(
        data: &'a [u8],
        origin: usize,
        (width, height, channels): (usize, usize, usize),
        pitches: Pitches,
        samples: ViewSamples,
    ) -> Result<PlaneView<'a>, ViewError> {
        let view = PlaneView {
            data,
            origin,
            width,
            height,
            channels,
            pitches,
            samples,
        };
        if width > 0 && height > 0 && channels > 0 {
            // The lowest and highest byte the view reads, in i128 so no product overflows.
            let mut low = origin as i128;
            let mut high = origin as i128 + samples.bytes() as i128;
            for (count, pitch) in [
                (height, pitches.row),
                (width, pitches.pixel),
                (channels, pitches.channel),
            ] {
                let reach = (count as i128 - 1) * pitch as i128;
                if reach < 0 {
                    low += reach;
                } else {
                    high += reach;
                }
            }
            if low < 0 || high > data.len() as i128 {
                return Err(ViewError(format!(
                    "a {height} x {width} view of {channels} channel(s) with pitches {pitches:?} reads bytes \
                     {low}..{high} of {}",
                    data.len()
                )));
            }
        }
        Ok(view)
    }

    /// The view of a plane: its rows `stride` bytes apart, pixels and channels packed.
    pub fn of_plane(plane: &'a Plane) -> PlaneView<'a> {
        let bytes = plane.depth.bytes();
        PlaneView {
            data: &plane.data,
            origin: 0,
            width: plane.width,
            height: plane.height,
            channels: plane.channels,
            pitches: Pitches {
                row: plane.stride as isize,
                pixel: (plane.channels * bytes) as isize,
                channel: bytes as isize,
            },
            samples: ViewSamples::Integer(plane.depth),
        }
    }

    /// How the samples are stored.
    pub fn samples(&self) -> ViewSamples {
        self.samples
    }

    /// Bytes of one row's pixels when packed.
    pub(super) fn row_bytes(&self) -> usize {
        self.width * self.channels * self.samples.bytes()
    }

    /// Whether a row's samples lie side by side, pixel after pixel, in memory order (the
    /// channel pitch of a single channel says nothing).
    pub(super) fn packed(&self) -> bool {
        let bytes = self.samples.bytes() as isize;
        (self.channels == 1 || self.pitches.channel == bytes) && self.pitches.pixel == bytes * self.channels as isize
    }

    /// The byte of sample `c` of pixel `x` of row `y`.
    #[inline(always)]
    fn at(&self, y: usize, x: usize, c: usize) -> usize {
        let offset =
            y as isize * self.pitches.row + x as isize * self.pitches.pixel + c as isize * self.pitches.channel;
        // Inside the slice for every sample of the view: checked when it was made.
        self.origin.wrapping_add_signed(offset)
    }

    /// Row `y`'s samples as one slice, for a packed view.
    #[inline(always)]
    pub(super) fn packed_row(&self, y: usize) -> &'a [u8] {
        let start = self.at(y, 0, 0);
        &self.data[start..start + self.row_bytes()]
    }

    /// The bytes of sample `c` of pixel `x` of row `y`.
    #[inline(always)]
    pub(super) fn sample_bytes(&self, y: usize, x: usize, c: usize) -> &'a [u8] {
        let at = self.at(y, x, c);
        &self.data[at..at + self.samples.bytes()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_channel_is_packed_whatever_its_channel_pitch() {
        let data = vec![0u8; 100];
        let eight = ViewSamples::Integer(SampleDepth::EIGHT);
        let plane = |channel| Pitches {
            row: 10,
            pixel: 1,
            channel,
        };
        assert!(PlaneView::new(&data, 0, (10, 10, 1), plane(0), eight).unwrap().packed());
        assert!(PlaneView::new(&data, 0, (10, 10, 1), plane(4000), eight)
            .unwrap()
            .packed());
        let pixels_apart = Pitches {
            row: 10,
            pixel: 2,
            channel: 1,
        };
        assert!(!PlaneView::new(&data, 0, (5, 10, 1), pixels_apart, eight)
            .unwrap()
            .packed());
        let interleaved = Pitches {
            row: 10,
            pixel: 2,
            channel: 1,
        };
        assert!(PlaneView::new(&data, 0, (5, 10, 2), interleaved, eight)
            .unwrap()
            .packed());
    }

    #[test]
    fn a_view_reading_outside_its_slice_is_refused_whichever_way_it_runs() {
        let data = vec![0u8; 100];
        let eight = ViewSamples::Integer(SampleDepth::EIGHT);
        let packed = Pitches {
            row: 10,
            pixel: 1,
            channel: 1,
        };
        assert!(PlaneView::new(&data, 0, (10, 10, 1), packed, eight).is_ok());
        assert!(
            PlaneView::new(&data, 1, (10, 10, 1), packed, eight).is_err(),
            "one past the end"
        );
        let flipped = Pitches { row: -10, ..packed };
        assert!(PlaneView::new(&data, 90, (10, 10, 1), flipped, eight).is_ok());
        assert!(
            PlaneView::new(&data, 89, (10, 10, 1), flipped, eight).is_err(),
            "one before the start"
        );
        let floats = PlaneView::new(
            &data,
            0,
            (5, 5, 1),
            Pitches {
                row: 20,
                pixel: 4,
                channel: 4,
            },
            ViewSamples::Float32,
        );
        assert!(floats.is_ok());
        assert!(
            PlaneView::new(&data, 0, (0, 1000, 3), packed, eight).is_ok(),
            "an empty view reads nothing"
        );
    }
}

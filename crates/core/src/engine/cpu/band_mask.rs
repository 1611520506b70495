//! A mask as the band loops take it ([`BandMask`]): its taps a mask row at a time, with
//! offsets in samples, and the lanes its sums are made in. f32 sums add the taps in the
//! kernels' order (mask row by mask row, left to right; a rank-one mask's row pass, then its
//! column pass); a zero tap adds exactly nothing to a finite value (`fma(0, v, s) == s`), so
//! it is left out for integer samples, and for float values on rows with no infinity or NaN
//! (whose NaN the kernels' zero taps make).
//!
//! Exact sums. When every tap is a whole number times one power of two, `k / 2^m` (whole
//! numbers have `m = 0`; OpenCV's small Gaussians, `[1, 4, 6, 4, 1] / 16`, have `m = 4` a
//! factor) and the whole numbers' magnitudes times the largest sample stay within 2^24, every
//! partial sum the kernels make is a whole number of `2^-m` that f32 holds exactly, whatever
//! the order, and the sums are the same on every path. Such masks take integer lanes over the
//! whole numbers `k` (16-bit when every partial sum fits, unsigned where no tap is below
//! zero, else 32-bit; taps over a power of two only where 16 bits do), zero taps left out, a
//! rank-one mask as two passes when that is less work; the sum `S` in lanes is the f32 sum
//! `S / 2^m` (`BandMask::scale_bits`). Where the f32 finish's samples can be had from `S` in
//! integers (no FFmpeg arithmetic, no magnitude; a divisor and bias as `integer_finish.rs`
//! says: a box's `w h`, no bias), finishing is done in integers too.

use super::finish::Finish;
use super::integer_finish::IntegerFinish;
use crate::frame::SampleDepth;
use crate::mask::Mask;

/// Every whole number up to this f32 holds exactly: 2^24.
const LARGEST_EXACT: f64 = 16_777_216.0;

/// The largest partial sum 16-bit lanes hold.
const LARGEST_NARROW: f64 = i16::MAX as f64;

/// The largest partial sum unsigned 16-bit lanes hold (taps of one sign).
const LARGEST_UNSIGNED_NARROW: f64 = u16::MAX as f64;

/// The most `m` a tap `k / 2^m` may have to be summed exactly: past it, a tap of 8-bit samples
/// would leave too few of f32's 24 bits for the whole numbers.
const MOST_SCALE_BITS: u32 = 16;

/// The taps of one mask row (or of the row factor): `(offset in samples, weight)`.
pub(super) type Taps = Vec<(usize, f32)>;

/// What a band sums in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Lanes {
    /// Exact sums that fit 16 bits.
    I16,
    /// Exact sums of taps none of which is below zero, that fit 16 bits unsigned.
    U16,
    /// Exact sums up to 2^24.
    I32,
    /// f32 with one fused multiply-add per tap, in the kernels' order.
    F32,
}

/// A mask as the band loops take it.
pub(super) struct BandMask {
    pub(super) width: usize,
    pub(super) height: usize,
    /// Each mask row's correlation taps, top to bottom (in integer lanes, the nonzero ones).
    pub(super) rows: Vec<Taps>,
    /// A gradient magnitude's second mask, as `rows`.
    pub(super) second: Option<Vec<Taps>>,
    /// A rank-one mask taken as a row pass (`.1`) then a column pass (`.0`, one weight per
    /// mask row): always in f32 lanes (as the kernels), when it is less work in integer ones.
    pub(super) factors: Option<(Vec<f32>, Taps)>,
    pub(super) lanes: Lanes,
    /// Integer lanes' sums are the f32 sums times `2^scale_bits` (the taps' `m`; 0 in f32).
    pub(super) scale_bits: u32,
    /// Exact sums' finish in integers, where it gives the f32 finish's samples (see
    /// `integer_finish.rs`; never for a gradient magnitude, whose square root is f32's).
    pub(super) integer_finish: Option<IntegerFinish>,
    pub(super) finish: Finish,
    /// Float values' taps without their zeros, where the mask has any (see [`SparseTaps`]).
    pub(super) sparse: Option<SparseTaps>,
}

/// A mask's taps without their zeros, for float values: a zero tap adds exactly nothing to a
/// sum of finite values (`fma(0, v, s) == s`), so the rows whose values are all finite take
/// these; a row holding an infinity or a NaN takes every tap, whose zero makes the NaN the
/// kernels make.
pub(super) struct SparseTaps {
    pub(super) rows: Vec<Taps>,
    pub(super) second: Option<Vec<Taps>>,
    /// A rank-one mask's row factor.
    pub(super) across: Option<Taps>,
}

/// The smallest `m` (up to [`MOST_SCALE_BITS`]) for which every one of `taps` times `2^m` is
/// a whole number f32 holds exactly, or `None`.
fn scale_bits(taps: &[f32]) -> Option<u32> {
    (0..=MOST_SCALE_BITS).find(|m| {
        let scale = f64::from(1u32 << m);
        taps.iter().all(|t| {
            let k = f64::from(*t) * scale;
            k.fract() == 0.0 && k.abs() <= LARGEST_EXACT
        })
    })
}

/// `taps` times `2^m` (exact: a power of two).
fn scaled(taps: &[f32], m: u32) -> Vec<f32> {
    let scale = (1u32 << m) as f32;
    taps.iter().map(|t| t * scale).collect()
}

/// The sum of the taps' magnitudes.
fn magnitude_sum(taps: &[f32]) -> f64 {
    taps.iter().map(|t| f64::from(t.abs())).sum()
}

/// The taps of each mask row of `taps` (row-major, correlation order), offsets in samples of
/// `channels` interleaved channels; zeros left out when `keep_zeros` is false.
fn tap_rows(taps: &[f32], width: usize, channels: usize, keep_zeros: bool) -> Vec<Taps> {
    taps.chunks(width)
        .map(|row| {
            row.iter()
                .enumerate()
                .filter(|(_, w)| keep_zeros || **w != 0.0)
                .map(|(j, w)| (j * channels, *w))
                .collect()
        })
        .collect()
}

impl BandMask {
    /// The multiply-adds a sample takes: a rank-one mask's row and column taps, else every
    /// tap of both masks.
    pub(super) fn taps_per_sample(&self) -> usize {
        match &self.factors {
            Some((column, row)) => column.len() + row.len(),
            None => {
                let count = |rows: &[Taps]| rows.iter().map(Vec::len).sum::<usize>();
                count(&self.rows) + self.second.as_deref().map_or(0, count)
            }
        }
        .max(1)
    }

    /// `mask` over samples of `depth` with `channels` channels.
    pub(super) fn of(mask: &Mask, depth: SampleDepth, channels: usize) -> BandMask {
        // Integer samples and their row sums are finite: zero taps add nothing to them.
        BandMask::exact(mask, depth, channels)
            .unwrap_or_else(|| BandMask::in_f32(mask, channels, Finish::of(mask, depth), false))
    }

    /// `mask` over float32 values with `channels` channels: f32 lanes, every tap kept (a zero
    /// tap times an infinite value is NaN, as on the GPU) and, where the mask has zeros, the
    /// taps without them for rows of finite values; the float finish.
    pub(super) fn of_floats(mask: &Mask, channels: usize) -> BandMask {
        let mut band = BandMask::in_f32(mask, channels, Finish::of_floats(mask), true);
        let sparse = BandMask::in_f32(mask, channels, band.finish, false);
        let taps = |band: &BandMask| {
            let count = |rows: &[Taps]| rows.iter().map(Vec::len).sum::<usize>();
            count(&band.rows) + band.second.as_deref().map_or(0, count) + band.factors.as_ref().map_or(0, |f| f.1.len())
        };
        if taps(&sparse) < taps(&band) {
            band.sparse = Some(SparseTaps {
                rows: sparse.rows,
                second: sparse.second,
                across: sparse.factors.map(|(_, across)| across),
            });
        }
        band
    }

    /// `mask` in f32 lanes, in the kernels' order; zero taps left out unless `keep_zeros`.
    fn in_f32(mask: &Mask, channels: usize, finish: Finish, keep_zeros: bool) -> BandMask {
        BandMask {
            width: mask.width(),
            height: mask.height(),
            rows: tap_rows(&mask.correlation_taps(), mask.width(), channels, keep_zeros),
            second: mask
                .second_correlation_taps()
                .map(|s| tap_rows(&s, mask.width(), channels, keep_zeros)),
            factors: mask
                .correlation_factors()
                .map(|(column, row)| (column, tap_rows(&row, mask.width(), channels, keep_zeros).remove(0))),
            lanes: Lanes::F32,
            scale_bits: 0,
            integer_finish: None,
            finish,
            sparse: None,
        }
    }

    /// The mask in integer lanes, or `None` when its sums are not exact (taps that are not
    /// whole numbers of one power of two, or sums that could pass 2^24).
    fn exact(mask: &Mask, depth: SampleDepth, channels: usize) -> Option<BandMask> {
        let (width, height) = (mask.width(), mask.height());
        let largest_sample = f64::from(depth.max_value());
        let taps = mask.correlation_taps();
        let second = mask.second_correlation_taps();
        // One scale for both masks of a gradient magnitude: their sums meet in one finish.
        let both: Vec<f32> = taps.iter().chain(second.iter().flatten()).copied().collect();
        let dense_bits = scale_bits(&both)?;
        let (taps, second) = (scaled(&taps, dense_bits), second.map(|s| scaled(&s, dense_bits)));
        let dense_largest = magnitude_sum(&taps).max(second.as_deref().map_or(0.0, magnitude_sum)) * largest_sample;
        if dense_largest > LARGEST_EXACT {
            return None;
        }
        let rows = tap_rows(&taps, width, channels, false);
        let dense_taps: usize = rows.iter().map(Vec::len).sum();
        let nonzero = |v: &[f32]| v.iter().filter(|w| **w != 0.0).count();
        // The kernels sum a rank-one mask in a row pass and a column pass: its sums are exact
        // only when each pass's factors are whole numbers of a power of two of their own,
        // their product is the taps exactly, and the passes' sums stay within 2^24. The
        // passes are taken here too when they are less work than the taps.
        let factors = match mask.correlation_factors() {
            Some(_) if second.is_some() => None,
            Some((column, row)) => {
                let (column_bits, row_bits) = (scale_bits(&column)?, scale_bits(&row)?);
                let (column, row) = (scaled(&column, column_bits), scaled(&row, row_bits));
                let bits = column_bits + row_bits;
                // (`dense_bits` is never above `bits`: each tap is a whole number of `2^-bits`.)
                if bits > MOST_SCALE_BITS || bits < dense_bits {
                    return None;
                }
                let unscaled = f64::from(1u32 << (bits - dense_bits));
                let product = column.iter().enumerate().all(|(i, c)| {
                    row.iter()
                        .enumerate()
                        .all(|(j, r)| f64::from(*c) * f64::from(*r) == f64::from(taps[i * width + j]) * unscaled)
                });
                let largest = magnitude_sum(&column) * magnitude_sum(&row) * largest_sample;
                if !product || largest > LARGEST_EXACT {
                    return None;
                }
                (nonzero(&column) + nonzero(&row) < dense_taps)
                    .then(|| (column, tap_rows(&row, width, channels, false).remove(0), bits, largest))
            }
            None => None,
        };
        let (scale_bits, largest) = factors
            .as_ref()
            .map_or((dense_bits, dense_largest), |(_, _, bits, largest)| (*bits, *largest));
        let no_negative_tap = match &factors {
            Some((column, row, _, _)) => column.iter().chain(row.iter().map(|(_, w)| w)).all(|w| *w >= 0.0),
            None => second.is_none() && taps.iter().all(|w| *w >= 0.0),
        };
        let lanes = if largest <= LARGEST_NARROW {
            Lanes::I16
        } else if largest <= LARGEST_UNSIGNED_NARROW && no_negative_tap {
            Lanes::U16
        } else {
            Lanes::I32
        };
        // Taps over a power of two take integer lanes for speed alone (f32's sums are the
        // same), and 32-bit integer multiplies are no faster than f32's fused multiply-adds: a
        // 5x5 Gaussian of 16-bit samples took 5-9% longer in them on a 2-core AMD EPYC.
        if scale_bits > 0 && lanes == Lanes::I32 {
            return None;
        }
        let finish = Finish::of(mask, depth);
        let integer_finish = second
            .is_none()
            .then(|| IntegerFinish::of(&finish, scale_bits, largest))
            .flatten();
        Some(BandMask {
            width,
            height,
            rows,
            second: second.map(|s| tap_rows(&s, width, channels, false)),
            factors: factors.map(|(column, row, _, _)| (column, row)),
            lanes,
            scale_bits,
            integer_finish,
            finish,
            sparse: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_masks_with_sums_below_two_to_the_24_take_integer_lanes() {
        let eight = SampleDepth::EIGHT;
        let sixteen = SampleDepth { bits: 16, shift: 0 };
        let band = |spec: &str, depth| BandMask::of(&Mask::from_spec(spec).expect("a mask"), depth, 1);
        let sharpen = band("sharpen", eight);
        assert_eq!((sharpen.lanes, sharpen.integer_finish.is_some()), (Lanes::I16, true));
        assert_eq!(
            sharpen.rows.iter().map(Vec::len).sum::<usize>(),
            5,
            "zero taps left out"
        );
        let box9 = band("custom:matrix=[[1,1,1],[1,1,1],[1,1,1]],normalize=true", eight);
        assert_eq!(
            (box9.lanes, box9.integer_finish.is_some()),
            (Lanes::I16, true),
            "divided by 9, in integers"
        );
        assert!(box9.factors.is_some(), "a row pass and a column pass: 6 taps, not 9");
        assert!(band("sobel", eight)
            .second
            .is_some_and(|_| band("sobel", eight).lanes == Lanes::I16));
        assert_eq!(band("sharpen", sixteen).lanes, Lanes::I32);
        // A box is ones over w x h: its sums are whole, each divided once.
        let box5 = band("box:size=5", eight);
        assert_eq!(
            (box5.lanes, box5.integer_finish.is_some()),
            (Lanes::I16, true),
            "ones, divided by 25 in integers"
        );
        assert!(
            band("sobel", eight).integer_finish.is_none(),
            "a magnitude's square root"
        );
        assert!(box5.factors.is_some());
        assert_eq!(band("box:size=5", sixteen).lanes, Lanes::I32);
        assert_eq!(band("box:size=3,divisor=0.3", eight).lanes, Lanes::F32, "taps of 1/2.7");
        assert_eq!(band("gaussian:size=13", eight).lanes, Lanes::F32);
        let halves = band("sharpen:amount=0.5", eight);
        assert_eq!(
            (halves.lanes, halves.scale_bits),
            (Lanes::I16, 1),
            "taps of whole halves"
        );
        let float = band("sharpen:amount=0.3", eight);
        assert_eq!(float.lanes, Lanes::F32);
        assert_eq!(
            float.rows.iter().map(Vec::len).sum::<usize>(),
            5,
            "integer samples' f32 sums leave zero taps out: they add nothing to finite values"
        );
        let floats = BandMask::of_floats(&Mask::from_spec("sharpen:amount=0.3").expect("a mask"), 1);
        assert_eq!(
            floats.rows.iter().map(Vec::len).sum::<usize>(),
            9,
            "float values keep every tap"
        );
        let sparse = floats.sparse.expect("the taps without zeros");
        assert_eq!(sparse.rows.iter().map(Vec::len).sum::<usize>(), 5);
        assert!(
            BandMask::of_floats(&Mask::from_spec("gaussian:size=5").expect("a mask"), 1)
                .sparse
                .is_none()
        );
        // OpenCV's small Gaussians: whole numbers over 2^m, in two passes.
        let gaussian3 = band("gaussian:size=3", eight);
        assert_eq!(
            (
                gaussian3.lanes,
                gaussian3.scale_bits,
                gaussian3.integer_finish.is_some()
            ),
            (Lanes::I16, 4, true)
        );
        let gaussian5 = band("gaussian:size=5", eight);
        assert_eq!(
            (gaussian5.lanes, gaussian5.scale_bits),
            (Lanes::U16, 8),
            "16 * 16 * 255 passes i16"
        );
        assert_eq!(
            gaussian5.factors.as_ref().map(|f| f.0.clone()),
            Some(vec![1.0, 4.0, 6.0, 4.0, 1.0])
        );
        assert_eq!(
            band("gaussian:size=7", eight).lanes,
            Lanes::F32,
            "64 * 64 * 255: 32-bit, no faster"
        );
        assert_eq!(
            band("gaussian:size=5", sixteen).lanes,
            Lanes::F32,
            "16 * 16 * 65535: 32-bit"
        );
        let quarters = band("custom:matrix=[[0.5,-1.5,0.25],[0,1,0],[0.25,0,0]],bias=0.5", eight);
        assert_eq!(
            (quarters.lanes, quarters.scale_bits, quarters.integer_finish.is_some()),
            (Lanes::I16, 2, true)
        );
        let wide = "custom:matrix=[[255,255,255],[255,255,255],[255,255,255]]";
        assert_eq!(band(wide, eight).lanes, Lanes::I32, "9 * 255 * 255 passes i16");
        assert_eq!(band(wide, sixteen).lanes, Lanes::F32, "9 * 255 * 65535 passes 2^24");
    }
}

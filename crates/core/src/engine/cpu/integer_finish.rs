//! Exact sums finished in integers ([`IntegerFinish`]): `sample = ((S + offset) * multiplier)
//! >> shift`, clamped, for a row of integer lanes' sums `S`, giving the f32 finish's samples
//! (`finish::write_row`) without converting a sum to a float.
//!
//! The f32 finish takes `S` to `S / 2^m` (the lanes' scale, exact), divides by the divisor `d`,
//! adds the bias `b` (in sample units) and rounds half away from zero. With `D = d 2^m`, the
//! exact value is `x + b` with `x = S / D`, and `round(x + b) = floor((2 S + (2 b + 1) D) /
//! (2 D)) = floor((S + floor((2 b + 1) D / 2)) / D)` wherever that is not below zero (below, both
//! clamp to 0). The f32 steps give the
//! same samples in two cases, which are the only ones taken:
//!
//! - `d = 1`: dividing by `2^m` is exact, and so is adding a bias that is a whole number of
//!   `2^-m` while the total stays within 2^24. Nothing rounds before the final rounding.
//! - `D` a whole number and `2 b` a whole number (a box's `w h`, a custom matrix's divisor,
//!   no bias or a bias of whole or half levels): the quotient and the sum each round once, by
//!   at most `2^-24` of their size, so `|f32 - exact| < 2^-24 (2 |x| + |b|)` (to first
//!   order). The exact value is a whole number of `1 / (2 D)` away from each half, so a
//!   rounding can only go the other way if that error reaches `1 / (2 D)`: never while
//!   `4 S_max + 2 |b| D < 2^24` (checked with a margin). At a half exactly, `x` is whole or a
//!   half and f32 holds it and its sum with `b` exactly.
//!
//! Dividing by `D` is a multiply and a shift (`multiplier = ceil(2^shift / D)`), exact
//! for every numerator up to the largest the sums reach (Granlund and Montgomery's bound:
//! `(multiplier D - 2^shift) * largest < 2^shift`), in 32 bits, so a row vectorises.

use super::finish::Finish;
use super::lanes::Lane;

/// Every whole number up to this f32 holds exactly: 2^24.
const LARGEST_EXACT: f64 = 16_777_216.0;

/// How exact sums become samples in integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IntegerFinish {
    /// Added to the sum: `floor((2 b + 1) D / 2)`.
    offset: i32,
    multiplier: u32,
    shift: u32,
    /// The depth's largest sample.
    max: u32,
    /// Where a sample of more than 8 bits sits in its word (see `SampleDepth::shift`).
    word_shift: u32,
}

impl IntegerFinish {
    /// The integer finish of sums in lanes scaled by `2^scale_bits`, none larger in magnitude
    /// than `largest`, or `None` where it might not give the f32 finish's samples (float
    /// values, FFmpeg's arithmetic, a divisor or bias outside the cases above, sums too large
    /// for 32-bit products).
    pub(super) fn of(finish: &Finish, scale_bits: u32, largest: f64) -> Option<IntegerFinish> {
        if finish.float || finish.ffmpeg_rdiv.is_some() {
            return None;
        }
        let scale = f64::from(1u32 << scale_bits);
        let bias = f64::from(finish.bias * finish.depth.bias_scale());
        let divisor = f64::from(finish.divisor) * scale;
        let exact = if finish.divisor == 1.0 {
            (bias * scale).fract() == 0.0 && (bias * scale).abs() + largest <= LARGEST_EXACT
        } else {
            let margin = 4.001 * largest + 2.0 * bias.abs() * divisor;
            divisor >= 1.0 && divisor.fract() == 0.0 && (2.0 * bias).fract() == 0.0 && margin < LARGEST_EXACT
        };
        if !exact {
            return None;
        }
        // `(2 b + 1) D` is a whole number in either case; an odd one's half adds nothing to
        // `floor` of a whole numerator over `D`.
        let offset = ((2.0 * bias + 1.0) * divisor / 2.0).floor();
        let denominator = divisor as u64;
        let largest_numerator = (largest + offset.max(0.0)) as u64;
        let (multiplier, shift) = (0..32).find_map(|shift| {
            let multiplier = (1u64 << shift).div_ceil(denominator);
            let error = multiplier * denominator - (1u64 << shift);
            let fits = largest_numerator * multiplier <= u64::from(u32::MAX);
            (fits && error * largest_numerator < 1u64 << shift).then_some((multiplier, shift))
        })?;
        Some(IntegerFinish {
            offset: i32::try_from(offset as i64).ok()?,
            multiplier: multiplier as u32,
            shift,
            max: finish.depth.max_value(),
            word_shift: u32::from(finish.depth.shift),
        })
    }

    /// The sample of one sum (`multiplier` given apart, so that a constant 1 costs nothing).
    #[inline(always)]
    fn sample(self, sum: i32, multiplier: u32) -> u32 {
        // A numerator below zero is a value below zero, which the clamp makes 0.
        let numerator = (sum + self.offset).max(0) as u32;
        ((numerator * multiplier) >> self.shift).min(self.max)
    }

    /// Writes one row of sums as samples of the finish's depth: bytes, or little-endian words
    /// shifted into place. A divisor of a power of two (the lanes' scale alone, OpenCV's small
    /// Gaussians) takes a loop without the multiply.
    #[inline(always)]
    pub(super) fn write_row<T: Lane>(self, out: &mut [u8], sums: &[T]) {
        if self.multiplier == 1 {
            self.write_row_times(out, sums, 1);
        } else {
            self.write_row_times(out, sums, self.multiplier);
        }
    }

    #[inline(always)]
    fn write_row_times<T: Lane>(self, out: &mut [u8], sums: &[T], multiplier: u32) {
        if out.len() == sums.len() {
            for (o, s) in out.iter_mut().zip(sums) {
                *o = self.sample(s.get(), multiplier) as u8;
            }
        } else {
            for (o, s) in out.chunks_exact_mut(2).zip(sums) {
                let value = (self.sample(s.get(), multiplier) as u16) << self.word_shift;
                o.copy_from_slice(&value.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::finish::write_row;
    use super::*;
    use crate::frame::SampleDepth;

    fn finish(divisor: f32, bias: f32, depth: SampleDepth) -> Finish {
        Finish {
            divisor,
            bias,
            depth,
            ffmpeg_rdiv: None,
            float: false,
        }
    }

    /// Every sum a mask's lanes can hold, finished in integers, gives the f32 finish's sample:
    /// boxes' divisors (9 to 961), custom ones, biases of whole and half levels, lanes scaled
    /// by powers of two, 8, 10 and 16 bits. The cases the integer finish refuses are counted,
    /// so that a change that refuses them all fails too.
    #[test]
    fn integer_finish_gives_the_f32_finish_for_every_sum() {
        let eight = SampleDepth::EIGHT;
        let ten = SampleDepth { bits: 10, shift: 6 };
        let sixteen = SampleDepth { bits: 16, shift: 0 };
        let mut taken = 0;
        for (divisor, bias, depth, scale_bits, largest) in [
            (25.0, 0.0, eight, 0, 25.0 * 255.0),
            (9.0, 0.0, eight, 0, 9.0 * 255.0),
            (49.0, 0.0, eight, 0, 49.0 * 255.0),
            (961.0, 0.0, eight, 0, 961.0 * 255.0),
            (21.0, 0.0, eight, 0, 21.0 * 255.0),
            (25.0, 0.0, ten, 0, 25.0 * 1023.0),
            (25.0, 0.0, sixteen, 0, 25.0 * 65535.0),
            (6.0, 128.0, eight, 0, 16.0 * 255.0),
            (7.0, -3.5, eight, 0, 20.0 * 255.0),
            (10.0, 0.5, eight, 2, 4.0 * 40.0 * 255.0),
            (3.0, 0.0, eight, 4, 16.0 * 255.0),
            (1.0, 0.0, eight, 8, 256.0 * 255.0),
            (1.0, 0.25, eight, 2, 30.0 * 255.0),
            (1.0, 128.0, eight, 0, 12.0 * 255.0),
            (1.0, 0.0, sixteen, 0, 250.0 * 65535.0),
            (2.0, 64.0, sixteen, 0, 8.0 * 65535.0),
        ] {
            let finish = finish(divisor, bias, depth);
            let Some(integers) = IntegerFinish::of(&finish, scale_bits, largest) else {
                continue;
            };
            taken += 1;
            let largest = largest as i32;
            // Every sum of small ranges; of large ones, a stride prime to every divisor here
            // plus the sums around each sample's halves.
            let step = if largest < 1 << 18 { 1 } else { 97 };
            let scale = 1.0 / (1u32 << scale_bits) as f32;
            let bytes = depth.bytes();
            for sum in (-largest..=largest).step_by(step) {
                let mut by_floats = [0u8; 2];
                let mut by_integers = [0u8; 2];
                write_row(&mut by_floats[..bytes], &[sum as f32 * scale], finish);
                integers.write_row(&mut by_integers[..bytes], &[sum]);
                assert_eq!(
                    by_floats, by_integers,
                    "sum {sum}, divisor {divisor}, bias {bias}, scale 2^{scale_bits}, {} bits",
                    depth.bits
                );
            }
        }
        assert!(taken >= 14, "only {taken} of the cases taken in integers");
    }

    /// What is left to the f32 finish: divisors that are no whole number of the lanes' scale,
    /// biases of a quarter level with a divisor, float values, FFmpeg's arithmetic, and sums
    /// too large for the margin.
    #[test]
    fn finishes_that_might_round_otherwise_stay_in_f32() {
        let eight = SampleDepth::EIGHT;
        assert!(IntegerFinish::of(&finish(2.7, 0.0, eight), 0, 255.0).is_none());
        assert!(IntegerFinish::of(&finish(0.5, 0.0, eight), 0, 255.0).is_none());
        assert!(IntegerFinish::of(&finish(9.0, 0.25, eight), 0, 9.0 * 255.0).is_none());
        assert!(IntegerFinish::of(&finish(9.0, 0.0, eight), 0, 5_000_000.0).is_none());
        let float = Finish {
            float: true,
            ..finish(9.0, 0.0, eight)
        };
        assert!(IntegerFinish::of(&float, 0, 255.0).is_none());
        let ffmpeg = Finish {
            ffmpeg_rdiv: Some(1.0 / 9.0),
            ..finish(9.0, 0.0, eight)
        };
        assert!(IntegerFinish::of(&ffmpeg, 0, 255.0).is_none());
        assert!(IntegerFinish::of(&finish(25.0, 0.0, eight), 0, 25.0 * 255.0).is_some());
    }
}

//! How a row of sums becomes samples ([`write_row`]), shared by every CPU path: each sum
//! divided by the mask's divisor, plus the bias, rounded half away from zero and clamped, or
//! FFmpeg's own final step for a mask that takes its arithmetic; and a gradient magnitude's
//! square root ([`magnitude`]). The CUDA kernels' `to_sample` does the same, step for step.

use super::lanes::as_floats_mut;
use crate::frame::SampleDepth;
use crate::mask::Mask;

/// Final step shared by every path: add the bias, round half away from zero, clamp to
/// 0..=`max` (255 at 8 bits, 2^bits - 1 above).
#[inline(always)]
pub fn to_sample(sum: f32, bias: f32, max: f32) -> u16 {
    // `round` itself is `trunc(v + copysign(HALF_BELOW, v))`; a value below zero ends at 0
    // whichever way it rounds, so adding `HALF_BELOW` alone, clamping, and letting the
    // conversion truncate gives `round`'s samples in three vector steps fewer (the rounding
    // and the sign copy). `max` and `min` rather than `clamp`: they take NaN to 0 as the
    // saturating cast did, and leave a value that needs no saturation, so the conversion
    // vectorises (`as` checks each sample alone). The samples are the plain definition's
    // (`to_sample_by_round` in the tests) for every one of the 2^32 floats at 255, 1023 and
    // 65535 (checked once, exhaustively; the tests check the floats near every half).
    let value = ((sum + bias) + HALF_BELOW).max(0.0).min(max);
    // SAFETY: `value` is finite and within 0..=max (at most 65535): it fits an i32, and the
    // conversion truncates it (toward zero: it is not negative).
    unsafe { value.to_int_unchecked::<i32>() as u16 }
}

/// The float just below one half: a value of `x.5` or more gains a whole number when it is
/// added, one just below `x.5` does not (one half itself would carry `0.49999997` up).
const HALF_BELOW: f32 = 0.499_999_97;

/// The final step of FFmpeg's arithmetic (a mask's `rdiv`, see [`Mask::ffmpeg_rdiv`]): as its
/// `convolution` filter, `(int)(sum * rdiv + bias + 0.5f)`, each operation an f32 rounded
/// once (never fused), truncated toward zero, then clamped to 0..=`max`.
#[inline(always)]
pub fn to_sample_ffmpeg(sum: f32, rdiv: f32, bias: f32, max: f32) -> u16 {
    let value = (sum * rdiv + bias + 0.5).trunc().max(0.0).min(max);
    // SAFETY: `value` is finite and within 0..=max (at most 65535): it fits an i32.
    unsafe { value.to_int_unchecked::<i32>() as u16 }
}

/// The gradient magnitude of two sums, `sqrt(fma(a, a, b * b))`: the kernels' `magnitude`.
#[inline]
pub fn magnitude(a: f32, b: f32) -> f32 {
    a.mul_add(a, b * b).sqrt()
}

/// How a row of sums becomes samples: each sum divided by the mask's divisor (one IEEE
/// division, so an exact half of a whole sum stays exact; skipped for 1, which changes no
/// sum), plus the bias (given in 8-bit units, scaled to the depth), rounded and clamped; or,
/// for a mask that takes FFmpeg's arithmetic, FFmpeg's own final step with its `rdiv`.
#[derive(Clone, Copy)]
pub(super) struct Finish {
    pub(super) divisor: f32,
    pub(super) bias: f32,
    pub(super) depth: SampleDepth,
    pub(super) ffmpeg_rdiv: Option<f32>,
    /// float32 values out: divided and + bias (as written, not scaled), neither rounded nor
    /// clamped, as the kernels' float variants make them.
    pub(super) float: bool,
}

impl Finish {
    pub(super) fn of(mask: &Mask, depth: SampleDepth) -> Finish {
        Finish {
            divisor: mask.divisor(),
            bias: mask.bias(),
            depth,
            ffmpeg_rdiv: mask.ffmpeg_rdiv(),
            float: false,
        }
    }

    /// The finish of float32 values: the mask's divisor and bias, whatever arithmetic its
    /// integer samples would take.
    pub(super) fn of_floats(mask: &Mask) -> Finish {
        Finish {
            divisor: mask.divisor(),
            bias: mask.bias(),
            depth: SampleDepth::EIGHT,
            ffmpeg_rdiv: None,
            float: true,
        }
    }

    /// Whether a sum of -0 and one of +0 give the same output, so the sums may take a start
    /// that differs from the definition's only in a zero's sign (`lanes::FROM_ZERO`): always,
    /// but for float32 values with a bias of -0, the one addition that keeps a zero's sign
    /// (-0 + -0 is -0; + +0 or + any other bias gives the same value for either zero, and a
    /// sample rounds either to 0).
    pub(super) fn zero_sign_free(&self) -> bool {
        !(self.float && self.bias.to_bits() == (-0.0f32).to_bits())
    }
}

/// Writes one row of results as samples of `depth` (bytes, or little-endian words shifted
/// into place). Compiled for the CPU's vector extensions where it has them: without SSE4.1,
/// `round` is a call into libm per sample, slower than the convolution itself for small masks.
pub(super) fn write_row(out: &mut [u8], acc: &[f32], finish: Finish) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512F and BW (and so AVX2 and SSE4.1), the features the
            // function is compiled for.
            unsafe { write_row_avx512(out, acc, finish) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (and so SSE4.1), the features the function is compiled for.
            unsafe { write_row_avx2(out, acc, finish) };
            return;
        }
    }
    write_row_portable(out, acc, finish);
}

/// [`write_row`] for a mask that takes FFmpeg's arithmetic (`rdiv`).
#[inline(always)]
fn write_row_ffmpeg(out: &mut [u8], acc: &[f32], rdiv: f32, finish: Finish) {
    let depth = finish.depth;
    // FFmpeg adds its bias in the samples' own units (see `Mask::bias_at`).
    let (bias, max) = (finish.bias, depth.max_value() as f32);
    if depth.bytes() == 1 {
        out.iter_mut()
            .zip(acc)
            .for_each(|(o, a)| *o = to_sample_ffmpeg(*a, rdiv, bias, max) as u8);
    } else {
        out.chunks_exact_mut(2).zip(acc).for_each(|(o, a)| {
            o.copy_from_slice(&(to_sample_ffmpeg(*a, rdiv, bias, max) << depth.shift).to_le_bytes());
        });
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,sse4.1")]
unsafe fn write_row_avx512(out: &mut [u8], acc: &[f32], finish: Finish) {
    write_row_portable(out, acc, finish);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,sse4.1")]
unsafe fn write_row_avx2(out: &mut [u8], acc: &[f32], finish: Finish) {
    write_row_portable(out, acc, finish);
}

#[inline(always)]
fn write_row_portable(out: &mut [u8], acc: &[f32], finish: Finish) {
    if finish.float {
        return write_floats(out, acc, finish);
    }
    if let Some(rdiv) = finish.ffmpeg_rdiv {
        return write_row_ffmpeg(out, acc, rdiv, finish);
    }
    let divisor = finish.divisor;
    if divisor == 1.0 {
        write_samples(out, acc, finish, |a| a);
    } else {
        write_samples(out, acc, finish, |a| a / divisor);
    }
}

/// float32 values: as the kernels' `divided_plus_bias`, one IEEE division (skipped for a
/// divisor of 1), then + bias.
#[inline(always)]
fn write_floats(out: &mut [u8], acc: &[f32], finish: Finish) {
    let (divisor, bias) = (finish.divisor, finish.bias);
    // Values at their alignment are written as one slice of f32, which vectorises.
    if let Some(values) = as_floats_mut(out) {
        if divisor == 1.0 {
            values.iter_mut().zip(acc).for_each(|(o, a)| *o = *a + bias);
        } else {
            values.iter_mut().zip(acc).for_each(|(o, a)| *o = *a / divisor + bias);
        }
        return;
    }
    if divisor == 1.0 {
        for (o, a) in out.chunks_exact_mut(4).zip(acc) {
            o.copy_from_slice(&(*a + bias).to_ne_bytes());
        }
    } else {
        for (o, a) in out.chunks_exact_mut(4).zip(acc) {
            o.copy_from_slice(&(*a / divisor + bias).to_ne_bytes());
        }
    }
}

#[inline(always)]
fn write_samples(out: &mut [u8], acc: &[f32], finish: Finish, divide: impl Fn(f32) -> f32) {
    let depth = finish.depth;
    let (bias, max) = (finish.bias * depth.bias_scale(), depth.max_value() as f32);
    if depth.bytes() == 1 {
        out.iter_mut()
            .zip(acc)
            .for_each(|(o, a)| *o = to_sample(divide(*a), bias, max) as u8);
    } else {
        out.chunks_exact_mut(2).zip(acc).for_each(|(o, a)| {
            o.copy_from_slice(&(to_sample(divide(*a), bias, max) << depth.shift).to_le_bytes());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: the sum plus the bias rounded half away from zero, then clamped.
    fn to_sample_by_round(sum: f32, bias: f32, max: f32) -> u16 {
        let value = (sum + bias).round();
        if value.is_nan() {
            0
        } else {
            value.clamp(0.0, max) as u16
        }
    }

    /// Every float near each half and each whole number up to 65536 (those where rounding
    /// could go either way), their negatives, and the specials: the same sample as the
    /// definition at every depth's largest value.
    #[test]
    fn samples_equal_the_rounding_definition_near_every_half_and_whole_number() {
        let mut values = vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            0.0,
            -0.0,
        ];
        values.extend([f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 1e-45, -1e-45, 1e9, -1e9]);
        for k in 0..=131_072u32 {
            let centre = k as f32 / 2.0;
            let mut up = centre;
            let mut down = centre;
            for _ in 0..24 {
                values.extend([up, down, -up, -down]);
                up = up.next_up();
                down = down.next_down();
            }
        }
        for max in [255.0, 1023.0, 65_535.0] {
            for v in &values {
                assert_eq!(
                    to_sample(*v, 0.0, max),
                    to_sample_by_round(*v, 0.0, max),
                    "{v:e}, max {max}"
                );
            }
        }
    }

    #[test]
    fn samples_round_half_away_from_zero_and_clamp_whatever_the_sum() {
        let cases: [(f32, f32, f32, u16); 12] = [
            (0.5, 0.0, 255.0, 1),
            (0.499_999_97, 0.0, 255.0, 0),
            (2.5, 0.0, 255.0, 3),
            (-0.5, 0.0, 255.0, 0),
            (-3.0, 0.0, 255.0, 0),
            (254.5, 0.0, 255.0, 255),
            (255.6, 0.0, 255.0, 255),
            (1e30, 0.0, 255.0, 255),
            (f32::INFINITY, 0.0, 255.0, 255),
            (f32::NEG_INFINITY, 0.0, 255.0, 0),
            (f32::NAN, 0.0, 255.0, 0),
            (65_534.5, 0.0, 65_535.0, 65_535),
        ];
        for (sum, bias, max, expected) in cases {
            assert_eq!(to_sample(sum, bias, max), expected, "{sum} + {bias}, max {max}");
            assert_eq!(
                to_sample_by_round(sum, bias, max),
                expected,
                "{sum} + {bias}, max {max}"
            );
        }
        // The vectorised row writer gives what the scalar step gives, sample for sample.
        let sums: Vec<f32> = (0..1000)
            .map(|i| i as f32 * 0.37 - 60.0)
            .chain([f32::NAN, f32::INFINITY])
            .collect();
        let mut bytes = vec![0u8; sums.len()];
        let finish = Finish {
            divisor: 1.0,
            bias: 3.0,
            depth: SampleDepth::EIGHT,
            ffmpeg_rdiv: None,
            float: false,
        };
        write_row(&mut bytes, &sums, finish);
        for (byte, sum) in bytes.iter().zip(&sums) {
            assert_eq!(u16::from(*byte), to_sample(*sum, 3.0, 255.0), "{sum}");
        }
    }
}

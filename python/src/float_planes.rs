//! Float planes on the CPU: float32 values filtered with the GPU kernels' float arithmetic
//! (f32 sums with fused multiply-adds, taps added mask row by mask row, left to right; a
//! separable mask's row pass, then its column pass; a gradient magnitude's
//! `sqrt(fma(a, a, b * b))`; then divided by the mask's divisor (an integer mask sums its whole
//! taps, see `Mask::divisor`) and + bias, neither rounded nor clamped), so a float array
//! gives the same values on either device. Rows are filtered in parallel (rayon). Integer
//! samples take the CPU engine instead.

use convstream_core::BorderMode;
use convstream_core::Mask;
use rayon::prelude::*;

/// One float32 plane's place in memory: rows `row_pitch` bytes apart, samples
/// `sample_pitch` bytes apart within a row.
#[derive(Debug, Clone, Copy)]
pub struct FloatPlaneAt {
    pub address: usize,
    pub row_pitch: usize,
    pub sample_pitch: usize,
}

/// The plane with its border, as the kernels' shared tiles hold it: `height + mask_h - 1`
/// rows of `width + mask_w - 1` values.
struct Padded {
    values: Vec<f32>,
    width: usize,
}

/// Reads the plane at `from` with `border` applied `mask_w / 2` columns and `mask_h / 2` rows
/// beyond each edge.
///
/// # Safety
///
/// `from` holds `height` rows of `width` float32 values at its pitches.
unsafe fn padded(from: FloatPlaneAt, border: BorderMode, mask: &Mask, height: usize, width: usize) -> Padded {
    let (mask_w, mask_h) = (mask.width(), mask.height());
    let padded_w = width + mask_w - 1;
    let mapped = |index: usize, half: usize, len: usize| border.map(index as isize - half as isize, len);
    let columns: Vec<Option<usize>> = (0..padded_w).map(|x| mapped(x, mask_w / 2, width)).collect();
    let mut values = vec![0.0f32; padded_w * (height + mask_h - 1)];
    for (row, line) in values.chunks_exact_mut(padded_w).enumerate() {
        let Some(y) = mapped(row, mask_h / 2, height) else {
            continue;
        };
        for (value, x) in line.iter_mut().zip(&columns) {
            if let Some(x) = x {
                // SAFETY: (x, y) lies inside the source plane the caller vouches for.
                *value = unsafe { ((from.address + y * from.row_pitch + x * from.sample_pitch) as *const f32).read() };
            }
        }
    }
    Padded {
        values,
        width: padded_w,
    }
}

/// The dense sum of `taps` (row-major, `mask_w` a row) for the output at (x, y).
fn dense_sum(padded: &Padded, taps: &[f32], mask_w: usize, x: usize, y: usize) -> f32 {
    let mut sum = 0.0f32;
    for (i, row_taps) in taps.chunks_exact(mask_w).enumerate() {
        let line = &padded.values[(y + i) * padded.width + x..];
        for (tap, value) in row_taps.iter().zip(line) {
            sum = tap.mul_add(*value, sum);
        }
    }
    sum
}

/// The filtered values of the plane, `height` rows of `width`, before the bias.
fn sums(mask: &Mask, padded: &Padded, height: usize, width: usize) -> Vec<f32> {
    let mask_w = mask.width();
    let mut out = vec![0.0f32; width * height];
    match (mask.second_correlation_taps(), mask.correlation_factors()) {
        (Some(second), _) => {
            let first = mask.correlation_taps();
            out.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
                for (x, value) in row.iter_mut().enumerate() {
                    let a = dense_sum(padded, &first, mask_w, x, y);
                    let b = dense_sum(padded, &second, mask_w, x, y);
                    *value = a.mul_add(a, b * b).sqrt();
                }
            });
        }
        (None, Some((column_taps, row_taps))) => {
            // The row pass over every padded row, then the column pass over its sums.
            let mut rows = vec![0.0f32; width * (height + mask.height() - 1)];
            rows.par_chunks_mut(width)
                .zip(padded.values.par_chunks(padded.width))
                .for_each(|(sums, line)| {
                    for (x, sum) in sums.iter_mut().enumerate() {
                        *sum = row_taps
                            .iter()
                            .zip(&line[x..])
                            .fold(0.0f32, |sum, (tap, value)| tap.mul_add(*value, sum));
                    }
                });
            out.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
                for (x, value) in row.iter_mut().enumerate() {
                    *value = column_taps
                        .iter()
                        .enumerate()
                        .fold(0.0f32, |sum, (i, tap)| tap.mul_add(rows[(y + i) * width + x], sum));
                }
            });
        }
        (None, None) => {
            let taps = mask.correlation_taps();
            out.par_chunks_mut(width).enumerate().for_each(|(y, row)| {
                for (x, value) in row.iter_mut().enumerate() {
                    *value = dense_sum(padded, &taps, mask_w, x, y);
                }
            });
        }
    }
    out
}

/// Filters the `height x width` float32 plane at `from` into `to` with `mask`, `border`
/// applied beyond the edges.
///
/// # Safety
///
/// Both places hold `height` rows of `width` float32 values at their pitches, suitably
/// aligned; `from` stays unwritten and `to` untouched by anyone else during the call.
pub unsafe fn filter_float_plane(
    mask: &Mask,
    border: BorderMode,
    from: FloatPlaneAt,
    to: FloatPlaneAt,
    height: usize,
    width: usize,
) {
    if width == 0 || height == 0 {
        return;
    }
    // SAFETY: the caller vouches for `from`.
    let padded = unsafe { padded(from, border, mask, height, width) };
    let (bias, divisor) = (mask.bias(), mask.divisor());
    // As the kernels' `divided_plus_bias`: one IEEE division, skipped for a divisor of 1.
    let finish = |sum: f32| {
        let divided = if divisor == 1.0 { sum } else { sum / divisor };
        divided + bias
    };
    for (y, row) in sums(mask, &padded, height, width).chunks_exact(width).enumerate() {
        for (x, value) in row.iter().enumerate() {
            // SAFETY: (x, y) lies inside the output plane the caller vouches for.
            unsafe { ((to.address + y * to.row_pitch + x * to.sample_pitch) as *mut f32).write(finish(*value)) };
        }
    }
}

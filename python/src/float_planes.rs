//! Float planes on the CPU: float32 values filtered with the GPU kernels' float arithmetic
//! (f32 sums with fused multiply-adds, taps added mask row by mask row, left to right; a
//! separable mask's row pass, then its column pass; a gradient magnitude's
//! `sqrt(fma(a, a, b * b))`; then + bias, neither rounded nor clamped), so a float array
//! gives the same values on either device. Integer samples take the CPU engine instead.

use convstream_core::filter::BorderMode;
use convstream_core::mask::Mask;

/// One float32 plane's place in memory: rows `row_pitch` bytes apart, samples
/// `sample_pitch` bytes apart within a row.
#[derive(Debug, Clone, Copy)]
pub struct FloatPlaneAt {
    pub address: usize,
    pub row_pitch: usize,
    pub sample_pitch: usize,
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
    let (mask_w, mask_h) = (mask.width(), mask.height());
    let padded_w = width + mask_w - 1;
    let mapped = |index: usize, half: usize, len: usize| border.map(index as isize - half as isize, len);
    let columns: Vec<Option<usize>> = (0..padded_w).map(|x| mapped(x, mask_w / 2, width)).collect();
    // The plane with its border, as the kernels' shared tiles hold it.
    let mut padded = vec![0.0f32; padded_w * (height + mask_h - 1)];
    for (row, line) in padded.chunks_exact_mut(padded_w).enumerate() {
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
    let bias = mask.bias();
    let write = |x: usize, y: usize, value: f32| {
        // SAFETY: (x, y) lies inside the output plane the caller vouches for.
        unsafe { ((to.address + y * to.row_pitch + x * to.sample_pitch) as *mut f32).write(value + bias) };
    };
    let dense_sum = |taps: &[f32], x: usize, y: usize| {
        let mut sum = 0.0f32;
        for (i, row_taps) in taps.chunks_exact(mask_w).enumerate() {
            let line = &padded[(y + i) * padded_w + x..];
            for (tap, value) in row_taps.iter().zip(line) {
                sum = tap.mul_add(*value, sum);
            }
        }
        sum
    };
    match (mask.second_correlation_taps(), mask.correlation_factors()) {
        (Some(second), _) => {
            let first = mask.correlation_taps();
            for y in 0..height {
                for x in 0..width {
                    let (a, b) = (dense_sum(&first, x, y), dense_sum(&second, x, y));
                    write(x, y, a.mul_add(a, b * b).sqrt());
                }
            }
        }
        (None, Some((column_taps, row_taps))) => {
            // The row pass over every padded row, then the column pass over its sums.
            let mut rows = vec![0.0f32; width * (height + mask_h - 1)];
            for (sums, line) in rows.chunks_exact_mut(width).zip(padded.chunks_exact(padded_w)) {
                for (x, sum) in sums.iter_mut().enumerate() {
                    *sum = row_taps
                        .iter()
                        .zip(&line[x..])
                        .fold(0.0f32, |sum, (tap, value)| tap.mul_add(*value, sum));
                }
            }
            for y in 0..height {
                for x in 0..width {
                    let sum = column_taps
                        .iter()
                        .enumerate()
                        .fold(0.0f32, |sum, (i, tap)| tap.mul_add(rows[(y + i) * width + x], sum));
                    write(x, y, sum);
                }
            }
        }
        (None, None) => {
            let taps = mask.correlation_taps();
            for y in 0..height {
                for x in 0..width {
                    write(x, y, dense_sum(&taps, x, y));
                }
            }
        }
    }
}

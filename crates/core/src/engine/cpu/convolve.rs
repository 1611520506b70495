//! One plane through one mask on the CPU: samples to f32 rows with their borders, the taps
//! summed by [`accumulate`](super::accumulate) (SIMD across pixels, taps in the CUDA
//! kernels' order), and the sums rounded back to samples. Rows are shared out over every
//! core in bands; rank-one masks take a row pass then a column pass over its f32 results,
//! as on the GPU.

use rayon::prelude::*;

use super::accumulate::{accumulate, TapRow};
use crate::filter::BorderMode;
use crate::frame::{Plane, SampleDepth};
use crate::mask::Mask;

/// Output rows a parallel task takes at least: enough work to pay for the hand-off.
const MIN_ROWS_PER_TASK: usize = 4;

/// Final step shared by every path: add the bias, round half away from zero, clamp to
/// 0..=`max` (255 at 8 bits, 2^bits - 1 above).
#[inline(always)]
pub fn to_sample(sum: f32, bias: f32, max: f32) -> u16 {
    // `max` and `min` rather than `clamp`: they take NaN to 0 as the saturating cast did,
    // and leave a value that needs no saturation, so the conversion vectorises (`as`
    // checks each sample alone).
    let value = (sum + bias).round().max(0.0).min(max);
    // SAFETY: `value` is finite and within 0..=max (at most 65535): it fits an i32.
    unsafe { value.to_int_unchecked::<i32>() as u16 }
}

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
struct Finish {
    divisor: f32,
    bias: f32,
    depth: SampleDepth,
    ffmpeg_rdiv: Option<f32>,
}

impl Finish {
    fn of(mask: &Mask, depth: SampleDepth) -> Finish {
        Finish {
            divisor: mask.divisor(),
            bias: mask.bias(),
            depth,
            ffmpeg_rdiv: mask.ffmpeg_rdiv(),
        }
    }
}

/// Writes one row of results as samples of `depth` (bytes, or little-endian words shifted
/// into place). Compiled for the CPU's vector extensions where it has them: without SSE4.1,
/// `round` is a call into libm per sample, slower than the convolution itself for small masks.
fn write_row(out: &mut [u8], acc: &[f32], finish: Finish) {
    if let Some(rdiv) = finish.ffmpeg_rdiv {
        return write_row_ffmpeg(out, acc, rdiv, finish);
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (and so SSE4.1), the features the function is compiled for.
        unsafe { write_row_avx2(out, acc, finish) };
        return;
    }
    write_row_portable(out, acc, finish);
}

/// [`write_row`] for a mask that takes FFmpeg's arithmetic (`rdiv`).
fn write_row_ffmpeg(out: &mut [u8], acc: &[f32], rdiv: f32, finish: Finish) {
    let depth = finish.depth;
    let (bias, max) = (finish.bias * depth.bias_scale(), depth.max_value() as f32);
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
#[target_feature(enable = "avx2,sse4.1")]
unsafe fn write_row_avx2(out: &mut [u8], acc: &[f32], finish: Finish) {
    write_row_portable(out, acc, finish);
}

#[inline(always)]
fn write_row_portable(out: &mut [u8], acc: &[f32], finish: Finish) {
    let divisor = finish.divisor;
    if divisor == 1.0 {
        write_samples(out, acc, finish, |a| a);
    } else {
        write_samples(out, acc, finish, |a| a / divisor);
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

/// Source index for each padded position `-(taps/2) .. len + taps/2`; `None` reads as 0.
fn index_map(len: usize, taps: usize, border: BorderMode) -> Vec<Option<usize>> {
    let centre = (taps / 2) as isize;
    (0..len + taps - 1)
        .map(|p| border.map(p as isize - centre, len))
        .collect()
}

/// Copies source row `row` into `padded` (as f32 sample values) with `mask_width - 1`
/// border samples around it: the picture's own samples in one straight loop, the border
/// ones through `xmap`.
fn pad_row(row: &[u8], channels: usize, depth: SampleDepth, xmap: &[Option<usize>], padded: &mut [f32]) {
    let wide = depth.bytes() == 2;
    let read = |i: usize| -> f32 {
        if wide {
            (u16::from_le_bytes([row[2 * i], row[2 * i + 1]]) >> depth.shift) as f32
        } else {
            row[i] as f32
        }
    };
    let width = row.len() / depth.bytes() / channels;
    let left = (xmap.len() - width) / 2;
    let inside = &mut padded[left * channels..(left + width) * channels];
    if wide {
        for (value, bytes) in inside.iter_mut().zip(row.chunks_exact(2)) {
            *value = (u16::from_le_bytes([bytes[0], bytes[1]]) >> depth.shift) as f32;
        }
    } else {
        for (value, byte) in inside.iter_mut().zip(row) {
            *value = f32::from(*byte);
        }
    }
    let outside = (0..left).chain(left + width..xmap.len());
    for p in outside {
        for c in 0..channels {
            padded[p * channels + c] = xmap[p].map_or(0.0, |x| read(x * channels + c));
        }
    }
}

/// Runs `work` with an f32 buffer of `len` values (their contents unspecified) kept by the
/// calling thread from one call to the next: a pipeline's filter thread converts every
/// frame into the same memory instead of allocating, zeroing and faulting in megabytes a
/// plane. A call nested on the same thread (a rayon worker that picks up another plane
/// while it waits) gets a buffer of its own.
fn with_scratch<R>(len: usize, work: impl FnOnce(&mut [f32]) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffer) => {
            if buffer.len() < len {
                buffer.resize(len, 0.0);
            }
            work(&mut buffer[..len])
        }
        Err(_) => work(&mut vec![0f32; len]),
    })
}

/// Every row of `src` as f32 with its left and right borders for a mask `mask_width` wide,
/// one after the other (`padded_len` values each) in `rows`, converted once and shared by
/// every output row that reads it.
fn pad_rows(src: &Plane, mask_width: usize, border: BorderMode, rows: &mut [f32]) {
    let xmap = index_map(src.width, mask_width, border);
    let padded_len = (src.width + mask_width - 1) * src.channels;
    rows.par_chunks_mut(padded_len.max(1))
        .with_min_len(MIN_ROWS_PER_TASK)
        .enumerate()
        .for_each(|(y, padded)| pad_row(src.row(y), src.channels, src.depth, &xmap, padded));
}

/// Convolves every channel of `src`; the result has tightly packed rows. Sums are f32 with
/// fused multiply-adds in tap order: rank-one masks take a row pass then a column pass
/// (over the f32 row sums), others add every tap of a pixel, mask row by mask row. A mask
/// of zeros alone (`neutral`) writes its bias everywhere without a pass: the sum of every
/// pixel is 0.
pub fn convolve_plane(src: &Plane, mask: &Mask, border: BorderMode) -> Plane {
    let border = border.for_mask(mask.width(), mask.height());
    if mask.is_constant() {
        return constant_plane(src, mask);
    }
    match mask.correlation_factors() {
        Some((column, row)) => convolve_separable(src, &column, &row, Finish::of(mask, src.depth), border),
        None => convolve_dense(src, mask, border),
    }
}

/// A plane of `src`'s shape whose every sample is what a sum of 0 gives through `mask`.
fn constant_plane(src: &Plane, mask: &Mask) -> Plane {
    let mut dst = Plane::new(src.shape());
    let zeros = vec![0f32; src.width * src.channels];
    dst.data
        .par_chunks_mut(src.row_bytes().max(1))
        .with_min_len(MIN_ROWS_PER_TASK)
        .for_each(|out| write_row(out, &zeros, Finish::of(mask, src.depth)));
    dst
}

/// Dense masks, and gradient magnitudes (two dense sums `a` and `b` of the same taps' order,
/// then `sqrt(fma(a, a, b * b))`, each step rounded once as the GPU kernels do).
fn convolve_dense(src: &Plane, mask: &Mask, border: BorderMode) -> Plane {
    let (mw, mh) = (mask.width(), mask.height());
    let ymap = index_map(src.height, mh, border);
    let padded_len = (src.width + mw - 1) * src.channels;
    with_scratch(padded_len * src.height, |padded| {
        pad_rows(src, mw, border, padded);
        dense_rows(src, mask, &ymap, padded, padded_len)
    })
}

/// The output rows of a dense mask over the padded source rows.
fn dense_rows(src: &Plane, mask: &Mask, ymap: &[Option<usize>], padded: &[f32], padded_len: usize) -> Plane {
    let (mw, mh) = (mask.width(), mask.height());
    let taps = mask.correlation_taps();
    let second_taps = mask.second_correlation_taps();
    let (ch, depth) = (src.channels, src.depth);
    let row_len = src.width * ch;
    let second_len = if second_taps.is_some() { row_len } else { 0 };
    let mut dst = Plane::new(src.shape());
    dst.data
        .par_chunks_mut(src.row_bytes().max(1))
        .with_min_len(MIN_ROWS_PER_TASK)
        .enumerate()
        .for_each_init(
            || (vec![0f32; row_len], vec![0f32; second_len]),
            |(acc, second), (y, out)| {
                // Mask rows whose source row is outside the plane under `constant` add
                // nothing and are left out, as the kernels leave them out.
                let source_rows: Vec<(usize, usize)> = (0..mh).filter_map(|i| ymap[y + i].map(|sy| (i, sy))).collect();
                let rows_of = |taps| dense_tap_rows(padded, padded_len, &source_rows, taps, mw);
                accumulate(&rows_of(&taps), ch, acc);
                if let Some(second_taps) = &second_taps {
                    accumulate(&rows_of(second_taps), ch, second);
                    acc.iter_mut()
                        .zip(second.iter())
                        .for_each(|(a, b)| *a = magnitude(*a, *b));
                }
                write_row(out, acc, Finish::of(mask, depth));
            },
        );
    dst
}

/// The tap rows of one output row of a dense mask: mask row `i` over padded source row
/// `sy`, for each `(i, sy)` of `source_rows`.
fn dense_tap_rows<'a>(
    padded: &'a [f32],
    padded_len: usize,
    source_rows: &[(usize, usize)],
    taps: &'a [f32],
    mask_width: usize,
) -> Vec<TapRow<'a>> {
    source_rows
        .iter()
        .map(|&(i, sy)| TapRow {
            row: &padded[sy * padded_len..(sy + 1) * padded_len],
            weights: &taps[i * mask_width..(i + 1) * mask_width],
        })
        .collect()
}

fn convolve_separable(src: &Plane, column: &[f32], row: &[f32], finish: Finish, border: BorderMode) -> Plane {
    let (mw, mh) = (row.len(), column.len());
    let row_len = src.width * src.channels;
    let xmap = index_map(src.width, mw, border);
    let ymap = index_map(src.height, mh, border);
    with_scratch(row_len * src.height, |horizontal| {
        row_pass(src, row, &xmap, horizontal);
        column_pass(src, column, finish, &ymap, horizontal)
    })
}

/// Row pass over every source row, kept in f32 in `horizontal`.
fn row_pass(src: &Plane, row: &[f32], xmap: &[Option<usize>], horizontal: &mut [f32]) {
    let (mw, ch, depth) = (row.len(), src.channels, src.depth);
    let row_len = src.width * ch;
    horizontal
        .par_chunks_mut(row_len.max(1))
        .with_min_len(MIN_ROWS_PER_TASK)
        .enumerate()
        .for_each_init(
            || vec![0f32; (src.width + mw - 1) * ch],
            |padded, (y, out)| {
                pad_row(src.row(y), ch, depth, xmap, padded);
                accumulate(
                    &[TapRow {
                        row: padded,
                        weights: row,
                    }],
                    ch,
                    out,
                );
            },
        );
}

/// Column pass over the row pass's results: one tap per source row, in the column
/// factor's order, then rounded to samples.
fn column_pass(src: &Plane, column: &[f32], finish: Finish, ymap: &[Option<usize>], horizontal: &[f32]) -> Plane {
    let row_len = src.width * src.channels;
    let mut dst = Plane::new(src.shape());
    dst.data
        .par_chunks_mut(src.row_bytes().max(1))
        .with_min_len(MIN_ROWS_PER_TASK)
        .enumerate()
        .for_each_init(
            || vec![0f32; row_len],
            |acc, (y, out)| {
                let tap_rows: Vec<TapRow> = column
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| {
                        ymap[y + i].map(|sy| TapRow {
                            row: &horizontal[sy * row_len..(sy + 1) * row_len],
                            weights: std::slice::from_ref(t),
                        })
                    })
                    .collect();
                accumulate(&tap_rows, 1, acc);
                write_row(out, acc, finish);
            },
        );
    dst
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::PlaneShape;

    /// Planes filtered from inside rayon's own workers, many at once (a worker waiting on
    /// its rows may take up another plane, nesting on its scratch buffer), give what one
    /// plane at a time gives.
    #[test]
    fn planes_filtered_in_parallel_from_rayon_workers_match_one_at_a_time() {
        let mut plane = Plane::new(PlaneShape::eight_bit(301, 97, 1));
        for (i, byte) in plane.data.iter_mut().enumerate() {
            *byte = (i * 7919 % 251) as u8;
        }
        let masks = [
            Mask::from_spec("gaussian:size=7").unwrap(),
            Mask::from_spec("edge:size=9").unwrap(),
            Mask::from_spec("sobel").unwrap(),
        ];
        let expected: Vec<Vec<u8>> = masks
            .iter()
            .map(|mask| convolve_plane(&plane, mask, BorderMode::Mirror).data.to_vec())
            .collect();
        let results: Vec<(usize, Vec<u8>)> = (0..48)
            .into_par_iter()
            .map(|i| {
                (
                    i % 3,
                    convolve_plane(&plane, &masks[i % 3], BorderMode::Mirror).data.to_vec(),
                )
            })
            .collect();
        for (which, data) in results {
            assert!(data == expected[which], "mask {which} differs when run in parallel");
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
        };
        write_row(&mut bytes, &sums, finish);
        for (byte, sum) in bytes.iter().zip(&sums) {
            assert_eq!(u16::from(*byte), to_sample(*sum, 3.0, 255.0), "{sum}");
        }
    }
}

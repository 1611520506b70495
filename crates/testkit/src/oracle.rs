//! The test oracle: a brute-force true convolution written from the definition
//! (`scipy.ndimage.convolve(plane, mask, mode=border, cval=0)`), sharing no code with the
//! engines. SciPy's border modes are implemented by folding an index back one reflection
//! (or one period) at a time. Sums are f32 with one fused multiply-add per tap, in tap
//! order, each sum then divided by the mask's divisor (an integer matrix's taps are summed as
//! whole numbers): the arithmetic the engines promise, so results must match bit for bit.

use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_core::{Plane, SampleDepth};

/// SciPy's extension of a line of `len` samples, folding the index back one reflection
/// (or one period) at a time until it lands inside. `None` is the constant 0.
pub fn oracle_index(mode: BorderMode, mut index: i64, len: i64) -> Option<usize> {
    assert!(len > 0);
    loop {
        if (0..len).contains(&index) {
            return Some(index as usize);
        }
        match mode {
            // 0 0 0 | a b c d | 0 0 0
            BorderMode::Constant => return None,
            // a a a | a b c d | d d d
            BorderMode::Nearest => index = if index < 0 { 0 } else { len - 1 },
            // c b a | a b c d | d c b: the edge sample repeats.
            BorderMode::Reflect => {
                index = if index < 0 { -index - 1 } else { 2 * len - 1 - index };
            }
            // d c b | a b c d | c b a: the edge sample does not repeat.
            BorderMode::Mirror => {
                if len == 1 {
                    return Some(0);
                }
                index = if index < 0 { -index } else { 2 * (len - 1) - index };
            }
            // b c d | a b c d | a b c
            BorderMode::Wrap => index += if index < 0 { len } else { -len },
            // FFmpeg's 3x3 rule, c b | a b c d | d c: mirrored before, reflected after (the
            // oracle's callers give other mask sizes `mirror`, as the engines do).
            BorderMode::Ffmpeg if index < 0 => return oracle_index(BorderMode::Mirror, index, len),
            BorderMode::Ffmpeg => return oracle_index(BorderMode::Reflect, index, len),
        }
    }
}

/// Channel `c` of the pixel at (`y`, `x`), extended past the edges by `mode`.
fn oracle_sample(plane: &Plane, mode: BorderMode, y: i64, x: i64, c: usize) -> f32 {
    match (
        oracle_index(mode, y, plane.height as i64),
        oracle_index(mode, x, plane.width as i64),
    ) {
        (Some(y), Some(x)) => {
            let index = x * plane.channels + c;
            let row = &plane.data[y * plane.stride..];
            match plane.depth.bits {
                8 => row[index] as f32,
                _ => (u16::from_le_bytes([row[2 * index], row[2 * index + 1]]) >> plane.depth.shift) as f32,
            }
        }
        _ => 0.0,
    }
}

/// Appends one output sample as the plane stores it: a byte at 8 bits, else a
/// little-endian word shifted into place. The sum is divided by the mask's divisor; the bias
/// is in 8-bit units: times 2^(bits - 8).
fn oracle_pixel(out: &mut Vec<u8>, sum: f32, mask: &Mask, depth: SampleDepth) {
    let scale = f32::powi(2.0, depth.bits as i32 - 8);
    let max = f32::powi(2.0, depth.bits as i32) - 1.0;
    let value = (sum / mask.divisor() + mask.bias() * scale).round().clamp(0.0, max) as u16;
    match depth.bits {
        8 => out.push(value as u8),
        _ => out.extend_from_slice(&(value << depth.shift).to_le_bytes()),
    }
}

/// The coefficients a mask's sums are made of, as a matrix indexed `[row][column]`.
fn coefficient_rows(mask: &Mask) -> Vec<Vec<f32>> {
    mask.summed_coefficients()
        .chunks(mask.width())
        .map(|r| r.to_vec())
        .collect()
}

/// Direct convolution: the mask turned 180 degrees, slid over the plane, summed in f32 row
/// by row of the mask, one fused multiply-add per tap. Returns tightly packed rows (as the
/// plane stores samples).
/// A gradient magnitude sums both of its matrices that way and gives
/// `sqrt(fma(a, a, b * b))` of the two sums, plus the bias.
pub fn oracle_dense(plane: &Plane, mask: &Mask, mode: BorderMode) -> Vec<u8> {
    let k = coefficient_rows(mask);
    let (mh, mw) = (k.len(), k[0].len());
    let (cy, cx) = ((mh / 2) as i64, (mw / 2) as i64);
    let turned = |k: &[Vec<f32>]| -> Vec<Vec<f32>> {
        (0..mh)
            .map(|i| (0..mw).map(|j| k[mh - 1 - i][mw - 1 - j]).collect())
            .collect()
    };
    let taps = turned(&k);
    let second: Option<Vec<Vec<f32>>> = mask
        .summed_second()
        .map(|c| turned(&c.chunks(mw).map(|r| r.to_vec()).collect::<Vec<_>>()));
    let mut out = Vec::with_capacity(plane.width * plane.height * plane.channels);
    for y in 0..plane.height as i64 {
        for x in 0..plane.width as i64 {
            for c in 0..plane.channels {
                let sum = |taps: &[Vec<f32>]| {
                    let mut acc = 0f32;
                    for (i, tap_row) in taps.iter().enumerate() {
                        for (j, tap) in tap_row.iter().enumerate() {
                            acc = tap.mul_add(oracle_sample(plane, mode, y + i as i64 - cy, x + j as i64 - cx, c), acc);
                        }
                    }
                    acc
                };
                let value = match &second {
                    None => sum(&taps),
                    Some(second) => {
                        let (a, b) = (sum(&taps), sum(second));
                        a.mul_add(a, b * b).sqrt()
                    }
                };
                oracle_pixel(&mut out, value, mask, plane.depth);
            }
        }
    }
    out
}

/// Row pass then column pass with the mask's 1D factors (each turned around), kept in f32
/// between the passes. The column pass extends the row-pass result, as a separable filter does.
pub fn oracle_separable(plane: &Plane, mask: &Mask, mode: BorderMode) -> Vec<u8> {
    let factors = mask.summed_factors().expect("a separable mask");
    let row_taps: Vec<f32> = factors.row.iter().rev().copied().collect();
    let column_taps: Vec<f32> = factors.column.iter().rev().copied().collect();
    let (cy, cx) = ((column_taps.len() / 2) as i64, (row_taps.len() / 2) as i64);
    let (w, h, ch) = (plane.width as i64, plane.height as i64, plane.channels);
    // The row pass, sample (y, x, c) at [(y * w + x) * ch + c].
    let at = |y: usize, x: i64, c: usize| (y * w as usize + x as usize) * ch + c;
    let mut horizontal = vec![0f32; (w * h) as usize * ch];
    for y in 0..h {
        for x in 0..w {
            for c in 0..ch {
                let mut acc = 0f32;
                for (j, tap) in row_taps.iter().enumerate() {
                    acc = tap.mul_add(oracle_sample(plane, mode, y, x + j as i64 - cx, c), acc);
                }
                horizontal[at(y as usize, x, c)] = acc;
            }
        }
    }
    let mut out = Vec::with_capacity((w * h) as usize * ch);
    for y in 0..h {
        for x in 0..w {
            for c in 0..ch {
                let mut acc = 0f32;
                for (i, tap) in column_taps.iter().enumerate() {
                    if let Some(sy) = oracle_index(mode, y + i as i64 - cy, h) {
                        acc = tap.mul_add(horizontal[at(sy, x, c)], acc);
                    }
                }
                oracle_pixel(&mut out, acc, mask, plane.depth);
            }
        }
    }
    out
}

pub fn oracle(plane: &Plane, mask: &Mask, mode: BorderMode) -> Vec<u8> {
    let mode = mode.for_mask(mask.width(), mask.height());
    if mask.is_separable() {
        oracle_separable(plane, mask, mode)
    } else {
        oracle_dense(plane, mask, mode)
    }
}

//! The inner loop of every CPU convolution: sums of taps over a row of f32 samples, SIMD
//! across pixels and never across taps.
//!
//! Each output element accumulates its taps one by one in the order given, each with one
//! fused multiply-add (`acc = fma(w, v, acc)`, one rounding per tap as the CUDA kernels'
//! `fmaf`), so the result is the same bit for bit whatever the vector width: the scalar
//! tail, the portable loop, AVX2 and AVX-512 all give what the CUDA engine gives. Speed
//! comes from register blocking: a block of output elements stays in registers while every
//! tap passes over it, so each tap costs one load and one FMA per vector, not a load and a
//! store of the accumulator as well.

/// The taps one source row contributes to an output row: `weights[j]` multiplies
/// `row[e + j * stride]` for output element `e`.
pub struct TapRow<'a> {
    pub row: &'a [f32],
    pub weights: &'a [f32],
}

/// `out[e] = sum over tap rows, then their weights in order, of fma(weight, row[e + j * stride], acc)`,
/// starting from 0. Every `row` holds at least `out.len() + (weights.len() - 1) * stride` values.
pub fn accumulate(rows: &[TapRow], stride: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, the feature the function is compiled for.
            unsafe { accumulate_avx512(rows, stride, out) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA, the features the function is compiled for.
            unsafe { accumulate_avx2(rows, stride, out) };
            return;
        }
    }
    accumulate_blocked::<16>(rows, stride, out);
}

/// 64 elements (four 512-bit registers) a block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn accumulate_avx512(rows: &[TapRow], stride: usize, out: &mut [f32]) {
    accumulate_blocked::<64>(rows, stride, out);
}

/// 32 elements (four 256-bit registers) a block.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn accumulate_avx2(rows: &[TapRow], stride: usize, out: &mut [f32]) {
    accumulate_blocked::<32>(rows, stride, out);
}

/// Blocks of `BLOCK` elements with their accumulators in registers, then the tail one
/// element at a time in the same order. Compiled once per target feature set above, so
/// `mul_add` becomes vector FMA instructions where the CPU has them.
#[inline(always)]
pub fn accumulate_blocked<const BLOCK: usize>(rows: &[TapRow], stride: usize, out: &mut [f32]) {
    let len = out.len();
    let mut start = 0;
    while start + BLOCK <= len {
        let mut acc = [0f32; BLOCK];
        for tap_row in rows {
            for (j, &weight) in tap_row.weights.iter().enumerate() {
                let at = start + j * stride;
                let values: &[f32; BLOCK] = tap_row.row[at..at + BLOCK].try_into().expect("a block");
                for (a, v) in acc.iter_mut().zip(values) {
                    *a = weight.mul_add(*v, *a);
                }
            }
        }
        out[start..start + BLOCK].copy_from_slice(&acc);
        start += BLOCK;
    }
    for (e, slot) in out.iter_mut().enumerate().skip(start) {
        let mut acc = 0f32;
        for tap_row in rows {
            for (j, &weight) in tap_row.weights.iter().enumerate() {
                acc = weight.mul_add(tap_row.row[e + j * stride], acc);
            }
        }
        *slot = acc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain definition: per element, taps in order, one FMA each.
    fn reference(rows: &[TapRow], stride: usize, len: usize) -> Vec<f32> {
        (0..len)
            .map(|e| {
                rows.iter().fold(0f32, |acc, r| {
                    r.weights
                        .iter()
                        .enumerate()
                        .fold(acc, |acc, (j, w)| w.mul_add(r.row[e + j * stride], acc))
                })
            })
            .collect()
    }

    fn bits(values: &[f32]) -> Vec<u32> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn every_block_width_and_the_dispatch_equal_the_definition_bit_for_bit() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 510.0 - 255.0
        };
        for len in [0usize, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 1923] {
            for (rows_count, taps, stride) in [(1, 1, 1), (1, 3, 1), (3, 3, 3), (5, 13, 2), (13, 13, 1), (2, 1, 4)] {
                let row_len = len + (taps - 1) * stride;
                let data: Vec<Vec<f32>> = (0..rows_count)
                    .map(|_| (0..row_len).map(|_| next()).collect())
                    .collect();
                let weights: Vec<Vec<f32>> = (0..rows_count)
                    .map(|_| (0..taps).map(|_| next() / 100.0).collect())
                    .collect();
                let rows: Vec<TapRow> = data
                    .iter()
                    .zip(&weights)
                    .map(|(row, weights)| TapRow { row, weights })
                    .collect();
                let expected = reference(&rows, stride, len);
                let mut out = vec![f32::NAN; len];
                accumulate(&rows, stride, &mut out);
                assert_eq!(bits(&out), bits(&expected), "dispatch, len {len}");
                #[cfg(target_arch = "x86_64")]
                for (present, block) in [
                    (
                        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma"),
                        32,
                    ),
                    (std::is_x86_feature_detected!("avx512f"), 64),
                ] {
                    if !present {
                        continue;
                    }
                    let mut out = vec![f32::NAN; len];
                    // SAFETY: the CPU has the features each function is compiled for.
                    unsafe {
                        match block {
                            32 => accumulate_avx2(&rows, stride, &mut out),
                            _ => accumulate_avx512(&rows, stride, &mut out),
                        }
                    }
                    assert_eq!(bits(&out), bits(&expected), "block {block}, len {len}");
                }
                for block in [1usize, 8, 16] {
                    let mut out = vec![f32::NAN; len];
                    match block {
                        1 => accumulate_blocked::<1>(&rows, stride, &mut out),
                        8 => accumulate_blocked::<8>(&rows, stride, &mut out),
                        _ => accumulate_blocked::<16>(&rows, stride, &mut out),
                    }
                    assert_eq!(bits(&out), bits(&expected), "block {block}, len {len}");
                }
            }
        }
    }
}

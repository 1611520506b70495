//! One plane through one mask on the CPU ([`convolve_plane`], or [`convolve_plane_into`] the
//! caller's memory): the border mode the mask's size takes, a mask of zeros alone (`neutral`)
//! written as its bias without a pass, every other mask through the band loops of `bands.rs`.

use rayon::prelude::*;

use super::band_mask::BandMask;
use super::bands::convolve_bands;
use super::finish::{write_row, Finish};
use super::rows::{MIN_ROWS_PER_TASK, TILE_SAMPLES};
use crate::filter::BorderMode;
use crate::frame::Plane;
use crate::mask::Mask;

/// Convolves every channel of `src`; the result has tightly packed rows. Sums are f32 with
/// fused multiply-adds in tap order (rank-one masks take a row pass then a column pass over
/// the f32 row sums, others add every tap of a pixel, mask row by mask row), or exact integer
/// sums where the order cannot matter (see `band_mask.rs`): the same samples. A mask of zeros
/// alone (`neutral`) writes its bias everywhere without a pass: the sum of every pixel is 0.
pub fn convolve_plane(src: &Plane, mask: &Mask, border: BorderMode) -> Plane {
    let mut dst = Plane::new(src.shape());
    let stride = dst.stride;
    convolve_plane_into(src, mask, border, &mut dst.data, stride);
    dst
}

/// [`convolve_plane`] into memory the caller holds (a NumPy array, a pooled frame): `out`
/// takes `src.height` rows of `src.row_bytes()` bytes, `out_stride` bytes apart; the bytes
/// between rows are left as they are.
///
/// # Panics
///
/// When `out` is shorter than those rows, or `out_stride` than a row.
pub fn convolve_plane_into(src: &Plane, mask: &Mask, border: BorderMode, out: &mut [u8], out_stride: usize) {
    let row_bytes = src.row_bytes();
    assert!(out_stride >= row_bytes, "output rows overlap");
    let needed = src
        .height
        .checked_sub(1)
        .map_or(0, |rows| rows * out_stride + row_bytes);
    assert!(out.len() >= needed, "the output holds {} bytes of {needed}", out.len());
    let out = &mut out[..needed];
    let border = border.for_mask(mask.width(), mask.height());
    if mask.is_constant() {
        // A tile of zero sums at a time: a row of them would cost four bytes a sample.
        let zeros = vec![0f32; (src.width * src.channels).min(TILE_SAMPLES)];
        let finish = Finish::of(mask, src.depth);
        out.par_chunks_mut(out_stride.max(1))
            .with_min_len(MIN_ROWS_PER_TASK)
            .for_each(|row| {
                for tile in row[..row_bytes].chunks_mut(TILE_SAMPLES * src.depth.bytes()) {
                    write_row(tile, &zeros, finish);
                }
            });
        return;
    }
    convolve_bands(
        src,
        &BandMask::of(mask, src.depth, src.channels),
        border,
        out,
        out_stride,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::PlaneShape;

    /// Planes filtered from inside rayon's own workers, many at once (a worker waiting on
    /// its bands may take up another plane, between two bands of its own), give what one
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

    /// Into the caller's memory, rows wider apart than the samples: each row as
    /// `convolve_plane` gives it, the bytes between rows untouched.
    #[test]
    fn a_plane_filtered_into_strided_memory_leaves_the_bytes_between_rows_alone() {
        let mut plane = Plane::new(PlaneShape::eight_bit(37, 23, 2));
        for (i, byte) in plane.data.iter_mut().enumerate() {
            *byte = (i * 7919 % 251) as u8;
        }
        for spec in ["sharpen", "gaussian:size=5", "neutral:bias=9", "sobel"] {
            let mask = Mask::from_spec(spec).unwrap();
            let expected = convolve_plane(&plane, &mask, BorderMode::Reflect);
            let stride = plane.row_bytes() + 5;
            let mut out = vec![0xA5u8; stride * (plane.height - 1) + plane.row_bytes()];
            convolve_plane_into(&plane, &mask, BorderMode::Reflect, &mut out, stride);
            for y in 0..plane.height {
                let row = &out[y * stride..y * stride + plane.row_bytes()];
                assert_eq!(row, expected.row(y), "{spec}, row {y}");
                if y + 1 < plane.height {
                    let gap = &out[y * stride + plane.row_bytes()..(y + 1) * stride];
                    assert!(
                        gap.iter().all(|b| *b == 0xA5),
                        "{spec}: the bytes after row {y} changed"
                    );
                }
            }
        }
    }
}

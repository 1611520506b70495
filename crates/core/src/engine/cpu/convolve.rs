//! One plane through one mask on the CPU ([`convolve_plane`]): the border mode the mask's
//! size takes, a mask of zeros alone (`neutral`) written as its bias without a pass, every
//! other mask through the band loops of `bands.rs`.

use rayon::prelude::*;

use super::band_mask::BandMask;
use super::bands::convolve_bands;
use super::finish::{write_row, Finish};
use super::rows::MIN_ROWS_PER_TASK;
use crate::filter::BorderMode;
use crate::frame::Plane;
use crate::mask::Mask;

/// Convolves every channel of `src`; the result has tightly packed rows. Sums are f32 with
/// fused multiply-adds in tap order (rank-one masks take a row pass then a column pass over
/// the f32 row sums, others add every tap of a pixel, mask row by mask row), or exact integer
/// sums where the order cannot matter (see `bands.rs`): the same samples. A mask of zeros
/// alone (`neutral`) writes its bias everywhere without a pass: the sum of every pixel is 0.
pub fn convolve_plane(src: &Plane, mask: &Mask, border: BorderMode) -> Plane {
    let border = border.for_mask(mask.width(), mask.height());
    if mask.is_constant() {
        return constant_plane(src, mask);
    }
    convolve_bands(src, &BandMask::of(mask, src.depth, src.channels), border)
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
}

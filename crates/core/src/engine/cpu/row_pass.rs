//! A rank-one mask's row pass over one source row ([`row_pass`]). Float32 rows are summed
//! where they lie in the source, and only their two ends are copied out with their borders:
//! a copy of the whole row would be one more store and load a sample, which for a 3-tap row
//! costs as much as the sums. Other rows are converted into lanes with their borders first
//! ([`pad_row`]), as before.

use std::ops::Range;

use super::lanes::{as_floats, pad_row, sum_blocked, Lane, LaneTaps};
use super::rows::EdgeMap;
use super::view::{PlaneView, ViewSamples};

/// The row factor's taps: `every` tap, and (where the mask has any zero weight) those without
/// zeros, which give the same sums over rows of finite values only (a zero times an infinity
/// is a NaN).
pub(super) struct RowTaps<'a, T> {
    pub(super) every: &'a LaneTaps<T>,
    pub(super) sparse: Option<&'a LaneTaps<T>>,
}

/// The row pass of source row `y` over padded positions `first ..` into `out`: output `e`
/// sums the taps over padded samples `e ..= e + reach`, where `reach` is `padded.len() -
/// out.len()` (`(mask width - 1) * channels`). `padded` is the band's buffer for a row with
/// its borders. Each output's sum is the one [`sum_blocked`] makes over the padded row, bit
/// for bit, whichever way it is read.
#[inline(always)]
pub(super) fn row_pass<T: Lane, const BLOCK: usize>(
    (src, y): (&PlaneView, usize),
    (xmap, first): (&EdgeMap, usize),
    taps: &RowTaps<T>,
    (out, padded): (&mut [T], &mut [T]),
    zero_sign_free: bool,
) {
    let reach = padded.len() - out.len();
    let Some((values, inner)) = in_place::<T>(src, y, (xmap, first), out.len(), reach) else {
        let finite = pad_row(src, y, xmap, first, padded);
        sum_blocked::<T, BLOCK>(&[(padded, taps.of(finite))], out, zero_sign_free);
        return;
    };
    // The outputs before `inner` read the padded samples before `inner.start + reach`, those
    // after it the padded samples from `inner.end`: both ends fit in the buffer side by side,
    // as `in_place` keeps `inner` at least `reach` long.
    let (left, rest) = padded.split_at_mut(inner.start + reach);
    let right = &mut rest[..out.len() - inner.end + reach];
    let left_finite = pad_row(src, y, xmap, first, left);
    let right_finite = pad_row(src, y, xmap, first + inner.end / src.channels, right);
    // Every value an output reads is in one of the three, so sparse taps are taken only where
    // all three are finite, as a whole padded row would have them.
    let finite = taps.sparse.is_some() && left_finite && right_finite && T::all_finite(values);
    let taps = taps.of(finite);
    let (before, rest) = out.split_at_mut(inner.start);
    let (middle, after) = rest.split_at_mut(inner.len());
    sum_blocked::<T, BLOCK>(&[(left, taps)], before, zero_sign_free);
    sum_blocked::<T, BLOCK>(&[(values, taps)], middle, zero_sign_free);
    sum_blocked::<T, BLOCK>(&[(right, taps)], after, zero_sign_free);
}

impl<T> RowTaps<'_, T> {
    /// The taps for a row whose values are all `finite` or not.
    #[inline(always)]
    fn of(&self, finite: bool) -> &[(usize, T)] {
        match self.sparse {
            Some(sparse) if finite => sparse,
            _ => self.every,
        }
    }
}

/// Where row `y` of a packed float32 plane can be summed in place, for `len` outputs from
/// padded position `first` with `reach` padded samples beyond each: the outputs `inner` whose
/// every tap reads a sample of the row itself, and the source samples they read as lanes
/// (`reach` more than `inner` holds, padded sample `inner.start` first). `None` for other
/// planes (their samples are converted into lanes), for values off their alignment, and
/// where fewer than `reach` outputs would be read in place (a row narrower than the mask's
/// reach: its ends overlap).
#[inline(always)]
fn in_place<'a, T: Lane>(
    src: &PlaneView<'a>,
    y: usize,
    (xmap, first): (&EdgeMap, usize),
    len: usize,
    reach: usize,
) -> Option<(&'a [T], Range<usize>)> {
    if !src.packed() || !matches!(src.samples(), ViewSamples::Float32) {
        return None;
    }
    let channels = src.channels;
    let last = first + (len + reach) / channels;
    // The padded positions that read the row in place, clipped to those asked for.
    let inside = xmap.inside();
    let start = inside.start.clamp(first, last);
    let end = inside.end.clamp(start, last);
    let lo = (start - first) * channels;
    let hi = ((end - first) * channels).checked_sub(reach)?;
    if hi < lo + reach {
        return None;
    }
    // Padded sample `lo` is sample `(start - inside.start) * channels` of the row.
    let from = (start - inside.start) * channels;
    let bytes = &src.packed_row(y)[4 * from..4 * (from + hi - lo + reach)];
    let values = T::from_floats(as_floats(bytes)?)?;
    Some((values, lo..hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::view::Pitches;
    use crate::filter::BorderMode;

    /// Rows summed in place give the bits of rows padded whole: every border, tiles that start
    /// inside the row, one and three channels, taps with and without zeros, and rows with an
    /// infinity or a NaN at either end or inside (where the sparse taps must not be taken).
    #[test]
    fn rows_summed_in_place_are_the_padded_rows_sums_bit_for_bit() {
        let specials = [None, Some(0), Some(1), Some(20), Some(38), Some(39)];
        for channels in [1usize, 3] {
            for (width, taps) in [
                (3usize, vec![-1.0f32, 0.0, 1.0]),
                (7, vec![0.5, 0.0, 1.25, -2.0, 0.0, 3.0, 0.1]),
            ] {
                for special in specials {
                    for odd in [f32::INFINITY, f32::NAN] {
                        check_row(channels, &taps, width, special.map(|at| (at, odd)));
                    }
                }
            }
        }
    }

    fn check_row(channels: usize, weights: &[f32], width: usize, special: Option<(usize, f32)>) {
        let pixels = 40usize;
        let mut values: Vec<f32> = (0..pixels * channels)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.37)
            .collect();
        if let Some((at, odd)) = special {
            values[at * channels] = odd;
        }
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let pitches = Pitches {
            row: (pixels * channels * 4) as isize,
            pixel: (channels * 4) as isize,
            channel: 4,
        };
        let view = PlaneView::new(&bytes, 0, (pixels, 1, channels), pitches, ViewSamples::Float32).expect("inside");
        let every: LaneTaps<f32> = weights.iter().enumerate().map(|(j, &w)| (j * channels, w)).collect();
        let sparse: LaneTaps<f32> = every.iter().copied().filter(|(_, w)| *w != 0.0).collect();
        let taps = RowTaps {
            every: &every,
            sparse: Some(&sparse),
        };
        for border in BorderMode::ALL {
            let xmap = EdgeMap::new(pixels, width, border);
            for (first, columns) in [(0, pixels), (0, 17), (11, 20), (23, pixels - 23), (35, 5)] {
                let len = columns * channels;
                let reach = (width - 1) * channels;
                let mut padded = vec![0f32; len + reach];
                let finite = pad_row(&view, 0, &xmap, first, &mut padded);
                let mut expected = vec![0f32; len];
                sum_blocked::<f32, 32>(&[(&padded, taps.of(finite))], &mut expected, true);
                let mut out = vec![f32::from_bits(0x7fc0_dead); len];
                let mut buffer = vec![f32::from_bits(0x7fc0_beef); len + reach];
                row_pass::<f32, 32>((&view, 0), (&xmap, first), &taps, (&mut out, &mut buffer), true);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
                assert_eq!(
                    bits(&out),
                    bits(&expected),
                    "{channels} channels, {width} taps, {border:?}, columns {first}+{columns}, {special:?}"
                );
            }
        }
    }
}

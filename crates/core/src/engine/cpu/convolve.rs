//! One plane through one mask on the CPU ([`convolve_plane`], or [`convolve_plane_into`] the
//! caller's memory, or [`convolve_view_into`] from a plane at any pitches, of integer samples
//! or float32 values): the border mode the mask's size takes, a mask of zeros alone
//! (`neutral`) over integer samples written as its bias without a pass, every other mask
//! through the band loops of `bands.rs`.

use rayon::prelude::*;

use super::band_mask::BandMask;
use super::bands::{convolve_bands, OutLayout};
use super::finish::{write_row, Finish};
use super::rows::MIN_ROWS_PER_TASK;
use super::view::{PlaneView, ViewSamples};
use crate::filter::BorderMode;
use crate::format::SampleDepth;
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
    let pixel = src.channels * src.depth.bytes();
    convolve_view_into(&PlaneView::of_plane(src), mask, border, out, (out_stride, pixel));
}

/// Convolves every channel of the view `src` (a plane anywhere in memory, at any pitches;
/// see [`PlaneView`]) into `out`, whose rows are `out_stride` bytes apart and pixels
/// `out_pixel` bytes apart within a row, each pixel's channels side by side as samples of
/// `src`'s kind; the bytes between them are left as they are. Integer samples are
/// [`convolve_plane`]'s, sample for sample; float32 values are the float result (f32 sums
/// in the kernels' order, divided, + bias as written), neither rounded nor clamped, as the
/// CUDA kernels' float variants make them.
///
/// # Panics
///
/// When `out` is shorter than those rows, or the pitches make samples overlap.
pub fn convolve_view_into(
    src: &PlaneView,
    mask: &Mask,
    border: BorderMode,
    out: &mut [u8],
    (out_stride, out_pixel): (usize, usize),
) {
    let pixel_bytes = src.channels * src.samples().bytes();
    assert!(out_pixel >= pixel_bytes, "output pixels overlap");
    let row_bytes = src
        .width
        .checked_sub(1)
        .map_or(0, |last| last * out_pixel + pixel_bytes);
    assert!(out_stride >= row_bytes, "output rows overlap");
    let needed = src
        .height
        .checked_sub(1)
        .map_or(0, |rows| rows * out_stride + row_bytes);
    assert!(out.len() >= needed, "the output holds {} bytes of {needed}", out.len());
    if needed == 0 {
        return;
    }
    let out = &mut out[..needed];
    let border = border.for_mask(mask.width(), mask.height());
    let layout = OutLayout {
        stride: out_stride,
        pixel: out_pixel,
    };
    match src.samples() {
        ViewSamples::Float32 => convolve_bands(src, &BandMask::of_floats(mask, src.channels), border, out, layout),
        ViewSamples::Integer(depth) if mask.is_constant() => write_constant(src, mask, depth, out, layout),
        ViewSamples::Integer(depth) => {
            convolve_bands(src, &BandMask::of(mask, depth, src.channels), border, out, layout)
        }
    }
}

/// A mask of zeros alone: its bias in every sample, without a pass (the sum of every pixel
/// is 0). Integer samples only: a float value's sum is NaN where a neighbour is infinite.
fn write_constant(src: &PlaneView, mask: &Mask, depth: SampleDepth, out: &mut [u8], layout: OutLayout) {
    let pixel_bytes = src.channels * depth.bytes();
    // One pixel's samples, made once: every pixel is the same.
    let mut pixel = vec![0u8; pixel_bytes];
    write_row(&mut pixel, &vec![0f32; src.channels], Finish::of(mask, depth));
    let row_bytes = (src.width - 1) * layout.pixel + pixel_bytes;
    // Pixels side by side take a whole row made once; pixels apart are written one by one,
    // leaving the bytes between them.
    let whole_row = (layout.pixel == pixel_bytes).then(|| pixel.repeat(src.width));
    out.par_chunks_mut(layout.stride.max(1))
        .with_min_len(MIN_ROWS_PER_TASK)
        .for_each(|row| match &whole_row {
            Some(whole) => row[..row_bytes].copy_from_slice(whole),
            None => {
                for at in (0..row_bytes).step_by(layout.pixel) {
                    row[at..at + pixel_bytes].copy_from_slice(&pixel);
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::view::Pitches;
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

    /// Taps over a power of two summed in integers round exact halves away from zero, as
    /// the f32 sums do: one sample of 8 among zeros through OpenCV's 3x3 Gaussian (taps of
    /// 1, 2 and 4 sixteenths) gives 0.5 on the diagonals (1), 1 beside it and 2 on it; with a
    /// bias of -1.5, 0.5 on it (1), -0.5 beside it (0 after the clamp) and -1 on the diagonals.
    #[test]
    fn exact_halves_of_taps_over_a_power_of_two_round_away_from_zero() {
        let mut plane = Plane::new(PlaneShape::eight_bit(5, 5, 1));
        plane.data[2 * 5 + 2] = 8;
        let blur = convolve_plane(
            &plane,
            &Mask::from_spec("gaussian:size=3").unwrap(),
            BorderMode::Constant,
        );
        let expected: Vec<u8> = [
            [0, 0, 0, 0, 0],
            [0, 1, 1, 1, 0],
            [0, 1, 2, 1, 0],
            [0, 1, 1, 1, 0],
            [0, 0, 0, 0, 0],
        ]
        .concat();
        assert_eq!(blur.data.to_vec(), expected);
        let biased = convolve_plane(
            &plane,
            &Mask::from_spec("gaussian:size=3,bias=-1.5").unwrap(),
            BorderMode::Constant,
        );
        let mut centre = vec![0u8; 25];
        centre[2 * 5 + 2] = 1;
        assert_eq!(biased.data.to_vec(), centre);
    }

    /// Samples spread over 0..=255, the same every run.
    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut state = seed | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 33) as u8
            })
            .collect()
    }

    /// Channel `c` of a packed plane of `channels` channels as a plane of its own.
    fn channel_of(plane: &Plane, c: usize) -> Plane {
        let mut one = Plane::new(PlaneShape::eight_bit(plane.width, plane.height, 1));
        for y in 0..plane.height {
            for x in 0..plane.width {
                one.data[y * plane.width + x] = plane.row(y)[x * plane.channels + c];
            }
        }
        one
    }

    const SPECS: [&str; 6] = [
        "gaussian:size=7,sigma=2",
        "sharpen",
        "sobel",
        "box:size=5",
        "custom:matrix=[[1,2,0],[0,-1,3],[1,0,1]],bias=7",
        "neutral:bias=9",
    ];

    /// An interleaved plane filtered whole gives each channel's samples as the channel filtered
    /// alone; read through a view that skips a fourth byte a pixel (BGRA seen as BGR), flipped
    /// upside down, or written to pixels four bytes apart, the same samples land.
    #[test]
    fn interleaved_and_strided_views_give_each_channels_own_samples() {
        let (w, h) = (41, 23);
        let mut plane = Plane::new(PlaneShape::eight_bit(w, h, 3));
        plane.data.copy_from_slice(&noise(w * h * 3, 7));
        // The same pixels with a fourth byte after each, and the rows in reverse order.
        let mut bgra = vec![0u8; w * h * 4];
        for y in 0..h {
            for x in 0..w {
                for c in 0..3 {
                    bgra[((h - 1 - y) * w + x) * 4 + c] = plane.row(y)[x * 3 + c];
                }
            }
        }
        let eight = ViewSamples::Integer(SampleDepth::EIGHT);
        let flipped = PlaneView::new(
            &bgra,
            (h - 1) * w * 4,
            (w, h, 3),
            Pitches {
                row: -(w as isize * 4),
                pixel: 4,
                channel: 1,
            },
            eight,
        )
        .expect("inside the slice");
        for spec in SPECS {
            let mask = Mask::from_spec(spec).unwrap();
            for border in [BorderMode::Mirror, BorderMode::Constant, BorderMode::Wrap] {
                let whole = convolve_plane(&plane, &mask, border);
                for c in 0..3 {
                    let alone = convolve_plane(&channel_of(&plane, c), &mask, border);
                    assert_eq!(
                        channel_of(&whole, c).data,
                        alone.data,
                        "{spec}, {border:?}, channel {c}"
                    );
                }
                // Read flipped with a gap a pixel, written to pixels four bytes apart.
                let mut spread = vec![0xA5u8; w * h * 4];
                convolve_view_into(&flipped, &mask, border, &mut spread, (w * 4, 4));
                for y in 0..h {
                    for x in 0..w {
                        let at = (y * w + x) * 4;
                        assert_eq!(
                            &spread[at..at + 3],
                            &whole.row(y)[x * 3..x * 3 + 3],
                            "{spec}, ({x}, {y})"
                        );
                        assert_eq!(spread[at + 3], 0xA5, "{spec}: the byte between pixels changed");
                    }
                }
            }
        }
    }

    /// The float definition the kernels' float variants follow: f32 sums with one fused
    /// multiply-add a tap, mask row by mask row (a rank-one mask's row pass, then its column
    /// pass), a magnitude's `sqrt(fma(a, a, b * b))`, then divided and + bias.
    fn float_reference(values: &[f32], (w, h): (usize, usize), mask: &Mask, border: BorderMode) -> Vec<f32> {
        let border = border.for_mask(mask.width(), mask.height());
        let (mw, mh) = (mask.width(), mask.height());
        let at = |x: isize, y: isize| -> f32 {
            match (border.map(x, w), border.map(y, h)) {
                (Some(x), Some(y)) => values[y * w + x],
                _ => 0.0,
            }
        };
        let dense = |taps: &[f32], x: usize, y: usize| {
            let mut sum = 0.0f32;
            for i in 0..mh {
                for j in 0..mw {
                    let v = at(
                        x as isize + j as isize - (mw / 2) as isize,
                        y as isize + i as isize - (mh / 2) as isize,
                    );
                    sum = taps[i * mw + j].mul_add(v, sum);
                }
            }
            sum
        };
        let (divisor, bias) = (mask.divisor(), mask.bias());
        let mut out = vec![0f32; w * h];
        for y in 0..h {
            for x in 0..w {
                let sum = match (mask.second_correlation_taps(), mask.correlation_factors()) {
                    (Some(second), _) => {
                        let (a, b) = (dense(&mask.correlation_taps(), x, y), dense(&second, x, y));
                        a.mul_add(a, b * b).sqrt()
                    }
                    (None, Some((column, row))) => {
                        let mut sum = 0.0f32;
                        for (i, c) in column.iter().enumerate() {
                            let yy = y as isize + i as isize - (mh / 2) as isize;
                            if border.map(yy, h).is_none() {
                                continue;
                            }
                            let mut across = 0.0f32;
                            for (j, r) in row.iter().enumerate() {
                                across = r.mul_add(at(x as isize + j as isize - (mw / 2) as isize, yy), across);
                            }
                            sum = c.mul_add(across, sum);
                        }
                        sum
                    }
                    (None, None) => dense(&mask.correlation_taps(), x, y),
                };
                let divided = if divisor == 1.0 { sum } else { sum / divisor };
                out[y * w + x] = divided + bias;
            }
        }
        out
    }

    /// Samples read at a byte offset off their alignment (a view into a byte buffer) give the
    /// bits aligned ones give: the aligned rows are read as one slice, the others a sample
    /// at a time. float32 values (with infinities) and 16-bit words, rank-one and other masks.
    #[test]
    fn samples_off_their_alignment_give_the_bits_of_aligned_ones() {
        let (w, h) = (41, 13);
        let mut floats: Vec<f32> = noise(w * h, 5).iter().map(|b| (f32::from(*b) - 100.0) * 0.37).collect();
        floats[3 * w + 7] = f32::INFINITY;
        floats[8 * w + w - 1] = f32::NAN;
        let float_bytes: Vec<u8> = floats.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let word_bytes: Vec<u8> = noise(w * h * 2, 9);
        let cases = [
            (&float_bytes, 4, ViewSamples::Float32),
            (&word_bytes, 2, ViewSamples::Integer(SampleDepth { bits: 16, shift: 0 })),
        ];
        for (bytes, size, samples) in cases {
            let mut shifted = vec![0u8; bytes.len() + 1];
            shifted[1..].copy_from_slice(bytes);
            let pitches = Pitches {
                row: (w * size) as isize,
                pixel: size as isize,
                channel: size as isize,
            };
            let aligned = PlaneView::new(bytes, 0, (w, h, 1), pitches, samples).expect("inside the slice");
            let unaligned = PlaneView::new(&shifted, 1, (w, h, 1), pitches, samples).expect("inside the slice");
            for spec in [
                "sobel-x",
                "laplacian",
                "gaussian:size=5",
                "custom:matrix=[[0,1,0],[2,0,-1],[0,3,0]]",
            ] {
                let mask = Mask::from_spec(spec).unwrap();
                for border in [BorderMode::Mirror, BorderMode::Constant] {
                    let mut want = vec![0u8; w * h * size];
                    convolve_view_into(&aligned, &mask, border, &mut want, (w * size, size));
                    // The output off its alignment too: written a sample at a time.
                    let mut got = vec![0u8; w * h * size + 1];
                    convolve_view_into(&unaligned, &mask, border, &mut got[1..], (w * size, size));
                    assert!(got[1..] == want[..], "{spec}, {border:?}, {samples:?}");
                }
            }
        }
    }

    /// float32 values through the band loops are the float definition bit for bit: every
    /// kind of mask, every border, values far outside a sample's range, products too small
    /// for f32 (whose zero keeps the product's sign until the bias is added), and
    /// infinities, whose NaNs a zero tap spreads as on the GPU; one channel, and three
    /// interleaved (each the definition over its own values).
    #[test]
    fn float_values_are_the_kernels_float_sums_bit_for_bit() {
        let (w, h) = (37, 19);
        for channels in [1, 3] {
            let planes: Vec<Vec<f32>> = (0..channels).map(|c| float_values((w, h), 11 + c as u64)).collect();
            let bytes: Vec<u8> = (0..w * h)
                .flat_map(|i| planes.iter().map(move |plane| plane[i]))
                .flat_map(|v| v.to_ne_bytes())
                .collect();
            let pitches = Pitches {
                row: (w * channels * 4) as isize,
                pixel: (channels * 4) as isize,
                channel: 4,
            };
            let view = PlaneView::new(&bytes, 0, (w, h, channels), pitches, ViewSamples::Float32).expect("inside");
            let extra = [
                "custom:matrix=[[0.5,1.25,-0.75,2,0.1]],divisor=3",
                "emboss",
                "sobel-x",
                "laplacian",
                // A bias of -0 keeps a zero sum's sign, so these sums start from +0 as defined.
                "sobel-x:bias=-0",
                "laplacian:bias=-0",
            ];
            for spec in SPECS
                .iter()
                .chain(&extra)
                .chain(&["gaussian:size=13", "box:width=7,height=3"])
            {
                let mask = Mask::from_spec(spec).unwrap();
                for border in BorderMode::ALL {
                    let mut out = vec![0u8; w * h * channels * 4];
                    convolve_view_into(&view, &mask, border, &mut out, (w * channels * 4, channels * 4));
                    // Every NaN as one, whatever its payload: the kernels' NaNs are not specified.
                    let bits = |v: f32| if v.is_nan() { f32::NAN.to_bits() } else { v.to_bits() };
                    let got: Vec<u32> = out
                        .chunks_exact(4)
                        .map(|b| bits(f32::from_ne_bytes(b.try_into().unwrap())))
                        .collect();
                    for (c, plane) in planes.iter().enumerate() {
                        let expected: Vec<u32> = float_reference(plane, (w, h), &mask, border)
                            .into_iter()
                            .map(bits)
                            .collect();
                        let channel: Vec<u32> = got.iter().skip(c).step_by(channels).copied().collect();
                        assert_eq!(channel, expected, "{spec}, {border:?}, channel {c} of {channels}");
                    }
                }
            }
        }
    }

    /// float32 values for a `w` x `h` plane: most far outside a sample's range; four rows near
    /// the top of zeros of either sign, whose sums are zeros whose sign depends on where a sum
    /// starts (from +0, as defined, or from a tap's value); six rows in the middle of the
    /// smallest values f32 holds, of either sign, whose sums divided (or multiplied by a
    /// fractional tap) round to a zero that keeps its sign until the bias is added; an
    /// infinity of each sign (one at a row's first pixel, whose border copies carry it too) and
    /// a NaN.
    fn float_values((w, h): (usize, usize), seed: u64) -> Vec<f32> {
        let smallest = f32::from_bits(1);
        let zeros = 1..5;
        let tiny = h / 2 - 3..h / 2 + 3;
        let mut values: Vec<f32> = noise(w * h, seed)
            .iter()
            .enumerate()
            .map(|(i, b)| match i % 3 {
                _ if zeros.contains(&(i / w)) => {
                    if b % 2 == 0 {
                        0.0
                    } else {
                        -0.0
                    }
                }
                _ if tiny.contains(&(i / w)) => {
                    if b % 2 == 0 {
                        smallest
                    } else {
                        -smallest
                    }
                }
                0 => (f32::from(*b) - 128.0) * 1000.5,
                _ => (f32::from(*b) - 128.0) * 0.013,
            })
            .collect();
        values[5 * w + 9] = f32::INFINITY;
        values[14 * w] = f32::NEG_INFINITY;
        values[(h - 1) * w + w / 2] = f32::NAN;
        values
    }
}

//! Every exact tie of every divisor from 2 to 64: integer masks with a `divisor`, planes whose
//! sums run through every whole number those masks can give, and the sample each sum must
//! become under the promise (the sum divided by the divisor, plus the bias, rounded half away
//! from zero, clamped), worked out in integers. The CPU engine is held to it in CI, the GPU
//! engine on a GPU host.
//!
//! A sum is encoded as a pair of neighbouring samples: with correlation taps `[0, 1, 256]` the
//! output at an even column is `low + 256 * high` of the pair starting there, so one 8-bit
//! row pair reaches every sum up to 65535. Odd columns read across two pairs and are not
//! checked. 16-bit planes take a 1x1 mask: the sum is the sample itself.

use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_core::{Plane, PlaneShape, SampleDepth};

use crate::oracle::oracle_index;
use crate::random::Random;

/// The divisors every tie is checked for.
pub const DIVISORS: std::ops::RangeInclusive<u32> = 2..=64;

/// Pairs (sums) in one row of an 8-bit case plane.
const PAIRS_PER_ROW: usize = 512;

/// One mask over one plane, and the sample expected at each checked position.
pub struct TieCase {
    /// The SPEC of the mask, for messages.
    pub spec: String,
    pub divisor: u32,
    pub mask: Mask,
    pub plane: Plane,
    /// The border the case is filtered with.
    pub border: BorderMode,
    /// `(row, sample column, sum, expected sample)` for every checked output.
    pub expected: Vec<(usize, usize, i64, u16)>,
}

/// Half-away-from-zero rounding of `numerator / denominator` (`denominator` > 0), in integers.
pub fn round_half_away(numerator: i64, denominator: i64) -> i64 {
    assert!(denominator > 0);
    let half_up = (2 * numerator.abs() + denominator) / (2 * denominator);
    if numerator < 0 {
        -half_up
    } else {
        half_up
    }
}

/// The promised sample for a whole sum: `sum / divisor + bias`, rounded half away from zero,
/// clamped to `0..=max`.
pub fn promised(sum: i64, divisor: i64, bias: i64, max: i64) -> u16 {
    round_half_away(sum + bias * divisor, divisor).clamp(0, max) as u16
}

/// The masks whose sums reach every tie at 8 bits, each taking its own engine path: a row of
/// taps (rank one: the separable path), a 3x3 matrix of rank two (the dense path), and the
/// negated taps with a bias of 255 (ties below zero moved into range). `(spec, sign, bias)`.
fn eight_bit_masks(divisor: u32) -> [(String, i64, i64); 3] {
    [
        (
            format!("custom:matrix=[[0,1,256]],mode=correlate,divisor={divisor}"),
            1,
            0,
        ),
        (
            format!("custom:matrix=[[0,0,0],[0,1,256],[1,0,0]],mode=correlate,divisor={divisor}"),
            1,
            0,
        ),
        (
            format!("custom:matrix=[[0,-1,-256]],mode=correlate,divisor={divisor},bias=255"),
            -1,
            255,
        ),
    ]
}

/// The 8-bit cases of `divisor`: sums 0 to 256 * divisor (every result up to 256, past the
/// largest sample), one pair each, on even rows; odd rows are zeros, so the dense mask's
/// third tap adds nothing.
pub fn eight_bit_cases(divisor: u32) -> Vec<TieCase> {
    let sums = 256 * divisor as usize + 1;
    let rows = sums.div_ceil(PAIRS_PER_ROW);
    let mut plane = Plane::new(PlaneShape::eight_bit(2 * PAIRS_PER_ROW, 2 * rows, 1));
    let mut placed = Vec::with_capacity(sums);
    for sum in 0..sums {
        let (row, column) = (2 * (sum / PAIRS_PER_ROW), 2 * (sum % PAIRS_PER_ROW));
        let samples = plane.row_mut(row);
        samples[column] = (sum % 256) as u8;
        samples[column + 1] = (sum / 256) as u8;
        placed.push((row, column, sum as i64));
    }
    eight_bit_masks(divisor)
        .into_iter()
        .map(|(spec, sign, bias)| TieCase {
            mask: Mask::from_spec(&spec).unwrap_or_else(|e| panic!("{spec}: {e:?}")),
            plane: plane.clone(),
            border: BorderMode::Mirror,
            expected: placed
                .iter()
                .map(|&(row, column, sum)| (row, column, sign * sum, promised(sign * sum, divisor.into(), bias, 255)))
                .collect(),
            spec,
            divisor,
        })
        .collect()
}

/// The 16-bit case of `divisor`: every sample value once under a 1x1 mask.
pub fn sixteen_bit_case(divisor: u32) -> TieCase {
    let depth = SampleDepth { bits: 16, shift: 0 };
    let mut plane = Plane::new(PlaneShape {
        width: 256,
        height: 256,
        channels: 1,
        depth,
    });
    let mut expected = Vec::with_capacity(65536);
    for row in 0..256 {
        let samples = plane.row_mut(row);
        for column in 0..256 {
            let value = (row * 256 + column) as u16;
            samples[2 * column..2 * column + 2].copy_from_slice(&value.to_le_bytes());
            let sum = i64::from(value);
            expected.push((row, column, sum, promised(sum, divisor.into(), 0, 65535)));
        }
    }
    let spec = format!("custom:matrix=[[1]],divisor={divisor}");
    TieCase {
        mask: Mask::from_spec(&spec).unwrap_or_else(|e| panic!("{spec}: {e:?}")),
        plane,
        border: BorderMode::Mirror,
        expected,
        spec,
        divisor,
    }
}

/// A mask as users write them, a 5x5 matrix of small whole numbers (-3 to 3, drawn from a
/// generator seeded by `divisor`, so every run sees the same), with a bias of 128, over a
/// random 8-bit picture under the `nearest` border: every output checked, ties where they
/// fall (about one in `divisor` for an even one).
pub fn random_matrix_case(divisor: u32) -> TieCase {
    let mut random = Random::from_seed(0x7115_0000 + u64::from(divisor));
    let taps: Vec<i64> = (0..25).map(|_| (random.below(7) as i64) - 3).collect();
    let rows: Vec<String> = taps
        .chunks(5)
        .map(|row| format!("[{}]", row.iter().map(i64::to_string).collect::<Vec<_>>().join(",")))
        .collect();
    let spec = format!(
        "custom:matrix=[{}],mode=correlate,divisor={divisor},bias=128",
        rows.join(",")
    );
    let (width, height) = (96, 64);
    let mut plane = Plane::new(PlaneShape::eight_bit(width, height, 1));
    for y in 0..height {
        plane.row_mut(y).iter_mut().for_each(|s| *s = random.below(256) as u8);
    }
    let border = BorderMode::Nearest;
    let at = |y: i64, x: i64| -> i64 {
        let row = oracle_index(border, y, height as i64).expect("nearest reads inside the plane");
        let column = oracle_index(border, x, width as i64).expect("nearest reads inside the plane");
        i64::from(plane.row(row)[column])
    };
    let mut expected = Vec::with_capacity(width * height);
    for y in 0..height as i64 {
        for x in 0..width as i64 {
            let sum: i64 = (0..25)
                .map(|t| taps[t] * at(y + (t / 5) as i64 - 2, x + (t % 5) as i64 - 2))
                .sum();
            expected.push((y as usize, x as usize, sum, promised(sum, divisor.into(), 128, 255)));
        }
    }
    TieCase {
        mask: Mask::from_spec(&spec).unwrap_or_else(|e| panic!("{spec}: {e:?}")),
        plane,
        border,
        expected,
        spec,
        divisor,
    }
}

/// Every case: per divisor, three 8-bit masks that reach every tie, one 16-bit mask and one
/// random matrix.
pub fn all_cases() -> impl Iterator<Item = TieCase> {
    DIVISORS.flat_map(|divisor| {
        let mut cases = eight_bit_cases(divisor);
        cases.push(sixteen_bit_case(divisor));
        cases.push(random_matrix_case(divisor));
        cases
    })
}

/// The sample at (`row`, sample `column`) of `plane`.
pub fn sample_at(plane: &Plane, row: usize, column: usize) -> u16 {
    let samples = plane.row(row);
    match plane.depth.bytes() {
        1 => u16::from(samples[column]),
        _ => u16::from_le_bytes([samples[2 * column], samples[2 * column + 1]]) >> plane.depth.shift,
    }
}

/// What one engine's output of a case came to.
#[derive(Debug, Default)]
pub struct TieCount {
    /// Checked outputs whose sum the divisor halves exactly.
    pub ties: usize,
    /// Those of them that differ from the promise.
    pub wrong_ties: usize,
    /// Checked outputs that differ from the promise, ties or not.
    pub wrong: usize,
    /// The first few of those, described.
    pub examples: Vec<String>,
}

/// Compares `out` (the case's plane filtered) with the promise at every checked output.
pub fn count(case: &TieCase, out: &Plane) -> TieCount {
    let divisor = i64::from(case.divisor);
    let mut count = TieCount::default();
    for &(row, column, sum, expected) in &case.expected {
        let tie = (2 * sum).rem_euclid(2 * divisor) == divisor;
        count.ties += usize::from(tie);
        let got = sample_at(out, row, column);
        if got != expected {
            count.wrong += 1;
            count.wrong_ties += usize::from(tie);
            if count.examples.len() < 5 {
                count.examples.push(format!(
                    "{}: sum {sum} at row {row}, column {column}: {got}, promised {expected}",
                    case.spec
                ));
            }
        }
    }
    count
}

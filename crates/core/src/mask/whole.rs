//! Integer masks kept in whole numbers ([`WholeTaps`]): the taps engines sum and the divisor
//! they divide each sum by. Whole taps over whole samples give sums that are exact in f32 (up
//! to 2^24), and one IEEE division of an exact sum is the exact quotient whenever that is
//! representable: a sum the divisor halves exactly stays a half, and rounds away from zero as
//! promised. Taps scaled by a rounded reciprocal (11 * (1/22) after rounding to f32) could
//! land just under the half and round the wrong way.

use super::factors::{whole_rank_one_factors, SeparableFactors};

/// The largest whole number every smaller one of which f32 holds exactly: 2^24.
const LARGEST_EXACT: f64 = 16_777_216.0;

/// An integer matrix as engines sum it: whole-number taps, then each sum divided by `divisor`.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeTaps {
    /// Row-major, convolution orientation, as written (before the divisor).
    pub coefficients: Vec<f32>,
    /// A gradient magnitude's second matrix, as written.
    pub second: Option<Vec<f32>>,
    /// Whole-number column and row factors of a rank-one matrix.
    pub factors: Option<SeparableFactors>,
    /// What each sum (each gradient magnitude) is divided by; 1 when there is no divisor.
    pub divisor: f32,
}

/// Whether `value` is a whole number f32 holds exactly.
fn is_whole(value: f64) -> bool {
    value.fract() == 0.0 && value.abs() <= LARGEST_EXACT
}

impl WholeTaps {
    /// `rows` (and a gradient magnitude's `second` matrix) kept whole and divided by `divisor`,
    /// when every value and the divisor are whole numbers f32 holds exactly; `None` otherwise
    /// (the scaled coefficients are summed then).
    pub fn new(rows: &[Vec<f64>], second: Option<&[Vec<f64>]>, divisor: f64) -> Option<WholeTaps> {
        let all_whole = |rows: &[Vec<f64>]| rows.iter().flatten().all(|v| is_whole(*v));
        if divisor == 0.0 || !is_whole(divisor) || !all_whole(rows) || !second.is_none_or(all_whole) {
            return None;
        }
        let flat = |rows: &[Vec<f64>]| -> Vec<f32> { rows.iter().flatten().map(|v| *v as f32).collect() };
        let coefficients = flat(rows);
        let (height, width) = (rows.len(), rows.first().map_or(0, Vec::len));
        Some(WholeTaps {
            factors: match second {
                // A gradient magnitude is two sums and a square root: never one pass.
                Some(_) => None,
                None => whole_rank_one_factors(&coefficients, height, width),
            },
            second: second.map(flat),
            coefficients,
            divisor: divisor as f32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: &[&[f64]]) -> Vec<Vec<f64>> {
        values.iter().map(|r| r.to_vec()).collect()
    }

    #[test]
    fn integer_matrices_keep_whole_taps_and_their_divisor() {
        let taps = WholeTaps::new(&rows(&[&[1.0, 2.0, 1.0]]), None, 22.0).expect("whole");
        assert_eq!(
            (taps.coefficients.as_slice(), taps.divisor),
            (&[1.0, 2.0, 1.0][..], 22.0)
        );
        assert!(WholeTaps::new(&rows(&[&[0.5, 1.0, 0.5]]), None, 2.0).is_none());
        assert!(WholeTaps::new(&rows(&[&[1.0]]), None, 2.5).is_none());
        assert!(WholeTaps::new(&rows(&[&[1.0, 3e7, 1.0]]), None, 2.0).is_none());
    }
}

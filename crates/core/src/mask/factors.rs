//! The rank-one factors of a matrix ([`SeparableFactors`]): found numerically for any matrix
//! ([`rank_one_factors`]), or exactly, in whole numbers, for an integer one
//! ([`whole_rank_one_factors`]), so that engines run a row pass and a column pass.

/// Relative tolerance of the numerical rank-one test.
const SEPARABLE_TOLERANCE: f32 = 1e-6;

/// The 1D factors of a rank-one mask: `coefficient[i][j] == column[i] * row[j]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeparableFactors {
    /// Length `height`.
    pub column: Vec<f32>,
    /// Length `width`.
    pub row: Vec<f32>,
}

/// Numerical rank-one test: pivot on the largest coefficient, take its row and column as
/// factors and accept when the outer product reproduces every coefficient within a
/// relative tolerance.
pub fn rank_one_factors(coefficients: &[f32], height: usize, width: usize) -> Option<SeparableFactors> {
    let (pivot, &peak) = coefficients
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    if peak == 0.0 {
        return None;
    }
    let (pi, pj) = (pivot / width, pivot % width);
    let column: Vec<f32> = (0..height).map(|i| coefficients[i * width + pj]).collect();
    let row: Vec<f32> = (0..width).map(|j| coefficients[pi * width + j] / peak).collect();
    let tolerance = SEPARABLE_TOLERANCE * peak.abs();
    let fits =
        (0..height).all(|i| (0..width).all(|j| (column[i] * row[j] - coefficients[i * width + j]).abs() <= tolerance));
    fits.then_some(SeparableFactors { column, row })
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Whole-number factors of a rank-one integer matrix: the row holding the largest magnitude
/// divided by the greatest common divisor of its entries, and the column that makes the
/// outer product the matrix. Every product is checked exactly: an integer matrix of rank one
/// always has such factors, so `None` means the matrix is not of rank one.
pub fn whole_rank_one_factors(coefficients: &[f32], height: usize, width: usize) -> Option<SeparableFactors> {
    let (pivot, &peak) = coefficients
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    if peak == 0.0 || width == 0 {
        return None;
    }
    let (pi, pj) = (pivot / width, pivot % width);
    let pivot_row = &coefficients[pi * width..(pi + 1) * width];
    let common = pivot_row.iter().fold(0, |g, v| gcd(g, v.abs() as u64)).max(1) as f32;
    let row: Vec<f32> = pivot_row.iter().map(|v| v / common).collect();
    let column: Vec<f32> = (0..height).map(|i| coefficients[i * width + pj] / row[pj]).collect();
    let exact = column.iter().all(|c| c.fract() == 0.0)
        && (0..height).all(|i| {
            (0..width).all(|j| f64::from(column[i]) * f64::from(row[j]) == f64::from(coefficients[i * width + j]))
        });
    exact.then_some(SeparableFactors { column, row })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_one_integer_matrices_get_whole_factors() {
        // Pivot row [3, 9, 3]: its gcd 3 gives the row [1, 3, 1]; the column is [1, 3, 1].
        let m = [1.0, 3.0, 1.0, 3.0, 9.0, 3.0, 1.0, 3.0, 1.0];
        let f = whole_rank_one_factors(&m, 3, 3).expect("rank one");
        assert_eq!((f.column, f.row), (vec![1.0, 3.0, 1.0], vec![1.0, 3.0, 1.0]));
        let sobel_x = [1.0, 0.0, -1.0, 2.0, 0.0, -2.0, 1.0, 0.0, -1.0];
        let f = whole_rank_one_factors(&sobel_x, 3, 3).expect("rank one");
        let product: Vec<f32> = f.column.iter().flat_map(|c| f.row.iter().map(move |r| c * r)).collect();
        assert_eq!(product, sobel_x);
        assert!(whole_rank_one_factors(&[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0], 3, 3).is_none());
    }
}

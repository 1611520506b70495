//! Unit tests of masks: preset values, separability, normalisation, SPEC parsing and the
//! errors a user sees for bad masks.

use super::factors::rank_one_factors;
use super::*;
use std::io::Write;

mod conventions;
mod files;
mod spec;

fn mask(spec: &str) -> Mask {
    Mask::from_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e:?}"))
}

fn errors(spec: &str) -> Vec<MaskError> {
    match Mask::from_spec(spec) {
        Ok(m) => panic!("{spec} should be rejected, built {m}"),
        Err(e) => e,
    }
}

fn messages(errors: &[MaskError]) -> String {
    errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
}

fn matrix_params(rows: Vec<Vec<f64>>) -> MaskParams {
    MaskParams {
        matrix: Some(rows),
        ..MaskParams::default()
    }
}

fn assert_close(actual: &[f32], expected: &[f32], tolerance: f32) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= tolerance, "coefficient {i}: {a} vs {e}\n{actual:?}");
    }
}

fn outer(column: &[f32], row: &[f32]) -> Vec<f32> {
    column.iter().flat_map(|c| row.iter().map(move |r| c * r)).collect()
}

/// The factors of a separable mask reproduce its coefficients.
fn assert_factors_reproduce(m: &Mask) {
    let f = m
        .factors()
        .unwrap_or_else(|| panic!("{} should be separable", m.description()));
    assert_eq!(f.column.len(), m.height());
    assert_eq!(f.row.len(), m.width());
    let peak = m.coefficients().iter().fold(0f32, |a, v| a.max(v.abs()));
    assert_close(&outer(&f.column, &f.row), m.coefficients(), 1e-6 * peak.max(1.0));
}

// ---- preset values ----

#[test]
fn identity_is_a_single_one() {
    let m = mask("identity");
    assert_eq!((m.width(), m.height()), (1, 1));
    assert_eq!(m.coefficients(), &[1.0]);
    let m = mask("identity:size=5");
    let mut expected = vec![0.0; 25];
    expected[12] = 1.0;
    assert_eq!(m.coefficients(), expected.as_slice());
    assert_eq!(m.bias(), 0.0);
}

#[test]
fn box_3x3_is_one_ninth() {
    let m = mask("box:size=3");
    assert_eq!((m.width(), m.height()), (3, 3));
    assert_close(m.coefficients(), &[1.0 / 9.0; 9], 1e-7);
    assert_eq!(mask("box"), m.clone().with_description("box"));
}

#[test]
fn box_width_and_height_make_a_rectangle() {
    let m = mask("box:width=5,height=3");
    assert_eq!((m.width(), m.height()), (5, 3));
    assert_close(m.coefficients(), &[1.0 / 15.0; 15], 1e-7);
}

#[test]
fn sobel_and_prewitt_match_the_textbook() {
    assert_eq!(
        mask("sobel-x").coefficients(),
        &[1.0, 0.0, -1.0, 2.0, 0.0, -2.0, 1.0, 0.0, -1.0]
    );
    assert_eq!(
        mask("sobel-y").coefficients(),
        &[1.0, 2.0, 1.0, 0.0, 0.0, 0.0, -1.0, -2.0, -1.0]
    );
    assert_eq!(
        mask("prewitt-x").coefficients(),
        &[1.0, 0.0, -1.0, 1.0, 0.0, -1.0, 1.0, 0.0, -1.0]
    );
    assert_eq!(
        mask("prewitt-y").coefficients(),
        &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0, -1.0, -1.0, -1.0]
    );
}

#[test]
fn roberts_is_ffmpegs_pair_of_differences() {
    // FFmpeg's roberts: a = c[0] - c[1] (up-left - up), b = c[4] - c[3] (centre - left), as
    // correlation taps; convolution orientation has them turned half way.
    let roberts = mask("roberts");
    assert!(roberts.is_magnitude() && !roberts.is_separable());
    assert_eq!((roberts.width(), roberts.height()), (3, 3));
    assert_eq!(roberts.coefficients(), &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 1.0]);
    let a = roberts.correlation_taps();
    assert_eq!(a, [1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let b = roberts.second_correlation_taps().expect("a pair");
    assert_eq!(b, [0.0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn laplacian_4_and_8_neighbours() {
    let four = [0.0, 1.0, 0.0, 1.0, -4.0, 1.0, 0.0, 1.0, 0.0];
    assert_eq!(mask("laplacian").coefficients(), &four);
    assert_eq!(mask("laplacian:neighbours=4").coefficients(), &four);
    assert_eq!(
        mask("laplacian:neighbors=8").coefficients(),
        &[1.0, 1.0, 1.0, 1.0, -8.0, 1.0, 1.0, 1.0, 1.0]
    );
    assert!(messages(&errors("laplacian:neighbours=6")).contains("4 or 8"));
}

#[test]
fn sharpen_amount_one() {
    let expected = [0.0, -1.0, 0.0, -1.0, 5.0, -1.0, 0.0, -1.0, 0.0];
    assert_eq!(mask("sharpen").coefficients(), &expected);
    assert_eq!(mask("sharpen:amount=1").coefficients(), &expected);
    assert_eq!(
        mask("sharpen:amount=0.5").coefficients(),
        &[0.0, -0.5, 0.0, -0.5, 3.0, -0.5, 0.0, -0.5, 0.0]
    );
}

#[test]
fn emboss_sums_to_one() {
    let m = mask("emboss");
    assert_eq!(m.coefficients(), &[-2.0, -1.0, 0.0, -1.0, 1.0, 1.0, 0.0, 1.0, 2.0]);
    assert_eq!(m.coefficients().iter().sum::<f32>(), 1.0);
}

#[test]
fn gaussian_sums_to_one_and_is_symmetric() {
    for spec in [
        "gaussian",
        "gaussian:size=13,sigma=2.5",
        "gaussian:sigma=1",
        "gaussian:size=63",
        "gaussian:size=1",
    ] {
        let m = mask(spec);
        let (w, h) = (m.width(), m.height());
        let c = m.coefficients();
        let sum: f64 = c.iter().map(|v| *v as f64).sum();
        assert!((sum - 1.0).abs() < 1e-5, "{spec} sums to {sum}");
        for y in 0..h {
            for x in 0..w {
                let v = c[y * w + x];
                assert_eq!(v, c[y * w + (w - 1 - x)], "{spec} mirror x at {y},{x}");
                assert_eq!(v, c[(h - 1 - y) * w + x], "{spec} mirror y at {y},{x}");
                assert_eq!(v, c[x * w + y], "{spec} transpose at {y},{x}");
            }
        }
        // Peak in the middle, falling off monotonically along the centre row.
        let mid = &c[(h / 2) * w..(h / 2 + 1) * w];
        for x in 1..=w / 2 {
            assert!(mid[x] >= mid[x - 1], "{spec} not rising at {x}: {mid:?}");
        }
    }
}

#[test]
fn gaussian_size_follows_sigma_and_sigma_follows_size() {
    // 2*ceil(3*sigma)+1
    assert_eq!(mask("gaussian:sigma=2.5").width(), 17);
    assert_eq!(mask("gaussian:sigma=1").width(), 7);
    // Capped at the largest size.
    assert_eq!(mask("gaussian:sigma=30").width(), MAX_SIDE);
    // OpenCV's default sigma for 13 taps; compare with the closed form.
    let m = mask("gaussian:size=13");
    let sigma = 0.3 * ((13.0 - 1.0) * 0.5 - 1.0) + 0.8f64;
    let g: Vec<f64> = (0..13)
        .map(|i| (-((i as f64 - 6.0).powi(2)) / (2.0 * sigma * sigma)).exp())
        .collect();
    let s: f64 = g.iter().sum();
    let expected: Vec<f32> = outer(
        &g.iter().map(|v| (v / s) as f32).collect::<Vec<_>>(),
        &g.iter().map(|v| (v / s) as f32).collect::<Vec<_>>(),
    );
    assert_close(m.coefficients(), &expected, 1e-6);
}

#[test]
fn unsharp_and_edge_shapes() {
    let m = mask("unsharp");
    assert_eq!((m.width(), m.height()), (5, 5));
    let sum: f32 = m.coefficients().iter().sum();
    assert!((sum - 1.0).abs() < 1e-5, "unsharp keeps brightness, sums to {sum}");
    assert!(m.coefficients()[12] > 1.0);

    let e = mask("edge");
    assert_eq!((e.width(), e.height()), (9, 9));
    let sum: f64 = e.coefficients().iter().map(|v| *v as f64).sum();
    assert!(sum.abs() < 1e-5, "edge is zero-sum, got {sum}");
    let positive: f64 = e.coefficients().iter().filter(|v| **v > 0.0).map(|v| *v as f64).sum();
    assert!((positive - 1.0).abs() < 1e-5, "positive lobe sums to {positive}");
}

#[test]
fn motion_blur_is_a_normalised_line() {
    let m = mask("motion-blur:size=5");
    let mut expected = vec![0.0; 25];
    expected[10..15].fill(0.2);
    assert_close(m.coefficients(), &expected, 1e-7);
    let vertical = mask("motion-blur:size=5,angle=90");
    let mut expected = vec![0.0; 25];
    for y in 0..5 {
        expected[y * 5 + 2] = 0.2;
    }
    assert_close(vertical.coefficients(), &expected, 1e-6);
    let diagonal = mask("motion-blur:size=5,angle=45");
    let sum: f32 = diagonal.coefficients().iter().sum();
    assert!((sum - 1.0).abs() < 1e-6);
    // 45 degrees counter-clockwise: up and to the right of the centre, and its mirror, all
    // the way to the corners: 5 taps, as at 0 and 90 degrees.
    let c = diagonal.coefficients();
    let taps: Vec<usize> = (0..25).filter(|&i| c[i] > 0.0).collect();
    assert_eq!(taps, vec![4, 8, 12, 16, 20], "{c:?}");
}

// ---- separability ----

#[test]
fn separable_presets_say_so_and_their_factors_reproduce_them() {
    for spec in [
        "identity",
        "identity:size=7",
        "box",
        "box:width=15,height=1",
        "box:width=7,height=3",
        "gaussian",
        "gaussian:size=13,sigma=2.5",
        "sobel-x",
        "sobel-y",
        "prewitt-x",
        "prewitt-y",
        "gaussian:size=5,divisor=2",
        "box:size=3,normalize=true",
    ] {
        assert_factors_reproduce(&mask(spec));
    }
}

#[test]
fn dense_presets_are_not_separable() {
    for spec in [
        "sharpen",
        "emboss",
        "laplacian",
        "laplacian:neighbours=8",
        "unsharp",
        "edge",
        "motion-blur:angle=30",
    ] {
        assert!(!mask(spec).is_separable(), "{spec} reported separable");
    }
}

#[test]
fn custom_rank_one_matrix_is_detected() {
    let m = Mask::build(
        &matrix_params(vec![vec![1.0, 2.0, 1.0], vec![2.0, 4.0, 2.0], vec![1.0, 2.0, 1.0]]),
        None,
    )
    .unwrap();
    assert_factors_reproduce(&m);
    // Rectangular and with negative values.
    let m = Mask::build(
        &matrix_params(vec![
            vec![-1.0, 0.0, 3.0, 0.5, 2.0],
            vec![2.0, 0.0, -6.0, -1.0, -4.0],
            vec![0.5, 0.0, -1.5, -0.25, -1.0],
        ]),
        None,
    )
    .unwrap();
    assert_factors_reproduce(&m);
    let m = Mask::from_coefficients(3, 1, vec![1.0, 2.0, 3.0], 0.0);
    assert_factors_reproduce(&m);
}

#[test]
fn custom_rank_two_matrix_is_not_separable() {
    let m = Mask::build(
        &matrix_params(vec![vec![1.0, 2.0, 1.0], vec![2.0, 4.0, 2.0], vec![1.0, 2.0, 2.0]]),
        None,
    )
    .unwrap();
    assert!(!m.is_separable());
    assert!(rank_one_factors(&[1.0, 0.0, 0.0, 1.0], 2, 2).is_none());
    assert!(rank_one_factors(&[0.0; 9], 3, 3).is_none(), "all-zero has no factors");
}

#[test]
fn dense_only_drops_the_factors() {
    let m = mask("gaussian:size=7");
    assert!(m.is_separable());
    let dense = m.dense_only();
    assert!(!dense.is_separable());
    assert_eq!(dense.coefficients(), m.coefficients());
}

#[test]
fn correlation_taps_are_the_mask_turned_half_way() {
    let m = Mask::from_coefficients(3, 2, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0.0);
    assert_eq!(m.correlation_taps(), vec![6.0, 5.0, 4.0, 3.0, 2.0, 1.0]);
    let s = mask("sobel-x");
    let (column, row) = s.correlation_factors().unwrap();
    assert_eq!(row, vec![-1.0, 0.0, 1.0]);
    assert_eq!(column, vec![1.0, 2.0, 1.0]);
}

//! Unit tests of masks: preset values, separability, normalisation, SPEC parsing and the
//! errors a user sees for bad masks.

use super::*;
use std::io::Write;

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
    // OpenCV's default sigma for 5 taps is 1.1; compare with the closed form.
    let m = mask("gaussian:size=5");
    let sigma = 0.3 * ((5.0 - 1.0) * 0.5 - 1.0) + 0.8f64;
    let g: Vec<f64> = (0..5)
        .map(|i| (-((i as f64 - 2.0).powi(2)) / (2.0 * sigma * sigma)).exp())
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
    // 45 degrees counter-clockwise: up and to the right of the centre, and its mirror;
    // the length is measured along the line, so the corners (2.8 away) stay out.
    let c = diagonal.coefficients();
    assert!(c[8] > 0.0 && c[12] > 0.0 && c[16] > 0.0, "{c:?}");
    assert_eq!((c[0], c[4], c[6], c[18]), (0.0, 0.0, 0.0, 0.0), "{c:?}");
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

// ---- normalisation, divisor, bias ----

#[test]
fn normalize_divides_by_the_sum() {
    let rows = vec![vec![1.0, 2.0, 1.0], vec![2.0, 4.0, 2.0], vec![1.0, 2.0, 1.0]];
    let normalised = Mask::build(
        &MaskParams {
            normalize: Some(true),
            ..matrix_params(rows.clone())
        },
        None,
    )
    .unwrap();
    let expected: Vec<f32> = rows.iter().flatten().map(|v| (v / 16.0) as f32).collect();
    assert_close(normalised.coefficients(), &expected, 1e-7);
    let divided = Mask::build(
        &MaskParams {
            divisor: Some(16.0),
            ..matrix_params(rows.clone())
        },
        None,
    )
    .unwrap();
    assert_close(divided.coefficients(), &expected, 1e-7);
    assert_factors_reproduce(&divided);
    // normalize=false leaves the values alone.
    let raw = Mask::build(
        &MaskParams {
            normalize: Some(false),
            ..matrix_params(rows)
        },
        None,
    )
    .unwrap();
    assert_eq!(raw.coefficients()[4], 4.0);
    // A negative sum normalises too.
    let negative = Mask::build(
        &MaskParams {
            normalize: Some(true),
            ..matrix_params(vec![vec![-1.0, -2.0, -1.0]])
        },
        None,
    )
    .unwrap();
    assert_eq!(negative.coefficients(), &[0.25, 0.5, 0.25]);
}

#[test]
fn zero_sum_with_normalize_is_an_error() {
    let text = messages(&errors("laplacian:normalize=true"));
    assert!(text.contains("normalize = true") && text.contains("sum to 0"), "{text}");
    let e = Mask::build(
        &MaskParams {
            normalize: Some(true),
            ..matrix_params(vec![vec![1.0, 0.0, -1.0]])
        },
        None,
    )
    .unwrap_err();
    assert!(matches!(e[0], MaskError::ZeroSum { .. }), "{e:?}");
}

#[test]
fn divisor_problems() {
    assert!(matches!(errors("box:divisor=0")[0], MaskError::BadDivisor { .. }));
    assert!(matches!(errors("box:divisor=inf")[0], MaskError::BadDivisor { .. }));
    assert!(matches!(
        errors("box:divisor=2,normalize=true")[0],
        MaskError::DivisorAndNormalize
    ));
}

#[test]
fn bias_is_kept_and_must_be_finite() {
    assert_eq!(mask("laplacian:bias=128").bias(), 128.0);
    let text = messages(&errors("laplacian:bias=nan"));
    assert!(text.contains("bias") && text.contains("finite"), "{text}");
}

// ---- SPEC grammar ----

#[test]
fn spec_round_trips_through_display() {
    for spec in [
        "identity",
        "box:size=7",
        "box:width=15,height=1",
        "gaussian:size=13,sigma=2.5",
        "sharpen:amount=1.5",
        "unsharp:size=7,sigma=1.2,amount=0.75",
        "laplacian:neighbours=8",
        "motion-blur:size=11,angle=-30",
        "edge:size=11,sigma=1.6",
        "custom:file=masks/edge.txt,divisor=4,bias=-2.5",
        "emboss:bias=128",
        "gaussian:size=5,normalize=true",
    ] {
        let params = MaskParams::parse_spec(spec).unwrap();
        let written = params.to_string();
        assert_eq!(written, spec, "canonical specs are written back unchanged");
        assert_eq!(MaskParams::parse_spec(&written).unwrap(), params, "{spec}");
    }
    // Spaces and key order do not matter; the written form is canonical.
    let params = MaskParams::parse_spec(" gaussian : sigma = 2.5 , size=13 ").unwrap();
    assert_eq!(params.to_string(), "gaussian:size=13,sigma=2.5");
}

#[test]
fn spec_values_are_checked() {
    let e = MaskParams::parse_spec("box:size=three").unwrap_err();
    assert!(
        e[0].to_string().contains("size=\"three\" is not a whole number"),
        "{e:?}"
    );
    let e = MaskParams::parse_spec("box:size").unwrap_err();
    assert!(matches!(e[0], MaskError::BadSpecPair { .. }), "{e:?}");
    let e = MaskParams::parse_spec("").unwrap_err();
    assert!(matches!(e[0], MaskError::EmptySpec { .. }), "{e:?}");
    // Every bad pair is reported.
    let e = MaskParams::parse_spec("gaussian:size=x,sigma=y,foo=1").unwrap_err();
    assert_eq!(e.len(), 3, "{e:?}");
}

#[test]
fn description_is_the_spec() {
    assert_eq!(
        mask("gaussian:size=13,sigma=2.5").description(),
        "gaussian:size=13,sigma=2.5"
    );
    let m = Mask::build(&matrix_params(vec![vec![1.0; 5]; 3]), None).unwrap();
    assert_eq!(m.description(), "custom:matrix=3x5");
}

// ---- sizes ----

#[test]
fn rectangular_custom_masks_are_accepted() {
    let m = Mask::build(&matrix_params(vec![(1..=15).map(f64::from).collect()]), None).unwrap();
    assert_eq!((m.width(), m.height()), (15, 1));
    assert_eq!(m.coefficients()[14], 15.0);
    let m = Mask::build(&matrix_params(vec![vec![1.0, 2.0, 3.0]; 7]), None).unwrap();
    assert_eq!((m.width(), m.height()), (3, 7));
    let m = Mask::build(&matrix_params(vec![vec![1.0; 63]; 63]), None).unwrap();
    assert_eq!((m.width(), m.height()), (63, 63));
}

#[test]
fn even_zero_and_too_large_sizes_are_rejected() {
    for (spec, word) in [
        ("box:size=4", "even"),
        ("box:size=0", "zero"),
        ("box:size=65", "too large"),
        ("gaussian:size=14", "even"),
        ("gaussian:size=0", "zero"),
        ("gaussian:size=99", "too large"),
        ("identity:size=2", "even"),
        ("box:width=2,height=3", "even"),
        ("motion-blur:size=64", "too large"),
        ("edge:size=8", "even"),
        ("unsharp:size=0", "zero"),
    ] {
        let e = errors(spec);
        let text = messages(&e);
        assert!(text.contains(word) && text.contains("1..=63"), "{spec}: {text}");
        assert_eq!(e.len(), 1, "{spec}: one problem, reported once: {text}");
    }
}

#[test]
fn bad_custom_matrix_shapes_are_rejected() {
    for (rows, word) in [
        (vec![vec![1.0, 1.0]], "even"),
        (vec![vec![1.0; 3]; 4], "even"),
        (vec![vec![1.0; 65]], "too large"),
        (vec![vec![1.0]; 64], "too large"),
        (vec![vec![1.0]; 65], "too large"),
    ] {
        let (h, w) = (rows.len(), rows[0].len());
        let e = Mask::build(&matrix_params(rows), None).unwrap_err();
        let text = messages(&e);
        assert!(
            text.contains(word) && text.contains("1..=63") && text.contains(&format!("{h}x{w}")),
            "{h}x{w}: {text}"
        );
    }
    let e = Mask::build(&matrix_params(vec![]), None).unwrap_err();
    assert!(matches!(e[0], MaskError::EmptyMatrix), "{e:?}");
    let e = Mask::build(&matrix_params(vec![vec![]]), None).unwrap_err();
    assert!(messages(&e).contains("zero") || messages(&e).contains("empty"), "{e:?}");
}

#[test]
fn non_finite_values_are_rejected_where_they_are() {
    for (bad, shown) in [(f64::NAN, "NaN"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf")] {
        let e = Mask::build(
            &matrix_params(vec![vec![1.0, 1.0, 1.0], vec![1.0, 1.0, bad], vec![1.0; 3]]),
            None,
        )
        .unwrap_err();
        let text = messages(&e);
        assert!(
            text.contains("row 2, column 3") && text.contains(shown) && text.contains("finite"),
            "{text}"
        );
    }
}

#[test]
fn ragged_rows_are_rejected_naming_the_row() {
    let e = Mask::build(&matrix_params(vec![vec![1.0; 3], vec![1.0; 3], vec![1.0; 2]]), None).unwrap_err();
    let text = messages(&e);
    assert!(text.contains("row 3 has 2 values but row 1 has 3"), "{text}");
}

// ---- names ----

#[test]
fn unknown_preset_suggests_the_nearest() {
    let text = messages(&errors("gausian"));
    assert!(
        text.contains("unknown mask `gausian`") && text.contains("did you mean `gaussian`"),
        "{text}"
    );
    let text = messages(&errors("sobelx"));
    assert!(text.contains("did you mean `sobel-x`"), "{text}");
    let text = messages(&errors("zzzz"));
    assert!(
        !text.contains("did you mean") && text.contains("presets are identity, box"),
        "{text}"
    );
}

#[test]
fn unknown_key_suggests_the_nearest() {
    let e = MaskParams::parse_spec("gaussian:sigm=2").unwrap_err();
    let text = messages(&e);
    assert!(
        text.contains("unknown key `sigm`") && text.contains("did you mean `sigma`"),
        "{text}"
    );
    let e = MaskParams::parse_spec("box:sise=3").unwrap_err();
    assert!(messages(&e).contains("did you mean `size`"), "{e:?}");
}

#[test]
fn keys_a_preset_does_not_take_are_rejected() {
    let text = messages(&errors("box:sigma=2"));
    assert!(
        text.contains("preset `box` takes no key `sigma`") && text.contains("size, width, height"),
        "{text}"
    );
    let text = messages(&errors("sobel-x:size=5"));
    assert!(text.contains("sobel-x") && text.contains("size"), "{text}");
}

#[test]
fn custom_needs_exactly_one_source() {
    assert!(matches!(errors("custom")[0], MaskError::CustomSource));
    let both = MaskParams {
        file: Some("x.txt".into()),
        ..matrix_params(vec![vec![1.0]])
    };
    assert!(matches!(
        Mask::build(&both, None).unwrap_err()[0],
        MaskError::CustomSource
    ));
}

// ---- matrix files ----

#[test]
fn matrix_text_takes_spaces_commas_and_comments() {
    let text = "# a 3x5 mask\n\n 1, 2  3,4 ,5   # first row\n-1 -2.5e0 -3 -4 -5\n\n0,0,0,0,0\n# the end\n";
    let rows = presets::parse_matrix_text(text, "test").unwrap();
    assert_eq!(
        rows,
        vec![
            vec![1.0, 2.0, 3.0, 4.0, 5.0],
            vec![-1.0, -2.5, -3.0, -4.0, -5.0],
            vec![0.0; 5]
        ]
    );
    let e = presets::parse_matrix_text("1 2 3\n4 five 6\n", "m.txt").unwrap_err();
    assert_eq!(e[0].to_string(), "m.txt, line 2: `five` is not a number");
}

#[test]
fn matrix_file_is_read_relative_to_the_base_dir() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = std::fs::File::create(dir.path().join("emboss.txt")).unwrap();
    writeln!(file, "# emboss, commas and spaces\n-2,-1,0\n-1 1 1   # middle\n0, 1, 2").unwrap();
    drop(file);
    let params = MaskParams::parse_spec("custom:file=emboss.txt").unwrap();
    let m = Mask::build(&params, Some(dir.path())).unwrap();
    assert_eq!(m.coefficients(), mask("emboss").coefficients());
    assert_eq!(m.description(), "custom:file=emboss.txt");

    // An absolute path ignores the base dir.
    let absolute = dir.path().join("emboss.txt");
    let spec = format!("custom:file={}", absolute.display());
    assert!(Mask::build(&MaskParams::parse_spec(&spec).unwrap(), Some(Path::new("/nowhere"))).is_ok());

    let e = Mask::build(
        &MaskParams::parse_spec("custom:file=missing.txt").unwrap(),
        Some(dir.path()),
    )
    .unwrap_err();
    let text = messages(&e);
    assert!(
        text.contains("cannot read mask file") && text.contains("missing.txt"),
        "{text}"
    );
}

#[test]
fn matrix_file_problems_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path().join(name), text).unwrap();
        MaskParams::parse_spec(&format!("custom:file={name}")).unwrap()
    };
    let nan = write("nan.txt", "1 1 1\n1 nan 1\n1 1 1\n");
    assert!(messages(&Mask::build(&nan, Some(dir.path())).unwrap_err()).contains("row 2, column 2 is NaN"));
    let inf = write("inf.txt", "1 1 inf\n");
    assert!(messages(&Mask::build(&inf, Some(dir.path())).unwrap_err()).contains("row 1, column 3 is inf"));
    let ragged = write("ragged.txt", "1 1 1\n1 1\n1 1 1\n");
    assert!(messages(&Mask::build(&ragged, Some(dir.path())).unwrap_err()).contains("row 2 has 2 values"));
    let even = write("even.txt", "1 1\n1 1\n");
    assert!(messages(&Mask::build(&even, Some(dir.path())).unwrap_err()).contains("even"));
    let empty = write("empty.txt", "# nothing\n\n");
    assert!(matches!(
        Mask::build(&empty, Some(dir.path())).unwrap_err()[0],
        MaskError::EmptyMatrix
    ));
}

#[test]
fn several_problems_are_reported_at_once() {
    let e = errors("gaussian:size=4,sigma=-1,bias=inf");
    assert_eq!(e.len(), 3, "{e:?}");
}

#[test]
fn display_shows_matrix_bias_and_separability() {
    let text = mask("sobel-x").to_string();
    assert!(text.starts_with("sobel-x (3x3, width x height)"), "{text}");
    assert!(
        text.contains("separable: yes") && text.contains("column factor"),
        "{text}"
    );
    assert!(mask("sharpen").to_string().contains("separable: no"));
}

#[test]
fn parameters_that_give_non_finite_taps_are_rejected() {
    for spec in ["gaussian:sigma=1e-200", "box:divisor=1e-300"] {
        let text = messages(&errors(spec));
        assert!(text.contains("finite"), "{spec}: {text}");
    }
}

// ---- mask file limits ----

#[test]
fn a_mask_file_must_be_a_regular_file_and_is_never_read_past_the_limit() {
    let started = std::time::Instant::now();
    let zero = MaskParams::parse_spec("custom:file=/dev/zero").unwrap();
    let text = messages(&Mask::build(&zero, None).unwrap_err());
    assert!(text.contains("not a regular file"), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "refused at once");

    let dir = tempfile::tempdir().unwrap();
    let folder = MaskParams::parse_spec(&format!("custom:file={}", dir.path().display())).unwrap();
    assert!(messages(&Mask::build(&folder, None).unwrap_err()).contains("not a regular file"));

    let big = dir.path().join("big.txt");
    std::fs::write(&big, "1 ".repeat(200_000)).unwrap();
    let params = MaskParams::parse_spec(&format!("custom:file={}", big.display())).unwrap();
    let text = messages(&Mask::build(&params, None).unwrap_err());
    assert!(text.contains("larger than 262144 bytes"), "{text}");

    let binary = dir.path().join("binary.txt");
    std::fs::write(&binary, [0xffu8, 0xfe, 0, 1]).unwrap();
    let params = MaskParams::parse_spec(&format!("custom:file={}", binary.display())).unwrap();
    assert!(messages(&Mask::build(&params, None).unwrap_err()).contains("not UTF-8"));
}

#[test]
fn a_file_that_is_not_a_mask_is_not_quoted_beyond_a_few_cut_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    let long_token = format!("root:$6${}:19000:0:99999:7:::", "h".repeat(200));
    let mut text = String::new();
    for n in 0..50 {
        if n < 3 {
            text.push_str(&format!("{long_token}\n"));
        } else {
            text.push_str(&format!("SECRET{n}\n"));
        }
    }
    std::fs::write(&secret, &text).unwrap();
    let params = MaskParams::parse_spec(&format!("custom:file={}", secret.display())).unwrap();
    let errors = Mask::build(&params, None).unwrap_err();
    let shown = messages(&errors);
    assert!(errors.len() <= 4, "{errors:?}");
    assert!(!shown.contains(&"h".repeat(60)), "tokens are cut: {shown}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(shown.contains("more values are not numbers"), "{shown}");
    assert!(shown.len() < 1000, "{shown}");
}

#[test]
fn a_bias_beyond_f32_is_rejected_rather_than_made_infinite() {
    // Found by tests/properties.rs: 1.98e108 is a finite f64 but an infinite f32.
    let text = messages(&errors("identity:bias=1.98e108"));
    assert!(text.contains("bias, within the range of a 32-bit float"), "{text}");
    assert_eq!(mask("identity:bias=3e38").bias(), 3e38);
}

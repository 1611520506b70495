//! Normalisation, divisor and bias; FFmpeg's arithmetic (rdiv); the SPEC grammar; mask sizes.

use super::*;

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
fn a_custom_matrix_is_given_in_brackets_and_its_commas_stay_in_it() {
    let params = MaskParams::parse_spec("custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],normalize=true").unwrap();
    assert_eq!(
        params.matrix,
        Some(vec![vec![1.0, 2.0, 1.0], vec![2.0, 4.0, 2.0], vec![1.0, 2.0, 1.0]])
    );
    assert_eq!(params.normalize, Some(true));
    let m = Mask::build(&params, None).unwrap();
    assert_eq!(m.coefficients()[4], 0.25, "normalised by the sum, 16");
    // Spaces inside the brackets, and a bias after them.
    let spaced = MaskParams::parse_spec("custom:matrix=[[0, -1, 0], [-1, 5, -1], [0, -1, 0]], bias=3").unwrap();
    assert_eq!(
        spaced.matrix.as_ref().map(|m| m[1].clone()),
        Some(vec![-1.0, 5.0, -1.0])
    );
    assert_eq!(spaced.bias, Some(3.0));
    // Bad matrices name the key and the expected form; other keys are still checked.
    for bad in [
        "custom:matrix=[[1,2,1]",
        "custom:matrix=[[1,x,1]]",
        "custom:matrix=1,2,3",
        "custom:matrix=[]",
    ] {
        let errors = MaskParams::parse_spec(bad).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| matches!(e, MaskError::BadValue { key, .. } if key == "matrix")),
            "{bad}: {errors:?}"
        );
    }
    let errors = MaskParams::parse_spec("custom:matrix=[[1]],sigmaa=2").unwrap_err();
    assert!(matches!(&errors[0], MaskError::UnknownKey { .. }), "{errors:?}");
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

// ---- FFmpeg's arithmetic (rdiv) ----

#[test]
fn rdiv_keeps_whole_taps_and_takes_ffmpegs_default() {
    let mask = Mask::from_spec("custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],mode=correlate,rdiv=0,bias=3").unwrap();
    assert_eq!(mask.ffmpeg_rdiv(), Some(1.0 / 16.0), "0: 1 / the sum");
    assert_eq!(mask.coefficients()[4], 4.0, "the taps stay whole");
    assert!(!mask.is_separable(), "whole sums in the dense order only");
    let zero_sum = Mask::from_spec("custom:matrix=[[0,-1,0],[-1,4,-1],[0,-1,0]],rdiv=0").unwrap();
    assert_eq!(zero_sum.ffmpeg_rdiv(), Some(1.0), "a sum of 0 divides by 1");
    let identity = Mask::from_spec("custom:matrix=[[0,0,0],[0,1,0],[0,0,0]],rdiv=1").unwrap();
    assert!(identity.is_identity());
    for (spec, says) in [
        ("custom:matrix=[[1,2,1]],rdiv=0.5,divisor=4", "divisor"),
        ("custom:matrix=[[1,2.5,1]],rdiv=0", "whole-number"),
        ("custom:matrix=[[1,2,1]],rdiv=-1", "from 0"),
        ("custom:matrix=[[70000,1,1]],rdiv=0", "65793"),
        ("gaussian:rdiv=1", "rdiv"),
    ] {
        let errors = Mask::from_spec(spec).unwrap_err();
        assert!(
            errors.iter().any(|e| e.to_string().contains(says)),
            "{spec}: {errors:?}"
        );
    }
}

#[test]
fn rdiv_takes_its_bias_in_the_samples_units_and_gradients_take_rdiv() {
    let ten_bits = crate::frame::SampleDepth { bits: 10, shift: 0 };
    let ffmpeg = Mask::from_spec("custom:matrix=[[0,1,0],[1,-4,1],[0,1,0]],rdiv=5,bias=128").unwrap();
    assert_eq!(ffmpeg.bias_at(ten_bits), 128.0, "FFmpeg adds 128 at 10 bits");
    let scaled = Mask::from_spec("custom:matrix=[[0,1,0],[1,-4,1],[0,1,0]],bias=128").unwrap();
    assert_eq!(scaled.bias_at(ten_bits), 512.0, "mid-grey at 10 bits");
    for spec in ["sobel:rdiv=3,bias=9.5", "prewitt:rdiv=1,bias=-0.5", "roberts:rdiv=0.7"] {
        let mask = Mask::from_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        assert!(mask.ffmpeg_rdiv().is_some() && mask.is_magnitude(), "{spec}");
    }
}

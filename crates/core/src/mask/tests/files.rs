//! Mask names, matrix files and the limits on mask files.

use super::*;
use std::path::Path;

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
    // Found by the mask properties (tests/engines/mask_properties.rs): 1.98e108 is a finite
    // f64 but an infinite f32.
    let text = messages(&errors("identity:bias=1.98e108"));
    assert!(text.contains("bias, within the range of a 32-bit float"), "{text}");
    assert_eq!(mask("identity:bias=3e38").bias(), 3e38);
}

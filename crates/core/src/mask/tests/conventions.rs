//! Masks as FFmpeg's `convolution` filter, OpenCV and SciPy mean them: orientation (`mode`),
//! the divisor and the warning for matrices that change brightness, OpenCV's Gaussian taps,
//! motion blur taps at any angle, and other tools' border names.

use super::*;
use crate::filter::BorderMode;

/// A one-pixel shift kernel: the tap right of the centre.
const RIGHT_TAP: &str = "custom:matrix=[[0,0,0],[0,0,1],[0,0,0]]";

#[test]
fn correlate_slides_the_matrix_as_written() {
    // As correlation taps, the matrix as written: the centre's right neighbour is taken,
    // so the picture moves left, as in FFmpeg's convolution filter and cv2.filter2D.
    let correlated = mask(&format!("{RIGHT_TAP},mode=correlate"));
    assert_eq!(correlated.correlation_taps(), vec![0., 0., 0., 0., 0., 1., 0., 0., 0.]);
    // Convolution (the default, SciPy's convolve) flips it: the left neighbour is taken.
    let convolved = mask(RIGHT_TAP);
    assert_eq!(convolved.correlation_taps(), vec![0., 0., 0., 1., 0., 0., 0., 0., 0.]);
    assert_eq!(
        mask(&format!("{RIGHT_TAP},mode=convolve")).coefficients(),
        convolved.coefficients()
    );
}

#[test]
fn correlate_turns_presets_factors_and_gradients_too() {
    let sobel_x = mask("sobel-x:mode=correlate");
    // Listed [1 0 -1; 2 0 -2; 1 0 -1]: as correlation taps, exactly that.
    assert_eq!(sobel_x.correlation_taps(), vec![1., 0., -1., 2., 0., -2., 1., 0., -1.]);
    let (column, row) = sobel_x.correlation_factors().unwrap();
    assert_eq!(outer(&column, &row), sobel_x.correlation_taps());
    let sobel = mask("sobel:mode=correlate");
    assert_eq!(
        sobel.second_correlation_taps().unwrap(),
        vec![1., 2., 1., 0., 0., 0., -1., -2., -1.]
    );
    // A symmetric mask is the same either way.
    assert_eq!(
        mask("gaussian:size=7,mode=correlate").coefficients(),
        mask("gaussian:size=7").coefficients()
    );
}

#[test]
fn mode_is_a_key_of_every_mask_and_round_trips() {
    let params = MaskParams::parse_spec("emboss:mode=correlate").unwrap();
    assert_eq!(params.mode, Some(MaskMode::Correlate));
    assert_eq!(params.to_string(), "emboss:mode=correlate");
    let text = messages(&errors("box:mode=flip"));
    assert!(text.contains("convolve or correlate"), "{text}");
    let table: MaskParams = toml::from_str("preset = \"sobel-x\"\nmode = \"correlate\"").unwrap();
    assert_eq!(table.mode, Some(MaskMode::Correlate));
}

#[test]
fn a_custom_matrix_that_changes_brightness_is_warned_about_with_the_fix() {
    let m = mask("custom:matrix=[[1,2,1],[2,4,2],[1,2,1]]");
    let warnings = m.warnings().join("\n");
    assert!(
        warnings.contains("sums to 16") && warnings.contains("divisor=16"),
        "{warnings}"
    );
    // With the fix, or a sum of 1 or 0, or a preset: nothing to say.
    for quiet in [
        "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],divisor=16",
        "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],normalize=true",
        "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],divisor=1",
        "custom:matrix=[[0,-1,0],[-1,5,-1],[0,-1,0]]",
        "custom:matrix=[[-1,0,1],[-2,0,2],[-1,0,1]]",
        "sharpen:amount=3",
        "sobel-x",
    ] {
        assert!(
            mask(quiet).warnings().is_empty(),
            "{quiet}: {:?}",
            mask(quiet).warnings()
        );
    }
    let scaled = mask("custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],divisor=16");
    assert_eq!(scaled.coefficients()[4], 0.25);
}

#[test]
fn gaussian_taps_are_opencvs() {
    // cv2.getGaussianKernel(k, 0) takes fixed taps up to 7 (not the sampled curve).
    let taps = |spec: &str| mask(spec).factors().unwrap().row.clone();
    assert_eq!(taps("gaussian:size=3"), vec![0.25, 0.5, 0.25]);
    assert_eq!(taps("gaussian:size=5"), vec![0.0625, 0.25, 0.375, 0.25, 0.0625]);
    assert_eq!(
        taps("gaussian:size=7"),
        vec![0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125]
    );
    let nine = [4.0, 13.0, 30.0, 51.0, 60.0, 51.0, 30.0, 13.0, 4.0].map(|v: f32| v / 256.0);
    assert_eq!(taps("gaussian:size=9"), nine);
    // cv2.getGaussianKernel(11, 0) and (5, 1.5), as OpenCV prints them.
    let opencv_11 = [
        0.008812229292562288,
        0.027143577143479373,
        0.06511405659938269,
        0.12164907301380962,
        0.1769983568313557,
        0.20056541423882085,
    ];
    let eleven = taps("gaussian:size=11");
    assert_close(&eleven[..6], &opencv_11.map(|v| v as f32), 1e-8);
    let opencv_5_sigma = [
        0.12007838424321347,
        0.2338807565853503,
        0.2920817183428724,
        0.2338807565853503,
        0.12007838424321347,
    ];
    assert_close(
        &taps("gaussian:size=5,sigma=1.5"),
        &opencv_5_sigma.map(|v| v as f32),
        1e-8,
    );
}

#[test]
fn motion_blur_has_size_taps_at_every_angle() {
    for size in [1u32, 3, 5, 9, 15, 63] {
        for angle in [0.0, 10.0, 30.0, 45.0, 60.0, 90.0, 135.0, -30.0, 200.0, 359.0] {
            let m = mask(&format!("motion-blur:size={size},angle={angle}"));
            let taps = m.coefficients().iter().filter(|c| **c > 0.0).count();
            assert_eq!(taps, size as usize, "size {size}, angle {angle}");
            let sum: f32 = m.coefficients().iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "size {size}, angle {angle}: sum {sum}");
            // Through the centre, and symmetric about it.
            let c = m.coefficients();
            assert!(c[c.len() / 2] > 0.0);
            assert!(c.iter().zip(c.iter().rev()).all(|(a, b)| a == b), "{size} {angle}");
        }
    }
}

#[test]
fn other_tools_border_names_mean_the_same() {
    let expect = [
        ("replicate", BorderMode::Nearest),
        ("edge", BorderMode::Nearest),
        ("reflect_101", BorderMode::Mirror),
        ("reflect101", BorderMode::Mirror),
        ("reflect", BorderMode::Reflect),
        ("symmetric", BorderMode::Reflect),
        ("constant", BorderMode::Constant),
        ("zero", BorderMode::Constant),
        ("wrap", BorderMode::Wrap),
        ("periodic", BorderMode::Wrap),
    ];
    for (name, mode) in expect {
        assert_eq!(name.parse::<BorderMode>(), Ok(mode), "FromStr: {name}");
        let parsed: BorderMode = serde_json::from_str(&format!("\"{name}\"")).unwrap();
        assert_eq!(parsed, mode, "serde: {name}");
        assert!(name == mode.name() || mode.aliases().contains(&name), "{name}");
    }
}

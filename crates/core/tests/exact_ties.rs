//! Exact ties on the CPU engine: an integer mask's `divisor` applied so that a sum the divisor
//! halves exactly rounds half away from zero, for every tie of every divisor from 2 to 64 (the
//! cases of `convstream_testkit::ties`), on the separable and dense paths, at 8 and 16 bits,
//! and random 5x5 integer matrices over random pictures.
//! The GPU engine runs the same cases against this engine in `engines gpu::exact_ties`.

use convstream_core::convolve_plane;
use convstream_core::BorderMode;
use convstream_testkit::ties::{all_cases, count};

#[test]
fn every_tie_of_every_divisor_rounds_half_away_from_zero() {
    let (mut ties, mut wrong_ties, mut wrong, mut examples) = (0, 0, 0, Vec::new());
    for case in all_cases() {
        let out = convolve_plane(&case.plane, &case.mask, case.border);
        let counted = count(&case, &out);
        ties += counted.ties;
        wrong_ties += counted.wrong_ties;
        wrong += counted.wrong;
        if examples.len() < 10 {
            examples.extend(counted.examples);
        }
    }
    println!("{ties} exact ties checked, {wrong_ties} rounded wrong; {wrong} outputs differ in all");
    assert!(ties > 100_000, "the cases hold every tie: {ties}");
    assert_eq!(
        wrong,
        0,
        "{wrong_ties} of {ties} ties rounded wrong; first:\n{}",
        examples.join("\n")
    );
}

/// One tie written out: 255 - 1785 / 14 is 127.5, which rounds to 128. With the divisor
/// folded into the taps as f32 reciprocals (-1/14 and -256/14), the sum came to just under
/// -127.5 and the sample to 127.
#[test]
fn a_tie_below_zero_moved_up_by_the_bias_rounds_away_from_zero() {
    use convstream_core::Mask;
    use convstream_core::{Plane, PlaneShape};
    let mut plane = Plane::new(PlaneShape::eight_bit(3, 1, 1));
    plane.row_mut(0).copy_from_slice(&[249, 6, 0]);
    let mask = Mask::from_spec("custom:matrix=[[0,-1,-256]],mode=correlate,divisor=14,bias=255").expect("a valid mask");
    let out = convolve_plane(&plane, &mask, BorderMode::Constant);
    assert_eq!(out.row(0)[0], 128, "255 - (249 + 256 * 6) / 14 = 127.5");
}

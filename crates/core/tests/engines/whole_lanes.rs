//! Masks of whole numbers, and of whole numbers over one power of two (OpenCV's small
//! Gaussians), which the CPU engine sums in integer lanes (16-bit, unsigned 16-bit for taps
//! of one sign, or 32-bit where a partial sum could pass 16 bits) with their zero taps left
//! out and a rank-one matrix in two passes, against the oracle's f32 sums in the kernels'
//! order: bit for bit, on random matrices (sparse, rank-one, of one sign, gradient
//! magnitudes) whose sums reach either side of the 16-bit and 2^24 bounds, with and without a
//! divisor and a bias, at 8, 10 and 16 bits, 1 to 3 channels, every border mode, planes
//! smaller and larger than the mask. A mask the engine sums in f32 because its sums could pass
//! 2^24 is held to the same oracle.
//!
//! Runs with a fixed seed and one from the clock; a failure prints the seed, and
//! `CONVSTREAM_TEST_SEED=N` replays it.

use convstream_core::convolve_plane;
use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_core::{Plane, PlaneShape, SampleDepth};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cpu_oracle::random_plane_of;
use convstream_testkit::oracle::oracle;
use convstream_testkit::random::{clock_seed, replayed_seed};

const FIXED_SEED: u64 = 0x000b_01e5_a1e5;

/// A matrix divided by `2^bits` as a SPEC's `[[a,b],[c,d]]` (each tap printed exactly).
fn matrix(rows: &[Vec<i64>], bits: u32) -> String {
    let scale = f64::from(1u32 << bits);
    let tap = |k: &i64| (*k as f64 / scale).to_string();
    let rows: Vec<String> = rows
        .iter()
        .map(|row| format!("[{}]", row.iter().map(tap).collect::<Vec<_>>().join(",")))
        .collect();
    format!("[{}]", rows.join(","))
}

/// A random whole-number matrix of odd sides up to 7: taps within ±`largest` (one time in
/// three none below zero), about half of them 0, or (one time in three) the outer product of
/// two whole vectors.
fn random_matrix(rng: &mut StdRng, largest: i64) -> Vec<Vec<i64>> {
    let (height, width) = (2 * rng.gen_range(0..4) + 1, 2 * rng.gen_range(0..4) + 1);
    let lowest = if rng.gen_range(0..3) == 0 { 0 } else { -largest };
    let tap = |rng: &mut StdRng, largest: i64| {
        if rng.gen_bool(0.5) {
            0
        } else {
            rng.gen_range(lowest.max(-largest)..=largest)
        }
    };
    if rng.gen_range(0..3) == 0 {
        let root = (largest as f64).sqrt().max(1.0) as i64;
        let column: Vec<i64> = (0..height).map(|_| tap(rng, root)).collect();
        let row: Vec<i64> = (0..width).map(|_| tap(rng, root)).collect();
        column.iter().map(|c| row.iter().map(|r| c * r).collect()).collect()
    } else {
        (0..height)
            .map(|_| (0..width).map(|_| tap(rng, largest)).collect())
            .collect()
    }
}

/// A random SPEC for a whole-number matrix, one time in two divided by a power of two up to
/// 2^10: a divisor or none, a bias (whole or not).
fn random_spec(rng: &mut StdRng, largest: i64) -> String {
    let bits = if rng.gen_bool(0.5) { rng.gen_range(1..=10) } else { 0 };
    let mut spec = format!("custom:matrix={}", matrix(&random_matrix(rng, largest), bits));
    if rng.gen_bool(0.5) {
        spec.push_str(&format!(",divisor={}", rng.gen_range(2..=64)));
    }
    match rng.gen_range(0..3) {
        0 => spec.push_str(&format!(",bias={}", rng.gen_range(-64..=192))),
        1 => spec.push_str(&format!(",bias={}", rng.gen_range(-64.0f32..192.0))),
        _ => {}
    }
    if rng.gen_bool(0.5) {
        spec.push_str(",mode=correlate");
    }
    spec
}

fn packed(plane: &Plane) -> Vec<u8> {
    (0..plane.height).flat_map(|y| plane.row(y).to_vec()).collect()
}

fn assert_matches_oracle(rng: &mut StdRng, mask: &Mask, spec: &str, depth: SampleDepth) {
    let channels = rng.gen_range(1..=3);
    let (width, height) = (rng.gen_range(1..40), rng.gen_range(1..24));
    let plane = random_plane_of(
        rng,
        PlaneShape {
            width,
            height,
            channels,
            depth,
        },
    );
    for mode in BorderMode::ALL {
        let expected = oracle(&plane, mask, mode.for_mask(mask.width(), mask.height()));
        let actual = packed(&convolve_plane(&plane, mask, mode));
        if let Some(at) = actual.iter().zip(&expected).position(|(a, e)| a != e) {
            panic!(
                "{spec} at {} bits, {width}x{height}x{channels}, {mode:?}: byte {at} is {} where the oracle has {}",
                depth.bits, actual[at], expected[at]
            );
        }
        assert_eq!(actual.len(), expected.len(), "{spec}: length");
    }
}

#[test]
fn whole_number_masks_in_integer_lanes_equal_the_oracle_bit_for_bit() {
    let seeds = replayed_seed().map_or_else(|| vec![FIXED_SEED, clock_seed()], |seed| vec![seed]);
    let depths = [
        SampleDepth::EIGHT,
        SampleDepth { bits: 10, shift: 6 },
        SampleDepth { bits: 16, shift: 0 },
    ];
    for seed in seeds {
        let rng = &mut StdRng::seed_from_u64(seed);
        let mut cases = 0;
        for round in 0..400 {
            // Taps up to 4 (16-bit lanes at 8 bits), 60 (32-bit), 3000 (f32 at 16 bits).
            let largest = [4, 60, 3000][round % 3];
            let spec = random_spec(rng, largest);
            let Ok(mask) = Mask::from_spec(&spec) else {
                panic!("seed {seed}: {spec} refused");
            };
            let depth = depths[rng.gen_range(0..depths.len())];
            let result = std::panic::catch_unwind(|| {
                assert_matches_oracle(&mut StdRng::seed_from_u64(seed ^ round as u64), &mask, &spec, depth)
            });
            if result.is_err() {
                panic!("seed {seed} (replay with CONVSTREAM_TEST_SEED={seed}), round {round}: {spec} differs");
            }
            cases += 1;
        }
        // Gradient magnitudes of whole matrices: two exact sums, then sqrt(fma(a, a, b * b));
        // OpenCV's small Gaussians (whole numbers over 4 to 256).
        let presets = [
            "sobel",
            "prewitt",
            "sobel:divisor=4,bias=3",
            "prewitt:divisor=3",
            "gaussian:size=3",
            "gaussian:size=5",
            "gaussian:size=7",
            "gaussian:size=9",
        ];
        for spec in presets {
            let mask = Mask::from_spec(spec).expect("a gradient magnitude");
            for depth in depths {
                assert_matches_oracle(rng, &mask, spec, depth);
            }
        }
        assert_eq!(cases, 400);
    }
}

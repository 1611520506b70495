//! The CPU engine against the oracle of `convstream_testkit::oracle`, a brute-force true
//! convolution written from the definition
//! (`scipy.ndimage.convolve(plane, mask, mode=border, cval=0)`) that shares no code with the
//! engine. The engine must match it bit for bit, on random planes of odd sizes (some smaller
//! than the mask), every border mode, 1 to 3 channels, square and rectangular masks up to
//! 63x63, dense and separable.
//!
//! Every randomised test runs twice: with a fixed seed and with one taken from the clock.
//! A failure prints the seed; `CONVSTREAM_TEST_SEED=N` replays it.
//!
//! One test file at some length (about 830 lines): every engine path against the oracle shares
//! the random planes and masks above the tests.

use convstream_core::Engine;
use convstream_core::Mask;
use convstream_core::{convolve_plane, CpuEngine};
use convstream_core::{BorderMode, FilterSpec, PlaneSelection};
use convstream_core::{Frame, PixelFormat, Plane, PlaneShape, SampleDepth};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use convstream_testkit::oracle::{oracle, oracle_index};
use convstream_testkit::random::{clock_seed, replayed_seed};

const FIXED_SEED: u64 = 0x00c0_ffee_5eed;

/// The seeds a randomised test runs with: the fixed one and one from the clock (or only
/// the one in `CONVSTREAM_TEST_SEED`).
fn seeds() -> Vec<u64> {
    match replayed_seed() {
        Some(seed) => vec![seed],
        None => vec![FIXED_SEED, clock_seed()],
    }
}

/// Runs `body` with each seed; a panic inside is reported with the seed that caused it.
fn with_seeds(name: &str, body: impl Fn(&mut StdRng) + std::panic::RefUnwindSafe) {
    for seed in seeds() {
        let result = std::panic::catch_unwind(|| body(&mut StdRng::seed_from_u64(seed)));
        if let Err(cause) = result {
            let message = cause
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| cause.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name} failed with seed {seed} (replay with CONVSTREAM_TEST_SEED={seed}):\n{message}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// A random 8-bit plane whose rows carry random padding after the pixels.
fn random_plane(rng: &mut StdRng, width: usize, height: usize, channels: usize) -> Plane {
    random_plane_of(rng, PlaneShape::eight_bit(width, height, channels))
}

/// A random plane of `shape` whose rows carry random padding after the pixels: samples of
/// its depth (0..=2^bits - 1, shifted as the format stores them), random bytes elsewhere.
pub(crate) fn random_plane_of(rng: &mut StdRng, shape: PlaneShape) -> Plane {
    let stride = shape.row_bytes() + rng.gen_range(0..5) * shape.depth.bytes();
    let mut plane = Plane::filled(shape, stride, 0);
    rng.fill(&mut plane.data[..]);
    if shape.depth.bytes() == 2 {
        let max = shape.depth.max_value() as u16;
        for y in 0..plane.height {
            for word in plane.row_mut(y).chunks_exact_mut(2) {
                let value = rng.gen_range(0..=max) << shape.depth.shift;
                word.copy_from_slice(&value.to_le_bytes());
            }
        }
    }
    plane
}

fn packed_pixels(plane: &Plane) -> Vec<u8> {
    (0..plane.height).flat_map(|y| plane.row(y).to_vec()).collect()
}

/// Random coefficients scaled so that results mostly stay inside 0..=255 (clamping hides
/// errors), with a random bias.
fn random_dense_mask(rng: &mut StdRng, width: usize, height: usize) -> Mask {
    let raw: Vec<f32> = (0..width * height).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let magnitude: f32 = raw.iter().map(|v| v.abs()).sum::<f32>().max(1e-3);
    let gain = rng.gen_range(0.5f32..1.5);
    let coefficients = raw.iter().map(|v| v * gain / magnitude).collect();
    Mask::from_coefficients(width, height, coefficients, rng.gen_range(32.0f32..160.0))
}

/// A random rank-one mask: the outer product of two random vectors.
fn random_separable_mask(rng: &mut StdRng, width: usize, height: usize) -> Mask {
    let column: Vec<f32> = (0..height).map(|_| rng.gen_range(0.1f32..1.0)).collect();
    let row: Vec<f32> = (0..width).map(|_| rng.gen_range(-0.5f32..1.0)).collect();
    let magnitude: f32 = column.iter().sum::<f32>() * row.iter().map(|v| v.abs()).sum::<f32>();
    let coefficients = column
        .iter()
        .flat_map(|c| row.iter().map(move |r| c * r / magnitude))
        .collect();
    let mask = Mask::from_coefficients(width, height, coefficients, rng.gen_range(0.0f32..96.0));
    assert!(mask.is_separable(), "an outer product is rank one");
    mask
}

fn assert_engine_matches(plane: &Plane, mask: &Mask, mode: BorderMode, what: &str) {
    let expected = oracle(plane, mask, mode);
    let actual = convolve_plane(plane, mask, mode);
    assert_eq!(actual.shape(), plane.shape(), "{what}: shape");
    let actual = packed_pixels(&actual);
    if actual != expected {
        let first = actual.iter().zip(&expected).position(|(a, e)| a != e).unwrap();
        let row_bytes = plane.width * plane.channels;
        panic!(
            "{what}: {} of {} samples differ; first at y={} x={} c={}: engine {} oracle {}",
            actual.iter().zip(&expected).filter(|(a, e)| a != e).count(),
            expected.len(),
            first / row_bytes,
            (first % row_bytes) / plane.channels,
            first % plane.channels,
            actual[first],
            expected[first]
        );
    }
}

const PLANE_SIZES: &[(usize, usize)] = &[(1, 1), (2, 7), (5, 3), (17, 9), (33, 31)];
const MASK_SIZES: &[(usize, usize)] = &[
    (1, 1),
    (3, 3),
    (5, 5),
    (15, 1),
    (1, 15),
    (7, 3),
    (3, 7),
    (13, 13),
    (63, 63),
];

/// Runs every mask size on every plane size, channel count and border mode.
fn sweep(rng: &mut StdRng, make_mask: fn(&mut StdRng, usize, usize) -> Mask, dense_only: bool) {
    for &(mw, mh) in MASK_SIZES {
        for &(pw, ph) in PLANE_SIZES {
            // The 63x63 mask runs on the small planes only, to keep the suite fast.
            if mw * mh > 13 * 13 && pw * ph > 17 * 9 {
                continue;
            }
            for channels in 1..=3 {
                let plane = random_plane(rng, pw, ph, channels);
                let mask = make_mask(rng, mw, mh);
                let mask = if dense_only { mask.dense_only() } else { mask };
                for mode in BorderMode::ALL {
                    let what = format!(
                        "{mw}x{mh} mask ({}) on {pw}x{ph}x{channels}, border {mode}",
                        if mask.is_separable() { "separable" } else { "dense" }
                    );
                    assert_engine_matches(&plane, &mask, mode, &what);
                }
            }
        }
    }
}

/// The depths of the high-bit-depth formats: LSB-aligned words of 9 to 16 bits, and P010's
/// 10 bits in the high end of each word.
const HIGH_DEPTHS: &[SampleDepth] = &[
    SampleDepth { bits: 9, shift: 0 },
    SampleDepth { bits: 10, shift: 0 },
    SampleDepth { bits: 12, shift: 0 },
    SampleDepth { bits: 16, shift: 0 },
    SampleDepth { bits: 10, shift: 6 },
];

/// Rows as wide as 4K pictures and around the SIMD block widths (16, 32 and 64 samples),
/// so that every block width's full blocks and every tail length meet the oracle, at 8 and
/// high bit depths, with one and two channels, dense, separable and gradient magnitudes,
/// and the masks that take no pass (identity, neutral).
#[test]
fn wide_rows_around_the_simd_blocks_match_the_oracle() {
    with_seeds("wide rows", |rng| {
        let depths = [SampleDepth::EIGHT, HIGH_DEPTHS[1], HIGH_DEPTHS[3], HIGH_DEPTHS[4]];
        for depth in depths {
            for &width in &[15, 16, 17, 31, 32, 33, 63, 64, 65, 129, 1921, 3841] {
                for channels in [1, 2] {
                    let plane = random_plane_of(
                        rng,
                        PlaneShape {
                            width,
                            height: 3,
                            channels,
                            depth,
                        },
                    );
                    let masks = [
                        random_dense_mask(rng, 5, 3),
                        random_separable_mask(rng, 7, 7),
                        Mask::from_spec("sobel").unwrap(),
                        Mask::from_spec("identity:size=5").unwrap(),
                        Mask::from_spec("neutral").unwrap(),
                    ];
                    for mask in &masks {
                        for mode in BorderMode::ALL {
                            let what = format!("{depth:?} {} on {width}x3x{channels}, {mode}", mask.description());
                            assert_engine_matches(&plane, mask, mode, &what);
                        }
                    }
                }
            }
        }
    });
}

#[test]
fn high_bit_depth_planes_match_the_oracle() {
    with_seeds("high bit depth", |rng| {
        for &depth in HIGH_DEPTHS {
            for &(mw, mh) in &[(1, 1), (3, 3), (5, 3), (13, 13)] {
                for &(pw, ph) in &[(1, 1), (5, 3), (17, 9), (33, 31)] {
                    for channels in 1..=3 {
                        let plane = random_plane_of(
                            rng,
                            PlaneShape {
                                width: pw,
                                height: ph,
                                channels,
                                depth,
                            },
                        );
                        let masks = [random_dense_mask(rng, mw, mh), random_separable_mask(rng, mw, mh)];
                        for mask in masks {
                            for mode in BorderMode::ALL {
                                let what = format!("{depth:?} {mw}x{mh} on {pw}x{ph}x{channels}, {mode}");
                                assert_engine_matches(&plane, &mask, mode, &what);
                            }
                        }
                    }
                }
            }
            // Presets whose sums leave the sample range (clamped at both ends), gradient
            // magnitudes and a bias.
            let plane = random_plane_of(
                rng,
                PlaneShape {
                    width: 19,
                    height: 11,
                    channels: 1,
                    depth,
                },
            );
            for spec in [
                "sharpen",
                "edge",
                "sobel",
                "prewitt:divisor=2",
                "emboss",
                "sobel-x:bias=64",
                "neutral",
                "gaussian:size=7",
            ] {
                let mask = Mask::from_spec(spec).unwrap();
                assert_engine_matches(&plane, &mask, BorderMode::Reflect, &format!("{depth:?} {spec}"));
            }
        }
    });
}

#[test]
fn the_bias_is_in_eight_bit_units_at_every_depth() {
    let neutral = Mask::from_spec("neutral").unwrap();
    for (depth, grey) in [
        (SampleDepth::EIGHT, 128u32),
        (SampleDepth { bits: 10, shift: 0 }, 512),
        (SampleDepth { bits: 12, shift: 0 }, 2048),
        (SampleDepth { bits: 16, shift: 0 }, 32768),
        (SampleDepth { bits: 10, shift: 6 }, 512 << 6),
    ] {
        let plane = Plane::new(PlaneShape {
            width: 4,
            height: 2,
            channels: 1,
            depth,
        });
        let out = convolve_plane(&plane, &neutral, BorderMode::Reflect);
        for y in 0..out.height {
            let samples: Vec<u32> = match depth.bytes() {
                1 => out.row(y).iter().map(|&v| v as u32).collect(),
                _ => out
                    .row(y)
                    .chunks(2)
                    .map(|w| u16::from_le_bytes([w[0], w[1]]) as u32)
                    .collect(),
            };
            assert_eq!(samples, vec![grey; 4], "{depth:?}: mid-grey is 2^(bits-1)");
        }
    }
    // Doubling clamps at 2^bits - 1 rather than wrapping: 1023 * 2 stays 1023 at 10 bits,
    // 256 * 2 is 512.
    let depth = SampleDepth { bits: 10, shift: 0 };
    let mut plane = Plane::new(PlaneShape {
        width: 2,
        height: 1,
        channels: 1,
        depth,
    });
    plane.row_mut(0).copy_from_slice(&[0xff, 0x03, 0x00, 0x01]);
    let brighter = Mask::from_spec("custom:matrix=[[2]]").unwrap();
    let out = convolve_plane(&plane, &brighter, BorderMode::Reflect);
    assert_eq!(out.row(0), &[0xff, 0x03, 0x00, 0x02]);
}

// ---------------------------------------------------------------------------------------
// The oracle's own border semantics, against sequences written by hand
// ---------------------------------------------------------------------------------------

/// Letters of the samples at positions `from..=to` of a row `letters`, `0` for the constant.
fn extended(
    mode: BorderMode,
    letters: &str,
    from: i64,
    to: i64,
    index: impl Fn(BorderMode, i64, i64) -> Option<usize>,
) -> String {
    let chars: Vec<char> = letters.chars().collect();
    (from..=to)
        .map(|p| index(mode, p, chars.len() as i64).map_or('0', |i| chars[i]))
        .collect()
}

/// (mode, row, first position, last position, expected samples)
const BORDER_CASES: &[(BorderMode, &str, i64, i64, &str)] = &[
    (BorderMode::Constant, "abcd", -3, 6, "000abcd000"),
    (BorderMode::Nearest, "abcd", -3, 6, "aaaabcdddd"),
    (BorderMode::Reflect, "abcd", -3, 6, "cbaabcddcb"),
    (BorderMode::Mirror, "abcd", -3, 6, "dcbabcdcba"),
    (BorderMode::Wrap, "abcd", -3, 6, "bcdabcdabc"),
    // Reaching further than the row is long.
    (BorderMode::Constant, "ab", -4, 5, "0000ab0000"),
    (BorderMode::Nearest, "ab", -4, 5, "aaaaabbbbb"),
    (BorderMode::Reflect, "ab", -4, 5, "abbaabbaab"),
    (BorderMode::Mirror, "ab", -4, 5, "ababababab"),
    (BorderMode::Wrap, "ab", -4, 5, "ababababab"),
    (BorderMode::Reflect, "abc", -7, 9, "aabccbaabccbaabcc"),
    (BorderMode::Mirror, "abc", -7, 9, "bcbabcbabcbabcbab"),
    (BorderMode::Wrap, "abc", -7, 9, "cabcabcabcabcabca"),
    // A single sample.
    (BorderMode::Constant, "a", -3, 3, "000a000"),
    (BorderMode::Nearest, "a", -3, 3, "aaaaaaa"),
    (BorderMode::Reflect, "a", -3, 3, "aaaaaaa"),
    (BorderMode::Mirror, "a", -3, 3, "aaaaaaa"),
    (BorderMode::Wrap, "a", -3, 3, "aaaaaaa"),
];

#[test]
fn oracle_border_semantics_match_hand_written_sequences() {
    for &(mode, row, from, to, expected) in BORDER_CASES {
        assert_eq!(
            extended(mode, row, from, to, oracle_index),
            expected,
            "oracle {mode} on {row}"
        );
    }
}

#[test]
fn border_mode_map_matches_hand_written_sequences() {
    let library = |mode: BorderMode, p: i64, len: i64| mode.map(p as isize, len as usize);
    for &(mode, row, from, to, expected) in BORDER_CASES {
        assert_eq!(
            extended(mode, row, from, to, library),
            expected,
            "BorderMode::map {mode} on {row}"
        );
    }
}

/// The engine reads position `p` of a row when a one-hot mask shifts it under an output
/// pixel: correlation tap `j` of a `taps`-wide mask puts input `x + j - taps/2` at output `x`.
fn engine_reads(mode: BorderMode, values: &[u8], from: i64, to: i64) -> Vec<u8> {
    let taps = 2 * from.unsigned_abs().max(to.unsigned_abs()) as usize + 1;
    let centre = (taps / 2) as i64;
    let plane = Plane {
        depth: convstream_core::SampleDepth::EIGHT,
        width: values.len(),
        height: 1,
        channels: 1,
        stride: values.len(),
        data: values.to_vec().into(),
    };
    (from..=to)
        .map(|p| {
            let x = p.clamp(0, values.len() as i64 - 1);
            let j = (p - x + centre) as usize;
            let mut coefficients = vec![0.0; taps];
            coefficients[taps - 1 - j] = 1.0; // convolution orientation: turned around
            let mask = Mask::from_coefficients(taps, 1, coefficients, 0.0);
            convolve_plane(&plane, &mask.dense_only(), mode).data[x as usize]
        })
        .collect()
}

#[test]
fn engine_border_reads_match_hand_written_sequences() {
    for &(mode, row, from, to, expected) in BORDER_CASES {
        // a=10, b=20, ...; the constant reads as 0.
        let values: Vec<u8> = row.bytes().map(|b| (b - b'a' + 1) * 10).collect();
        let want: Vec<u8> = expected
            .bytes()
            .map(|b| if b == b'0' { 0 } else { (b - b'a' + 1) * 10 })
            .collect();
        assert_eq!(
            engine_reads(mode, &values, from, to),
            want,
            "engine {mode} on {row} {from}..={to}"
        );
        // Down a column as well as along a row.
        let column = Plane {
            depth: convstream_core::SampleDepth::EIGHT,
            width: 1,
            height: values.len(),
            channels: 1,
            stride: 3,
            data: values.iter().flat_map(|v| [*v, 99, 99]).collect::<Vec<u8>>().into(),
        };
        let taps = 2 * from.unsigned_abs().max(to.unsigned_abs()) as usize + 1;
        let centre = (taps / 2) as i64;
        for (k, p) in (from..=to).enumerate() {
            let y = p.clamp(0, values.len() as i64 - 1);
            let i = (p - y + centre) as usize;
            let mut coefficients = vec![0.0; taps];
            coefficients[taps - 1 - i] = 1.0;
            let mask = Mask::from_coefficients(1, taps, coefficients, 0.0);
            let out = convolve_plane(&column, &mask, mode);
            assert_eq!(
                out.row(y as usize)[0],
                want[k],
                "engine {mode} down a column of {row}, position {p}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The engine against the oracle
// ---------------------------------------------------------------------------------------

#[test]
fn dense_random_masks_match_the_oracle() {
    with_seeds("dense random masks", |rng| sweep(rng, random_dense_mask, false));
}

#[test]
fn separable_random_masks_match_the_oracle() {
    with_seeds("separable random masks", |rng| sweep(rng, random_separable_mask, false));
}

#[test]
fn separable_masks_forced_dense_match_the_oracle() {
    with_seeds("separable masks on the dense path", |rng| {
        sweep(rng, random_separable_mask, true)
    });
}

#[test]
fn presets_match_the_oracle() {
    let specs = [
        "identity",
        "identity:size=5",
        "box:size=3",
        "box:width=15,height=1",
        "box:width=3,height=7",
        "gaussian:size=13,sigma=2.5",
        "gaussian:size=63",
        "sharpen:amount=1.5",
        "unsharp",
        "laplacian",
        "laplacian:neighbours=8,bias=128",
        "sobel-x:bias=128",
        "sobel-y:divisor=4,bias=128",
        "prewitt-x",
        "prewitt-y",
        "emboss",
        "motion-blur:size=9,angle=30",
        "motion-blur:size=7",
        "edge:bias=128",
        "sobel",
        "sobel:divisor=4",
        "prewitt:divisor=3,bias=16",
        "neutral",
    ];
    with_seeds("presets", |rng| {
        for spec in specs {
            let mask = Mask::from_spec(spec).unwrap();
            for &(w, h) in &[(1, 1), (5, 3), (17, 9), (40, 23)] {
                for channels in [1, 3] {
                    let plane = random_plane(rng, w, h, channels);
                    for mode in BorderMode::ALL {
                        let what = format!("{spec} on {w}x{h}x{channels}, border {mode}");
                        assert_engine_matches(&plane, &mask, mode, &what);
                        if mask.is_separable() {
                            assert_engine_matches(&plane, &mask.dense_only(), mode, &format!("{what}, dense"));
                        }
                    }
                }
            }
        }
    });
}

/// The magnitude presets are what their names say: `sqrt(gx^2 + gy^2)` of SciPy-style
/// convolutions with the textbook Sobel and Prewitt kernels (an f64 computation written
/// out here, within the f32 rounding), and `masks show` prints both matrices.
#[test]
fn sobel_and_prewitt_are_gradient_magnitudes() {
    let kernels = [
        ("sobel", [[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]),
        ("prewitt", [[1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, -1.0]]),
    ];
    with_seeds("magnitude", |rng| {
        let (w, h) = (23, 17);
        let plane = random_plane(rng, w, h, 1);
        let at = |y: i64, x: i64| {
            let (y, x) = (y.clamp(0, h as i64 - 1) as usize, x.clamp(0, w as i64 - 1) as usize);
            f64::from(plane.row(y)[x])
        };
        for (name, gx) in kernels {
            for divisor in [1.0, 4.0] {
                let mask = Mask::from_spec(&format!("{name}:divisor={divisor}")).unwrap();
                let out = packed_pixels(&convolve_plane(&plane, &mask, BorderMode::Nearest));
                for y in 0..h as i64 {
                    for x in 0..w as i64 {
                        // True convolution: the kernel turned around, centre at (1, 1).
                        let (mut a, mut b) = (0.0, 0.0);
                        for (i, j) in (0..3).flat_map(|i| (0..3).map(move |j| (i, j))) {
                            let v = at(y + 1 - i as i64, x + 1 - j as i64);
                            a += gx[i][j] * v;
                            b += gx[j][i] * v;
                        }
                        let expected = ((a * a + b * b).sqrt() / divisor).round().clamp(0.0, 255.0);
                        let got = f64::from(out[y as usize * w + x as usize]);
                        assert!(
                            (got - expected).abs() <= 1.0,
                            "{name}/{divisor} at ({x}, {y}): {got} vs {expected}"
                        );
                    }
                }
            }
        }
    });
    // What `masks show` prints for it.
    let shown = convstream_core::show_spec("sobel").expect("sobel is a preset");
    assert!(
        shown.contains("magnitude sqrt(a^2 + b^2)") && shown.contains("separable: no"),
        "{shown}"
    );
}

#[test]
fn identity_returns_the_plane_exactly() {
    with_seeds("identity", |rng| {
        for &(w, h) in PLANE_SIZES {
            let plane = random_plane(rng, w, h, 3);
            for spec in ["identity", "identity:size=7"] {
                let mask = Mask::from_spec(spec).unwrap();
                for mode in BorderMode::ALL {
                    let out = convolve_plane(&plane, &mask, mode);
                    assert!(out.same_pixels(&plane), "{spec} {mode} on {w}x{h}");
                    let out = convolve_plane(&plane, &mask.dense_only(), mode);
                    assert!(out.same_pixels(&plane), "{spec} dense {mode} on {w}x{h}");
                }
            }
        }
    });
}

#[test]
fn box_blur_by_hand() {
    // 3x3 of 0..9, reflect: the centre is the mean of everything, 4.
    let plane = Plane {
        depth: convstream_core::SampleDepth::EIGHT,
        width: 3,
        height: 3,
        channels: 1,
        stride: 3,
        data: (0..9).collect::<Vec<u8>>().into(),
    };
    let out = convolve_plane(&plane, &Mask::from_spec("box:size=3").unwrap(), BorderMode::Reflect);
    assert_eq!(out.data[4], 4);
    // Top-left with reflect reads rows 0 0 1 and columns 0 0 1: (0+0+1)*2 + (3+3+4) = 12 -> 12/9 rounds to 1.
    assert_eq!(out.data[0], 1);
    // Constant: (0+1+3+4)/9 = 0.89 -> 1; bottom-right (4+5+7+8)/9 = 2.67 -> 3.
    let out = convolve_plane(&plane, &Mask::from_spec("box:size=3").unwrap(), BorderMode::Constant);
    assert_eq!((out.data[0], out.data[8]), (1, 3));
}

/// A box is each window's mean: the exact sum of its samples divided once by w x h (one
/// IEEE division, rounded half away from zero), not a sum of taps of 1 / (w x h) that each
/// round. With 225 or 961 samples a window, such taps' rounding moves means near a half.
#[test]
fn boxes_are_each_windows_exact_mean() {
    with_seeds("boxes_are_each_windows_exact_mean", |rng| {
        for (bits, width, height) in [
            (8, 3, 3),
            (8, 7, 3),
            (8, 15, 15),
            (8, 31, 31),
            (8, 1, 63),
            (16, 5, 5),
            (16, 15, 17),
        ] {
            let depth = SampleDepth { bits, shift: 0 };
            let shape = PlaneShape {
                depth,
                ..PlaneShape::eight_bit(rng.gen_range(1..70), rng.gen_range(1..50), rng.gen_range(1..=3))
            };
            let plane = random_plane_of(rng, shape);
            let mask = Mask::from_spec(&format!("box:width={width},height={height}")).unwrap();
            let mode = [
                BorderMode::Constant,
                BorderMode::Nearest,
                BorderMode::Reflect,
                BorderMode::Mirror,
                BorderMode::Wrap,
            ][rng.gen_range(0..5)];
            let out = convolve_plane(&plane, &mask, mode);
            let at = |p: &Plane, y: usize, x: usize, c: usize| -> u32 {
                let i = x * p.channels + c;
                match bits {
                    8 => u32::from(p.row(y)[i]),
                    _ => u32::from(u16::from_le_bytes([p.row(y)[2 * i], p.row(y)[2 * i + 1]])),
                }
            };
            let (w, h) = (plane.width as i64, plane.height as i64);
            for y in 0..plane.height {
                for x in 0..plane.width {
                    for c in 0..plane.channels {
                        let mut sum = 0u32;
                        for i in 0..height as i64 {
                            for j in 0..width as i64 {
                                let row = oracle_index(mode, y as i64 + i - height as i64 / 2, h);
                                let col = oracle_index(mode, x as i64 + j - width as i64 / 2, w);
                                if let (Some(row), Some(col)) = (row, col) {
                                    sum += at(&plane, row, col, c);
                                }
                            }
                        }
                        let mean = (sum as f32 / (width * height) as f32).round() as u32;
                        assert_eq!(
                            at(&out, y, x, c),
                            mean,
                            "{bits}-bit {width}x{height} box, {mode:?}, at ({y}, {x}) channel {c} of a {}x{} plane",
                            plane.width,
                            plane.height
                        );
                    }
                }
            }
        }
    });
}

#[test]
fn results_are_rounded_half_away_from_zero_and_clamped() {
    let plane = Plane {
        depth: convstream_core::SampleDepth::EIGHT,
        width: 1,
        height: 1,
        channels: 1,
        stride: 1,
        data: vec![1].into(),
    };
    let scale = |gain: f32, bias: f32| {
        convolve_plane(
            &plane,
            &Mask::from_coefficients(1, 1, vec![gain], bias),
            BorderMode::Nearest,
        )
        .data[0]
    };
    assert_eq!(scale(0.5, 0.0), 1); // 0.5 -> 1
    assert_eq!(scale(2.5, 0.0), 3); // 2.5 -> 3
    assert_eq!(scale(1.0, 1.49), 2);
    assert_eq!(scale(-10.0, 0.0), 0);
    assert_eq!(scale(1000.0, 0.0), 255);
    assert_eq!(scale(1.0, 254.5), 255);
}

// ---------------------------------------------------------------------------------------
// Frames through the engine interface
// ---------------------------------------------------------------------------------------

fn random_frame(rng: &mut StdRng, format: PixelFormat, width: usize, height: usize, index: u64) -> Frame {
    let mut frame = Frame::new(format, width, height);
    for plane in &mut frame.planes {
        *plane = random_plane_of(rng, plane.shape());
    }
    frame.index = index;
    frame.pts = Some(1000 + 40 * index as i64);
    frame
}

#[test]
fn plane_selection_filters_only_the_chosen_planes() {
    with_seeds("plane selection", |rng| {
        let mask = Mask::from_spec("gaussian:size=5").unwrap();
        for format in PixelFormat::all() {
            let frame = random_frame(rng, format, 17, 11, 3);
            for planes in [PlaneSelection::All, PlaneSelection::Luma, PlaneSelection::Chroma] {
                let filter = FilterSpec {
                    mask: mask.clone(),
                    border: BorderMode::Mirror,
                    planes,
                    plane_masks: Default::default(),
                };
                let out = CpuEngine::filter_frame(&filter, &frame);
                assert_eq!((out.pts, out.index, out.format), (frame.pts, frame.index, frame.format));
                assert_eq!((out.width, out.height), (frame.width, frame.height));
                for (i, (a, b)) in out.planes.iter().zip(&frame.planes).enumerate() {
                    let filtered = match planes {
                        PlaneSelection::All => true,
                        PlaneSelection::Luma => format.has_luma_plane() && i == 0,
                        PlaneSelection::Chroma => format.has_luma_plane() && i > 0,
                    };
                    if filtered {
                        assert_eq!(
                            packed_pixels(a),
                            oracle(b, &mask, BorderMode::Mirror),
                            "{format} {planes} plane {i}"
                        );
                    } else {
                        assert!(a.same_pixels(b), "{format} {planes}: plane {i} must be untouched");
                    }
                }
            }
        }
    });
}

#[test]
fn engine_returns_frames_in_submission_order() {
    let mut rng = StdRng::seed_from_u64(FIXED_SEED);
    let filter = FilterSpec {
        mask: Mask::from_spec("box:size=3").unwrap(),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        plane_masks: Default::default(),
    };
    let mut engine = CpuEngine::new(filter.clone());
    assert_eq!(engine.name(), "cpu");
    assert!(engine.receive().unwrap().is_none(), "nothing in flight");
    let frames: Vec<Frame> = (0..6)
        .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, 9, 7, i))
        .collect();
    let mut received = Vec::new();
    for frame in &frames {
        engine.submit(frame.clone()).unwrap();
        while engine.in_flight() >= engine.capacity() {
            received.push(engine.receive().unwrap().unwrap());
        }
    }
    while let Some(frame) = engine.receive().unwrap() {
        received.push(frame);
    }
    assert_eq!(engine.in_flight(), 0);
    assert_eq!(received.len(), frames.len());
    for (out, input) in received.iter().zip(&frames) {
        assert_eq!(out.index, input.index);
        assert_eq!(out.pts, input.pts);
        assert_eq!(out, &CpuEngine::filter_frame(&filter, input));
    }
    // A new filter applies to frames submitted after it.
    let sharpen = FilterSpec {
        mask: Mask::from_spec("sharpen").unwrap(),
        ..filter
    };
    engine.set_filter(sharpen.clone()).unwrap();
    engine.submit(frames[0].clone()).unwrap();
    assert_eq!(
        engine.receive().unwrap().unwrap(),
        CpuEngine::filter_frame(&sharpen, &frames[0])
    );
}

/// `ffmpeg` is FFmpeg's `convolution` edge rule: with a 3x3 mask, mirrored before the start
/// and reflected past the end (`|x|`, `2n - 1 - x` in its `setup_3x3`); with any other mask
/// mirrored both ways (its `avpriv_mirror`). A one-hot mask reads one neighbour of an edge
/// sample: the engine reads what the rule says, along rows and down columns.
#[test]
fn the_ffmpeg_border_is_ffmpegs_3x3_rule_and_mirror_otherwise() {
    let library = |mode: BorderMode, p: i64, len: i64| mode.map(p as isize, len as usize);
    for (row, from, to, expected) in [
        ("abcd", -3, 6, "dcbabcddcb"),
        ("ab", -2, 3, "ababba"),
        ("a", -2, 2, "aaaaa"),
    ] {
        assert_eq!(
            extended(BorderMode::Ffmpeg, row, from, to, library),
            expected,
            "map on {row}"
        );
        assert_eq!(
            extended(BorderMode::Ffmpeg, row, from, to, oracle_index),
            expected,
            "oracle on {row}"
        );
    }
    // a b c d as 10 20 30 40, one row; tap `j` of a correlation row reads x + j - side/2.
    let plane = Plane {
        depth: convstream_core::SampleDepth::EIGHT,
        width: 4,
        height: 1,
        channels: 1,
        stride: 4,
        data: vec![10, 20, 30, 40].into(),
    };
    let read = |side: usize, offset: isize, x: usize| {
        let mut coefficients = vec![0.0; side * side];
        let centre = side / 2;
        // Convolution orientation: the correlation tap (centre, centre + offset) turned around.
        coefficients[side * side - 1 - (centre * side + (centre as isize + offset) as usize)] = 1.0;
        let mask = Mask::from_coefficients(side, side, coefficients, 0.0);
        convolve_plane(&plane, &mask.dense_only(), BorderMode::Ffmpeg).data[x]
    };
    assert_eq!(read(3, -1, 0), 20, "3x3, left of a: b (mirrored)");
    assert_eq!(read(3, 1, 3), 40, "3x3, right of d: d (reflected)");
    assert_eq!(read(5, -1, 0), 20, "5x5, left of a: b (mirrored)");
    assert_eq!(read(5, 1, 3), 30, "5x5, right of d: c (mirrored)");
    assert_eq!(read(5, 2, 3), 20, "5x5, two right of d: b (mirrored)");
}

//! convstream against the tools its users come from, run in the same test on the same
//! random pictures: OpenCV's `filter2D` and `GaussianBlur` (opencv-python-headless, which
//! scripts/install-deps.sh installs; `tests/peers/opencv_filter.py` applies them) and
//! FFmpeg's `convolution` filter (the `ffmpeg` CLI). A mask written the way each tool takes
//! it (`mode=correlate`, OpenCV's border names, the sum as `divisor`) must give the same
//! picture within one level; each comparison prints how many samples differ at all.

use std::path::Path;
use std::process::Command;

use convstream_testkit::random::Random;

use crate::common::{ffmpeg, run_on_cpu, Y4m};

/// An 8-bit 4:2:0 y4m file of `frames` random frames.
fn random_y4m(path: &Path, width: usize, height: usize, frames: usize, random: &mut Random) {
    let chroma = width.div_ceil(2) * height.div_ceil(2);
    let mut bytes = format!("YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n").into_bytes();
    for _ in 0..frames {
        bytes.extend_from_slice(b"FRAME\n");
        let mut picture = vec![0u8; width * height + 2 * chroma];
        random.fill_samples(&mut picture, 8, 0);
        bytes.extend_from_slice(&picture);
    }
    std::fs::write(path, bytes).unwrap();
}

/// Runs the OpenCV script with `args`, failing with what it said.
fn opencv(dir: &Path, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/opencv_filter.py");
    let output = Command::new("python3")
        .arg(script)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "the OpenCV peer failed (scripts/install-deps.sh installs opencv-python-headless):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `convstream run` on the CPU engine with the given mask and border.
fn convstream(dir: &Path, input: &str, output: &str, mask: &str, border: &str) {
    let args = ["-y", "-i", input, "-o", output, "--mask", mask, "--border", border];
    run_on_cpu(dir, &args).success();
}

/// Asserts that two y4m files hold the same pictures within one level at every sample at
/// least `margin` samples from every edge (all of them with margin 0); returns how many
/// samples differ at all.
fn assert_within_one_level(ours: &Path, theirs: &Path, margin: usize, what: &str) -> usize {
    assert_within_levels(ours, theirs, 1, margin, what)
}

/// [`assert_within_one_level`] with a bound of `levels`.
fn assert_within_levels(ours: &Path, theirs: &Path, levels: u8, margin: usize, what: &str) -> usize {
    let (ours, theirs) = (Y4m::read(ours), Y4m::read(theirs));
    assert_eq!(ours.frames.len(), theirs.frames.len(), "{what}: frame counts");
    assert!(!ours.frames.is_empty(), "{what}: no frames");
    let sizes = ours.plane_sizes();
    let mut differing = 0;
    for (index, (a, b)) in ours.frames.iter().zip(&theirs.frames).enumerate() {
        for (plane, &(width, height)) in sizes.iter().enumerate() {
            for y in margin..height.saturating_sub(margin) {
                for x in margin..width.saturating_sub(margin) {
                    let (p, q) = (a[plane][y * width + x], b[plane][y * width + x]);
                    assert!(
                        p.abs_diff(q) <= levels,
                        "{what}: frame {index} plane {plane} at ({x}, {y}): convstream {p}, peer {q}"
                    );
                    differing += usize::from(p != q);
                }
            }
        }
    }
    println!("{what}: {differing} samples differ (by at most {levels})");
    differing
}

/// A random kernel of `height` x `width` taps summing to about 1 (mostly positive, a few
/// negative), with six decimals so both tools read the same numbers.
fn random_kernel(height: usize, width: usize, random: &mut Random) -> Vec<Vec<f64>> {
    let raw: Vec<Vec<f64>> = (0..height)
        .map(|_| {
            (0..width)
                .map(|_| (random.next_u64() % 2000) as f64 / 1000.0 - 0.3)
                .collect()
        })
        .collect();
    let sum: f64 = raw.iter().flatten().sum();
    raw.iter()
        .map(|row| row.iter().map(|v| (v / sum * 1e6).round() / 1e6).collect())
        .collect()
}

fn matrix_text(kernel: &[Vec<f64>]) -> String {
    let rows: Vec<String> = kernel
        .iter()
        .map(|row| format!("[{}]", row.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(",")))
        .collect();
    format!("[{}]", rows.join(","))
}

#[test]
fn correlate_with_opencvs_border_names_equals_filter2d() {
    let dir = convstream_testkit::tempdir();
    let mut random = Random::seeded();
    // Odd sizes, one smaller than its mask (its chroma is 3x2 under a 7x7 mask).
    let pictures = [(37, 23), (64, 48), (5, 3)];
    let shapes = [(3, 3), (1, 5), (5, 3), (7, 7), (13, 13)];
    // OpenCV's names, taken by convstream as they are.
    let borders = ["constant", "replicate", "reflect", "reflect_101"];
    for (p, &(width, height)) in pictures.iter().enumerate() {
        let input = format!("in{p}.y4m");
        random_y4m(&dir.path().join(&input), width, height, 2, &mut random);
        for &(kh, kw) in &shapes {
            if (width, height) == (5, 3) && kh > 7 {
                continue;
            }
            let kernel = random_kernel(kh, kw, &mut random);
            let json = serde_json::to_string(&kernel).unwrap();
            let mask = format!("custom:matrix={},mode=correlate", matrix_text(&kernel));
            for border in borders {
                let what = format!("{width}x{height}, {kh}x{kw} kernel, {border}");
                convstream(dir.path(), &input, "ours.y4m", &mask, border);
                opencv(dir.path(), &[&input, "theirs.y4m", "filter2d", &json, border]);
                assert_within_one_level(&dir.path().join("ours.y4m"), &dir.path().join("theirs.y4m"), 0, &what);
            }
        }
    }
}

/// `gaussian:size=k` against `cv2.GaussianBlur(plane, (k, k), 0)`. OpenCV's float path uses
/// the taps of `cv2.getGaussianKernel`, as convstream does: within one level at every size.
/// Its 8-bit path (what `GaussianBlur` does to a `uint8` picture) quantizes the taps to
/// 1/256 and rounds between its two passes: exact for k <= 9 (fixed taps that are multiples
/// of 1/256), and, beyond, up to two levels from OpenCV's own float result on noise, so
/// within two of convstream.
#[test]
fn gaussian_equals_opencvs_gaussian_blur_at_every_size() {
    let dir = convstream_testkit::tempdir();
    let mut random = Random::seeded();
    random_y4m(&dir.path().join("in.y4m"), 97, 61, 2, &mut random);
    for size in (3..=31).step_by(2) {
        // cv2.GaussianBlur's default border is BORDER_REFLECT_101.
        convstream(
            dir.path(),
            "in.y4m",
            "ours.y4m",
            &format!("gaussian:size={size}"),
            "reflect_101",
        );
        let (ours, theirs) = (dir.path().join("ours.y4m"), dir.path().join("theirs.y4m"));
        opencv(
            dir.path(),
            &["in.y4m", "theirs.y4m", "gaussian-float", &size.to_string()],
        );
        assert_within_levels(&ours, &theirs, 1, 0, &format!("gaussian {size}x{size}, OpenCV float"));
        opencv(dir.path(), &["in.y4m", "theirs.y4m", "gaussian", &size.to_string()]);
        let levels = if size <= 9 { 1 } else { 2 };
        assert_within_levels(
            &ours,
            &theirs,
            levels,
            0,
            &format!("gaussian {size}x{size}, OpenCV 8-bit"),
        );
    }
}

#[test]
fn a_matrix_correlated_and_divided_by_its_sum_equals_ffmpegs_convolution_filter() {
    let dir = convstream_testkit::tempdir();
    let mut random = Random::seeded();
    random_y4m(&dir.path().join("in.y4m"), 45, 31, 2, &mut random);
    // Kernels as FFmpeg users write them: whole numbers, divided by their sum (FFmpeg's
    // default `rdiv`), one not symmetric (a shift) so that orientation shows.
    let kernels: [(usize, &str); 5] = [
        (3, "1 2 1 2 4 2 1 2 1"),
        (3, "0 0 0 0 0 1 0 0 0"),
        (3, "0 -1 0 -1 5 -1 0 -1 0"),
        (5, "1 4 6 4 1 4 16 24 16 4 6 24 36 24 6 4 16 24 16 4 1 4 6 4 1"),
        (
            7,
            "0 0 0 0 0 0 1 0 0 0 0 0 2 0 0 0 0 0 3 0 0 0 0 0 4 0 0 0 0 0 5 0 0 0 0 0 6 0 0 0 0 0 7 0 0 0 0 0 0",
        ),
    ];
    for (side, taps) in kernels {
        let values: Vec<i64> = taps.split(' ').map(|t| t.parse().unwrap()).collect();
        let sum: i64 = values.iter().sum();
        let rows: Vec<String> = values
            .chunks(side)
            .map(|row| format!("[{}]", row.iter().map(i64::to_string).collect::<Vec<_>>().join(",")))
            .collect();
        let mask = format!("custom:matrix=[{}],mode=correlate,divisor={sum}", rows.join(","));
        convstream(dir.path(), "in.y4m", "ours.y4m", &mask, "mirror");
        let filter = (0..3)
            .map(|plane| format!("{plane}m='{taps}':{plane}rdiv=1/{sum}"))
            .collect::<Vec<_>>()
            .join(":");
        ffmpeg(
            dir.path(),
            &[
                "-i",
                "in.y4m",
                "-vf",
                &format!("convolution={filter}"),
                "-f",
                "yuv4mpegpipe",
                "theirs.y4m",
            ],
        );
        // FFmpeg's own border is mirror on the left and top but reflect on the right and
        // bottom, which no single mode is: the samples a border reaches are left out.
        let what = format!("FFmpeg convolution {side}x{side} `{taps}`");
        assert_within_one_level(
            &dir.path().join("ours.y4m"),
            &dir.path().join("theirs.y4m"),
            side / 2,
            &what,
        );
    }
}

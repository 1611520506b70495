//! How long the CPU engine takes for one plane: a 1080p 8-bit plane (or `--size WxH`) through
//! each mask named on the command line (default: `sharpen`, `box:size=3`, `gaussian:size=13`,
//! `box:size=13`), reflect border; prints the median, least, p10 and p90 of `--runs` timed calls
//! (default 30) after a warm-up, one JSON object per mask, so a script can set the figures
//! beside OpenCV's measured in the same run.
//!
//! `cargo run --release -p convstream-core --example cpu_plane_speed -- [--runs N] [--size WxH] [MASK...]`

use std::time::Instant;

use convstream_core::convolve_plane;
use convstream_core::BorderMode;
use convstream_core::Mask;
use convstream_core::{Plane, PlaneShape};

fn main() {
    let mut runs = 30usize;
    let (mut width, mut height) = (1920usize, 1080usize);
    let mut specs: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).unwrap_or(runs),
            "--size" => {
                let size = args.next().unwrap_or_default();
                if let Some((w, h)) = size.split_once('x') {
                    width = w.parse().unwrap_or(width);
                    height = h.parse().unwrap_or(height);
                }
            }
            spec => specs.push(spec.to_string()),
        }
    }
    if specs.is_empty() {
        specs = ["sharpen", "box:size=3", "gaussian:size=13", "box:size=13"]
            .map(String::from)
            .to_vec();
    }
    let mut plane = Plane::new(PlaneShape::eight_bit(width, height, 1));
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for byte in plane.data.iter_mut() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *byte = (state >> 56) as u8;
    }
    for spec in specs {
        let mask = match Mask::from_spec(&spec) {
            Ok(mask) => mask,
            Err(errors) => {
                eprintln!("{spec}: {errors:?}");
                std::process::exit(2);
            }
        };
        for _ in 0..3 {
            std::hint::black_box(convolve_plane(&plane, &mask, BorderMode::Reflect));
        }
        let mut times: Vec<f64> = (0..runs)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(convolve_plane(&plane, &mask, BorderMode::Reflect));
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((q * (times.len() - 1) as f64).round() as usize).min(times.len() - 1)];
        // The taps as written for a correlation (what OpenCV is given), and the factors of a
        // rank-one mask, so a peer filters with the same numbers.
        let taps: Vec<f32> = mask.coefficients().iter().rev().copied().collect();
        let factors = mask.factors().map(|f| {
            let turned = |v: &[f32]| v.iter().rev().copied().collect::<Vec<f32>>();
            (turned(&f.column), turned(&f.row))
        });
        println!(
            "{{\"mask\": \"{spec}\", \"size\": \"{width}x{height}\", \"median_ms\": {:.3}, \"min_ms\": {:.3}, \"p10_ms\": {:.3}, \"p90_ms\": {:.3}, \"runs\": {runs}, \"width\": {}, \"taps\": {taps:?}, \"factors\": {}}}",
            at(0.5),
            times[0],
            at(0.1),
            at(0.9),
            mask.width(),
            factors.map_or("null".to_string(), |(c, r)| format!("[{c:?}, {r:?}]")),
        );
    }
}

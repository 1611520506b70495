//! The kernel suite: each convolution path's time against mask size, with the baseline (the
//! global-memory kernel on the GPU, the dense path on the CPU) measured in the same run.

use std::time::Instant;

use super::workload::{dense_mask, random_frame, separable_mask};
use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::{compare_with_eight_bit, KernelRow};
use convstream_core::BorderMode;
use convstream_core::{PixelFormat, PixelLayout};

/// Mask sides the kernel suite sweeps.
const KERNEL_SIZES: &[usize] = &[3, 5, 7, 9, 13, 21, 31, 63];
const QUICK_KERNEL_SIZES: &[usize] = &[3, 13];
/// Bits per sample the kernel suite times: bytes and 16-bit words.
const KERNEL_DEPTHS: &[u8] = &[8, 16];

// Without CUDA support only the CPU arm is built, which needs no `skipped`.
#[cfg_attr(not(feature = "cuda"), allow(unused_variables, clippy::ptr_arg))]
pub fn kernel(
    options: &BenchOptions,
    gpu: Option<usize>,
    skipped: &mut Vec<String>,
) -> Result<Vec<KernelRow>, BenchError> {
    let sizes = match (&options.mask_sizes, options.quick) {
        (Some(sizes), _) => sizes.as_slice(),
        (None, true) => QUICK_KERNEL_SIZES,
        (None, false) => KERNEL_SIZES,
    };
    let depths = options.depths.as_deref().unwrap_or(KERNEL_DEPTHS);
    let mut rows = match gpu {
        #[cfg(feature = "cuda")]
        Some(ordinal) => super::gpu::kernel(options, ordinal, sizes, depths, skipped)?,
        _ => kernel_cpu(options, sizes, depths),
    };
    compare_with_eight_bit(&mut rows);
    Ok(rows)
}

/// The CPU engine: dense and separable paths on one plane (smaller with --quick) at each depth.
fn kernel_cpu(options: &BenchOptions, sizes: &[usize], depths: &[u8]) -> Vec<KernelRow> {
    let (width, height) = if options.quick { (320, 180) } else { (1920, 1080) };
    let repetitions = if options.quick { 3 } else { 7 };
    let (_, peak) = super::cpu_info::describe();
    let mut rows = Vec::new();
    for &bits in depths {
        let Some(format) = PixelFormat::new(PixelLayout::Gray, bits) else {
            continue;
        };
        let plane = random_frame(format, width, height, 1).planes.remove(0);
        for &size in sizes {
            let mut dense_median = None;
            for (path, mask) in [("dense", dense_mask(size)), ("separable", separable_mask(size))] {
                let mut samples: Vec<f64> = (0..repetitions)
                    .map(|_| {
                        let started = Instant::now();
                        std::hint::black_box(convstream_core::convolve_plane(&plane, &mask, BorderMode::Reflect));
                        started.elapsed().as_secs_f64() * 1e6
                    })
                    .collect();
                samples.sort_by(f64::total_cmp);
                let median = samples[samples.len() / 2];
                if path == "dense" {
                    dense_median = Some(median);
                }
                // The taps the engine multiplies and adds: all of them, or a row and a column.
                let multiply_adds = if path == "dense" { size * size } else { 2 * size } as f64;
                let flop_per_s = 2.0 * multiply_adds * (width * height) as f64 / (median * 1e-6);
                rows.push(KernelRow {
                    plane: format!("{width}x{height}"),
                    bits,
                    mask: mask.description().to_string(),
                    size,
                    path: format!("cpu {path}"),
                    median_us: median,
                    p10_us: samples[0],
                    p90_us: samples[samples.len() - 1],
                    queued_us: None,
                    queued_gbytes_per_s: None,
                    gpixels_per_s: (width * height) as f64 / median / 1e3,
                    gflop_per_s: Some(flop_per_s / 1e9),
                    fraction_of_fp32_peak: peak.map(|peak| flop_per_s / peak),
                    speedup_vs_baseline: dense_median.filter(|_| path == "separable").map(|d| d / median),
                    time_vs_eight_bit: None,
                    checked_against: "self (the CPU engine is the reference)".into(),
                });
            }
        }
    }
    rows
}

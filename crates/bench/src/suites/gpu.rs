//! The GPU side of the suites: device facts, kernel and copy timings from CUDA events
//! (`engine::cuda::measure`), and the CUDA engine driven with frames for the overlap suite.

use std::time::Duration;

use super::overlap_runs::{busy_us_per_frame, FramesIn, OverlapCase, StageTimes, OVERLAP_FRAMES};
use super::workload::{dense_mask, drive, plane_sizes, separable_mask};
use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::{KernelRow, OverlapRow, TransferRow};
use convstream_core::{cuda_devices, cuda_driver_version, open_cuda_device, CudaEngine, DeviceInfo};
use convstream_core::{Bench, KernelCheck, TimingPlan};
use convstream_core::{BorderMode, FilterSpec};
use convstream_core::{DeviceChoice, Engine, EngineOptions, KernelPath};
use convstream_core::{Frame, PixelFormat, PixelLayout};

pub fn probe() -> Result<(), BenchError> {
    cuda_devices().map(|_| ()).map_err(BenchError::from)
}

pub fn describe_device(ordinal: usize) -> Result<(String, Option<String>, Option<f64>), BenchError> {
    let context = open_cuda_device(ordinal)?;
    let info = DeviceInfo::read(&context, ordinal)?;
    let (major, minor) = cuda_driver_version()?;
    Ok((
        format!("cuda:{ordinal} {}", info.name),
        Some(format!("CUDA {major}.{minor}")),
        Some(info.fp32_peak()),
    ))
}

pub fn kernel(
    options: &BenchOptions,
    ordinal: usize,
    sizes: &[usize],
    depths: &[u8],
    skipped: &mut Vec<String>,
) -> Result<Vec<KernelRow>, BenchError> {
    let bench = Bench::open(ordinal)?.with_tuning(options.tuning);
    let peak = bench.info.fp32_peak();
    let repetitions = if options.quick { 10 } else { 50 };
    let warm_up = Duration::from_millis(if options.quick { 20 } else { 300 });
    let mut rows = Vec::new();
    let planes = options.planes.clone().unwrap_or_else(|| plane_sizes(options.quick));
    for (width, height) in planes {
        for &bits in depths {
            let Some(depth) = PixelFormat::new(PixelLayout::Gray, bits).map(|f| f.sample_depth()) else {
                continue;
            };
            // Exact comparison with the CPU, except the tiled dense kernel on planes above 1080p:
            // it is compared with the baseline kernel (same arithmetic), itself just checked
            // against the CPU with the same mask.
            let check_for = |path: KernelPath| {
                if width * height > 1920 * 1080 && path == KernelPath::Dense {
                    KernelCheck::Baseline
                } else {
                    KernelCheck::Cpu
                }
            };
            for &size in sizes {
                let cases = [
                    (KernelPath::Global, dense_mask(size)),
                    (KernelPath::Dense, dense_mask(size)),
                    (KernelPath::Separable, separable_mask(size)),
                ];
                let mut baseline_us = None;
                for (path, mask) in cases {
                    // The global-memory kernel on the largest masks takes long; fewer repetitions.
                    let reps = if path == KernelPath::Global && size >= 31 {
                        repetitions.min(10)
                    } else {
                        repetitions
                    };
                    let result = match bench.time_kernel(
                        &mask,
                        BorderMode::Reflect,
                        path,
                        (width, height, options.channels, depth),
                        TimingPlan {
                            repetitions: reps,
                            warm_up,
                        },
                        check_for(path),
                    ) {
                        Ok(result) => result,
                        Err(e) => {
                            skipped.push(format!(
                                "kernel {path:?} {size}x{size} on {width}x{height} ({bits}-bit): {e}"
                            ));
                            continue;
                        }
                    };
                    let t = result.timing;
                    let queued_us = result.queued.median_us;
                    let plane_bytes = (width * height * options.channels * depth.bytes()) as f64;
                    if path == KernelPath::Global {
                        baseline_us = Some(t.median_us);
                    }
                    // Each channel's samples are filtered: outputs are samples, not pixels.
                    let pixels = (width * height * options.channels) as f64;
                    let multiply_adds = if path == KernelPath::Separable {
                        2 * size
                    } else {
                        size * size
                    } as f64;
                    rows.push(KernelRow {
                        plane: match options.channels {
                            1 => format!("{width}x{height}"),
                            channels => format!("{width}x{height}x{channels}"),
                        },
                        bits,
                        mask: mask.description().to_string(),
                        size,
                        path: format!("{path:?}").to_lowercase(),
                        median_us: t.median_us,
                        p10_us: t.p10_us,
                        p90_us: t.p90_us,
                        queued_us: Some(queued_us),
                        queued_gbytes_per_s: Some(2.0 * plane_bytes / queued_us / 1e3),
                        gpixels_per_s: pixels / t.median_us / 1e3,
                        gflop_per_s: Some(2.0 * multiply_adds * pixels / (t.median_us * 1e-6) / 1e9),
                        fraction_of_fp32_peak: Some(2.0 * multiply_adds * pixels / (t.median_us * 1e-6) / peak),
                        speedup_vs_baseline: baseline_us
                            .filter(|_| path != KernelPath::Global)
                            .map(|b| b / t.median_us),
                        time_vs_eight_bit: None,
                        checked_against: result.checked_against.to_string(),
                    });
                    tracing::info!(
                        "kernel {path:?} {size}x{size} {width}x{height} {bits}-bit: {:.1} us, {queued_us:.1} us queued",
                        t.median_us
                    );
                }
            }
        }
    }
    Ok(rows)
}

pub fn transfer(options: &BenchOptions, ordinal: usize) -> Result<Vec<TransferRow>, BenchError> {
    let bench = Bench::open(ordinal)?;
    let repetitions = if options.quick { 10 } else { 50 };
    let warm_up = Duration::from_millis(if options.quick { 20 } else { 200 });
    let mut rows = Vec::new();
    for (width, height) in plane_sizes(options.quick) {
        let bytes = width * height * 3 / 2; // one yuv420p frame
        for pinned in [true, false] {
            let plan = TimingPlan { repetitions, warm_up };
            let r = bench.time_transfers(bytes, pinned, plan)?;
            let gb_s = |us: f64, bytes: usize| bytes as f64 / us / 1e3;
            rows.push(TransferRow {
                bytes,
                memory: if pinned { "pinned" } else { "pageable" }.into(),
                h2d_us: r.h2d.median_us,
                d2h_us: r.d2h.median_us,
                both_us: r.both.median_us,
                h2d_gb_s: gb_s(r.h2d.median_us, bytes),
                d2h_gb_s: gb_s(r.d2h.median_us, bytes),
                both_gb_s: gb_s(r.both.median_us, 2 * bytes),
            });
        }
    }
    Ok(rows)
}

pub fn overlap(
    options: &BenchOptions,
    ordinal: usize,
    filter: &FilterSpec,
    case: OverlapCase,
    heap_frames: &mut Vec<Frame>,
    count: u64,
) -> Result<OverlapRow, BenchError> {
    let OverlapCase {
        frames_in,
        streams,
        frames_per_stream,
        width,
        height,
    } = case;
    let engine_options = EngineOptions {
        trace: true,
        shape: Some(convstream_core::FrameShape {
            format: PixelFormat::YUV420P,
            width,
            height,
        }),
        pooled_frames: if frames_in == FramesIn::Pool { OVERLAP_FRAMES } else { 0 },
        frames_per_stream,
        tuning: options.tuning,
        ..EngineOptions::new(DeviceChoice::Cuda(ordinal), streams, "bench")
    };
    let mut engine = CudaEngine::new(filter.clone(), &engine_options, ordinal)?;
    // Copies made in the engine's pool, as a source decoding into it would make them.
    let mut pooled_frames = match engine.frame_pool() {
        Some(frame_pool) => heap_frames.iter().map(|f| f.copied_into(&frame_pool)).collect(),
        None => Vec::new(),
    };
    let pool = match frames_in {
        FramesIn::Pool => &mut pooled_frames,
        FramesIn::Heap => heap_frames,
    };
    drive(&mut engine, pool, (count / 10).max(10))?; // warm-up: clocks ramp, kernels load
    let _ = engine.take_trace();
    let before = engine.host_copy_times();
    let seconds = drive(&mut engine, pool, count)?;
    let after = engine.host_copy_times();
    let spans = engine.take_trace();
    let median = |stage: &str| -> Option<f64> {
        let mut values: Vec<f64> = spans
            .iter()
            .filter(|s| s.stage == stage)
            .map(|s| s.duration_us)
            .collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    let per_frame = |total: Duration| total.as_secs_f64() * 1e6 / count as f64;
    let host_copy_in_us = per_frame(after.copy_in - before.copy_in);
    let host_copy_out_us = per_frame(after.copy_out - before.copy_out);
    let (upload_us, kernels_us, download_us) = (median("upload"), median("kernels"), median("download"));
    // The ideal is bound by the busiest stage: the CPU's enqueueing, or the time per frame
    // some upload, kernel or download was under way. Not by a stage's median duration: with
    // streams overlapping, a copy queued behind another stream's copy looks longer than it
    // is. The completion thread's time is left out: for pooled frames it is all waiting.
    let busiest = ["upload", "kernels", "download"]
        .into_iter()
        .map(|stage| busy_us_per_frame(&spans, stage, count))
        .fold(host_copy_in_us, f64::max);
    let default_depth = frames_per_stream == convstream_core::DEFAULT_FRAMES_PER_STREAM;
    if streams == 4 && width <= 1920 && frames_in == FramesIn::Pool && default_depth {
        let path = options.out.join("overlap-trace.json");
        convstream_core::write_chrome_trace(
            &path,
            &format!("bench overlap {width}x{height} streams=4 x {frames_per_stream}"),
            &spans,
        )
        .map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    let stages = StageTimes {
        host_copy_in_us,
        upload_us,
        kernels_us,
        download_us,
        host_copy_out_us,
        busiest_us: busiest,
    };
    Ok(case.row(count, seconds, stages, engine.pinned_bytes()))
}

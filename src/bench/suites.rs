//! The benchmark suites. GPU figures come from `engine::cuda::measure` (CUDA events); CPU
//! figures from wall-clock medians. Each suite measures its baseline in the same run.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{BenchError, BenchOptions, E2eRow, KernelRow, OverlapRow, RunInfo, TransferRow};
use crate::config::{FilterConfig, MaskSelection, PipelineConfig, PipelineSettings, SinkConfig, SourceConfig};
use crate::engine::{CpuEngine, DeviceChoice, Engine, EngineOptions};
use crate::filter::{BorderMode, FilterSpec, PlaneSelection};
use crate::frame::{Frame, PixelFormat};
use crate::mask::Mask;
use crate::pipeline::{decode_only, run_pipeline, RunOptions};

/// Mask sides the kernel suite sweeps.
const KERNEL_SIZES: &[usize] = &[3, 5, 7, 9, 13, 21, 31, 63];
const QUICK_KERNEL_SIZES: &[usize] = &[3, 13];
/// The dense mask of the overlap and e2e suites: a 13x13 Laplacian of Gaussian (not separable).
const E2E_MASK: &str = "edge:size=13,sigma=2";

/// The GPU the options ask for, `None` for the CPU.
pub fn gpu_ordinal(device: DeviceChoice) -> Result<Option<usize>, BenchError> {
    match device {
        DeviceChoice::Cpu => Ok(None),
        DeviceChoice::Cuda(n) => {
            probe()?;
            Ok(Some(n))
        }
        DeviceChoice::AnyCuda => {
            probe()?;
            Ok(Some(0))
        }
        DeviceChoice::Auto => match probe() {
            Ok(()) => Ok(Some(0)),
            Err(e) => {
                tracing::warn!("no usable GPU ({e}); benchmarking the CPU engine");
                Ok(None)
            }
        },
    }
}

#[cfg(feature = "cuda")]
fn probe() -> Result<(), BenchError> {
    crate::engine::cuda::device::probe()
        .map(|_| ())
        .map_err(BenchError::from)
}

#[cfg(not(feature = "cuda"))]
fn probe() -> Result<(), BenchError> {
    Err(crate::engine::EngineError::NotCompiledWithCuda.into())
}

pub fn run_info(options: &BenchOptions, gpu: Option<usize>) -> Result<RunInfo, BenchError> {
    let (device, driver, peak) = describe_device(gpu)?;
    Ok(RunInfo {
        device,
        driver,
        fp32_peak_tflops: peak.map(|p| p / 1e12),
        commit: env!("CONVSTREAM_COMMIT").to_string(),
        date: super::utc_now(),
        host_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        quick: options.quick,
        suites: format!("{:?}", options.suite).to_lowercase(),
    })
}

#[cfg(feature = "cuda")]
fn describe_device(gpu: Option<usize>) -> Result<(String, Option<String>, Option<f64>), BenchError> {
    use crate::engine::cuda::device;
    let Some(ordinal) = gpu else {
        return Ok(("cpu".into(), None, None));
    };
    let context = device::open(ordinal)?;
    let info = device::DeviceInfo::read(&context, ordinal)?;
    let (major, minor) = device::driver_version()?;
    Ok((
        format!("cuda:{ordinal} {}", info.name),
        Some(format!("CUDA {major}.{minor}")),
        Some(info.fp32_peak()),
    ))
}

#[cfg(not(feature = "cuda"))]
fn describe_device(_gpu: Option<usize>) -> Result<(String, Option<String>, Option<f64>), BenchError> {
    Ok(("cpu".into(), None, None))
}

fn dense_mask(size: usize) -> Mask {
    // A Laplacian of Gaussian has full rank: the dense path is the only one for it.
    Mask::from_spec(&format!("edge:size={size},sigma={:.2}", (size as f64 / 6.0).max(0.5)))
        .expect("a valid preset")
        .dense_only()
}

fn separable_mask(size: usize) -> Mask {
    Mask::from_spec(&format!("gaussian:size={size}")).expect("a valid preset")
}

fn plane_sizes(quick: bool) -> Vec<(usize, usize)> {
    if quick {
        vec![(1920, 1080)]
    } else {
        vec![(1920, 1080), (3840, 2160)]
    }
}

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
    match gpu {
        Some(ordinal) => kernel_gpu(options, ordinal, sizes, skipped),
        None => Ok(kernel_cpu(options, sizes)),
    }
}

/// The CPU engine: dense and separable paths on one plane (smaller with --quick).
fn kernel_cpu(options: &BenchOptions, sizes: &[usize]) -> Vec<KernelRow> {
    let (width, height) = if options.quick { (320, 180) } else { (1920, 1080) };
    let repetitions = if options.quick { 3 } else { 7 };
    let plane = random_frame(PixelFormat::Gray8, width, height, 1).planes.remove(0);
    let mut rows = Vec::new();
    for &size in sizes {
        let mut dense_median = None;
        for (path, mask) in [("dense", dense_mask(size)), ("separable", separable_mask(size))] {
            let mut samples: Vec<f64> = (0..repetitions)
                .map(|_| {
                    let started = Instant::now();
                    std::hint::black_box(crate::engine::cpu::convolve_plane(&plane, &mask, BorderMode::Reflect));
                    started.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            samples.sort_by(f64::total_cmp);
            let median = samples[samples.len() / 2];
            if path == "dense" {
                dense_median = Some(median);
            }
            rows.push(KernelRow {
                plane: format!("{width}x{height}"),
                mask: mask.description().to_string(),
                size,
                path: format!("cpu {path}"),
                median_us: median,
                p10_us: samples[0],
                p90_us: samples[samples.len() - 1],
                gpixels_per_s: (width * height) as f64 / median / 1e3,
                fraction_of_fp32_peak: None,
                speedup_vs_baseline: dense_median.filter(|_| path == "separable").map(|d| d / median),
                checked_against: "self (the CPU engine is the reference)".into(),
            });
        }
    }
    rows
}

#[cfg(feature = "cuda")]
fn kernel_gpu(
    options: &BenchOptions,
    ordinal: usize,
    sizes: &[usize],
    skipped: &mut Vec<String>,
) -> Result<Vec<KernelRow>, BenchError> {
    use crate::engine::cuda::measure::{Bench, KernelCheck, TimingPlan};
    use crate::engine::KernelPath;
    let bench = Bench::open(ordinal)?;
    let peak = bench.info.fp32_peak();
    let repetitions = if options.quick { 10 } else { 50 };
    let warm_up = Duration::from_millis(if options.quick { 20 } else { 300 });
    let mut rows = Vec::new();
    let planes = options.planes.clone().unwrap_or_else(|| plane_sizes(options.quick));
    for (width, height) in planes {
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
                    (width, height),
                    TimingPlan {
                        repetitions: reps,
                        warm_up,
                    },
                    check_for(path),
                ) {
                    Ok(result) => result,
                    Err(e) => {
                        skipped.push(format!("kernel {path:?} {size}x{size} on {width}x{height}: {e}"));
                        continue;
                    }
                };
                let t = result.timing;
                if path == KernelPath::Global {
                    baseline_us = Some(t.median_us);
                }
                let pixels = (width * height) as f64;
                let multiply_adds = if path == KernelPath::Separable {
                    2 * size
                } else {
                    size * size
                } as f64;
                rows.push(KernelRow {
                    plane: format!("{width}x{height}"),
                    mask: mask.description().to_string(),
                    size,
                    path: format!("{path:?}").to_lowercase(),
                    median_us: t.median_us,
                    p10_us: t.p10_us,
                    p90_us: t.p90_us,
                    gpixels_per_s: pixels / t.median_us / 1e3,
                    fraction_of_fp32_peak: Some(2.0 * multiply_adds * pixels / (t.median_us * 1e-6) / peak),
                    speedup_vs_baseline: baseline_us
                        .filter(|_| path != KernelPath::Global)
                        .map(|b| b / t.median_us),
                    checked_against: result.checked_against.to_string(),
                });
                tracing::info!("kernel {path:?} {size}x{size} {width}x{height}: {:.1} us", t.median_us);
            }
        }
    }
    Ok(rows)
}

#[cfg(not(feature = "cuda"))]
fn kernel_gpu(_: &BenchOptions, _: usize, _: &[usize], _: &mut Vec<String>) -> Result<Vec<KernelRow>, BenchError> {
    Err(crate::engine::EngineError::NotCompiledWithCuda.into())
}

pub fn transfer(
    options: &BenchOptions,
    gpu: Option<usize>,
    skipped: &mut Vec<String>,
) -> Result<Vec<TransferRow>, BenchError> {
    match gpu {
        Some(ordinal) => transfer_gpu(options, ordinal),
        None => {
            skipped.push("transfer: host-GPU copies need a GPU".into());
            Ok(Vec::new())
        }
    }
}

#[cfg(feature = "cuda")]
fn transfer_gpu(options: &BenchOptions, ordinal: usize) -> Result<Vec<TransferRow>, BenchError> {
    let bench = crate::engine::cuda::measure::Bench::open(ordinal)?;
    let repetitions = if options.quick { 10 } else { 50 };
    let warm_up = Duration::from_millis(if options.quick { 20 } else { 200 });
    let mut rows = Vec::new();
    for (width, height) in plane_sizes(options.quick) {
        let bytes = width * height * 3 / 2; // one yuv420p frame
        for pinned in [true, false] {
            let plan = crate::engine::cuda::measure::TimingPlan { repetitions, warm_up };
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

#[cfg(not(feature = "cuda"))]
fn transfer_gpu(_: &BenchOptions, _: usize) -> Result<Vec<TransferRow>, BenchError> {
    Err(crate::engine::EngineError::NotCompiledWithCuda.into())
}

/// Random yuv420p (or other) frames; `index` seeds them.
fn random_frame(format: PixelFormat, width: usize, height: usize, index: u64) -> Frame {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(index);
    let mut frame = Frame::new(format, width, height);
    for plane in &mut frame.planes {
        rng.fill(&mut plane.data[..]);
    }
    frame.index = index;
    frame
}

/// Pushes `count` frames through `engine`, recycling the frames it returns, and returns the
/// seconds it took. Frames are recycled so the loop measures the engine, not the allocator.
fn drive(engine: &mut dyn Engine, pool: &mut Vec<Frame>, count: u64) -> Result<f64, BenchError> {
    let started = Instant::now();
    for i in 0..count {
        let mut frame = pool
            .pop()
            .ok_or_else(|| BenchError::Other("frame pool ran dry".into()))?;
        frame.index = i;
        engine.submit(frame)?;
        while engine.in_flight() >= engine.capacity() {
            pool.extend(engine.receive()?);
        }
    }
    while let Some(frame) = engine.receive()? {
        pool.push(frame);
    }
    Ok(started.elapsed().as_secs_f64())
}

pub fn overlap(options: &BenchOptions, gpu: Option<usize>) -> Result<Vec<OverlapRow>, BenchError> {
    let frames: Vec<(usize, usize)> = if options.quick && gpu.is_none() {
        vec![(320, 180)]
    } else {
        plane_sizes(options.quick)
    };
    let filter = FilterSpec {
        mask: Mask::from_spec(E2E_MASK).expect("a valid preset"),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
    };
    let mut rows = Vec::new();
    for (width, height) in frames {
        let count: u64 = match (options.quick, gpu.is_some(), width > 1920) {
            (true, _, _) => 30,
            (false, true, false) => 2000,
            (false, true, true) => 600,
            (false, false, _) => 20,
        };
        let mut pool: Vec<Frame> = (0..OVERLAP_FRAMES)
            .map(|i| random_frame(PixelFormat::Yuv420p, width, height, i as u64))
            .collect();
        // Frames in the engine's pinned pool (as the source makes them) at every stream
        // count, with the default frames per stream. Baselines at 1 and 4 streams: one frame
        // per stream, and ordinary heap frames, which the lanes stage through pinned buffers.
        let depth = crate::engine::DEFAULT_FRAMES_PER_STREAM;
        let runs: Vec<(FramesIn, usize, usize)> = match gpu {
            Some(_) => [1, 2, 3, 4, 8]
                .map(|streams| (FramesIn::Pool, streams, depth))
                .into_iter()
                .chain([(FramesIn::Pool, 1, 1), (FramesIn::Pool, 4, 1)])
                .chain([(FramesIn::Heap, 1, depth), (FramesIn::Heap, 4, depth)])
                .collect(),
            None => vec![(FramesIn::Heap, 1, 1)],
        };
        let mut one_stream_fps = std::collections::HashMap::new();
        for (frames_in, streams, frames_per_stream) in runs {
            let row = match gpu {
                Some(ordinal) => overlap_gpu(
                    options,
                    ordinal,
                    &filter,
                    (frames_in, streams, frames_per_stream),
                    &mut pool,
                    count,
                    (width, height),
                )?,
                None => {
                    let mut engine = CpuEngine::new(filter.clone());
                    drive(&mut engine, &mut pool, 2)?;
                    let seconds = drive(&mut engine, &mut pool, count)?;
                    let per_frame_us = seconds * 1e6 / count as f64;
                    OverlapRow {
                        frame: format!("{width}x{height} yuv420p"),
                        frames_in: frames_in.name().into(),
                        streams,
                        frames_per_stream,
                        frames: count,
                        fps: count as f64 / seconds,
                        speedup_vs_one_stream: 1.0,
                        host_copy_in_us: per_frame_us,
                        upload_us: None,
                        kernels_us: None,
                        download_us: None,
                        host_copy_out_us: 0.0,
                        ideal_fps: 1e6 / per_frame_us,
                        pinned_bytes: 0,
                    }
                }
            };
            let base = *one_stream_fps.entry((frames_in, frames_per_stream)).or_insert(row.fps);
            rows.push(OverlapRow {
                speedup_vs_one_stream: row.fps / base,
                ..row
            });
            tracing::info!(
                "overlap {width}x{height} {} frames, streams={streams}x{frames_per_stream}: {:.0} frames/s",
                frames_in.name(),
                rows.last().map_or(0.0, |r| r.fps)
            );
        }
    }
    Ok(rows)
}

/// Microseconds per frame during which at least one span of `stage` was under way: the
/// union of the spans' intervals over `frames`.
fn busy_us_per_frame(spans: &[crate::engine::TraceSpan], stage: &str, frames: u64) -> f64 {
    let mut intervals: Vec<(f64, f64)> = spans
        .iter()
        .filter(|s| s.stage == stage)
        .map(|s| (s.start_us, s.start_us + s.duration_us))
        .collect();
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut busy, mut covered_to) = (0.0, f64::NEG_INFINITY);
    for (start, end) in intervals {
        busy += (end - start.max(covered_to)).max(0.0);
        covered_to = covered_to.max(end);
    }
    busy / frames.max(1) as f64
}

/// Synthetic frames the overlap suite cycles through (more than any lane count, so inputs
/// rotate).
const OVERLAP_FRAMES: usize = 24;

/// Where the overlap suite's frames live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FramesIn {
    /// The engine's page-locked frame pool: what the source decodes into.
    Pool,
    /// Ordinary memory: the lanes copy through their pinned staging buffers.
    Heap,
}

impl FramesIn {
    fn name(self) -> &'static str {
        match self {
            FramesIn::Pool => "pool",
            FramesIn::Heap => "heap",
        }
    }
}

#[cfg(feature = "cuda")]
fn overlap_gpu(
    options: &BenchOptions,
    ordinal: usize,
    filter: &FilterSpec,
    (frames_in, streams, frames_per_stream): (FramesIn, usize, usize),
    heap_frames: &mut Vec<Frame>,
    count: u64,
    (width, height): (usize, usize),
) -> Result<OverlapRow, BenchError> {
    use crate::engine::cuda::CudaEngine;
    let engine_options = EngineOptions {
        trace: true,
        shape: Some(crate::engine::FrameShape {
            format: PixelFormat::Yuv420p,
            width,
            height,
        }),
        pooled_frames: if frames_in == FramesIn::Pool { OVERLAP_FRAMES } else { 0 },
        frames_per_stream,
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
    let default_depth = frames_per_stream == crate::engine::DEFAULT_FRAMES_PER_STREAM;
    if streams == 4 && width <= 1920 && frames_in == FramesIn::Pool && default_depth {
        let path = options.out.join("overlap-trace.json");
        crate::engine::trace::write_chrome_trace(
            &path,
            &format!("bench overlap {width}x{height} streams=4 x {frames_per_stream}"),
            &spans,
        )
        .map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    Ok(OverlapRow {
        frame: format!("{width}x{height} yuv420p"),
        frames_in: frames_in.name().into(),
        streams,
        frames_per_stream,
        frames: count,
        fps: count as f64 / seconds,
        speedup_vs_one_stream: 1.0,
        host_copy_in_us,
        upload_us,
        kernels_us,
        download_us,
        host_copy_out_us,
        ideal_fps: 1e6 / busiest,
        pinned_bytes: engine.pinned_bytes(),
    })
}

#[cfg(not(feature = "cuda"))]
fn overlap_gpu(
    _: &BenchOptions,
    _: usize,
    _: &FilterSpec,
    _: (FramesIn, usize, usize),
    _: &mut Vec<Frame>,
    _: u64,
    _: (usize, usize),
) -> Result<OverlapRow, BenchError> {
    Err(crate::engine::EngineError::NotCompiledWithCuda.into())
}

/// A generated clip in the output folder (kept between runs): H.264 where the FFmpeg build
/// has libx264, else MPEG-4 Part 2.
fn generated_clip(out: &Path, width: u32, height: u32, frames: u32) -> Result<PathBuf, BenchError> {
    let path = out.join(format!("clip-{width}x{height}-{frames}.mp4"));
    if !path.exists() {
        tracing::info!("generating {}", path.display());
        let spec = crate::sample::SampleSpec {
            width,
            height,
            fps: 30,
            frames,
            prefer_h264: true,
        };
        crate::sample::generate(&path, spec).map_err(BenchError::Other)?;
    }
    Ok(path)
}

pub fn e2e(options: &BenchOptions, gpu: Option<usize>, skipped: &mut Vec<String>) -> Result<Vec<E2eRow>, BenchError> {
    let inputs: Vec<PathBuf> = match &options.input {
        Some(path) => vec![path.clone()],
        None if options.quick => vec![generated_clip(&options.out, 320, 180, 30)?],
        None => vec![
            generated_clip(&options.out, 1920, 1080, 600)?,
            generated_clip(&options.out, 3840, 2160, 240)?,
        ],
    };
    let decoders: &[&str] = if gpu.is_some() {
        &["software", "nvdec"]
    } else {
        &["software"]
    };
    let device = gpu.map_or(DeviceChoice::Cpu, DeviceChoice::Cuda);
    let mask = Mask::from_spec(E2E_MASK).expect("a valid preset");
    let mut rows = Vec::new();
    for input in &inputs {
        for &decoder in decoders {
            let source = SourceConfig {
                decoder: decoder.into(),
                ..SourceConfig::from_url(&input.display().to_string())
            };
            // Decode-only first and filtered second would favour the second (warm file cache):
            // decode once untimed so both timed runs start warm.
            if let Err(e) = decode_only(&source) {
                skipped.push(format!("e2e {} with the {decoder} decoder: {e}", input.display()));
                continue;
            }
            let (decoded, decode_seconds) = decode_only(&source)?;
            let report = filtered_run(&source, &mask, device)?;
            let decode_only_fps = decoded as f64 / decode_seconds;
            rows.push(E2eRow {
                input: input
                    .file_name()
                    .map_or_else(|| input.display().to_string(), |n| n.to_string_lossy().into_owned()),
                decoder: decoder.into(),
                frames: report.frames_out,
                decode_only_fps,
                filtered_fps: report.fps,
                ratio: report.fps / decode_only_fps,
                latency_p50_ms: report.latency_p50_ms,
                latency_p99_ms: report.latency_p99_ms,
                latency_slowest: report.latency_slowest.clone(),
                mask: mask.description().to_string(),
                engine: report.engine,
            });
            tracing::info!(
                "e2e {} {decoder}: decode-only {decode_only_fps:.0} fps, filtered {:.0} fps",
                input.display(),
                report.fps
            );
        }
        // The GPU stage's latency when frames arrive at their real rate (30 fps), not as
        // fast as the decoder can go: the first input, paced.
        if gpu.is_some() && !options.quick && input == &inputs[0] {
            let paced = SourceConfig {
                decoder: "software".into(),
                realtime: true,
                ..SourceConfig::from_url(&input.display().to_string())
            };
            let report = filtered_run(&paced, &mask, device)?;
            rows.push(E2eRow {
                input: input
                    .file_name()
                    .map_or_else(|| input.display().to_string(), |n| n.to_string_lossy().into_owned()),
                decoder: "software, paced at the frame rate".into(),
                frames: report.frames_out,
                decode_only_fps: report.fps,
                filtered_fps: report.fps,
                ratio: 1.0,
                latency_p50_ms: report.latency_p50_ms,
                latency_p99_ms: report.latency_p99_ms,
                latency_slowest: report.latency_slowest.clone(),
                mask: mask.description().to_string(),
                engine: report.engine,
            });
        }
    }
    Ok(rows)
}

/// Decode, filter with `mask` on every plane with 4 streams (default frames per stream), discard:
/// one pipeline run.
fn filtered_run(
    source: &SourceConfig,
    mask: &Mask,
    device: DeviceChoice,
) -> Result<crate::stats::PipelineReport, BenchError> {
    let sink = SinkConfig {
        url: "null".into(),
        format: None,
        codec: None,
        lossless: false,
        options: Default::default(),
        audio: false,
        overwrite: false,
    };
    let filter = FilterConfig {
        mask: MaskSelection::Named(mask.description().to_string()),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        streams: 4,
        ..FilterConfig::default()
    };
    let settings = PipelineSettings {
        name: "bench".into(),
        source: source.clone(),
        filter: FilterSpec {
            mask: mask.clone(),
            border: filter.border,
            planes: filter.planes,
        },
        device,
        streams: filter.streams,
        frames_per_stream: filter.frames_per_stream,
        pinned_frames: filter.pinned_frames,
        sink: sink.clone(),
        config: PipelineConfig {
            name: "bench".into(),
            source: source.clone(),
            filter,
            sink,
        },
    };
    let run_options = RunOptions {
        stop: Arc::new(AtomicBool::new(false)),
        progress: false,
        trace: None,
        stage_times: false,
        outputs: crate::pipeline::OutputPolicy::Command,
        io_grace: std::time::Duration::from_secs(5),
    };
    Ok(run_pipeline(&settings, &run_options)?)
}

#[cfg(test)]
mod tests {
    use super::busy_us_per_frame;
    use crate::engine::TraceSpan;

    fn span(stage: &'static str, start_us: f64, duration_us: f64) -> TraceSpan {
        TraceSpan {
            stream: 0,
            frame: 0,
            stage,
            start_us,
            duration_us,
        }
    }

    #[test]
    fn busy_time_counts_overlapping_spans_once() {
        let spans = [
            span("upload", 0.0, 60.0),
            span("upload", 40.0, 60.0),  // overlaps the first: 40 more
            span("upload", 50.0, 10.0),  // inside both: nothing more
            span("upload", 200.0, 30.0), // after a gap: 30 more
            span("kernels", 0.0, 500.0), // another stage: not counted
        ];
        assert_eq!(busy_us_per_frame(&spans, "upload", 4), 130.0 / 4.0);
        assert_eq!(busy_us_per_frame(&spans, "download", 4), 0.0);
    }
}

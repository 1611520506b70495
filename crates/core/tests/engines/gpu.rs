//! GPU engine tests. The tests that need a GPU are ignored without one (reported as ignored,
//! never as passed) and run on a GPU host with `--include-ignored`, where they fail without a
//! usable GPU; tests written once for both engines (`test_device!`) run on the CPU everywhere
//! and on CUDA as their ignored `cuda` twin.
//! Kernel compilation needs only NVRTC and runs wherever libnvrtc loads (CI installs it);
//! `CONVSTREAM_TEST_NVRTC=1` makes a missing NVRTC a failure.
//!
//! One test file at some length (about 1,600 lines): the GPU tests share their random frames,
//! masks and comparisons with each other.

#![cfg(feature = "cuda")]

use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

use convstream_core::Mask;
use convstream_core::{
    compile_kernels, cuda_devices, nvrtc_available, nvrtc_version, open_cuda_device, CudaEngine, SampleValues, Variant,
};
use convstream_core::{BorderMode, FilterSpec, PlaneSelection};
use convstream_core::{BufferPool, PlaneData};
use convstream_core::{CpuEngine, DeviceChoice, Engine, EngineOptions, FrameShape, KernelPath};
use convstream_core::{Frame, PixelFormat, PixelLayout, Plane, SampleDepth};

use convstream_testkit::gpu_requested;

/// One test body for both engines: `NAME::cpu` runs everywhere, `NAME::cuda` (ignored without
/// a GPU) runs the same body on the CUDA engine; the CPU result is the reference either way.
macro_rules! test_device {
    ($name:ident, |$engine:ident, $label:ident| $body:block) => {
        mod $name {
            use super::*;

            #[test]
            fn cpu() {
                let $label = "cpu";
                let $engine = |filter: FilterSpec, _options: EngineOptions| -> Box<dyn Engine> {
                    Box::new(CpuEngine::new(filter))
                };
                $body
            }

            #[test]
            #[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
            fn cuda() {
                let $label = "cuda";
                let $engine = |filter: FilterSpec, options: EngineOptions| -> Box<dyn Engine> {
                    Box::new(CudaEngine::new(filter, &options, 0).unwrap_or_else(|e| panic!("CUDA engine: {e}")))
                };
                $body
            }
        }
    };
}

fn seeded_rng() -> (rand::rngs::StdRng, u64) {
    let seed = convstream_testkit::random::seed();
    println!("random seed {seed} (CONVSTREAM_TEST_SEED={seed} repeats it)");
    (rand::rngs::StdRng::seed_from_u64(seed), seed)
}

fn random_frame(
    rng: &mut impl Rng,
    format: PixelFormat,
    width: usize,
    height: usize,
    extra_stride: usize,
    index: u64,
) -> Frame {
    let mut frame = Frame::new(format, width, height);
    for plane in &mut frame.planes {
        let depth = plane.depth;
        let stride = plane.row_bytes() + extra_stride * depth.bytes();
        let mut fresh = Plane::filled(plane.shape(), stride, 0xEE);
        for y in 0..fresh.height {
            let row = fresh.row_mut(y);
            if depth.bytes() == 1 {
                rng.fill(row);
            } else {
                // Samples of the depth, shifted as the format stores them (P010: high bits).
                for word in row.chunks_exact_mut(2) {
                    let value = rng.gen_range(0..=depth.max_value() as u16) << depth.shift;
                    word.copy_from_slice(&value.to_le_bytes());
                }
            }
        }
        *plane = fresh;
    }
    frame.index = index;
    frame.pts = Some(index as i64 * 3);
    frame
}

fn random_mask(rng: &mut impl Rng, width: usize, height: usize, separable: bool) -> Mask {
    let mask = if separable {
        let column: Vec<f32> = (0..height).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let row: Vec<f32> = (0..width).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let coefficients = column.iter().flat_map(|c| row.iter().map(move |r| c * r)).collect();
        Mask::from_coefficients(width, height, coefficients, rng.gen_range(0.0..64.0))
    } else {
        let scale = 2.0 / (width * height) as f32;
        let coefficients = (0..width * height)
            .map(|_| rng.gen_range(-scale..3.0 * scale))
            .collect();
        Mask::from_coefficients(width, height, coefficients, rng.gen_range(0.0..32.0)).dense_only()
    };
    assert_eq!(mask.is_separable(), separable, "rank test on a {width}x{height} mask");
    mask
}

/// Submits `frames` as the pipeline's filter stage does (receiving whenever every lane is
/// busy) and returns every result, in order.
fn filter_all<E: Engine + ?Sized>(engine: &mut E, frames: impl IntoIterator<Item = Frame>) -> Vec<Frame> {
    let mut out = Vec::new();
    for frame in frames {
        engine.submit(frame).unwrap();
        while engine.in_flight() >= engine.capacity() {
            out.push(engine.receive().unwrap().unwrap());
        }
    }
    while let Some(frame) = engine.receive().unwrap() {
        out.push(frame);
    }
    out
}

/// Differing samples between two frames' pixels, and the largest difference.
fn compare(expected: &Frame, actual: &Frame) -> (usize, u8) {
    let mut differing = 0;
    let mut largest = 0u8;
    for (e, a) in expected.planes.iter().zip(&actual.planes) {
        assert_eq!(e.shape(), a.shape());
        for y in 0..e.height {
            for (x, y2) in e.row(y).iter().zip(a.row(y)) {
                let d = x.abs_diff(*y2);
                if d > 0 {
                    differing += 1;
                    largest = largest.max(d);
                }
            }
        }
    }
    (differing, largest)
}

/// Mask sizes the parity tests cover, (width, height).
const MASK_SIZES: &[(usize, usize)] = &[
    (1, 1),
    (3, 3),
    (5, 5),
    (13, 13),
    (31, 31),
    (63, 63),
    (1, 15),
    (15, 1),
    (7, 3),
    (3, 7),
    (9, 21),
];

/// Plane sizes: tiny, smaller than big masks, not multiples of the tile, one larger than a tile.
const PLANE_SIZES: &[(usize, usize)] = &[(1, 1), (7, 5), (130, 67), (257, 35)];

fn options(streams: usize, poison: bool, pitch_align: usize, force_path: Option<KernelPath>) -> EngineOptions {
    EngineOptions {
        poison,
        pitch_align,
        force_path,
        ..EngineOptions::new(DeviceChoice::Cuda(0), streams, "test")
    }
}

/// Every GPU path against the CPU engine, on fresh random planes, every border mode, square
/// and rectangular masks from 1x1 to 63x63, dense and separable, 1/2/3 channels, odd strides.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn gpu_parity_with_cpu_on_random_planes() {
    let (mut rng, seed) = seeded_rng();
    let started = Instant::now();
    let mut cases = 0;
    let mut total_differing = 0;
    // CONVSTREAM_TEST_QUICK=1 keeps a few sizes, for runs under compute-sanitizer.
    let quick = std::env::var("CONVSTREAM_TEST_QUICK").is_ok_and(|v| v == "1");
    let mask_sizes: &[(usize, usize)] = if quick { &[(3, 3), (13, 13), (7, 3)] } else { MASK_SIZES };
    let plane_sizes: &[(usize, usize)] = if quick { &[(7, 5), (130, 67)] } else { PLANE_SIZES };
    for &(mw, mh) in mask_sizes {
        for border in BorderMode::ALL {
            for separable in [false, true] {
                let mask = random_mask(&mut rng, mw, mh, separable);
                let paths = if separable {
                    vec![KernelPath::Separable, KernelPath::Dense]
                } else {
                    vec![KernelPath::Dense, KernelPath::Global]
                };
                let mask_for = |path: KernelPath| {
                    if path == KernelPath::Separable {
                        mask.clone()
                    } else {
                        mask.dense_only()
                    }
                };
                for path in paths {
                    let filter = FilterSpec {
                        mask: mask_for(path),
                        border,
                        planes: PlaneSelection::All,
                        plane_masks: Default::default(),
                    };
                    for (format, pitch_align) in [
                        (PixelFormat::GRAY8, 1),
                        (PixelFormat::NV12, 64),
                        (PixelFormat::RGB24, 4),
                    ] {
                        let mut engine = CudaEngine::new(filter.clone(), &options(2, true, pitch_align, Some(path)), 0)
                            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                        for (n, &(w, h)) in plane_sizes.iter().enumerate() {
                            if format == PixelFormat::RGB24 && w > 200 {
                                continue; // three channels of 63-wide masks on big planes add time, not coverage
                            }
                            let frame = random_frame(&mut rng, format, w, h, n % 3, n as u64);
                            let expected = CpuEngine::filter_frame(&filter, &frame);
                            engine.submit(frame).unwrap();
                            let actual = engine.receive().unwrap().unwrap();
                            let (differing, largest) = compare(&expected, &actual);
                            cases += 1;
                            total_differing += differing;
                            // Both engines add the same taps in the same order with fused
                            // multiply-adds, so the pixels must be identical.
                            assert_eq!(
                                (differing, largest),
                                (0, 0),
                                "seed {seed}: {mw}x{mh} {border} {path:?} {format} {w}x{h}: samples differing, largest difference"
                            );
                        }
                    }
                }
            }
        }
    }
    println!(
        "parity: {cases} cases, {total_differing} samples differing in all, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The high-bit-depth formats against the CPU engine: 10- to 16-bit planar YUV and grey,
/// P010 (samples in the high bits), 16-bit packed RGB and 14-bit planar GBR, on dense,
/// separable and baseline paths, outputs poisoned so an unwritten sample shows. Each mask
/// case takes the next border mode in turn (every mode several times over), which keeps the
/// kernels NVRTC compiles for it to a few minutes.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn gpu_parity_at_high_bit_depths() {
    let (mut rng, seed) = seeded_rng();
    let started = Instant::now();
    let mut cases = 0;
    let format = |layout, bits| PixelFormat::new(layout, bits).unwrap();
    let formats = [
        (format(PixelLayout::Gray, 10), 2),
        (format(PixelLayout::Yuv444, 12), 64),
        (format(PixelLayout::Yuv422, 16), 8),
        (format(PixelLayout::SemiPlanar420, 10), 64),
        (format(PixelLayout::Rgb, 16), 2),
        (format(PixelLayout::Gbr, 14), 64),
    ];
    // CONVSTREAM_TEST_QUICK=1 keeps a few sizes, for runs under compute-sanitizer.
    let quick = std::env::var("CONVSTREAM_TEST_QUICK").is_ok_and(|v| v == "1");
    let mask_sizes: &[(usize, usize)] = if quick {
        &[(3, 3), (13, 13), (7, 3)]
    } else {
        &[(1, 1), (3, 3), (5, 5), (13, 13), (31, 31), (7, 3), (1, 15)]
    };
    let plane_sizes: &[(usize, usize)] = if quick { &[(7, 5), (130, 67)] } else { PLANE_SIZES };
    let mut borders = BorderMode::ALL.into_iter().cycle();
    for &(mw, mh) in mask_sizes {
        for separable in [false, true] {
            let border = borders.next().unwrap_or_default();
            let mask = random_mask(&mut rng, mw, mh, separable);
            let paths = if separable {
                vec![KernelPath::Separable, KernelPath::Dense]
            } else {
                vec![KernelPath::Dense, KernelPath::Global]
            };
            for path in paths {
                let filter = FilterSpec {
                    mask: if path == KernelPath::Separable {
                        mask.clone()
                    } else {
                        mask.dense_only()
                    },
                    border,
                    planes: PlaneSelection::All,
                    plane_masks: Default::default(),
                };
                for &(format, pitch_align) in &formats {
                    let mut engine = CudaEngine::new(filter.clone(), &options(2, true, pitch_align, Some(path)), 0)
                        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                    for (n, &(w, h)) in plane_sizes.iter().enumerate() {
                        let frame = random_frame(&mut rng, format, w, h, n % 3, n as u64);
                        let expected = CpuEngine::filter_frame(&filter, &frame);
                        engine.submit(frame).unwrap();
                        let actual = engine.receive().unwrap().unwrap();
                        cases += 1;
                        assert_eq!(
                            compare(&expected, &actual),
                            (0, 0),
                            "seed {seed}: {mw}x{mh} {border} {path:?} {format} {w}x{h}: samples differing, largest difference"
                        );
                    }
                }
            }
        }
    }
    // Presets whose results leave the range at both ends, gradient magnitudes and biases;
    // masks as FFmpeg and OpenCV take them (correlation, a divisor, OpenCV's Gaussian taps,
    // fixed and computed) and motion blur at an angle.
    for spec in [
        "sharpen:amount=3",
        "edge",
        "sobel",
        "prewitt:divisor=2",
        "emboss",
        "neutral",
        "emboss:mode=correlate",
        "sobel:mode=correlate",
        "sobel-x:mode=correlate",
        "custom:matrix=[[0,0,0],[0,0,1],[0,0,0]],mode=correlate",
        "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],mode=correlate,divisor=16",
        "custom:matrix=[[1,2,3,4,5],[0,1,0,1,0],[2,2,2,2,2]],mode=correlate,divisor=7,bias=3",
        "gaussian:size=9",
        "gaussian:size=31",
        "gaussian:size=11,sigma=2.5,mode=correlate",
        "motion-blur:size=15,angle=30,mode=correlate",
    ] {
        let filter = FilterSpec {
            mask: Mask::from_spec(spec).unwrap(),
            border: BorderMode::Reflect,
            planes: PlaneSelection::All,
            plane_masks: Default::default(),
        };
        for &(format, pitch_align) in &formats {
            let mut engine = CudaEngine::new(filter.clone(), &options(1, true, pitch_align, None), 0).unwrap();
            let frame = random_frame(&mut rng, format, 257, 35, 1, 0);
            let expected = CpuEngine::filter_frame(&filter, &frame);
            engine.submit(frame).unwrap();
            let actual = engine.receive().unwrap().unwrap();
            cases += 1;
            assert_eq!(compare(&expected, &actual), (0, 0), "seed {seed}: {spec} on {format}");
        }
    }
    println!(
        "high bit depths: {cases} cases, all identical to the CPU engine, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

test_device!(frames_come_back_in_order_with_their_planes, |make_engine, label| {
    let (mut rng, _) = seeded_rng();
    let mask = Mask::from_spec("gaussian:size=7").unwrap();
    // (streams, frames per stream): one frame per stream, and several queued on one stream.
    for (streams, frames_per_stream) in [(1, 1), (1, 3), (2, 2), (4, 1), (4, 2), (8, 4)] {
        for planes in [PlaneSelection::All, PlaneSelection::Luma, PlaneSelection::Chroma] {
            let filter = FilterSpec {
                mask: mask.clone(),
                border: BorderMode::Reflect,
                planes,
                plane_masks: Default::default(),
            };
            let engine_options = EngineOptions {
                frames_per_stream,
                trace: true,
                ..options(streams, true, 64, None)
            };
            let mut engine = make_engine(filter.clone(), engine_options);
            let engine_label = label;
            let label = format!("{label} streams={streams}x{frames_per_stream}");
            // Every lane is used three times over.
            let count = 3 * streams * frames_per_stream + 1;
            let frames: Vec<Frame> = (0..count as u64)
                .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, 96, 54, 0, i))
                .collect();
            let out = filter_all(engine.as_mut(), frames.iter().cloned());
            assert_eq!(out.len(), frames.len(), "{label}");
            if engine_label == "cuda" {
                // Frames take the lanes in turn and lanes the streams in turn: frame i runs
                // on stream i % streams, whatever the frames per stream.
                let spans = engine.take_trace();
                assert_eq!(spans.len(), 3 * count, "{label}: upload, kernels, download per frame");
                for span in &spans {
                    assert_eq!(span.stream as u64, span.frame % streams as u64, "{label}: {span:?}");
                }
            }
            for (input, output) in frames.iter().zip(&out) {
                assert_eq!(output.index, input.index, "{label}: order");
                assert_eq!(output.pts, input.pts);
                // Each engine marks when it had queued a frame's work and saw it done.
                let timeline = output.timeline;
                let (Some(enqueued), Some(finished)) = (timeline.enqueued, timeline.finished) else {
                    panic!("{label}: frame {} has no engine marks: {timeline:?}", input.index)
                };
                assert!(enqueued <= finished, "{label}: {timeline:?}");
                let expected = CpuEngine::filter_frame(&filter, input);
                assert_eq!(
                    compare(&expected, output),
                    (0, 0),
                    "{label} planes={planes} frame {}",
                    input.index
                );
                for (i, plane) in input.planes.iter().enumerate() {
                    if !planes.selects(input.format, i) {
                        assert!(
                            plane.same_pixels(&output.planes[i]),
                            "{label}: unselected plane {i} changed"
                        );
                    }
                }
            }
        }
    }
});

/// Large planes with large masks run the wide-tile dense kernel (see `Variant::new`); it
/// must match the CPU engine too, at every border and at odd sizes.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn large_planes_take_wide_tiles_and_match_the_cpu() {
    let (mut rng, seed) = seeded_rng();
    let (width, height) = (2701, 1499); // over 4 Mpx, not a multiple of any tile
    for (mw, mh) in [(21, 21), (17, 25)] {
        let mask = random_mask(&mut rng, mw, mh, false);
        let variant = Variant::new(
            mw,
            mh,
            1,
            BorderMode::Reflect,
            232_448,
            KernelPath::Dense,
            width * height,
        );
        assert_eq!(
            variant.tiling.px, 8,
            "a {mw}x{mh} mask on a large plane takes wide tiles"
        );
        for border in [BorderMode::Reflect, BorderMode::Constant, BorderMode::Wrap] {
            let filter = FilterSpec {
                mask: mask.clone(),
                border,
                planes: PlaneSelection::All,
                plane_masks: Default::default(),
            };
            let mut engine =
                CudaEngine::new(filter.clone(), &options(1, true, 64, Some(KernelPath::Dense)), 0).unwrap();
            let frame = random_frame(&mut rng, PixelFormat::GRAY8, width, height, 0, 0);
            let expected = CpuEngine::filter_frame(&filter, &frame);
            engine.submit(frame).unwrap();
            let actual = engine.receive().unwrap().unwrap();
            assert_eq!(
                compare(&expected, &actual),
                (0, 0),
                "seed {seed}: {mw}x{mh} {border} {width}x{height}"
            );
        }
    }
    println!("wide tiles: {width}x{height} planes match the CPU engine");
}

/// A CUDA engine (poisoned outputs, `streams` x the default frames per stream) for yuv420p
/// frames of `size`, with a pinned frame pool of eight frames, and that pool once the blocks
/// it pins on a thread of its own (the frames in flight) are there.
fn engine_with_pool(filter: &FilterSpec, size: (usize, usize), streams: usize) -> (CudaEngine, Arc<BufferPool>) {
    let (width, height) = size;
    // The pool exists once the engine knows the frame geometry.
    let engine_options = EngineOptions {
        pooled_frames: 8,
        shape: Some(FrameShape {
            format: PixelFormat::YUV420P,
            width,
            height,
        }),
        ..options(streams, true, 64, None)
    };
    let engine = CudaEngine::new(filter.clone(), &engine_options, 0).unwrap();
    let pool = engine
        .frame_pool()
        .expect("a CUDA engine with pooled_frames lends a pool");
    assert!(pool.wait_until_grown(std::time::Duration::from_secs(30)));
    (engine, pool)
}

/// yuv420p frames of `width` x `height` taken from `pool` until one comes in ordinary memory,
/// as in a burst: every page-locked block is lent out while they are kept.
fn lend_every_page_locked_block(pool: &Arc<BufferPool>, width: usize, height: usize) -> Vec<Frame> {
    let mut taken = Vec::new();
    loop {
        let frame = Frame::new_in(PixelFormat::YUV420P, width, height, Some(pool));
        let page_locked = frame.planes.iter().any(|plane| plane.data.is_page_locked());
        taken.push(frame);
        if !page_locked {
            return taken;
        }
    }
}

/// Frames made in the engine's pinned pool go to the GPU and come back in their own memory
/// (no staging copy), match the CPU engine, and mix with heap frames in one run.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn pooled_frames_go_direct_and_match_the_cpu() {
    let (mut rng, seed) = seeded_rng();
    let mask = random_mask(&mut rng, 9, 9, false);
    for (width, height) in [(1920, 1080), (130, 67), (7, 5)] {
        for planes in [PlaneSelection::All, PlaneSelection::Luma, PlaneSelection::Chroma] {
            for streams in [1, 4] {
                let filter = FilterSpec {
                    mask: mask.clone(),
                    border: BorderMode::Reflect,
                    planes,
                    plane_masks: Default::default(),
                };
                let label = format!("seed {seed}: {width}x{height} planes={planes} streams={streams}");
                let (mut engine, pool) = engine_with_pool(&filter, (width, height), streams);
                // This test is about frames in pool blocks: the rest of the eight (the pool's
                // limit) are allocated now.
                // The engine asks for the frames in flight and four more (see frame_pool_for).
                let missing = 8usize.saturating_sub(engine.capacity() + 4);
                for plane in PixelFormat::YUV420P.plane_shapes(width, height) {
                    pool.reserve(plane.pooled_bytes(), missing).unwrap();
                }
                let fallbacks_before = pool.fallbacks();
                // Every third frame is an ordinary heap frame.
                let inputs: Vec<Frame> = (0..12)
                    .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, width, height, 0, i))
                    .collect();
                let submitted: Vec<Frame> = inputs
                    .iter()
                    .map(|input| {
                        if input.index % 3 == 2 {
                            return input.clone();
                        }
                        input.copied_into(&pool)
                    })
                    .collect();
                let addresses: Vec<*const u8> = submitted.iter().map(|f| f.planes[0].data.as_ptr()).collect();
                let out = filter_all(&mut engine, submitted);
                for ((input, output), address) in inputs.iter().zip(&out).zip(&addresses) {
                    assert_eq!(output.index, input.index, "{label}: order");
                    let pooled = input.index % 3 != 2;
                    assert_eq!(
                        output.planes[0].data.is_page_locked(),
                        pooled,
                        "{label}: frame {}",
                        input.index
                    );
                    assert_eq!(
                        output.planes[0].data.as_ptr(),
                        *address,
                        "{label}: frame {} came back in its own memory",
                        input.index
                    );
                    let expected = CpuEngine::filter_frame(&filter, input);
                    assert_eq!(compare(&expected, output), (0, 0), "{label}: frame {}", input.index);
                }
                // Heap planes whose rows line up with the GPU's (1920 and 960 bytes) go
                // straight from ordinary memory; the others through the lanes' staging.
                let staged = engine.pinned_bytes() - pool.allocated_bytes();
                assert_eq!(
                    staged > 0,
                    width != 1920,
                    "{label}: heap frames staged ({staged} bytes)"
                );
                assert_eq!(
                    pool.fallbacks(),
                    fallbacks_before,
                    "{label}: the pool held every pooled frame"
                );
            }
        }
    }
    println!("pooled frames: direct copies match the CPU engine");
}

/// Frames catching up after a stall find the pool's page-locked blocks taken and come in
/// its ordinary memory, laid out as on the GPU: they go straight from and back into it (the
/// driver's own staging), nothing is page-locked for them (no lane staging), and they match
/// the CPU engine with the output buffers poisoned.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn frames_in_the_pools_ordinary_memory_go_straight_and_page_lock_nothing() {
    let (mut rng, seed) = seeded_rng();
    let mask = random_mask(&mut rng, 7, 7, false);
    for (width, height) in [(1920, 1080), (130, 67)] {
        for streams in [1, 4] {
            let filter = FilterSpec {
                mask: mask.clone(),
                border: BorderMode::Reflect,
                planes: PlaneSelection::All,
                plane_masks: Default::default(),
            };
            let label = format!("seed {seed}: {width}x{height} streams={streams}");
            let (mut engine, pool) = engine_with_pool(&filter, (width, height), streams);
            // Every page-locked block lent out, as in a burst: what follows is ordinary.
            let taken = lend_every_page_locked_block(&pool, width, height);
            let inputs: Vec<Frame> = (0..12)
                .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, width, height, 0, i))
                .collect();
            let submitted: Vec<Frame> = inputs.iter().map(|input| input.copied_into(&pool)).collect();
            let ordinary: Vec<bool> = submitted
                .iter()
                .map(|frame| frame.planes.iter().all(|plane| !plane.data.is_page_locked()))
                .collect();
            assert!(ordinary[0], "{label}: the first frame came in ordinary memory");
            let addresses: Vec<*const u8> = submitted.iter().map(|f| f.planes[0].data.as_ptr()).collect();
            let out = filter_all(&mut engine, submitted);
            assert_eq!(out.len(), inputs.len(), "{label}");
            for (i, (input, output)) in inputs.iter().zip(&out).enumerate() {
                assert_eq!(output.index, input.index, "{label}: order");
                let expected = CpuEngine::filter_frame(&filter, input);
                assert_eq!(compare(&expected, output), (0, 0), "{label}: frame {}", input.index);
                if ordinary[i] && !output.planes[0].data.is_page_locked() {
                    assert_eq!(
                        output.planes[0].data.as_ptr(),
                        addresses[i],
                        "{label}: frame {} came back in its own memory",
                        input.index
                    );
                }
            }
            assert_eq!(
                engine.pinned_bytes(),
                pool.allocated_bytes(),
                "{label}: no staging was page-locked for frames in the pool's ordinary memory"
            );
            drop(taken);
        }
    }
    println!("frames in the pool's ordinary memory: straight copies match the CPU engine, nothing staged");
}

/// A frame in ordinary memory goes in through the lane's staging (one CPU copy) or, where its
/// rows line up with the GPU's (1920 wide), by the driver's own copy, and its results come
/// straight back into page-locked planes from the frame pool (no second copy) while the pool
/// has some to give; the planes the filter skips stay as they were.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn staged_frames_take_their_results_in_page_locked_planes() {
    let (mut rng, seed) = seeded_rng();
    let mask = random_mask(&mut rng, 7, 7, false);
    for (width, height) in [(1920, 1080), (130, 67)] {
        for planes in [PlaneSelection::All, PlaneSelection::Luma] {
            let filter = FilterSpec {
                mask: mask.clone(),
                border: BorderMode::Reflect,
                planes,
                plane_masks: Default::default(),
            };
            let label = format!("seed {seed}: {width}x{height} planes={planes}");
            let (mut engine, _pool) = engine_with_pool(&filter, (width, height), 4);
            let inputs: Vec<Frame> = (0..12)
                .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, width, height, 0, i))
                .collect();
            let selected = |plane: usize| planes == PlaneSelection::All || plane == 0;
            // Outputs are checked and dropped as they come, so at most the lanes' frames hold
            // pool planes: the pool (eight frames) always has some to give.
            let mut checked = 0;
            let mut check = |output: Frame| {
                let input = &inputs[checked];
                assert_eq!(output.index, input.index, "{label}: order");
                for (i, plane) in output.planes.iter().enumerate() {
                    assert_eq!(
                        plane.data.is_page_locked(),
                        selected(i),
                        "{label}: frame {} plane {i}",
                        input.index
                    );
                }
                let expected = CpuEngine::filter_frame(&filter, input);
                assert_eq!(compare(&expected, &output), (0, 0), "{label}: frame {}", input.index);
                checked += 1;
            };
            for input in &inputs {
                engine.submit(input.clone()).unwrap();
                while engine.in_flight() >= engine.capacity() {
                    check(engine.receive().unwrap().unwrap());
                }
            }
            while let Some(frame) = engine.receive().unwrap() {
                check(frame);
            }
            assert_eq!(checked, inputs.len(), "{label}");
        }
    }
    println!("staged frames: results in page-locked planes match the CPU engine");
}

/// A caller's buffers (a GStreamer buffer, a NumPy array: `PlaneData::lent`) go through the
/// lanes' staging even when their rows line up with the GPU's, where copies overlap: only the
/// pipeline's own ordinary memory takes the driver's straight copies. The results match the
/// CPU engine (outputs poisoned), the caller's bytes are never written, and a frame pool's
/// own picture (`PlaneData::lent_from`) laid out the same stages nothing.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn a_callers_buffers_go_through_the_staging_and_are_never_written() {
    let (mut rng, seed) = seeded_rng();
    let mask = random_mask(&mut rng, 7, 7, false);
    // Rows of 1920/960 and 640/320 bytes line up with the GPU's (pitch_align 64).
    for (width, height) in [(1920, 1080), (640, 360)] {
        let filter = FilterSpec {
            mask: mask.clone(),
            border: BorderMode::Reflect,
            planes: PlaneSelection::All,
            plane_masks: Default::default(),
        };
        let label = format!("seed {seed}: {width}x{height}");
        let (mut engine, pool) = engine_with_pool(&filter, (width, height), 4);
        let inputs: Vec<Frame> = (0..12)
            .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, width, height, 0, i))
            .collect();
        // Each plane's bytes in a buffer of the caller's own, lent read-only.
        let lent: Vec<Frame> = inputs
            .iter()
            .map(|input| {
                let planes = input
                    .planes
                    .iter()
                    .map(|plane| {
                        let callers: Vec<u8> = plane.data.to_vec();
                        // SAFETY: the keeper owns the bytes; nothing writes them.
                        let data =
                            unsafe { PlaneData::lent(callers.as_ptr(), callers.len(), false, Box::new(callers)) };
                        Plane::of_data(plane.shape(), plane.stride, data)
                    })
                    .collect();
                let mut frame = Frame::of_planes(input.format, width, height, planes);
                (frame.index, frame.pts) = (input.index, input.pts);
                frame
            })
            .collect();
        let callers_bytes: Vec<Vec<*const u8>> = lent
            .iter()
            .map(|frame| frame.planes.iter().map(|plane| plane.data.as_ptr()).collect())
            .collect();
        let out = filter_all(&mut engine, lent);
        assert_eq!(out.len(), inputs.len(), "{label}");
        for ((input, output), callers) in inputs.iter().zip(&out).zip(&callers_bytes) {
            assert_eq!(output.index, input.index, "{label}: order");
            let expected = CpuEngine::filter_frame(&filter, input);
            assert_eq!(compare(&expected, output), (0, 0), "{label}: frame {}", input.index);
            for (plane, callers) in output.planes.iter().zip(callers) {
                assert_ne!(
                    plane.data.as_ptr(),
                    *callers,
                    "{label}: frame {}: a result written into the caller's buffer",
                    input.index
                );
            }
        }
        let staged = engine.pinned_bytes() - pool.allocated_bytes();
        assert!(staged > 0, "{label}: a caller's buffers went through the staging");

        // The same layout lent out of a pool block (a decoder's picture) goes straight.
        let (mut engine, pool) = engine_with_pool(&filter, (width, height), 4);
        let taken = lend_every_page_locked_block(&pool, width, height);
        let ordinary = inputs[0].copied_into(&pool);
        assert!(
            ordinary.planes.iter().all(|plane| !plane.data.is_page_locked()),
            "{label}"
        );
        let planes = ordinary
            .planes
            .iter()
            .map(|plane| {
                // SAFETY: `ordinary` holds the block, unchanged, until the output is checked.
                let data =
                    unsafe { PlaneData::lent_from(&plane.data, plane.data.as_ptr(), plane.data.len(), Box::new(())) };
                Plane::of_data(plane.shape(), plane.stride, data)
            })
            .collect();
        let picture = Frame::of_planes(PixelFormat::YUV420P, width, height, planes);
        engine.submit(picture).unwrap();
        let output = engine.receive().unwrap().unwrap();
        let expected = CpuEngine::filter_frame(&filter, &inputs[0]);
        assert_eq!(compare(&expected, &output), (0, 0), "{label}: a pool's picture");
        assert_eq!(
            engine.pinned_bytes(),
            pool.allocated_bytes(),
            "{label}: a pool's picture staged nothing"
        );
        drop((output, ordinary, taken));
    }
    println!("a caller's buffers: staged, never written, results match the CPU engine");
}

/// The lanes' staging buffers follow the frames that need them: heap frames whose rows do not
/// line up with the GPU's make every lane allocate staging, and once only pooled frames have
/// come for the idle window, each lane gives its staging back as it is next used, the results
/// still exact.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn idle_staging_buffers_are_given_back() {
    let (mut rng, seed) = seeded_rng();
    let (width, height) = (640, 360);
    let filter = FilterSpec {
        mask: random_mask(&mut rng, 5, 5, false),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        plane_masks: Default::default(),
    };
    let label = format!("seed {seed}");
    let (engine, pool) = engine_with_pool(&filter, (width, height), 2);
    let idle = std::time::Duration::from_millis(400);
    let mut engine = engine.with_staging_idle(idle);
    // Submits each input as `submitted` makes it (a heap frame or a copy in the pool, made
    // only when its turn comes so the pool is never short) and checks every result.
    let mut run = |engine: &mut CudaEngine, indices: std::ops::Range<u64>, pooled: bool| {
        let mut pending = std::collections::VecDeque::new();
        let check = |output: Frame, pending: &mut std::collections::VecDeque<Frame>| {
            let input = pending.pop_front().expect("one output per input");
            assert_eq!(output.index, input.index, "{label}: order");
            let want = CpuEngine::filter_frame(&filter, &input);
            assert_eq!(compare(&want, &output), (0, 0), "{label}: frame {}", input.index);
        };
        for i in indices {
            // Heap rows 3 bytes longer than the pool's: such planes are staged.
            let extra_stride = if pooled { 0 } else { 3 };
            let input = random_frame(&mut rng, PixelFormat::YUV420P, width, height, extra_stride, i);
            let submitted = if pooled {
                input.copied_into(&pool)
            } else {
                input.clone()
            };
            assert_eq!(submitted.planes[0].data.is_page_locked(), pooled, "{label}: frame {i}");
            pending.push_back(input);
            engine.submit(submitted).unwrap();
            while engine.in_flight() >= engine.capacity() {
                check(engine.receive().unwrap().unwrap(), &mut pending);
            }
        }
        while let Some(frame) = engine.receive().unwrap() {
            check(frame, &mut pending);
        }
    };
    run(&mut engine, 0..8, false);
    let staged = engine.pinned_bytes() - pool.allocated_bytes();
    assert!(staged > 0, "{label}: heap frames were staged");
    std::thread::sleep(idle + std::time::Duration::from_millis(100));
    run(&mut engine, 8..24, true);
    assert_eq!(
        engine.pinned_bytes(),
        pool.allocated_bytes(),
        "{label}: every lane gave its idle staging back ({staged} bytes staged before)"
    );
    println!("idle staging: {staged} bytes of staging given back, results exact");
}

/// A filter switch to other planes lays the lanes out again but keeps the frame pool the
/// source is making frames in, and those frames still go to the GPU directly.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn a_planes_switch_keeps_the_frame_pool() {
    let (mut rng, seed) = seeded_rng();
    let (width, height) = (640, 360);
    let filter = |planes| FilterSpec {
        mask: Mask::from_spec("gaussian:size=5").unwrap(),
        border: BorderMode::Reflect,
        planes,
        plane_masks: Default::default(),
    };
    let engine_options = EngineOptions {
        pooled_frames: 4,
        shape: Some(FrameShape {
            format: PixelFormat::YUV420P,
            width,
            height,
        }),
        ..options(2, true, 64, None)
    };
    let mut engine = CudaEngine::new(filter(PlaneSelection::All), &engine_options, 0).unwrap();
    let pool = engine.frame_pool().unwrap();
    // The pool pins the frames in flight on a thread of its own: this test is about a frame
    // in one of them.
    assert!(pool.wait_until_grown(std::time::Duration::from_secs(30)));
    engine.set_filter(filter(PlaneSelection::Luma)).unwrap();
    let input = random_frame(&mut rng, PixelFormat::YUV420P, width, height, 0, 0);
    engine.submit(input.copied_into(&pool)).unwrap();
    let output = engine.receive().unwrap().unwrap();
    let after = engine.frame_pool().unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&pool, &after),
        "seed {seed}: the pool was replaced"
    );
    assert_eq!(
        engine.pinned_bytes(),
        pool.allocated_bytes(),
        "seed {seed}: nothing was staged"
    );
    let expected = CpuEngine::filter_frame(&filter(PlaneSelection::Luma), &input);
    assert_eq!(compare(&expected, &output), (0, 0), "seed {seed}");
}

/// The variants the GPU tests use compile with NVRTC (no GPU needed).
#[test]
fn kernels_compile_with_nvrtc() {
    let required = std::env::var("CONVSTREAM_TEST_NVRTC").is_ok_and(|v| v == "1") || gpu_requested();
    if !nvrtc_available() {
        assert!(
            !required,
            "NVRTC was required (CONVSTREAM_TEST_NVRTC=1) but libnvrtc could not be loaded"
        );
        println!("kernels_compile_with_nvrtc: skipped (libnvrtc not found; CI installs it)");
        return;
    }
    let (major, minor) = nvrtc_version().unwrap();
    let started = Instant::now();
    let mut compiled = 0;
    // Every mask size with every border on planar planes, and the interleaved channel counts
    // (NV12 chroma, packed RGB) with one border: about a second of NVRTC time per variant.
    let arch = "sm_90";
    let max_shared = 232_448; // the opt-in shared memory per block of Hopper GPUs
    let mut variants = Vec::new();
    const HD: usize = 1920 * 1080;
    const UHD: usize = 3840 * 2160;
    for &(mw, mh) in MASK_SIZES {
        variants
            .extend(BorderMode::ALL.map(|border| Variant::new(mw, mh, 1, border, max_shared, KernelPath::Dense, HD)));
        variants.extend([2, 3].map(|channels| {
            Variant::new(
                mw,
                mh,
                channels,
                BorderMode::Reflect,
                max_shared,
                KernelPath::Separable,
                HD,
            )
        }));
        // Large planes take other tilings for large masks.
        variants.push(Variant::new(
            mw,
            mh,
            1,
            BorderMode::Reflect,
            max_shared,
            KernelPath::Dense,
            UHD,
        ));
    }
    // Gradient magnitudes (sobel, prewitt) on each border and channel count.
    variants.extend(
        BorderMode::ALL
            .map(|border| Variant::new(3, 3, 1, border, max_shared, KernelPath::Dense, HD).with_magnitude(true)),
    );
    variants.extend([2, 3].map(|channels| {
        Variant::new(3, 3, channels, BorderMode::Reflect, max_shared, KernelPath::Dense, HD).with_magnitude(true)
    }));
    // 16-bit words: LSB-aligned depths and P010's high-bit samples, on each channel count,
    // dense, separable and magnitude.
    for depth in [
        SampleDepth { bits: 10, shift: 0 },
        SampleDepth { bits: 16, shift: 0 },
        SampleDepth { bits: 10, shift: 6 },
    ] {
        for channels in 1..=3 {
            for (size, path) in [
                (3, KernelPath::Separable),
                (13, KernelPath::Dense),
                (31, KernelPath::Dense),
            ] {
                variants.push(
                    Variant::new(size, size, channels, BorderMode::Reflect, max_shared, path, UHD).with_depth(depth),
                );
            }
            variants.push(
                Variant::new(3, 3, channels, BorderMode::Constant, max_shared, KernelPath::Dense, HD)
                    .with_magnitude(true)
                    .with_depth(depth),
            );
        }
    }
    // float32 and float16 values (device arrays from Python): dense, separable and magnitude.
    for values in [SampleValues::Float32, SampleValues::Float16] {
        for (size, path) in [
            (3, KernelPath::Separable),
            (13, KernelPath::Dense),
            (31, KernelPath::Dense),
        ] {
            variants.push(Variant::new(size, size, 1, BorderMode::Reflect, max_shared, path, UHD).with_values(values));
        }
        variants.push(
            Variant::new(3, 3, 1, BorderMode::Constant, max_shared, KernelPath::Dense, HD)
                .with_magnitude(true)
                .with_values(values),
        );
    }
    // FFmpeg's arithmetic (an rdiv), with FFmpeg's edges, on 8- and 16-bit planes.
    for depth in [SampleDepth::EIGHT, SampleDepth { bits: 10, shift: 0 }] {
        variants.push(
            Variant::new(3, 3, 1, BorderMode::Ffmpeg, max_shared, KernelPath::Dense, HD)
                .with_depth(depth)
                .with_ffmpeg_rdiv(Some(1.0 / 16.0)),
        );
    }
    variants.dedup();
    for variant in &variants {
        let cubin = compile_kernels(variant, arch).unwrap_or_else(|e| panic!("{arch} {}: {e}", variant.describe()));
        assert_eq!(&cubin[..4], b"\x7fELF", "CUBIN is an ELF image");
        compiled += 1;
    }
    println!(
        "NVRTC {major}.{minor}: {compiled} kernel variants compiled (or read from the cache) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Without a GPU, `--device cuda` must fail with a clear error and `auto` must fall back.
#[test]
fn missing_gpu_is_a_clear_error_and_auto_falls_back() {
    if gpu_requested() || cuda_devices().is_ok() {
        println!("missing_gpu_is_a_clear_error_and_auto_falls_back: skipped (a GPU is present)");
        return;
    }
    let filter = FilterSpec {
        mask: Mask::from_spec("box").unwrap(),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        plane_masks: Default::default(),
    };
    let error = convstream_core::build_engine(filter.clone(), &options(4, false, 64, None))
        .err()
        .expect("no GPU here");
    let text = error.to_string();
    assert!(text.contains("no usable GPU"), "{text}");
    let auto = EngineOptions::new(DeviceChoice::Auto, 4, "test");
    let engine = convstream_core::build_engine(filter, &auto).unwrap();
    assert_eq!(engine.name(), "cpu");
}

/// Overlap shown, not assumed: synthetic 1080p yuv420p frames, 13x13 on every plane, with 1
/// and 4 lanes; prints frames/s and writes a Chrome trace of the 4-lane run.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn gpu_lane_throughput_1080p() {
    let (mut rng, _) = seeded_rng();
    // More frames than the most in flight (8 streams x the default frames per stream).
    let frames: Vec<Frame> = (0..24)
        .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, 1920, 1080, 0, i))
        .collect();
    let filter = FilterSpec {
        mask: dense_13(),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        plane_masks: Default::default(),
    };
    let count = 600u64;
    let mut results = Vec::new();
    for streams in [1usize, 2, 4, 8] {
        let trace = streams == 4;
        let mut engine = CudaEngine::new(
            filter.clone(),
            &EngineOptions {
                trace,
                ..options(streams, false, 64, None)
            },
            0,
        )
        .unwrap();
        // Frames are recycled (a received frame is submitted again), so the loop measures the
        // engine, not the allocator.
        let mut pool = frames.clone();
        let mut run = |engine: &mut CudaEngine, n: u64| {
            let started = Instant::now();
            for i in 0..n {
                let mut frame = pool.pop().expect("a frame is free");
                frame.index = i;
                engine.submit(frame).unwrap();
                while engine.in_flight() >= engine.capacity() {
                    pool.push(engine.receive().unwrap().unwrap());
                }
            }
            while let Some(frame) = engine.receive().unwrap() {
                pool.push(frame);
            }
            started.elapsed().as_secs_f64()
        };
        run(&mut engine, 60); // warm-up: clocks ramp, caches fill
        let _ = engine.take_trace();
        let before = engine.host_copy_times();
        let seconds = run(&mut engine, count);
        let fps = count as f64 / seconds;
        let after = engine.host_copy_times();
        let per_frame = |d: std::time::Duration, b: std::time::Duration| (d - b).as_secs_f64() * 1e6 / count as f64;
        println!(
            "{} streams={streams} x {} frames: {fps:.0} frames/s (1080p yuv420p heap frames, staged; 13x13 dense, all planes); CPU per frame: copy into pinned + enqueue {:.0} us, wait + copy out {:.0} us",
            engine.device().name,
            engine.capacity() / streams,
            per_frame(after.copy_in, before.copy_in),
            per_frame(after.copy_out, before.copy_out)
        );
        if trace {
            let spans = engine.take_trace();
            let path = std::env::var("CONVSTREAM_TRACE_OUT")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|_| std::env::temp_dir().join("convstream-lanes-trace.json"));
            convstream_core::write_chrome_trace(&path, "gpu_lane_throughput_1080p", &spans).unwrap();
            println!("trace of {} spans written to {}", spans.len(), path.display());
        }
        results.push((streams, fps));
    }
    let one = results[0].1;
    for (streams, fps) in &results {
        println!("streams={streams}: {:.2}x streams=1", fps / one);
    }
}

fn dense_13() -> Mask {
    Mask::from_spec("gaussian:size=13,sigma=3").unwrap().dense_only()
}

// A mask per plane on every layout the engines take: a dense mask on one plane, a
// separable one on another, neutral on a third, and planes without a mask copied; outputs
// poisoned, so an unwritten sample shows. Then a switch from one mask to per-plane masks
// between two frames.
test_device!(plane_masks_match_the_cpu_engine, |make_engine, label| {
    use convstream_core::PlaneName;
    let (mut rng, seed) = seeded_rng();
    let (width, height) = (333, 191);
    let masks = |pairs: &[(PlaneName, &str)]| -> convstream_core::PlaneMasks {
        pairs
            .iter()
            .map(|(name, spec)| (*name, Mask::from_spec(spec).unwrap()))
            .collect()
    };
    let cases: Vec<(PixelFormat, convstream_core::PlaneMasks)> = vec![
        (
            PixelFormat::YUV420P,
            masks(&[
                (PlaneName::Y, "edge:size=7"),
                (PlaneName::U, "neutral"),
                (PlaneName::V, "gaussian:size=5"),
            ]),
        ),
        (
            PixelFormat::YUV444P,
            masks(&[(PlaneName::U, "sobel-x"), (PlaneName::V, "box:width=3,height=9")]),
        ),
        (
            PixelFormat::YUV422P,
            masks(&[(PlaneName::Y, "custom:matrix=[[1,2,1],[0,0,0],[-1,-2,-1]],bias=128")]),
        ),
        (
            PixelFormat::NV12,
            masks(&[
                (PlaneName::Y, "laplacian"),
                (PlaneName::U, "neutral"),
                (PlaneName::V, "neutral"),
            ]),
        ),
        (PixelFormat::GRAY8, masks(&[(PlaneName::Y, "emboss")])),
        (
            PixelFormat::RGB24,
            masks(&[
                (PlaneName::R, "sharpen"),
                (PlaneName::G, "sharpen"),
                (PlaneName::B, "sharpen"),
            ]),
        ),
    ];
    for (format, plane_masks) in cases {
        let filter = FilterSpec {
            plane_masks,
            ..FilterSpec::uniform(
                Mask::from_spec("box:size=3").unwrap(),
                BorderMode::Mirror,
                PlaneSelection::Luma,
            )
        };
        assert!(filter.problems_with(format).is_empty(), "{format}");
        let shape = FrameShape { format, width, height };
        let mut engine = make_engine(
            filter.clone(),
            EngineOptions {
                shape: Some(shape),
                ..options(2, true, 64, None)
            },
        );
        let frames: Vec<Frame> = (0..3)
            .map(|i| random_frame(&mut rng, format, width, height, 7, i))
            .collect();
        for frame in &frames {
            engine.submit(frame.clone()).unwrap();
            let output = engine.receive().unwrap().unwrap();
            let expected = CpuEngine::filter_frame(&filter, frame);
            assert_eq!(compare(&expected, &output), (0, 0), "{label} {format} seed {seed}");
        }
    }
    // One mask, then per-plane masks from an exact frame on.
    let uniform = FilterSpec::uniform(
        Mask::from_spec("gaussian:size=9").unwrap(),
        BorderMode::Reflect,
        PlaneSelection::All,
    );
    let per_plane = FilterSpec {
        plane_masks: masks(&[(PlaneName::U, "neutral"), (PlaneName::V, "neutral")]),
        ..FilterSpec::uniform(
            Mask::from_spec("edge").unwrap(),
            BorderMode::Reflect,
            PlaneSelection::All,
        )
    };
    let shape = FrameShape {
        format: PixelFormat::YUV420P,
        width,
        height,
    };
    let mut engine = make_engine(
        uniform.clone(),
        EngineOptions {
            shape: Some(shape),
            ..options(3, true, 64, None)
        },
    );
    let frames: Vec<Frame> = (0..6)
        .map(|i| random_frame(&mut rng, PixelFormat::YUV420P, width, height, 7, i))
        .collect();
    let mut outputs = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        if i == 3 {
            while engine.in_flight() > 0 {
                outputs.push(engine.receive().unwrap().unwrap());
            }
            engine.set_filter(per_plane.clone()).unwrap();
        }
        engine.submit(frame.clone()).unwrap();
    }
    while engine.in_flight() > 0 {
        outputs.push(engine.receive().unwrap().unwrap());
    }
    for (i, (frame, output)) in frames.iter().zip(&outputs).enumerate() {
        let filter = if i < 3 { &uniform } else { &per_plane };
        assert_eq!(
            compare(&CpuEngine::filter_frame(filter, frame), output),
            (0, 0),
            "{label} switch, frame {i}, seed {seed}"
        );
    }
});

// Gradient magnitudes (sobel, prewitt, roberts, scaled by a divisor, with a bias) on both tiled and
// baseline kernels, every border, every channel count, odd sizes and pitches: identical to
// the CPU engine, with outputs poisoned.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn gradient_magnitudes_match_the_cpu_engine() {
    let (mut rng, seed) = seeded_rng();
    let mut cases = 0;
    for spec in [
        "sobel",
        "prewitt",
        "sobel:divisor=4",
        "prewitt:divisor=3,bias=16",
        "roberts",
        "roberts:divisor=0.5,bias=2.5",
    ] {
        let mask = Mask::from_spec(spec).unwrap();
        assert!(mask.is_magnitude() && !mask.is_separable(), "{spec}");
        for border in BorderMode::ALL {
            for path in [KernelPath::Dense, KernelPath::Global] {
                let filter = FilterSpec::uniform(mask.clone(), border, PlaneSelection::All);
                for (format, pitch_align) in [
                    (PixelFormat::YUV420P, 64),
                    (PixelFormat::NV12, 1),
                    (PixelFormat::RGB24, 4),
                ] {
                    let mut engine = CudaEngine::new(filter.clone(), &options(2, true, pitch_align, Some(path)), 0)
                        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                    for (n, &(w, h)) in [(1, 1), (7, 5), (130, 67), (1921, 33)].iter().enumerate() {
                        let frame = random_frame(&mut rng, format, w, h, n % 3, n as u64);
                        let expected = CpuEngine::filter_frame(&filter, &frame);
                        engine.submit(frame).unwrap();
                        let actual = engine.receive().unwrap().unwrap();
                        assert_eq!(
                            compare(&expected, &actual),
                            (0, 0),
                            "seed {seed}: {spec} {border} {path:?} {format} {w}x{h}"
                        );
                        cases += 1;
                    }
                }
            }
        }
    }
    println!("gradient magnitudes: {cases} cases identical to the CPU engine");
}

// FFmpeg's `convolution` as `-vf` gives it (whole-number taps, rdiv, bias, the `ffmpeg`
// border): 3x3, 5x5, 7x7, row and column matrices on the tiled and baseline kernels, odd
// sizes and pitches, outputs poisoned: identical to the CPU engine, which equals FFmpeg's
// own output byte for byte (tests/it/ffmpeg_dropin.rs).
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn ffmpeg_arithmetic_and_edges_match_the_cpu_engine() {
    let (mut rng, seed) = seeded_rng();
    let mut cases = 0;
    for spec in [
        "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],mode=correlate,rdiv=0,bias=3",
        "custom:matrix=[[0,-1,0],[-1,5,-1],[0,-1,0]],mode=correlate,rdiv=0",
        "custom:matrix=[[1,1,1],[1,1,1],[1,1,1]],mode=correlate,rdiv=0",
        "custom:matrix=[[-1,-1,-1],[-1,8,-1],[-1,-1,-1]],mode=correlate,rdiv=1,bias=128",
        "custom:matrix=[[1,4,6,4,1],[4,16,24,16,4],[6,24,36,24,6],[4,16,24,16,4],[1,4,6,4,1]],mode=correlate,rdiv=0,bias=2",
        "custom:matrix=[[1,2,3,2,1]],mode=correlate,rdiv=0",
        "custom:matrix=[[1],[0],[-1],[3],[5],[2],[1]],mode=correlate,rdiv=0,bias=128",
        // `-vf sobel=scale=3:delta=10`, `roberts=scale=0.7:delta=3`: gradient magnitudes.
        "sobel:rdiv=3,bias=9.5",
        "roberts:rdiv=0.7,bias=2.5",
    ] {
        let mask = Mask::from_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e:?}"));
        assert!(mask.ffmpeg_rdiv().is_some() && !mask.is_separable(), "{spec}");
        for path in [KernelPath::Dense, KernelPath::Global] {
            let filter = FilterSpec::uniform(mask.clone(), BorderMode::Ffmpeg, PlaneSelection::All);
            for (format, pitch_align) in [(PixelFormat::YUV420P, 64), (PixelFormat::GRAY8, 1)] {
                let mut engine = CudaEngine::new(filter.clone(), &options(2, true, pitch_align, Some(path)), 0)
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                for (n, &(w, h)) in [(1, 1), (7, 5), (97, 61), (1921, 33)].iter().enumerate() {
                    let frame = random_frame(&mut rng, format, w, h, n % 3, n as u64);
                    let expected = CpuEngine::filter_frame(&filter, &frame);
                    engine.submit(frame).unwrap();
                    let actual = engine.receive().unwrap().unwrap();
                    assert_eq!(compare(&expected, &actual), (0, 0), "seed {seed}: {spec} {path:?} {format} {w}x{h}");
                    cases += 1;
                }
            }
        }
    }
    println!("FFmpeg's arithmetic and edges: {cases} cases identical to the CPU engine");
}

/// A picture whose input and output are both in GPU memory, as `convstream.Filter` hands
/// CuPy arrays and torch tensors to the engine (`DevicePicture::with_output`): filtered device
/// to device, identical to the CPU engine, planes the filter skips copied on the GPU, and not a
/// byte over PCIe.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn pictures_with_an_output_on_the_gpu_stay_there() {
    use convstream_core::{DevicePicture, DevicePlane};
    use cudarc::driver::DevicePtr;
    use std::sync::Arc;

    let (mut rng, seed) = seeded_rng();
    let context = open_cuda_device(0).unwrap_or_else(|e| panic!("cuda:0: {e}"));
    let stream = context.default_stream();
    let yuv10 = PixelFormat::new(PixelLayout::Yuv420, 10).expect("yuv420p10");
    let cases = [
        (PixelFormat::GRAY8, PlaneSelection::All),
        (yuv10, PlaneSelection::Luma),
        (PixelFormat::NV12, PlaneSelection::All),
        (PixelFormat::P010, PlaneSelection::Chroma),
    ];
    for (format, planes) in cases {
        let filter = FilterSpec::uniform(Mask::from_spec("gaussian:size=7").unwrap(), BorderMode::Mirror, planes);
        let mut engine = CudaEngine::new(filter.clone(), &options(2, true, 64, None), 0)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for index in 0..4u64 {
            let (width, height) = (97, 61);
            let frame = random_frame(&mut rng, format, width, height, 0, index);
            let expected = CpuEngine::filter_frame(&filter, &frame);
            let packed: Vec<Vec<u8>> = frame
                .planes
                .iter()
                .map(|p| (0..p.height).flat_map(|y| p.row(y).to_vec()).collect())
                .collect();
            let inputs: Vec<_> = packed.iter().map(|bytes| stream.clone_htod(bytes).unwrap()).collect();
            let outputs: Vec<_> = packed
                .iter()
                .map(|bytes| stream.alloc_zeros::<u8>(bytes.len()).unwrap())
                .collect();
            stream.synchronize().unwrap();
            let at = |slices: &[cudarc::driver::CudaSlice<u8>]| -> Vec<DevicePlane> {
                slices
                    .iter()
                    .zip(&frame.planes)
                    .map(|(slice, plane)| DevicePlane {
                        address: slice.device_ptr(&stream).0,
                        pitch: plane.row_bytes(),
                    })
                    .collect()
            };
            let mut submitted = Frame::new(format, width, height);
            submitted.index = index;
            submitted.device = Some(Arc::new(
                DevicePicture::new(0, at(&inputs), Box::new(())).with_output(at(&outputs)),
            ));
            engine.submit(submitted).unwrap();
            let back = engine.receive().unwrap().unwrap();
            assert!(back.device.is_none(), "the picture is let go once filtered");
            for (plane, (output, wanted)) in outputs.iter().zip(&expected.planes).enumerate() {
                let got = stream.clone_dtoh(output).unwrap();
                let wanted: Vec<u8> = (0..wanted.height).flat_map(|y| wanted.row(y).to_vec()).collect();
                assert!(
                    got == wanted,
                    "seed {seed}: {format} {planes}, frame {index}, plane {plane} differs"
                );
            }
        }
        let pcie = engine.pcie_bytes();
        assert_eq!(
            (pcie.to_gpu, pcie.from_gpu, pcie.frames),
            (0, 0, 4),
            "{format}: {pcie:?}"
        );
    }
}

/// A picture NVDEC left on the GPU, as the decoder hands it over: host planes with no
/// memory yet (`Frame::pending`), which the engine gives pool memory only when it filters the
/// frame. The results come back into them identical to the CPU engine, planes the filter
/// skips copied back whole, the surface's padding never read, and no plane left pending.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn pictures_on_the_gpu_get_host_memory_only_when_filtered() {
    use convstream_core::{DevicePicture, DevicePlane};
    use cudarc::driver::DevicePtr;
    use std::sync::Arc;

    let (mut rng, seed) = seeded_rng();
    let context = open_cuda_device(0).unwrap_or_else(|e| panic!("cuda:0: {e}"));
    let stream = context.default_stream();
    let cases = [
        (PixelFormat::NV12, PlaneSelection::All),
        (PixelFormat::NV12, PlaneSelection::Luma),
        (PixelFormat::P010, PlaneSelection::All),
        (PixelFormat::P010, PlaneSelection::Chroma),
    ];
    for (format, planes) in cases {
        let filter = FilterSpec::uniform(Mask::from_spec("gaussian:size=5").unwrap(), BorderMode::Reflect, planes);
        let mut engine = CudaEngine::new(filter.clone(), &options(2, true, 64, None), 0)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let (width, height) = (134, 77);
        let frames: Vec<Frame> = (0..6u64)
            .map(|index| random_frame(&mut rng, format, width, height, 0, index))
            .collect();
        // Each plane on the GPU at a pitch wider than its rows, the padding 0xEE.
        let surfaces: Vec<Vec<(cudarc::driver::CudaSlice<u8>, usize)>> = frames
            .iter()
            .map(|frame| {
                frame
                    .planes
                    .iter()
                    .map(|p| {
                        let pitch = p.row_bytes() + 96;
                        let mut bytes = vec![0xEE; pitch * p.height];
                        for y in 0..p.height {
                            bytes[y * pitch..y * pitch + p.row_bytes()].copy_from_slice(p.row(y));
                        }
                        (stream.clone_htod(&bytes).unwrap(), pitch)
                    })
                    .collect()
            })
            .collect();
        stream.synchronize().unwrap();
        // Made pending all at once, as frames waiting in a queue are; every lane kept busy.
        let mut waiting: std::collections::VecDeque<Frame> = frames
            .iter()
            .zip(&surfaces)
            .map(|(frame, surface)| {
                let mut pending = Frame::pending(format, width, height);
                pending.index = frame.index;
                let planes = surface
                    .iter()
                    .map(|(slice, pitch)| DevicePlane {
                        address: slice.device_ptr(&stream).0,
                        pitch: *pitch,
                    })
                    .collect();
                pending.device = Some(Arc::new(DevicePicture::new(0, planes, Box::new(()))));
                pending
            })
            .collect();
        assert!(waiting.iter().flat_map(|f| &f.planes).all(|p| p.data.is_pending()));
        let mut returned = Vec::new();
        while returned.len() < frames.len() {
            if engine.in_flight() < engine.capacity() {
                if let Some(frame) = waiting.pop_front() {
                    engine.submit(frame).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                    continue;
                }
            }
            let back = engine.receive().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            returned.push(back.expect("a frame in flight"));
        }
        for (frame, back) in frames.iter().zip(&returned) {
            assert_eq!(back.index, frame.index);
            assert!(back.device.is_none(), "the picture is let go once filtered");
            assert!(
                back.planes.iter().all(|p| !p.data.is_pending()),
                "every plane has memory"
            );
            let expected = CpuEngine::filter_frame(&filter, frame);
            assert_eq!(
                compare(&expected, back),
                (0, 0),
                "seed {seed}: {format} {planes}, frame {}",
                frame.index
            );
        }
    }
}

/// A picture NVDEC left on the GPU, copied back for a preview
/// (`engine::cuda::copy_picture_to_host`): every plane's pixels, row by row from its pitch,
/// packed, and nothing of the padding between rows.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn a_picture_on_the_gpu_is_copied_back_whole_for_a_preview() {
    use convstream_core::copy_picture_to_host;
    use convstream_core::{DevicePicture, DevicePlane};
    use cudarc::driver::DevicePtr;

    let (mut rng, seed) = seeded_rng();
    let context = open_cuda_device(0).unwrap_or_else(|e| panic!("cuda:0: {e}"));
    let stream = context.default_stream();
    for format in [PixelFormat::NV12, PixelFormat::P010, PixelFormat::YUV420P] {
        let (width, height) = (99, 37);
        let frame = random_frame(&mut rng, format, width, height, 0, 0);
        // Each plane on the GPU at a pitch wider than its rows, padding filled with 0xEE.
        let pitched: Vec<(Vec<u8>, usize)> = frame
            .planes
            .iter()
            .map(|p| {
                let pitch = p.row_bytes() + 64;
                let mut bytes = vec![0xEE; pitch * p.height];
                for y in 0..p.height {
                    bytes[y * pitch..y * pitch + p.row_bytes()].copy_from_slice(p.row(y));
                }
                (bytes, pitch)
            })
            .collect();
        let on_gpu: Vec<_> = pitched
            .iter()
            .map(|(bytes, _)| stream.clone_htod(bytes).unwrap())
            .collect();
        stream.synchronize().unwrap();
        let planes = on_gpu
            .iter()
            .zip(&pitched)
            .map(|(slice, (_, pitch))| DevicePlane {
                address: slice.device_ptr(&stream).0,
                pitch: *pitch,
            })
            .collect();
        let picture = DevicePicture::new(0, planes, Box::new(()));
        let shapes: Vec<(usize, usize)> = frame.planes.iter().map(|p| (p.row_bytes(), p.height)).collect();
        let back = copy_picture_to_host(&picture, &shapes).unwrap_or_else(|e| panic!("seed {seed}: {format}: {e}"));
        for (index, (plane, got)) in frame.planes.iter().zip(&back).enumerate() {
            let wanted: Vec<u8> = (0..plane.height).flat_map(|y| plane.row(y).to_vec()).collect();
            assert!(got == &wanted, "seed {seed}: {format}, plane {index} differs");
        }
        assert!(
            copy_picture_to_host(&picture, &shapes[..1]).is_err(),
            "a plane count that differs"
        );
    }
}

// Exact ties (the cases of `convstream_testkit::ties`, which `tests/exact_ties.rs` holds the
// CPU engine to): every tie of every divisor 2..64, 8- and 16-bit, on the tiled path the plan
// picks and on the baseline kernel, with outputs poisoned: identical to the CPU engine and to
// the promise (the sum divided by the divisor, plus the bias, rounded half away from zero).
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn exact_ties_match_the_cpu_engine_and_round_half_away_from_zero() {
    use convstream_core::PixelLayout;
    use convstream_testkit::ties::{all_cases, count};
    let (mut ties, mut cases) = (0, 0);
    for case in all_cases() {
        let format = PixelFormat::new(PixelLayout::Gray, case.plane.depth.bits).expect("gray at 8 and 16 bits");
        let frame = Frame::of_planes(format, case.plane.width, case.plane.height, vec![case.plane.clone()]);
        let filter = FilterSpec::uniform(case.mask.clone(), case.border, PlaneSelection::All);
        let expected = CpuEngine::filter_frame(&filter, &frame);
        for path in [None, Some(KernelPath::Global)] {
            let mut engine = CudaEngine::new(filter.clone(), &options(1, true, 1, path), 0)
                .unwrap_or_else(|e| panic!("{}: CUDA engine: {e}", case.spec));
            engine.submit(frame.clone()).unwrap();
            let actual = engine.receive().unwrap().expect("the filtered frame");
            assert_eq!(
                compare(&expected, &actual),
                (0, 0),
                "{} {path:?}: GPU and CPU differ",
                case.spec
            );
            let counted = count(&case, &actual.planes[0]);
            assert_eq!(
                counted.wrong,
                0,
                "{} {path:?}:\n{}",
                case.spec,
                counted.examples.join("\n")
            );
            ties += counted.ties;
            cases += 1;
        }
    }
    println!("exact ties: {cases} cases, {ties} ties, identical to the CPU engine and the promise");
}

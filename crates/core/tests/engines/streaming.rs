//! The streaming kernels of small masks (`STREAM` in kernels/convolve.cu, asked for with a
//! tiling such as `32x4x16x8s`; no policy picks them yet) on a large plane: identical to the
//! CPU engine at every border that changes the edges' reads, dense and separable, gradient
//! magnitudes, one and three channels, rows aligned (the interior path) and not (sample by
//! sample), outputs poisoned so an unwritten sample shows. Ignored without a GPU; their
//! variants' compilation needs only NVRTC.

use rand::{Rng, SeedableRng};

use convstream_testkit::gpu_requested;

use convstream_core::{compile_kernels, nvrtc_available, SampleDepth, SampleValues, Variant};
use convstream_core::{BorderMode, CpuEngine, DeviceChoice, Engine, EngineOptions, FilterSpec, KernelPath};
use convstream_core::{CudaEngine, Frame, GpuTuning, Mask, PixelFormat, PlaneSelection};

/// A large plane, a multiple of no thread's share.
const WIDTH: usize = 2701;
const HEIGHT: usize = 1499;

/// A random mask of whole numbers and halves, separable or not.
fn random_mask(rng: &mut impl Rng, width: usize, height: usize, separable: bool) -> Mask {
    if separable {
        let column: Vec<f32> = (0..height).map(|_| rng.gen_range(-4..=4) as f32 * 0.5).collect();
        let row: Vec<f32> = (0..width).map(|_| rng.gen_range(1..=4) as f32).collect();
        let coefficients = column.iter().flat_map(|c| row.iter().map(move |r| c * r)).collect();
        return Mask::from_coefficients(width, height, coefficients, rng.gen_range(0.0..64.0));
    }
    let coefficients = (0..width * height).map(|_| rng.gen_range(-0.3..0.5)).collect();
    Mask::from_coefficients(width, height, coefficients, rng.gen_range(0.0..32.0)).dense_only()
}

fn random_frame(rng: &mut impl Rng, format: PixelFormat) -> Frame {
    let mut frame = Frame::new(format, WIDTH, HEIGHT);
    for plane in &mut frame.planes {
        for y in 0..plane.height {
            rng.fill(plane.row_mut(y));
        }
    }
    frame
}

/// Samples that differ between the two frames.
fn differing(expected: &Frame, actual: &Frame) -> usize {
    let mut count = 0;
    for (e, a) in expected.planes.iter().zip(&actual.planes) {
        for y in 0..e.height {
            count += e.row(y).iter().zip(a.row(y)).filter(|(x, y)| x != y).count();
        }
    }
    count
}

#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn large_planes_stream_small_masks_and_match_the_cpu() {
    let seed = convstream_testkit::random::seed();
    println!("random seed {seed} (CONVSTREAM_TEST_SEED={seed} repeats it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut masks: Vec<(Mask, KernelPath)> = Vec::new();
    for (w, h) in [(3, 3), (5, 5), (5, 3), (1, 5)] {
        masks.push((random_mask(&mut rng, w, h, false), KernelPath::Dense));
        masks.push((random_mask(&mut rng, w, h, true), KernelPath::Separable));
    }
    masks.push((Mask::from_spec("sobel").expect("a preset"), KernelPath::Dense));
    let mut cases = 0;
    // The wide shape and the narrow one, on rows aligned (the interior path) and not.
    for (format, pitch_align, shape) in [
        (PixelFormat::GRAY8, 64, "32x4x16x8s"),
        (PixelFormat::GRAY8, 1, "32x4x8x4s"),
        (PixelFormat::RGB24, 64, "32x4x8x4s"),
    ] {
        let shape = shape.parse().expect("a tiling");
        let tuning = GpuTuning {
            dense_tiling: Some(shape),
            separable_tiling: Some(shape),
            ..GpuTuning::default()
        };
        for (k, (mask, path)) in masks.iter().enumerate() {
            // Two of the four edge rules a mask, in turn: each is met by every format, and
            // every kernel variant compiled costs NVRTC time on the GPU host.
            let borders = [
                BorderMode::Reflect,
                BorderMode::Constant,
                BorderMode::Wrap,
                BorderMode::Ffmpeg,
            ];
            for border in [borders[k % 4], borders[(k + 2) % 4]] {
                let filter = FilterSpec::uniform(mask.clone(), border, PlaneSelection::All);
                let options = EngineOptions {
                    poison: true,
                    pitch_align,
                    force_path: Some(*path),
                    tuning,
                    ..EngineOptions::new(DeviceChoice::Cuda(0), 1, "test")
                };
                let mut engine = CudaEngine::new(filter.clone(), &options, 0).expect("a CUDA engine");
                let frame = random_frame(&mut rng, format);
                let expected = CpuEngine::filter_frame(&filter, &frame);
                engine.submit(frame).expect("submitted");
                let actual = engine.receive().expect("received").expect("a frame");
                assert_eq!(
                    differing(&expected, &actual),
                    0,
                    "seed {seed}: {} {path:?} {border} {format} rows aligned to {pitch_align}",
                    mask.description()
                );
                cases += 1;
            }
        }
    }
    println!("streaming: {cases} cases of {WIDTH}x{HEIGHT} match the CPU engine");
}

/// The streaming variants compile with NVRTC (no GPU needed; skipped where libnvrtc does not
/// load, a failure there with `CONVSTREAM_TEST_NVRTC=1`): each sample kind, dense, separable
/// and magnitude, one to three channels.
#[test]
fn streaming_kernels_compile_with_nvrtc() {
    if !nvrtc_available() {
        let required = std::env::var("CONVSTREAM_TEST_NVRTC").is_ok_and(|v| v == "1") || gpu_requested();
        assert!(
            !required,
            "NVRTC was required (CONVSTREAM_TEST_NVRTC=1) but libnvrtc could not be loaded"
        );
        println!("streaming_kernels_compile_with_nvrtc: skipped (libnvrtc not found)");
        return;
    }
    let max_shared = 232_448;
    let tuning = GpuTuning {
        dense_tiling: Some("32x4x16x8s".parse().expect("a tiling")),
        separable_tiling: Some("32x4x8x4s".parse().expect("a tiling")),
        ..GpuTuning::default()
    };
    let variant = |size: usize, channels: usize, border, path| {
        Variant::new(size, size, channels, border, max_shared, path, WIDTH * HEIGHT).tuned(&tuning, path, max_shared)
    };
    let variants = [
        variant(3, 1, BorderMode::Reflect, KernelPath::Dense),
        variant(5, 3, BorderMode::Constant, KernelPath::Separable),
        variant(7, 1, BorderMode::Wrap, KernelPath::Dense),
        variant(3, 2, BorderMode::Ffmpeg, KernelPath::Dense).with_ffmpeg_rdiv(Some(1.0 / 16.0)),
        variant(3, 1, BorderMode::Mirror, KernelPath::Dense).with_magnitude(true),
        variant(5, 1, BorderMode::Nearest, KernelPath::Separable).with_depth(SampleDepth { bits: 10, shift: 6 }),
        variant(3, 3, BorderMode::Reflect, KernelPath::Separable).with_values(SampleValues::Float32),
        variant(5, 1, BorderMode::Reflect, KernelPath::Dense).with_values(SampleValues::Float16),
    ];
    for v in &variants {
        assert!(v.tiling.stream, "{}", v.describe());
        let cubin = compile_kernels(v, "sm_90").unwrap_or_else(|e| panic!("{}: {e}", v.describe()));
        assert_eq!(&cubin[..4], b"\x7fELF", "CUBIN is an ELF image");
    }
    println!("{} streaming variants compiled", variants.len());
}

//! The benchmark suites, one module each. GPU figures come from `engine::cuda::measure`
//! (CUDA events) through [`gpu`], the one module built only with CUDA support; CPU figures
//! from wall-clock medians. Each suite measures its baseline in the same run.

mod cli_runs;
mod cpu_info;
mod e2e;
#[cfg(feature = "cuda")]
mod gpu;
mod kernel;
mod overlap;
mod overlap_runs;
mod scale;
mod transfer;

use std::time::Instant;

pub use e2e::e2e;
pub use kernel::kernel;
pub use overlap::overlap;
pub use scale::scale;
pub use transfer::transfer;

use super::{BenchError, BenchOptions, RunInfo};
use crate::engine::{DeviceChoice, Engine};
use crate::frame::{Frame, PixelFormat};
use crate::mask::Mask;

/// The dense mask of the overlap and e2e suites: a 13x13 Laplacian of Gaussian (not separable).
pub(super) const E2E_MASK: &str = "edge:size=13,sigma=2";

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

/// Whether a usable GPU is there (never, in a build without CUDA support).
fn probe() -> Result<(), BenchError> {
    #[cfg(feature = "cuda")]
    return gpu::probe();
    #[cfg(not(feature = "cuda"))]
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
        tuning: options.tuning,
        host_cpu: Some(cpu_info::describe().0),
    })
}

/// The device's name, the driver's version and the FP32 peak in FLOP/s.
fn describe_device(gpu: Option<usize>) -> Result<(String, Option<String>, Option<f64>), BenchError> {
    match gpu {
        #[cfg(feature = "cuda")]
        Some(ordinal) => gpu::describe_device(ordinal),
        _ => Ok(("cpu".into(), None, cpu_info::describe().1)),
    }
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

/// Random yuv420p (or other) frames; `index` seeds them.
fn random_frame(format: PixelFormat, width: usize, height: usize, index: u64) -> Frame {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(index);
    let mut frame = Frame::new(format, width, height);
    for plane in &mut frame.planes {
        rng.fill(&mut plane.data[..]);
        let depth = plane.depth;
        if depth.bytes() == 2 {
            // Samples of the depth, shifted as the format stores them.
            for word in plane.data.chunks_exact_mut(2) {
                let value = (u16::from_le_bytes([word[0], word[1]]) & depth.max_value() as u16) << depth.shift;
                word.copy_from_slice(&value.to_le_bytes());
            }
        }
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

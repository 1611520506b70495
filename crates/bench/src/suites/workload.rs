//! What the suites share: their masks, plane sizes, random frames, and driving an engine
//! with recycled frames.

use std::time::Instant;

use crate::error::BenchError;
use convstream_core::Engine;
use convstream_core::Mask;
use convstream_core::{Frame, PixelFormat};

/// The dense mask of the overlap and e2e suites: a 13x13 Laplacian of Gaussian (not separable).
pub(crate) const E2E_MASK: &str = "edge:size=13,sigma=2";

pub(super) fn dense_mask(size: usize) -> Mask {
    // A Laplacian of Gaussian has full rank: the dense path is the only one for it.
    Mask::from_spec(&format!("edge:size={size},sigma={:.2}", (size as f64 / 6.0).max(0.5)))
        .expect("a valid preset")
        .dense_only()
}

pub(super) fn separable_mask(size: usize) -> Mask {
    Mask::from_spec(&format!("gaussian:size={size}")).expect("a valid preset")
}

pub(super) fn plane_sizes(quick: bool) -> Vec<(usize, usize)> {
    if quick {
        vec![(1920, 1080)]
    } else {
        vec![(1920, 1080), (3840, 2160)]
    }
}

/// Random yuv420p (or other) frames; `index` seeds them.
pub(super) fn random_frame(format: PixelFormat, width: usize, height: usize, index: u64) -> Frame {
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
pub(super) fn drive(engine: &mut dyn Engine, pool: &mut Vec<Frame>, count: u64) -> Result<f64, BenchError> {
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

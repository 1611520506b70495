//! The CPU engine: a direct convolution on every core, SIMD across pixels, correct for
//! every border mode, mask size and sample depth (8 to 16 bits), and bit-identical to the
//! CUDA engine (same taps, same order, one fused multiply-add each; or, for whole-number
//! masks whose sums are exact in f32, the same exact sums in integer lanes). GPU results are checked
//! against it. Masks that change nothing (identity) or write a constant (`neutral`) take no
//! convolution pass.
//!
//! Here: the modules and what they give the crates above. The engine is in `engine.rs`, one
//! plane through one mask in `convolve.rs`, the band loops in `bands.rs`, which lanes
//! (f32, or integer for exact sums) and taps a mask takes in `band_mask.rs`, the lanes and
//! their inner loop in `lanes.rs`, the step from sums to samples in `finish.rs` (for exact
//! sums, in integers: `integer_finish.rs`), border index maps in `rows.rs`, planes at any
//! pitches (NumPy views, interleaved channels, float32 values) as the band loops read them in
//! `view.rs`.

mod band_mask;
mod bands;
mod convolve;
mod engine;
mod finish;
mod integer_finish;
mod lanes;
mod rows;
mod view;

pub use convolve::{convolve_plane, convolve_plane_into, convolve_view_into};
pub use engine::CpuEngine;
pub use view::{Pitches, PlaneView, ViewError, ViewSamples};

/// Names the CPU workers every pipeline of the process shares (rayon's global pool, which
/// the engines' bands and copies run on) `cpu-worker-N`, before anything starts them: a
/// thread started without a name takes its starter's, so the pool would be named after
/// whichever pipeline filtered first, and keep that name after the pipeline is gone.
pub(crate) fn name_shared_workers() {
    static NAMED: std::sync::Once = std::sync::Once::new();
    NAMED.call_once(|| {
        // Refused only when the pool runs already (a caller outside the engines started it):
        // it keeps the names it has.
        let _ = rayon::ThreadPoolBuilder::new()
            .thread_name(|index| format!("cpu-worker-{index}"))
            .build_global();
    });
}

//! The CPU engine: a direct convolution on every core, SIMD across pixels, correct for
//! every border mode, mask size and sample depth (8 to 16 bits), and bit-identical to the
//! CUDA engine (same taps, same order, one fused multiply-add each). GPU results are checked
//! against it. Masks that change nothing (identity) or write a constant (`neutral`) take no
//! convolution pass.
//!
//! Here: the modules and what they give the crates above. The engine is in `engine.rs`, one
//! plane through one mask in `convolve.rs`, the inner loop in `accumulate.rs`.

mod accumulate;
mod convolve;
mod engine;

pub use convolve::{convolve_plane, magnitude, to_sample};
pub use engine::CpuEngine;

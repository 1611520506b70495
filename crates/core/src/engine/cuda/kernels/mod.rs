//! The convolution kernels: one variant per (mask size, channels, border, tiling)
//! (`variant.rs`), compiled by NVRTC for the device's architecture with `-D` defines and
//! cached on disk ([`compile`]), loaded as a module holding the dense, separable and
//! baseline kernels plus the mask taps, and launched on a lane's stream (`launch.rs`).

mod compile;
mod launch;
mod variant;

pub use compile::{cache_dir, compile, nvrtc_version};
pub use launch::{KernelSet, PlaneGeometry};
pub use variant::{SampleValues, Variant};

//! The convolution kernels: one variant per (mask size, channels, border, tiling)
//! (`variant.rs`), compiled by NVRTC for the device's architecture with `-D` defines and
//! cached on disk ([`compile`]) or read from the kernel pack a build ships ([`pack`]), loaded
//! as a module holding the dense, separable and baseline kernels plus the mask taps, and
//! launched on a lane's stream (`launch.rs`).

mod compile;
mod launch;
pub mod pack;
mod variant;

pub use compile::{
    cache_dir, compile, compile_for_pack, kernel_origins, nvrtc_version, pack_key, pack_key_for_source, program_source,
    source_hash, source_hash_of, supported_architectures, KernelOrigins,
};
pub use launch::{KernelSet, PlaneGeometry};
pub use variant::{SampleValues, Variant};

//! The CUDA engine, the only code that talks to the GPU (through cudarc). `submit` enqueues a
//! frame's upload, kernels and download on a free lane's stream; a completion thread waits on
//! lanes in submission order and frees each lane once its frame is back. So frames leave in
//! order while up to `streams x frames_per_stream` frames are in flight, copies in both
//! directions overlap other streams' kernels, and each stream has its next frame queued
//! while the host collects the last one.
//!
//! The engine lends a pool of page-locked frame buffers
//! ([`Engine::frame_pool`](crate::engine::Engine::frame_pool)): frames decoded into it go to
//! the GPU and come back into the same memory with no CPU copy. Other frames are staged
//! through the lanes' own pinned buffers (one CPU copy each way).
//!
//! Here: the modules and what they give the crates above. The engine itself is in
//! `engine.rs`; apart: kernel planning (`plan.rs`), the lane protocol and the completion
//! thread with its timings (`completion.rs`), lanes and their copies ([`lanes`]), kernel
//! variants, compilation and launch ([`kernels`]), the kernel pack's catalogue and build
//! ([`kernel_pack`]), device probing ([`device`]), what crossed
//! PCIe (`pcie.rs`), one NVDEC picture copied back for a preview (`picture_copy.rs`).

mod completion;
pub mod device;
mod device_input;
mod engine;
mod engine_error;
pub mod kernel_pack;
// The engine's error holds a `CudaError`: from the leaf, not through this module.
pub(super) mod error;
pub mod kernels;
pub mod lanes;
pub mod measure;
pub mod nvdec;
pub mod nvml;
mod pcie;
mod picture_copy;
pub mod pinned;
mod plan;
pub mod stream_call;

pub use engine::CudaEngine;
pub use picture_copy::copy_picture_to_host;

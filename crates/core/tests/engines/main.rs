//! The core crate's own integration tests, one binary: the CPU engine against the oracle
//! (whole-number masks in integer lanes too), the mask parser's properties, and the GPU tests
//! (ignored without a GPU; on a GPU host `engines gpu:: --include-ignored --test-threads=1`),
//! and the kernel pack with NVRTC alone.
//! Nothing here needs FFmpeg.

mod cpu_oracle;
#[cfg(feature = "cuda")]
mod gpu;
#[cfg(feature = "cuda")]
mod kernel_pack;
mod mask_properties;
#[cfg(feature = "cuda")]
mod stream_call;
#[cfg(feature = "cuda")]
mod whole_lanes;

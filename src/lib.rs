//! convstream: real-time 2D convolution filtering of video, on NVIDIA GPUs through CUDA
//! or on the CPU reference engine.
//!
//! Data flows source (FFmpeg demux + decode) -> engine (convolution) -> sink (FFmpeg
//! encode + mux), each stage a thread joined by bounded channels; see
//! [`convstream_media::pipeline`].
//!
//! This package is the binary's: the service ([`server`]), the benchmarks ([`mod@bench`])
//! and `doctor`. The layers below it are crates of their own, named by their own names
//! wherever they are used: `convstream_core` (formats, frames, masks, engines),
//! `convstream_config` (the configuration) and `convstream_media` (FFmpeg source and sink,
//! pipeline).

pub mod bench;
pub mod doctor;
pub mod server;

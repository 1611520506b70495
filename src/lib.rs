//! convstream: real-time 2D convolution filtering of video, on NVIDIA GPUs through CUDA
//! or on the CPU reference engine.
//!
//! Data flows source (FFmpeg demux + decode) -> engine (convolution) -> sink (FFmpeg
//! encode + mux), each stage a thread joined by bounded channels; see
//! [`convstream_media::pipeline`].
//!
//! This package is the binary's: the service ([`server`]), the benchmarks ([`mod@bench`]),
//! `doctor` and the log-filter check its configs use. The layers below it are crates of
//! their own, named by their own names wherever they are used: `convstream_core` (formats,
//! frames, masks, engines) and `convstream_media` (FFmpeg source and sink, pipeline,
//! configuration).

pub mod bench;
pub mod doctor;
pub mod log_filter;
pub mod server;

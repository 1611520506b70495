//! convstream: real-time 2D convolution filtering of video, on NVIDIA GPUs through CUDA
//! or on the CPU reference engine.
//!
//! Data flows source (FFmpeg demux + decode) -> engine (convolution) -> sink (FFmpeg
//! encode + mux), each stage a thread joined by bounded channels; see [`pipeline`].
//!
//! This package is the binary's: the service ([`server`]), the benchmarks ([`bench`]) and
//! `doctor`. The layers below it are crates of their own, re-exported here under the names
//! the binary and the tests use: `convstream_core` (formats, frames, masks, engines) and
//! `convstream_media` (FFmpeg source and sink, pipeline, configuration).

pub mod bench;
pub mod doctor;
pub mod log_filter;
pub mod server;

pub use convstream_core::{engine, filter, frame, host_buffers, mask, text};
pub use convstream_media::{config, ffmpeg, pipeline, sample, sink, source, stats};

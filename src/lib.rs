//! convstream: real-time 2D convolution filtering of video, on NVIDIA GPUs through CUDA
//! or on the CPU reference engine.
//!
//! Data flows source (FFmpeg demux + decode) -> engine (convolution) -> sink (FFmpeg
//! encode + mux), each stage a thread joined by bounded channels; see [`pipeline`].

pub mod bench;
pub mod config;
pub mod doctor;
pub mod engine;
pub mod ffmpeg_log;
pub mod filter;
pub mod frame;
pub mod host_buffers;
pub mod mask;
pub mod media;
pub mod nvdec;
pub mod pipeline;
pub mod sample;
pub mod server;
pub mod sink;
pub mod source;
pub mod stats;
pub mod text;

//! convstream's core: what a frame is (pixel formats, planes, host buffers), what a filter is
//! (masks, borders, planes), and the engines that apply it, the CPU reference and CUDA lanes.
//! Nothing here knows FFmpeg, an async runtime or HTTP: the media crate feeds the engines
//! decoded frames, and the binary, the GStreamer element and Python build on both.

#![warn(missing_docs)]

pub mod engine;
pub mod filter;
pub mod format;
pub mod frame;
pub mod host_buffers;
pub mod mask;
pub mod nvdec;
pub mod side_file;
pub mod text;

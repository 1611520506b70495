//! convstream's media layer: the FFmpeg source (demux and decode, software or NVDEC) and sink
//! (encode and mux), the pipeline that runs them around an engine of the core crate, each
//! stage a thread joined by bounded channels (see [`pipeline`]). The configuration that
//! describes pipelines is `convstream_config`'s.

#![deny(missing_docs)]

pub mod ffmpeg;
pub mod pipeline;
pub mod sample;
pub mod sink;
pub mod source;
pub mod stats;

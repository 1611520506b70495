//! FFmpeg input: opens a file, pipe or URL, decodes its best video stream into engine
//! frames (converting only formats the engines cannot take) and hands the packets of
//! other streams (audio, subtitles) to the sink untouched.
//!
//! - `input`: [`Source`], the opened input, and the builders applied before it runs.
//! - `open`: opening the input, its decoder and its description, retrying a live input;
//!   `demuxer`: FFmpeg's open and stream probing under the interrupt watchdog (`watchdog`),
//!   a FIFO read through our own reader (`pipe_input`).
//! - `read`: the read loop and reconnecting a live input; `looping`: a looped file's next
//!   pass (NVDEC's decoder kept across it).
//! - `decode_state`: what lasts across loops and reconnections (timestamps, pacing, the
//!   drop policy, format conversion); `trim`: `start`, `duration`, `frames`.
//! - `decoder_choice`: which decoder a `decoder` setting means; `decoder`: the decoder, and
//!   how NVDEC failures are survived (`replay`, `sequence`); `decoder_threads`: a software
//!   decoder's frame threads, shared out when many pipelines run.
//! - `pooled_pictures`, `device_pictures`: where decoded pictures live (the engine's pool,
//!   or the GPU).
//! - [`nvdec`]: whether NVDEC can decode a stream (pure, so tested without a GPU).
//! - `error`: [`SourceError`].

mod decode_state;
mod decoder;
mod decoder_choice;
mod decoder_threads;
mod demuxer;
mod device_pictures;
mod error;
mod input;
mod looping;
pub mod nvdec;
mod open;
mod pipe_input;
mod pooled_pictures;
mod read;
mod replay;
mod sequence;
#[cfg(test)]
mod tests;
mod trim;
mod watchdog;

pub use decode_state::DropOldest;
pub use decoder_threads::PipelineShare;
pub use error::SourceError;
pub use input::Source;

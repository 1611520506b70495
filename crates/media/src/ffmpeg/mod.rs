//! FFmpeg glue shared by the source and the sink: library start-up (`startup`), pixel
//! formats and planes between FFmpeg and the engines (`pixels`, frames lent to FFmpeg in
//! `lending`), muxers (`muxers`), codecs
//! by name and their lossless modes (`codecs`), whose option a `-KEY` is ([`options`]), the encoders a build can use
//! ([`encoders`]), HDR metadata ([`hdr`]), FFmpeg's log lines ([`log`]) and the config's check of outputs
//! ([`output_problems`]). The stream
//! types the source hands the sink are in `stream`.

mod codecs;
pub mod encoders;
pub mod hdr;
mod lending;
pub mod log;
mod muxers;
pub mod options;
mod output_check;
mod pixels;
mod startup;
mod stream;

pub use codecs::{decoder_named, encoder_named, is_again, lossless_options, lossless_unavailable, video_encoder};
pub use hdr::HdrMetadata;
pub use lending::lend_to_ffmpeg;
pub use muxers::{ffv1_unavailable, guess_muxer, muxer_takes};
pub use output_check::output_problems;
pub use pixels::{engine_format, ffmpeg_format, frame_from_ffmpeg, nearest_engine_format};
pub use startup::init;
pub use stream::{ColorInfo, PassthroughPacket, PassthroughStream, SourceInfo};

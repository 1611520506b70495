//! Which kind of output a sink config asks for ([`SinkKind`]), and opening it ([`open`]).

use super::contract::{OutputOptions, Sink, SinkError};
use super::muxer::Muxer;
use super::null::NullSink;
use crate::ffmpeg::{init, SourceInfo};
use convstream_config::{OutputTarget, SinkConfig};

/// The kinds of output a sink config can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkKind {
    /// `url = "null"`, or the `null` format (`-f null -`): frames are counted and discarded
    /// (benchmarks, decode checks), nothing is encoded, as FFmpeg's null muxer takes frames
    /// without encoding them.
    Null,
    /// Anything else: encoded and muxed into a file, stdout (`-`) or a URL.
    Encoded,
}

impl SinkKind {
    /// The kind a sink's `url` asks for: `null` is the shorthand for the discarding sink.
    pub fn of(url: &str) -> SinkKind {
        match OutputTarget::of(url) {
            OutputTarget::Discard => SinkKind::Null,
            OutputTarget::Stdout | OutputTarget::File(_) | OutputTarget::Url => SinkKind::Encoded,
        }
    }

    /// The kind a sink config asks for: by its `url` (see [`SinkKind::of`]), or `null` when
    /// its format is FFmpeg's `null` muxer, whatever the url (FFmpeg's `-f null -`).
    pub fn of_sink(config: &SinkConfig) -> SinkKind {
        match config.format.as_deref() {
            Some("null") => SinkKind::Null,
            _ => SinkKind::of(&config.url),
        }
    }
}

/// Opens the output `config` asks for (see [`SinkKind::of_sink`]) for the source's video. A
/// muxer's header is written before this returns (see `Muxer::open`).
pub fn open(config: &SinkConfig, source: &SourceInfo, how: &OutputOptions) -> Result<Box<dyn Sink>, SinkError> {
    init();
    Ok(match SinkKind::of_sink(config) {
        SinkKind::Null => Box::new(NullSink),
        SinkKind::Encoded => Box::new(Muxer::open(config, source, how)?),
    })
}

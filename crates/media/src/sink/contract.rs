//! What every output is and says: the [`Sink`] trait the sink thread drives, how it opens
//! ([`OutputOptions`]), why it fails ([`SinkError`]) and how it ends ([`SinkOutcome`]).

use ffmpeg_next as ffmpeg;
use std::path::PathBuf;
use std::time::Duration;

use super::output_io::{OutputGuard, OutputIoError, StopWatch, WhenExists};
use crate::ffmpeg::PassthroughPacket;
use crate::stats::Counters;
use convstream_core::Frame;

/// How a sink opens its output, beyond its config.
#[derive(Debug, Clone)]
pub struct OutputOptions {
    /// What to do with a file already at the sink's path.
    pub when_exists: WhenExists,
    /// Fragment MP4 outputs (`serve`: a crash then loses at most the last fragment).
    pub fragment_mp4: bool,
    /// When blocked output I/O gives up after a stop.
    pub stop: StopWatch,
    /// Whether a link at the output's name is followed, and which files are never written.
    pub guard: OutputGuard,
    /// Keep the output when no frame was written to it (see [`Sink::discard`]).
    pub keep_empty: bool,
    /// Whether the run may use a GPU: only then is NVENC among the default encoders (a run
    /// on the CPU neither encodes on the GPU nor probes the driver for it).
    pub gpu: bool,
}

/// Why an output could not be opened or written. Each message holds its cause once
/// (callers print messages whole, not as chains), so no variant has a `source`.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The muxer could not be set up or its header written.
    #[error("cannot open output {url}: {reason}")]
    Open {
        /// The output as configured.
        url: String,
        /// Why.
        reason: String,
    },
    /// The output's file, pipe or connection could not be opened, or its file named.
    #[error("cannot open output {url}: {error}")]
    Output {
        /// The output as configured.
        url: String,
        /// What went wrong with its I/O.
        error: OutputIoError,
    },
    /// The output's file could not be finished as the file named (removed while written,
    /// not synced).
    #[error("output {url}: {error}")]
    Finish {
        /// The output as configured.
        url: String,
        /// What went wrong with its file.
        error: OutputIoError,
    },
    /// The video encoder could not be set up or opened.
    #[error("output {url}: {reason}")]
    Encoder {
        /// The output as configured.
        url: String,
        /// Why.
        reason: String,
    },
    /// Writing a frame, a packet or the trailer failed.
    #[error("writing {url} failed: {error}")]
    Write {
        /// The output as configured.
        url: String,
        /// FFmpeg's error.
        error: ffmpeg::Error,
    },
    /// The input does not suit the encoder asked for (an odd size for 4:2:0): a usage error.
    #[error("output {url}: {reason}")]
    Unsuitable {
        /// The output as configured.
        url: String,
        /// What does not suit, and what would.
        reason: String,
    },
}

impl SinkError {
    /// Whether the output could never be written as configured for this input: exit 2 for `run`.
    pub fn is_usage(&self) -> bool {
        matches!(self, SinkError::Unsuitable { .. })
    }
}

/// How the sink ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkOutcome {
    /// Every frame and packet was written and the output finished.
    Finished,
    /// The reader of a pipe went away; a normal end for `convstream ... | head`.
    OutputClosed,
}

/// An opened output, ready for frames: what the sink thread drives (its loop is `run`, on
/// `dyn Sink`). Errors are FFmpeg's; `run` tells a closed pipe from a failure.
pub trait Sink: Send {
    /// Where the output went: a local file's path (which may be a numbered name beside the
    /// one asked for), else nothing.
    fn path(&self) -> Option<PathBuf>;

    /// Whether the output copies any non-video stream (so wants passthrough packets).
    fn copies_packets(&self) -> bool;

    /// The output as configured, for messages.
    fn url(&self) -> &str;

    /// The video encoder, its settings and the container, e.g.
    /// `libx264 (crf=18), yuv420p in mp4`; `None` when nothing is encoded.
    fn encoder(&self) -> Option<String> {
        None
    }

    /// Writes one filtered frame; the sink owns it from now on (an encoder keeps its
    /// planes, without a copy, for as long as it references them).
    fn write_frame(&mut self, frame: Frame, counters: &Counters) -> Result<(), ffmpeg::Error>;

    /// Writes one packet of a copied stream.
    fn write_packet(&mut self, packet: PassthroughPacket, counters: &Counters) -> Result<(), ffmpeg::Error>;

    /// How long until written data is due to be flushed; `None` when nothing waits.
    fn flush_due_in(&self) -> Option<Duration> {
        None
    }

    /// Flushes written data when it is due (so a killed process loses little).
    fn flush_if_due(&mut self) -> Result<(), ffmpeg::Error> {
        Ok(())
    }

    /// Writes what is still held (the encoder's last packets, a file's trailer).
    fn finish(&mut self, counters: &Counters) -> Result<(), ffmpeg::Error>;

    /// After `finish`: the output takes its name if it replaces a file, and is checked to be
    /// where it was named (see `OutputIo::complete`).
    fn complete(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// After `finish`, instead of `complete`, for an output no frame was written to: a file
    /// it would replace stays as it is, and a file it created is removed. Nothing for outputs
    /// that are not files of ours (pipes, devices, network streams).
    fn discard(&mut self) {}

    /// Whether an output no frame was written to is kept anyway (`run --allow-empty`).
    fn keeps_empty(&self) -> bool {
        false
    }
}

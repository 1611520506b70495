//! Output: encodes filtered frames and muxes them with the copied audio into a file, pipe
//! or URL through FFmpeg, or discards them (`null`, for benchmarks). Each kind of output
//! is a [`Sink`], chosen by [`SinkKind::of`]; the sink thread drives it with [`run`](Sink::run).
//!
//! - [`muxer`]: the encoded output (a file, `-` as YUV4MPEG2, a URL), with [`encoder`] and
//!   the header options of [`container`].
//! - [`null`]: frames counted and dropped.
//! - [`output_io`]: where a muxer's bytes go, and when a local file appears.

mod container;
mod encoder;
mod muxer;
mod null;
mod output_io;

use crossbeam_channel::{select, Receiver, RecvTimeoutError};
use ffmpeg_next as ffmpeg;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::config::{OutputTarget, SinkConfig};
use crate::ffmpeg::{init, PassthroughPacket, SourceInfo};
use crate::stats::Counters;
use convstream_core::frame::Frame;
use muxer::Muxer;
use null::NullSink;

pub use container::HeaderOptionsError;
pub use encoder::VideoEncoder;
pub use output_io::{mark_stdout_closed, numbered, FileId, OutputGuard, OutputIoError, StopWatch, WhenExists};

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
}

/// Why an output could not be opened or written. Each message holds its cause once
/// (callers print messages whole, not as chains), so no variant has a `source`.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("cannot open output {url}: {reason}")]
    Open { url: String, reason: String },
    /// The output's file, pipe or connection could not be opened, or its file named.
    #[error("cannot open output {url}: {error}")]
    Output { url: String, error: OutputIoError },
    #[error("output {url}: {reason}")]
    Encoder { url: String, reason: String },
    #[error("writing {url} failed: {error}")]
    Write { url: String, error: ffmpeg::Error },
    /// The input does not suit the encoder asked for (an odd size for 4:2:0): a usage error.
    #[error("output {url}: {reason}")]
    Unsuitable { url: String, reason: String },
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
    Finished,
    /// The reader of a pipe went away; a normal end for `convstream ... | head`.
    OutputClosed,
}

/// The kinds of output a sink config can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkKind {
    /// `url = "null"`: frames are counted and discarded (benchmarks, decode checks).
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
}

/// An opened output, ready for frames: what the sink thread drives (see [`Sink::run`]).
/// Errors are FFmpeg's; [`Sink::run`] tells a closed pipe from a failure.
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
    /// where it was named (see [`output_io::OutputIo::complete`]).
    fn complete(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Opens the output `config` asks for (see [`SinkKind::of`]) for the source's video. A
/// muxer's header is written before this returns; see [`Muxer::open`].
pub fn open(config: &SinkConfig, source: &SourceInfo, how: &OutputOptions) -> Result<Box<dyn Sink>, SinkError> {
    init();
    Ok(match SinkKind::of(&config.url) {
        SinkKind::Null => Box::new(NullSink),
        SinkKind::Encoded => Box::new(Muxer::open(config, source, how)?),
    })
}

impl dyn Sink {
    /// Writes frames and copied packets as they come until both channels close.
    pub fn run(
        mut self: Box<Self>,
        frames: &Receiver<Frame>,
        packets: &Receiver<PassthroughPacket>,
        counters: &Counters,
        on_frame: &dyn Fn(),
    ) -> Result<SinkOutcome, SinkError> {
        let mut frames_open = true;
        let mut packets_open = true;
        while frames_open || packets_open {
            // Wake up for the next flush even when nothing comes (a stalled live input).
            let wait = self.flush_due_in().unwrap_or(Duration::from_secs(3600));
            let result = if frames_open && packets_open {
                select! {
                    recv(frames) -> frame => match frame {
                        Ok(frame) => self.take_frame(frame, counters, on_frame),
                        Err(_) => { frames_open = false; Ok(()) }
                    },
                    recv(packets) -> packet => match packet {
                        Ok(packet) => self.write_packet(packet, counters),
                        Err(_) => { packets_open = false; Ok(()) }
                    },
                    default(wait) => Ok(()),
                }
            } else if frames_open {
                match frames.recv_timeout(wait) {
                    Ok(frame) => self.take_frame(frame, counters, on_frame),
                    Err(RecvTimeoutError::Timeout) => Ok(()),
                    Err(RecvTimeoutError::Disconnected) => {
                        frames_open = false;
                        Ok(())
                    }
                }
            } else {
                match packets.recv_timeout(wait) {
                    Ok(packet) => self.write_packet(packet, counters),
                    Err(RecvTimeoutError::Timeout) => Ok(()),
                    Err(RecvTimeoutError::Disconnected) => {
                        packets_open = false;
                        Ok(())
                    }
                }
            };
            let result = result.and_then(|()| self.flush_if_due());
            if let Err(error) = result {
                return write_error(self.url(), error);
            }
        }
        let started = Instant::now();
        let finished = self.finish(counters);
        Counters::add_time(&counters.sink_busy_ns, started.elapsed());
        match finished {
            Ok(()) => self.complete().map(|()| SinkOutcome::Finished),
            Err(error) => write_error(self.url(), error),
        }
    }

    /// Writes a frame and counts it as written.
    fn take_frame(&mut self, frame: Frame, counters: &Counters, on_frame: &dyn Fn()) -> Result<(), ffmpeg::Error> {
        let decoded = frame.timeline.decoded;
        self.write_frame(frame, counters)?;
        if let Some(decoded_at) = decoded {
            Counters::observe(&counters.stages.end_to_end, decoded_at.elapsed());
        }
        counters.count_written();
        on_frame();
        Ok(())
    }
}

fn write_error(url: &str, error: ffmpeg::Error) -> Result<SinkOutcome, SinkError> {
    match error {
        ffmpeg::Error::Other { errno } if errno == libc_epipe() => Ok(SinkOutcome::OutputClosed),
        error => Err(SinkError::Write {
            url: url.to_string(),
            error,
        }),
    }
}

const fn libc_epipe() -> i32 {
    32 // EPIPE on Linux
}

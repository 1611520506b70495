//! Output: encodes filtered frames and muxes them with the copied audio into a file, pipe
//! or URL through FFmpeg, or discards them (`null`, for benchmarks). Each kind of output
//! is a [`Sink`], chosen by [`SinkKind::of`]; the sink thread drives it with its `run` loop.
//!
//! - `contract`: the [`Sink`] trait, [`OutputOptions`], [`SinkError`], [`SinkOutcome`].
//! - `kind`: [`SinkKind`] and [`open`]; `thread_loop`: the sink thread's loop.
//! - `muxer`: the encoded output (a file, `-` as YUV4MPEG2, a URL), with `encoder` and
//!   the header options of `container`.
//! - `null`: frames counted and dropped.
//! - `output_io`: where a muxer's bytes go, and when a local file appears.

mod audio;
mod container;
mod contract;
mod encoder;
mod kind;
mod muxer;
mod null;
mod output_io;
mod thread_loop;

pub use contract::{OutputOptions, Sink, SinkError, SinkOutcome};
pub(crate) use encoder::encoder_option_problems;
pub use kind::{open, SinkKind};
pub use output_io::{mark_stdout_closed, FileId, OutputGuard, StopWatch, WhenExists};

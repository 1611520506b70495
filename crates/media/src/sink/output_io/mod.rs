//! Where a sink's bytes go, and when a file appears. A local file is written under a
//! temporary name beside it and takes its real name only once the encoder, the muxer and
//! the header are ready, so a failed start leaves an existing file byte-identical and no
//! empty file behind; an existing file is then replaced, kept (an error) or kept with the
//! output going to the next free name, as the caller says. Files, FIFOs and stdout are
//! written through our own AVIO callbacks: a write blocked on a reader that stopped
//! reading gives up once a stop has waited its grace, and flushing is ours to time.
//! Network URLs go through FFmpeg's protocols, with an interrupt callback for the same stop.
//!
//! - `output`: [`OutputIo`], attached to a format context, published and completed;
//!   [`mark_stdout_closed`].
//! - [`avio`]: the AVIO context over our own writer (files, FIFOs, stdout).
//! - [`staged`]: a local file written under a temporary name and published.
//! - `guard`: what an output may open ([`OutputGuard`], [`FileId`]); `stop_watch`: how a
//!   stop reaches blocked output I/O ([`StopWatch`]); `error`: [`OutputIoError`].

mod avio;
mod error;
mod guard;
mod output;
mod staged;
mod stop_watch;

pub use error::OutputIoError;
pub use guard::{FileId, OutputGuard};
pub use output::{mark_stdout_closed, OutputIo};
pub use staged::WhenExists;
pub use stop_watch::StopWatch;

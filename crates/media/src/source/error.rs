//! Why an input could not be opened or read: [`SourceError`].

/// Why an input could not be opened or read. Each message holds its cause once (callers
/// print messages whole, not as chains), so no variant has a `source`.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The input could not be opened (it may open on another try).
    #[error("cannot open input {url}: {reason}")]
    Open {
        /// The input as configured.
        url: String,
        /// Why.
        reason: String,
    },
    /// An input that can never be read as asked (an unknown protocol, a stream the chosen
    /// decoder cannot take): not retried, and a usage error for `run`.
    #[error("cannot use input {url}: {reason}")]
    Unusable {
        /// The input as configured.
        url: String,
        /// Why, and what would work.
        reason: String,
    },
    /// An input that opened but is no video (a text file): not retried either.
    #[error("cannot open input {url}: {reason}")]
    NotVideo {
        /// The input as configured.
        url: String,
        /// What it is instead.
        reason: String,
    },
    /// The input has no video stream.
    #[error("input {url} has no video stream")]
    NoVideo {
        /// The input as configured.
        url: String,
    },
    /// The demuxer `source.format` names does not exist in this FFmpeg build.
    #[error("unknown input format `{format}` for {url}")]
    UnknownFormat {
        /// The input as configured.
        url: String,
        /// The demuxer asked for.
        format: String,
    },
    /// The video decoder could not be found, opened or kept decoding.
    #[error("input {url}: {reason}")]
    Decoder {
        /// The input as configured.
        url: String,
        /// Why.
        reason: String,
    },
    /// Reading stopped with an error after some frames (a live input gone quiet, too many
    /// read errors in a row).
    #[error("input {url}: read failed after {frames} frames: {reason}")]
    Read {
        /// The input as configured.
        url: String,
        /// Frames decoded before the failure.
        frames: u64,
        /// Why.
        reason: String,
    },
}

impl SourceError {
    /// Whether opening again could not help: the input is unusable as configured.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            SourceError::Unusable { .. }
                | SourceError::NotVideo { .. }
                | SourceError::UnknownFormat { .. }
                | SourceError::NoVideo { .. }
        )
    }

    /// Whether the input could never be used as configured, whatever it holds (an unknown
    /// protocol, a stream the chosen decoder cannot take): a usage error, exit code 2 for
    /// `run`. An input whose content is wrong (no video in it) is a runtime failure.
    pub fn is_usage(&self) -> bool {
        matches!(self, SourceError::Unusable { .. })
    }
}

//! Why an input could not be opened or read: [`SourceError`].

/// Why an input could not be opened or read. Each message holds its cause once (callers
/// print messages whole, not as chains), so no variant has a `source`.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot open input {url}: {reason}")]
    Open { url: String, reason: String },
    /// An input that can never be read as asked (an unknown protocol, a stream the chosen
    /// decoder cannot take): not retried, and a usage error for `run`.
    #[error("cannot use input {url}: {reason}")]
    Unusable { url: String, reason: String },
    /// An input that opened but is no video (a text file): not retried either.
    #[error("cannot open input {url}: {reason}")]
    NotVideo { url: String, reason: String },
    #[error("input {url} has no video stream")]
    NoVideo { url: String },
    #[error("unknown input format `{format}` for {url}")]
    UnknownFormat { url: String, format: String },
    #[error("input {url}: {reason}")]
    Decoder { url: String, reason: String },
    #[error("input {url}: read failed after {frames} frames: {reason}")]
    Read { url: String, frames: u64, reason: String },
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

//! Why an output's I/O could not be opened or its file named: [`OutputIoError`].

use ffmpeg_next as ffmpeg;
use std::path::PathBuf;

/// Why an output's I/O could not be opened or its file named. Each cause (an OS or FFmpeg
/// error) is printed in the message, once, and is not also a `source`: the pipeline's
/// messages are printed whole, not walked as chains.
#[derive(Debug, thiserror::Error)]
pub enum OutputIoError {
    #[error("the URL holds a NUL byte")]
    NulInUrl,
    /// FFmpeg's protocol for the URL could not open it.
    #[error(transparent)]
    Protocol(ffmpeg::Error),
    #[error("cannot use stdout: {0}")]
    Stdout(std::io::Error),
    #[error("out of memory for the output {0}")]
    OutOfMemory(&'static str),
    #[error("{} is a folder; give a file name", .0.display())]
    Folder(PathBuf),
    #[error("{} has no file name", .0.display())]
    NoFileName(PathBuf),
    #[error("cannot open {}: {error}", path.display())]
    Open { path: PathBuf, error: std::io::Error },
    #[error("stopped while waiting for a reader of the FIFO {}", .0.display())]
    StoppedWaitingForReader(PathBuf),
    #[error("{} exists; it is kept: pass -y / --overwrite (or set sink.overwrite = true) to replace it", .0.display())]
    Exists(PathBuf),
    #[error("cannot create a file in {}: {error}", folder.display())]
    CreateTemporary { folder: PathBuf, error: std::io::Error },
    #[error("{} appeared while the output was opening; it is kept: pass -y / --overwrite to replace it", .0.display())]
    AppearedMeanwhile(PathBuf),
    #[error("cannot name the output {}: {error}", path.display())]
    Name { path: PathBuf, error: std::io::Error },
    #[error("no free name beside {} (tried .1 to .9999)", .0.display())]
    NoFreeName(PathBuf),
    #[error("the output {} was removed or replaced while it was written (its folder deleted?); what was written is lost", .0.display())]
    Lost(PathBuf),
    #[error("cannot finish the output {}: {error}", path.display())]
    Sync { path: PathBuf, error: std::io::Error },
    #[error("{} is the service's own config file; a pipeline never writes it (choose another sink.url)", .0.display())]
    Protected(PathBuf),
}

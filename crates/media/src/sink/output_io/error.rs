//! Why an output's I/O could not be opened or its file named: [`OutputIoError`].

use ffmpeg_next as ffmpeg;
use std::path::PathBuf;

/// Why an output's I/O could not be opened or its file named. Each cause (an OS or FFmpeg
/// error) is printed in the message, once, and is not also a `source`: the pipeline's
/// messages are printed whole, not walked as chains.
#[derive(Debug, thiserror::Error)]
pub enum OutputIoError {
    /// The URL holds a NUL byte, which no C string can.
    #[error("the URL holds a NUL byte")]
    NulInUrl,
    /// FFmpeg's protocol for the URL could not open it.
    #[error(transparent)]
    Protocol(ffmpeg::Error),
    /// Standard output could not be used (closed, or not duplicated).
    #[error("cannot use stdout: {0}")]
    Stdout(std::io::Error),
    /// FFmpeg could not allocate the named part of the output's I/O.
    #[error("out of memory for the output {0}")]
    OutOfMemory(&'static str),
    /// The path names a folder.
    #[error("{} is a folder; give a file name", .0.display())]
    Folder(PathBuf),
    /// The path ends without a file name.
    #[error("{} has no file name", .0.display())]
    NoFileName(PathBuf),
    /// The file, FIFO or device could not be opened.
    #[error("cannot open {}: {error}", path.display())]
    Open {
        /// The file, FIFO or device.
        path: PathBuf,
        /// The system's error.
        error: std::io::Error,
    },
    /// A stop came while a FIFO waited for its reader.
    #[error("stopped while waiting for a reader of the FIFO {}", .0.display())]
    StoppedWaitingForReader(PathBuf),
    /// A file is at the path and `run` was not told to replace it.
    #[error("{} exists; it is kept: pass -y / --overwrite (or set sink.overwrite = true) to replace it", .0.display())]
    Exists(PathBuf),
    /// The temporary file beside the output could not be made.
    #[error("cannot create a file in {}: {error}", folder.display())]
    CreateTemporary {
        /// The output's folder.
        folder: PathBuf,
        /// The system's error.
        error: std::io::Error,
    },
    /// A file appeared at the path while the output was opening.
    #[error("{} appeared while the output was opening; it is kept: pass -y / --overwrite to replace it", .0.display())]
    AppearedMeanwhile(PathBuf),
    /// The finished file could not take its name.
    #[error("cannot name the output {}: {error}", path.display())]
    Name {
        /// The name it was to take.
        path: PathBuf,
        /// The system's error.
        error: std::io::Error,
    },
    /// Every numbered name beside the path is taken.
    #[error("no free name beside {} (tried .1 to .9999)", .0.display())]
    NoFreeName(PathBuf),
    /// The file written was removed or replaced before it was named.
    #[error("the output {} was removed or replaced while it was written (its folder deleted?); what was written is lost", .0.display())]
    Lost(PathBuf),
    /// The file stdout was redirected to lost its last name while it was written.
    #[error("the file stdout was redirected to was removed while it was written (its folder deleted?); what was written is lost")]
    LostStdout,
    /// The finished file could not be flushed to the disk.
    #[error("cannot finish the output {}: {error}", path.display())]
    Sync {
        /// The output's file.
        path: PathBuf,
        /// The system's error.
        error: std::io::Error,
    },
    /// The path leads to a file no output may write (`serve`'s config).
    #[error("{} is the service's own config file; a pipeline never writes it (choose another sink.url)", .0.display())]
    Protected(PathBuf),
}

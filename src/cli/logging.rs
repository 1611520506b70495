//! Logging: the tracing subscriber, pretty or JSON, on stderr, with each pipeline's last
//! lines kept for the console (`server::pipeline_logs`). With JSON logs, what other
//! libraries print to stderr themselves (x264, x265 and OpenH264 write there, not through
//! FFmpeg's log) is captured and re-emitted as events, so that every line stays JSON.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use convstream_config::{LogConfig, LogFormat};
use convstream_server::pipeline_logs::PipelineLogLayer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The capture of stderr while JSON logs are on: the thread reading it, ended by
/// [`finish_logging`].
struct Capture {
    /// The process's own stderr, where the log writer writes and which fd 2 is again at the end.
    original: Arc<File>,
    reader: std::thread::JoinHandle<()>,
}

static CAPTURE: Mutex<Option<Capture>> = Mutex::new(None);

pub(crate) fn init_logging(log: &LogConfig) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(log.level.as_deref().unwrap_or("info")))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Colour codes only for a terminal: logs piped to a file or a test stay plain text.
        .with_ansi(terminal);
    let _ = match log.format {
        LogFormat::Json => {
            let stderr = capture_stderr().unwrap_or_else(|error| {
                tracing::debug!("other libraries' stderr is not captured: {error}");
                None
            });
            let builder = builder.json().with_target(true);
            match stderr {
                // URL credentials (`rtsp://user:pass@...`) never reach a log, whoever quotes the URL.
                Some(original) => builder
                    .with_writer(move || convstream_core::RedactingWriter::new(SharedFile(original.clone()), false))
                    .finish()
                    .with(PipelineLogLayer)
                    .try_init(),
                None => builder
                    .with_writer(move || convstream_core::RedactingWriter::new(std::io::stderr(), terminal))
                    .finish()
                    .with(PipelineLogLayer)
                    .try_init(),
            }
        }
        // Timestamps to the millisecond, as a log read later (or beside FFmpeg's) needs.
        LogFormat::Pretty => builder
            .with_writer(move || convstream_core::RedactingWriter::new(std::io::stderr(), terminal))
            .with_target(false)
            .compact()
            .with_timer(tracing_subscriber::fmt::time::ChronoUtc::new("%H:%M:%S%.3f".into()))
            .finish()
            .with(PipelineLogLayer)
            .try_init(),
    };
}

/// Ends the capture of stderr (if any): fd 2 is the process's own stderr again and every
/// captured line has been logged. Called last, after the final `error:` line.
pub(crate) fn finish_logging() {
    let Ok(mut capture) = CAPTURE.lock() else { return };
    let Some(Capture { original, reader }) = capture.take() else {
        return;
    };
    let _ = std::io::stderr().flush();
    // SAFETY: dup2 onto fd 2 of a descriptor we own; it closes the pipe's only writing end,
    // so the reader sees the end of its input.
    unsafe {
        libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&*original), 2);
    }
    let _ = reader.join();
}

/// A shared handle of the original stderr, as the log writer.
struct SharedFile(Arc<File>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*self.0).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        (&*self.0).flush()
    }
}

/// Puts a pipe at fd 2 and starts the thread that logs each line written to it; returns the
/// original stderr for the log writer.
fn capture_stderr() -> std::io::Result<Option<Arc<File>>> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 fills the two descriptors of the array it is given.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by pipe2 and are owned here alone.
    let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    // SAFETY: duplicating fd 2, which the process holds for its lifetime.
    let original = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3) };
    if original < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `original` was just made by fcntl and is owned here alone.
    let original = Arc::new(File::from(unsafe { OwnedFd::from_raw_fd(original) }));
    // SAFETY: dup2 of a descriptor we own onto fd 2; `write_end` is closed when dropped below,
    // leaving fd 2 the pipe's only writing end.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&write_end), 2) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    drop(write_end);
    let reader = std::thread::Builder::new()
        .name("stderr-log".into())
        .spawn(move || relay_lines(File::from(read_end)))?;
    if let Ok(mut capture) = CAPTURE.lock() {
        *capture = Some(Capture {
            original: original.clone(),
            reader,
        });
    }
    Ok(Some(original))
}

/// Logs every line written to the captured stderr until its writing end closes.
fn relay_lines(pipe: File) {
    let mut reader = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            emit(&LibraryLine::parse(text));
        }
    }
}

/// Who wrote a captured line and at what level.
#[derive(Debug, PartialEq, Eq)]
struct LibraryLine<'a> {
    library: Library,
    level: Level,
    message: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Library {
    X264,
    X265,
    OpenH264,
    /// Anything else written to stderr (a panic's message, a `run` error line).
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl<'a> LibraryLine<'a> {
    /// `x265 [info]: HEVC encoder version 3.5`, `x264 [error]: invalid preset 'turbo'`,
    /// `[OpenH264] this = 0x..., Warning:...`, or anything else.
    fn parse(text: &'a str) -> LibraryLine<'a> {
        for (prefix, library) in [("x264 [", Library::X264), ("x265 [", Library::X265)] {
            if let Some((tag, message)) = text.strip_prefix(prefix).and_then(|rest| rest.split_once("]:")) {
                return LibraryLine {
                    library,
                    level: level_of(tag),
                    message: message.trim_start(),
                };
            }
        }
        if let Some(rest) = text.strip_prefix("[OpenH264]") {
            let lower = rest.to_ascii_lowercase();
            let level = ["error", "warning", "info", "debug"]
                .into_iter()
                .find(|tag| lower.contains(&format!("{tag}:")))
                .map_or(Level::Info, level_of);
            return LibraryLine {
                library: Library::OpenH264,
                level,
                message: rest.trim_start(),
            };
        }
        let level = if text.starts_with("error") || text.contains("panicked") {
            Level::Error
        } else {
            Level::Warn
        };
        LibraryLine {
            library: Library::Other,
            level,
            message: text,
        }
    }
}

fn level_of(tag: &str) -> Level {
    match tag.trim().to_ascii_lowercase().as_str() {
        "error" | "fatal" => Level::Error,
        "warning" | "warn" => Level::Warn,
        "debug" | "full" => Level::Debug,
        _ => Level::Info,
    }
}

/// One captured line as an event whose target names the library (tracing's targets and
/// levels are fixed per call site, hence one call per pair).
fn emit(line: &LibraryLine) {
    macro_rules! at_levels {
        ($target:literal) => {
            match line.level {
                Level::Error => tracing::error!(target: $target, "{}", line.message),
                Level::Warn => tracing::warn!(target: $target, "{}", line.message),
                Level::Info => tracing::info!(target: $target, "{}", line.message),
                Level::Debug => tracing::debug!(target: $target, "{}", line.message),
            }
        };
    }
    match line.library {
        Library::X264 => at_levels!("x264"),
        Library::X265 => at_levels!("x265"),
        Library::OpenH264 => at_levels!("openh264"),
        Library::Other => at_levels!("stderr"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_lines_are_told_apart() {
        assert_eq!(
            LibraryLine::parse("x265 [info]: HEVC encoder version 3.5"),
            LibraryLine {
                library: Library::X265,
                level: Level::Info,
                message: "HEVC encoder version 3.5"
            }
        );
        let x264 = LibraryLine::parse("x264 [error]: invalid preset 'turbo'");
        assert_eq!((x264.library, x264.level), (Library::X264, Level::Error));
        let openh264 = LibraryLine::parse("[OpenH264] this = 0x0x55, Warning:Actual input framerate 0");
        assert_eq!((openh264.library, openh264.level), (Library::OpenH264, Level::Warn));
        let other = LibraryLine::parse("error: pipeline \"main\": output x.mp4: failed");
        assert_eq!((other.library, other.level), (Library::Other, Level::Error));
        assert_eq!(LibraryLine::parse("something").level, Level::Warn);
    }
}

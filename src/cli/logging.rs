//! Logging: the tracing subscriber, pretty or JSON, on stderr.

use convstream::config::{LogConfig, LogFormat};

pub(crate) fn init_logging(log: &LogConfig) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(log.level.as_deref().unwrap_or("info")))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // URL credentials (`rtsp://user:pass@...`) never reach a log, whoever quotes the URL.
        .with_writer(|| convstream::text::RedactingWriter(std::io::stderr()))
        .with_target(false)
        // Colour codes only for a terminal: logs piped to a file or a test stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match log.format {
        LogFormat::Json => builder.json().try_init(),
        // Timestamps to the millisecond, as a log read later (or beside FFmpeg's) needs.
        LogFormat::Pretty => builder
            .compact()
            .with_timer(tracing_subscriber::fmt::time::ChronoUtc::new("%H:%M:%S%.3f".into()))
            .try_init(),
    };
}

//! `[log] level`: a text is a log filter when `tracing_subscriber`'s `EnvFilter` takes it, as
//! the command line's logging reads it (`RUST_LOG`, `[log] level`). One check for every
//! front end, so a config the GStreamer element or Python takes is one `convstream run` takes.

use crate::problem::Problem;

/// Whether `text` is a log filter that `EnvFilter` takes (`info`, `convstream=debug`, ...).
pub fn is_log_filter(text: &str) -> bool {
    tracing_subscriber::EnvFilter::try_new(text).is_ok()
}

/// The problem with `[log] level = level`, when it is not a log filter.
pub(crate) fn problem(level: &str) -> Option<Problem> {
    (!is_log_filter(level)).then(|| {
        Problem::value(
            "log.level",
            format!(
                "`{}` is not a log filter (try info, debug, or convstream=debug)",
                crate::limits::quoted(level)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::is_log_filter;

    #[test]
    fn levels_and_directives_are_log_filters_and_an_open_span_is_not() {
        for good in [
            "info",
            "debug",
            "convstream=debug",
            "warn,convstream_media::pipeline=trace",
        ] {
            assert!(is_log_filter(good), "{good}");
        }
        assert!(!is_log_filter("[nonsense"));
    }
}

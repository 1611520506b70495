//! Which texts are log filters: `tracing_subscriber`'s `EnvFilter` directives, as the
//! command line's logging reads them (`RUST_LOG`, `[log] level`). The config checks of
//! `run`, `check` and `serve` are given [`is_log_filter`] for `[log] level`.

/// Whether `text` is a log filter that `EnvFilter` takes (`info`, `convstream=debug`, ...).
pub fn is_log_filter(text: &str) -> bool {
    tracing_subscriber::EnvFilter::try_new(text).is_ok()
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

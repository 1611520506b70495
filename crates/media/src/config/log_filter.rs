//! `[log] level`: whether a text is a log filter is for the logging library to say, and
//! only the program that sets up logging links it. Whoever checks a config passes that
//! library's answer as a [`LogFilterCheck`]; this module words the problem.

use super::limits;

/// Whether a text is a log filter (`info`, `debug`, `convstream=debug`, ...) in the syntax
/// of the caller's logging: the command line and `serve` pass `tracing_subscriber`'s
/// `EnvFilter` parser.
pub type LogFilterCheck = fn(&str) -> bool;

/// The problem with `[log] level = level`, when `check` does not take it as a log filter.
pub(super) fn problem(level: &str, check: LogFilterCheck) -> Option<String> {
    (!check(level)).then(|| {
        format!(
            "log.level: `{}` is not a log filter (try info, debug, or convstream=debug)",
            limits::quoted(level)
        )
    })
}

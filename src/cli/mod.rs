//! The command line's parts: the flags ([`args`]), FFmpeg's spellings of them
//! ([`spellings`]; FFmpeg's option tables in [`ffmpeg_options`], its `-vf` chains split by
//! the media crate's `split_graph`, as a config's `filter.graph` is), their values ([`values`]), logging, the progress line ([`progress`]),
//! and the handlers of the subcommands ([`run`], [`commands`], [`kernels`]), speaking flags to runs made
//! of flags ([`names`]); errors carry their exit code ([`Failure`]), and [`exit`] ends the process.

pub(crate) mod args;
pub(crate) mod commands;
pub(crate) mod exit;
pub(crate) mod ffmpeg_6_and_7;
pub(crate) mod ffmpeg_options;
pub(crate) mod kernels;
pub(crate) mod logging;
pub(crate) mod names;
pub(crate) mod progress;
pub(crate) mod run;
pub(crate) mod spellings;
pub(crate) mod values;

use convstream_config::ConfigError;

/// An error with its exit code.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) error: anyhow::Error,
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure { code: 1, error }
    }
}

pub(crate) fn usage(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: 2,
        error: error.into(),
    }
}

pub(crate) fn config_failure(error: ConfigError) -> Failure {
    usage(anyhow::Error::new(error))
}

//! Why a configuration cannot be used: [`ConfigError`], which lists every problem found.

use std::fmt;
use std::path::PathBuf;

use crate::problem::Problem;

/// Why a configuration cannot be used. `Invalid` lists every problem found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read (missing, not a regular file, too large, not UTF-8).
    #[error("cannot read config {path}: {reason}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// Why it could not be read.
        reason: String,
    },
    /// The text is not TOML, or not of the schema in a way no check below names.
    #[error("{origin}: {message}")]
    Parse {
        /// Where the text came from (a path, or "built-in default").
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// Every problem validation found, each with its place.
    #[error("{}", ProblemList(.0))]
    Invalid(Vec<Problem>),
    /// A file that is TOML but not of the schema: every problem, found in one pass.
    #[error("{origin}: {}", ProblemList(.problems))]
    InvalidFile {
        /// Where the text came from (a path).
        origin: String,
        /// Every problem, each with its place.
        problems: Vec<Problem>,
    },
}

impl ConfigError {
    /// Every problem found, when the config was read and parsed but cannot be used.
    pub fn problems(&self) -> Option<&[Problem]> {
        match self {
            ConfigError::Invalid(problems) | ConfigError::InvalidFile { problems, .. } => Some(problems),
            ConfigError::Read { .. } | ConfigError::Parse { .. } => None,
        }
    }
}

struct ProblemList<'a>(&'a [Problem]);

impl fmt::Display for ProblemList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.len();
        write!(
            f,
            "{count} problem{} in the configuration:",
            if count == 1 { "" } else { "s" }
        )?;
        for problem in self.0 {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

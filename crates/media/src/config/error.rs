//! Why a configuration cannot be used: [`ConfigError`], which lists every problem found.

use std::fmt;
use std::path::PathBuf;

/// Why a configuration cannot be used. `Invalid` lists every problem found.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("{}", ProblemList(.0))]
    Invalid(Vec<String>),
    /// A file that is TOML but not of the schema: every problem, found in one pass.
    #[error("{origin}: {}", ProblemList(.problems))]
    InvalidFile { origin: String, problems: Vec<String> },
}

struct ProblemList<'a>(&'a [String]);

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

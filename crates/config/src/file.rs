//! Reading a configuration: a file's bytes (bounded, and never a FIFO or a device), TOML
//! parsed into a [`ConfigFile`] (a text that does not fit the schema refused with every
//! problem `structure` finds), the built-in default config, and the files a config names
//! that are read as it is (`[server] nvdec_seats_file`).

use std::path::Path;

use crate::error::ConfigError;
use crate::measured_seats::MeasuredSeats;
use crate::outputs::OutputCheck;
use crate::problem::Problem;
use crate::schema::{ConfigFile, ServerConfig};
use crate::structure;

/// The configuration compiled into the binary, used by `convstream demo`.
pub const DEFAULT_CONFIG: &str = include_str!("../default.toml");

impl ConfigFile {
    /// Parses TOML text; `origin` names it in errors (a path or "built-in default").
    /// A text that is TOML but not a valid config gets every type-level problem at once,
    /// with those of validation (relative mask files resolve from the working directory;
    /// `outputs` checks containers and encoders, see [`OutputCheck`]).
    pub fn parse(text: &str, origin: &str, outputs: OutputCheck) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse_in(text, origin, None, outputs)
    }

    fn parse_in(
        text: &str,
        origin: &str,
        base_dir: Option<&Path>,
        outputs: OutputCheck,
    ) -> Result<ConfigFile, ConfigError> {
        let error = match toml::from_str(text) {
            Ok(config) => return Ok(config),
            Err(e) => e,
        };
        let parse_error = ConfigError::Parse {
            origin: origin.to_string(),
            message: error.to_string().trim_end().to_string(),
        };
        // Bad TOML has one error to show (where the text stops making sense).
        let Ok(table) = toml::from_str::<toml::Table>(text) else {
            return Err(parse_error);
        };
        let problems = structure::problems(&table, base_dir, outputs);
        if problems.is_empty() {
            Err(parse_error)
        } else {
            Err(ConfigError::InvalidFile {
                origin: origin.to_string(),
                problems,
            })
        }
    }

    /// Reads and parses the config file at `path` (see [`read_config_bytes`] and
    /// [`ConfigFile::parse`]); relative mask files resolve from its folder.
    pub fn load(path: &Path, outputs: OutputCheck) -> Result<ConfigFile, ConfigError> {
        let bytes = read_config_bytes(path)?;
        let text = String::from_utf8(bytes).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            reason: format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        })?;
        ConfigFile::parse_in(&text, &path.display().to_string(), path.parent(), outputs)
    }

    /// The configuration compiled into the binary ([`DEFAULT_CONFIG`]).
    pub fn builtin_default() -> ConfigFile {
        // It is of the schema, so no check of a broken file (nor of its outputs) runs.
        toml::from_str(DEFAULT_CONFIG).expect("the built-in default config parses")
    }
}

/// The most bytes a config file may have: far above any real config, far below what would
/// hurt the process.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a config file's bytes: a regular file of at most [`MAX_CONFIG_BYTES`]. It is
/// opened without blocking and checked before any read, so a FIFO (which would wait for a
/// writer forever) or a device (`/dev/zero`, endless) is refused at once, and a file that
/// grows while read is cut at the limit and refused.
pub fn read_config_bytes(path: &Path) -> Result<Vec<u8>, ConfigError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |reason: String| ConfigError::Read {
        path: path.to_path_buf(),
        reason,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| error(e.to_string()))?;
    let meta = file.metadata().map_err(|e| error(e.to_string()))?;
    if !meta.is_file() {
        let kind = {
            use std::os::unix::fs::FileTypeExt;
            let kind = meta.file_type();
            if kind.is_dir() {
                "a folder"
            } else if kind.is_fifo() {
                "a FIFO"
            } else if kind.is_char_device() || kind.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            }
        };
        return Err(error(format!("it is {kind}; a config must be a regular TOML file")));
    }
    let too_large = || {
        error(format!(
            "larger than {} KiB; a config file is at most {} KiB",
            MAX_CONFIG_BYTES / 1024,
            MAX_CONFIG_BYTES / 1024
        ))
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| error(e.to_string()))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

impl ServerConfig {
    /// `serve`'s refusal of an API open to the network with no token, for `check` to say
    /// too: an address that is not loopback needs `token_env` or, knowingly,
    /// `insecure_no_token`. (`serve --listen` may change the address; `serve` checks again.)
    pub fn open_api_problem(&self) -> Option<Problem> {
        let address = self.listen.parse::<std::net::SocketAddr>().ok()?;
        self.open_without_token(address).then(|| {
            Problem::value(
                "server.listen",
                format!(
                    "{address} without a token: `serve` refuses it, as anyone who reaches that address would \
                     control the pipelines; set [server] token_env (a bearer token), listen on loopback \
                     (127.0.0.1), or set [server] insecure_no_token = true to accept that"
                ),
            )
        })
    }

    /// Whether serving the API on `address` would leave it open to the network with no
    /// token: not loopback, no `token_env`, and `insecure_no_token` not set. The one rule
    /// `serve` refuses by and `check` reports.
    pub fn open_without_token(&self, address: std::net::SocketAddr) -> bool {
        !address.ip().is_loopback() && self.token_env.is_none() && !self.insecure_no_token
    }

    /// The NVDEC seats `nvdec_seats_file` holds (`None` when it is not set), read now as the
    /// config file is (a regular file, bounded: a FIFO or a device named by mistake is
    /// refused instead of blocking or filling memory).
    pub fn measured_nvdec_seats(&self, base_dir: Option<&Path>) -> Result<Option<MeasuredSeats>, String> {
        let Some(file) = self.nvdec_seats_file.as_deref() else {
            return Ok(None);
        };
        let path = ServerConfig::resolve_folder(file, base_dir);
        let bytes = read_config_bytes(&path).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
        MeasuredSeats::parse(&text, &path).map(Some)
    }
}

#[cfg(test)]
mod measured_seats_tests {
    use crate::{MeasuredSeats, ServerConfig};

    fn read(path: &std::path::Path) -> Result<Option<MeasuredSeats>, String> {
        let server = ServerConfig {
            nvdec_seats_file: Some(path.to_path_buf()),
            ..ServerConfig::default()
        };
        server.measured_nvdec_seats(None)
    }

    #[test]
    fn a_written_seats_file_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvdec-seats.toml");
        let seats = MeasuredSeats {
            measured_with: Some("1080p25 H.264, gaussian:size=13".into()),
            seats_per_gpu: [("NVIDIA H200".to_string(), 44)].into(),
        };
        std::fs::write(&path, seats.to_file_text()).unwrap();
        assert_eq!(read(&path).unwrap(), Some(seats.clone()));
        assert_eq!(seats.seats_for(Some("NVIDIA H200")), Some(44));
        assert_eq!(seats.seats_for(Some("NVIDIA H100 80GB HBM3")), None);
        assert_eq!(seats.seats_for(None), None);
        assert_eq!(ServerConfig::default().measured_nvdec_seats(None), Ok(None));
    }

    #[test]
    fn a_file_that_is_no_seats_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for (text, says) in [
            ("password = \"hunter2\"\n", "a key other than"),
            ("[seats_per_gpu]\n", "names no GPU model"),
            (
                "[seats_per_gpu]\n\"NVIDIA H200\" = 0\n",
                "model 1 of seats_per_gpu has 0 seats",
            ),
            ("[seats_per_gpu]\n\"NVIDIA H200\" = -3\n", "no whole number of seats"),
            // A value of the wrong kind, a key, a line that is no TOML: none of it is shown.
            ("seats_per_gpu = \"hunter2-A\"\n", "seats_per_gpu is not a table"),
            (
                "[seats_per_gpu]\n\"NVIDIA H200\" = \"hunter2-B\"\n",
                "no whole number of seats",
            ),
            (
                "measured_with = 3\nhunter2 = 1\n",
                "a key other than measured_with and seats_per_gpu; measured_with is not text",
            ),
            ("[seats_per_gpu]\nA = 4\nhunter2 secret line\n", "line 3 is not TOML"),
            ("root:x:0:0:hunter2:/root:/bin/bash\n", "line 1 is not TOML"),
        ] {
            let path = dir.path().join("seats.toml");
            std::fs::write(&path, text).unwrap();
            let error = read(&path).unwrap_err();
            assert!(error.contains(says), "{text:?}: {error}");
            assert!(!error.contains("hunter2"), "the file's contents stay out: {error}");
        }
        let missing = read(&dir.path().join("absent.toml")).unwrap_err();
        assert!(missing.contains("absent.toml"), "{missing}");
        let folder = read(dir.path()).unwrap_err();
        assert!(folder.contains("a folder"), "{folder}");
    }
}

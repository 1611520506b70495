//! Reading a configuration: a file's bytes (bounded, and never a FIFO or a device), TOML
//! parsed into a [`ConfigFile`] (a text that does not fit the schema refused with every
//! problem `structure` finds), the built-in default config, and the files a config names
//! that are read as it is (`[server] nvdec_seats_file`).

use std::path::{Path, PathBuf};

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

    /// Where `nvdec_seats_file` is, relative to the config file's folder (`None`: not set).
    pub fn nvdec_seats_path(&self, base_dir: Option<&Path>) -> Option<PathBuf> {
        let file = self.nvdec_seats_file.as_deref()?;
        Some(ServerConfig::resolve_folder(file, base_dir))
    }

    /// The NVDEC seats `nvdec_seats_file` holds (`None` when it is not set, or not there yet:
    /// `serve` writes it once it learned the seats), read now as the config file is (a
    /// regular file, bounded: a FIFO or a device named by mistake is refused instead of
    /// blocking or filling memory).
    pub fn measured_nvdec_seats(&self, base_dir: Option<&Path>) -> Result<Option<MeasuredSeats>, String> {
        let Some(path) = self.nvdec_seats_path(base_dir) else {
            return Ok(None);
        };
        if std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            // A folder that is not there either is more likely a slip than a file to come.
            let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty());
            return match folder.is_none_or(Path::is_dir) {
                true => Ok(None),
                false => Err(format!(
                    "{}: no such file, nor a folder to write it in (`serve` writes the NVDEC seats it learns there)",
                    path.display()
                )),
            };
        }
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
    fn seats_serve_learned_are_laid_over_its_own_file_and_only_its_own_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvdec-seats.toml");
        let first = MeasuredSeats::learned(None, [("NVIDIA H200".to_string(), 20)].into());
        assert!(first.is_learned_by_serve());
        std::fs::write(&path, first.to_file_text()).unwrap();
        let read_back = read(&path).unwrap().expect("a file");
        assert_eq!(read_back, first);
        let second = MeasuredSeats::learned(Some(read_back), [("NVIDIA H100 80GB HBM3".to_string(), 0)].into());
        assert_eq!(
            second.seats_per_gpu,
            [
                ("NVIDIA H200".to_string(), 20),
                ("NVIDIA H100 80GB HBM3".to_string(), 1)
            ]
            .into(),
            "the earlier model kept, a new one at least 1"
        );
        let from_bench = MeasuredSeats {
            measured_with: Some("1080p25 H.264, gaussian:size=13".into()),
            seats_per_gpu: [("NVIDIA H200".to_string(), 44)].into(),
        };
        assert!(!from_bench.is_learned_by_serve());
        assert!(!MeasuredSeats::default().is_learned_by_serve());
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
        // Not there yet is nothing measured: `serve` writes it once it learned the seats.
        assert_eq!(read(&dir.path().join("absent.toml")), Ok(None));
        let nowhere = read(&dir.path().join("absent").join("seats.toml")).unwrap_err();
        assert!(nowhere.contains("nor a folder"), "{nowhere}");
        let folder = read(dir.path()).unwrap_err();
        assert!(folder.contains("a folder"), "{folder}");
    }
}

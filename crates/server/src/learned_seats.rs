//! What NVDEC admission learned, kept in `[server] nvdec_seats_file` so that the next start
//! begins from it: written whole (a temporary file renamed over it), and only into a file
//! that is not there yet or that `serve` wrote itself. A file `bench` measured or a person
//! wrote is theirs: it is left as it is, and the log says what was learned instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use convstream_config::MeasuredSeats;
use convstream_media::{Learned, LearnedListener};

/// What became of a thing learned.
#[derive(Debug, PartialEq)]
pub(crate) enum Kept {
    /// Written into the seats file.
    Written(PathBuf),
    /// No `nvdec_seats_file` is set: kept for this process only.
    NoFile,
    /// No GPU of a known model learned anything: nothing to keep by model.
    NoModel,
    /// The file is not one `serve` wrote (or cannot be read as one): left as it is.
    NotOurs(PathBuf),
    /// Writing it failed.
    Failed(String),
}

/// The listener that keeps what admission learns in `path` (the seats file, when set).
pub(crate) fn listener(path: Option<PathBuf>) -> Arc<LearnedListener> {
    Arc::new(move |learned: &Learned| match keep(learned, path.as_deref()) {
        Kept::Written(path) => tracing::info!("NVDEC seats learned written to {}", path.display()),
        Kept::NoFile => tracing::info!(
            "NVDEC seats learned are kept until the process ends; `[server] nvdec_seats_file` names a file to keep \
             them across restarts"
        ),
        Kept::NoModel => {}
        Kept::NotOurs(path) => tracing::warn!(
            "{} was not written by serve, so it is left as it is; the seats learned apply until the process ends",
            path.display()
        ),
        Kept::Failed(why) => tracing::warn!("the NVDEC seats learned could not be written: {why}"),
    })
}

/// Lays what was learned over the seats file at `path` by the rules above.
pub(crate) fn keep(learned: &Learned, path: Option<&Path>) -> Kept {
    let by_model = learned.by_model();
    if by_model.is_empty() {
        return Kept::NoModel;
    }
    let Some(path) = path else {
        return Kept::NoFile;
    };
    let earlier = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        _ => {
            let text = convstream_config::read_config_bytes(path)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok());
            match text.map(|text| MeasuredSeats::parse(&text, path)) {
                Some(Ok(seats)) if seats.is_learned_by_serve() => Some(seats),
                _ => return Kept::NotOurs(path.to_path_buf()),
            }
        }
    };
    let seats = MeasuredSeats::learned(earlier, by_model);
    match convstream_core::write_whole(path, seats.to_file_text().as_bytes()) {
        Ok(()) => Kept::Written(path.to_path_buf()),
        Err(e) => Kept::Failed(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_media::GpuLearned;

    fn learned(model: Option<&str>, seats: usize) -> Learned {
        Learned {
            gpus: vec![GpuLearned {
                ordinal: 0,
                model: model.map(str::to_string),
                seated: seats + 4,
                kept: seats as f64,
                seats,
            }],
        }
    }

    fn read(path: &Path) -> MeasuredSeats {
        MeasuredSeats::parse(&std::fs::read_to_string(path).unwrap(), path).unwrap()
    }

    #[test]
    fn a_file_not_there_yet_is_written_and_then_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvdec-seats.toml");
        assert_eq!(
            keep(&learned(Some("NVIDIA H200"), 30), Some(&path)),
            Kept::Written(path.clone())
        );
        assert_eq!(read(&path).seats_for(Some("NVIDIA H200")), Some(30));
        assert_eq!(
            keep(&learned(Some("NVIDIA H100 80GB HBM3"), 40), Some(&path)),
            Kept::Written(path.clone())
        );
        let both = read(&path);
        assert_eq!(both.seats_for(Some("NVIDIA H200")), Some(30), "the earlier model stays");
        assert_eq!(both.seats_for(Some("NVIDIA H100 80GB HBM3")), Some(40));
        assert!(both.is_learned_by_serve());
    }

    #[test]
    fn a_file_serve_did_not_write_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvdec-seats.toml");
        let from_bench = MeasuredSeats {
            measured_with: Some("1080p25 H.264, gaussian:size=13".into()),
            seats_per_gpu: [("NVIDIA H200".to_string(), 44)].into(),
        }
        .to_file_text();
        for text in [from_bench.as_str(), "not a seats file\n"] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(
                keep(&learned(Some("NVIDIA H200"), 20), Some(&path)),
                Kept::NotOurs(path.clone())
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "untouched");
        }
    }

    #[test]
    fn without_a_file_or_a_model_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvdec-seats.toml");
        assert_eq!(keep(&learned(Some("NVIDIA H200"), 20), None), Kept::NoFile);
        assert_eq!(keep(&learned(None, 20), Some(&path)), Kept::NoModel);
        assert!(!path.exists());
        let folder = dir.path().join("no-such-folder").join("seats.toml");
        assert!(matches!(
            keep(&learned(Some("NVIDIA H200"), 20), Some(&folder)),
            Kept::Failed(_)
        ));
    }
}

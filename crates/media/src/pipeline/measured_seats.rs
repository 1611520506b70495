//! NVDEC seats measured on a host, by GPU model: what `bench --suite scale --decoder nvdec`
//! writes (`nvdec-seats.toml` beside its results) and `serve` reads through
//! `[server] nvdec_seats_file`, in place of the prediction from a GPU's NVDEC engines. Kept
//! by model so that one measurement serves every GPU of that model, on this host or on a
//! fleet of like hosts (the file goes into each node's config).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's contents: seats per GPU by model, and how they were measured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredSeats {
    /// What was measured and how (the clip, its rate, the mask, the date): for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_with: Option<String>,
    /// Live NVDEC pipelines each GPU of a model kept at their frame rate, with every GPU of
    /// the host filled at once, keyed by the model's name as CUDA reports it.
    pub seats_per_gpu: BTreeMap<String, usize>,
}

impl MeasuredSeats {
    /// Reads and checks a file `bench` wrote (or an operator edited). The error names the
    /// file and what is wrong, never its contents beyond the offending key.
    pub fn read(path: &Path) -> Result<MeasuredSeats, String> {
        // Read as a config file is (a regular file, bounded): a FIFO or a device named by
        // mistake is refused instead of blocking or filling memory.
        let bytes = crate::config::read_config_bytes(path).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
        let seats: MeasuredSeats = toml::from_str(&text).map_err(|e| {
            format!(
                "{}: not a measured NVDEC seats file ({}): `convstream bench --suite scale --decoder nvdec` writes one",
                path.display(),
                e.message()
            )
        })?;
        if seats.seats_per_gpu.is_empty() {
            return Err(format!("{}: names no GPU model under seats_per_gpu", path.display()));
        }
        if let Some((model, _)) = seats.seats_per_gpu.iter().find(|(_, &seats)| seats == 0) {
            return Err(format!(
                "{}: {model:?} has 0 seats: a GPU that keeps no NVDEC pipeline is left out of the file, \
                 and decoder = \"software\" decodes on the CPU",
                path.display()
            ));
        }
        Ok(seats)
    }

    /// The file's text: a comment saying what it is and how to use it, then the table.
    pub fn to_file_text(&self) -> String {
        let table = toml::to_string(self).unwrap_or_default();
        format!(
            "# NVDEC seats measured by `convstream bench --suite scale --decoder nvdec`: live pipelines each\n\
             # GPU of a model kept at their frame rate with no drop, every GPU of the host filled at once.\n\
             # `[server] nvdec_seats_file` names this file; `[server] nvdec_seats_per_gpu` overrides it.\n{table}"
        )
    }

    /// The seats measured for a GPU of `model`, if it was.
    pub fn seats_for(&self, model: Option<&str>) -> Option<usize> {
        model.and_then(|model| self.seats_per_gpu.get(model).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvdec-seats.toml");
        let seats = MeasuredSeats {
            measured_with: Some("1080p25 H.264, gaussian:size=13".into()),
            seats_per_gpu: [("NVIDIA H200".to_string(), 44)].into(),
        };
        std::fs::write(&path, seats.to_file_text()).unwrap();
        assert_eq!(MeasuredSeats::read(&path).unwrap(), seats);
        assert_eq!(seats.seats_for(Some("NVIDIA H200")), Some(44));
        assert_eq!(seats.seats_for(Some("NVIDIA H100 80GB HBM3")), None);
        assert_eq!(seats.seats_for(None), None);
    }

    #[test]
    fn a_file_that_is_no_seats_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for (text, says) in [
            ("password = \"hunter2\"\n", "not a measured NVDEC seats file"),
            ("[seats_per_gpu]\n", "names no GPU model"),
            ("[seats_per_gpu]\n\"NVIDIA H200\" = 0\n", "has 0 seats"),
            (
                "[seats_per_gpu]\n\"NVIDIA H200\" = -3\n",
                "not a measured NVDEC seats file",
            ),
        ] {
            let path = dir.path().join("seats.toml");
            std::fs::write(&path, text).unwrap();
            let error = MeasuredSeats::read(&path).unwrap_err();
            assert!(error.contains(says), "{text:?}: {error}");
            assert!(!error.contains("hunter2"), "the file's contents stay out: {error}");
        }
        let missing = MeasuredSeats::read(&dir.path().join("absent.toml")).unwrap_err();
        assert!(missing.contains("absent.toml"), "{missing}");
        let folder = MeasuredSeats::read(dir.path()).unwrap_err();
        assert!(folder.contains("a folder"), "{folder}");
    }
}

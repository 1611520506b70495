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
    /// Checks the text of a file `bench` wrote (or an operator edited), read from `path`
    /// (`ServerConfig::measured_nvdec_seats` reads it as a config file is read). The error
    /// names the file and what is wrong, never its contents beyond the offending key.
    pub fn parse(text: &str, path: &Path) -> Result<MeasuredSeats, String> {
        let seats: MeasuredSeats = toml::from_str(text).map_err(|e| {
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

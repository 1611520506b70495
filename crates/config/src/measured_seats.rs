//! NVDEC seats measured on a host, by GPU model: what `bench --suite scale --decoder nvdec`
//! writes (`nvdec-seats.toml` beside its results), or `serve` itself once its NVDEC
//! pipelines fell behind ([`MeasuredSeats::learned`]), and `serve` reads through
//! `[server] nvdec_seats_file`, in place of the prediction from a GPU's NVDEC engines. Kept
//! by model so that one measurement serves every GPU of that model, on this host or on a
//! fleet of like hosts (the file goes into each node's config).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How a file `serve` wrote starts its `measured_with`: `serve` writes over such a file only.
const LEARNED_BY_SERVE: &str = "learned by convstream serve";

/// The most seats a GPU may be given (as `[server] max_pipelines` allows at most).
const MAX_SEATS: usize = crate::limits::MAX_PIPELINES;

/// "line N" of `text` where `span` starts, or "its text" when the parser gave no place.
fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or(text);
            format!("line {}", before.matches('\n').count() + 1)
        }
        None => "its text".to_string(),
    }
}

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
    /// names the file, the rule broken and where (a line, a model's place in the table),
    /// never a key or value of the file: `nvdec_seats_file` may name any file, through a
    /// link too, and its contents are not for a log or an API answer.
    pub fn parse(text: &str, path: &Path) -> Result<MeasuredSeats, String> {
        let refused = |why: String| {
            format!(
                "{}: not a measured NVDEC seats file: {why}; `convstream bench --suite scale --decoder nvdec` writes one",
                path.display()
            )
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| refused(format!("{} is not TOML", line_of(text, e.span()))))?;
        let mut seats = MeasuredSeats::default();
        let mut problems = Vec::new();
        for (key, value) in &table {
            match (key.as_str(), value) {
                ("measured_with", toml::Value::String(text)) => seats.measured_with = Some(text.clone()),
                ("measured_with", _) => problems.push("measured_with is not text".to_string()),
                ("seats_per_gpu", toml::Value::Table(models)) => {
                    for (place, (model, count)) in models.iter().enumerate() {
                        match count.as_integer().and_then(|n| usize::try_from(n).ok()) {
                            Some(count) if (1..=MAX_SEATS).contains(&count) => {
                                seats.seats_per_gpu.insert(model.clone(), count);
                            }
                            Some(0) => problems.push(format!(
                                "model {} of seats_per_gpu has 0 seats: a GPU that keeps no NVDEC pipeline is \
                                 left out of the file, and decoder = \"software\" decodes on the CPU",
                                place + 1
                            )),
                            _ => problems.push(format!(
                                "model {} of seats_per_gpu has no whole number of seats 1..={MAX_SEATS}",
                                place + 1
                            )),
                        }
                    }
                }
                ("seats_per_gpu", _) => problems.push("seats_per_gpu is not a table of GPU models".to_string()),
                _ => problems.push("it holds a key other than measured_with and seats_per_gpu".to_string()),
            }
        }
        if !table.contains_key("seats_per_gpu") || (problems.is_empty() && seats.seats_per_gpu.is_empty()) {
            problems.push("it names no GPU model under seats_per_gpu".to_string());
        }
        match problems.is_empty() {
            true => Ok(seats),
            false => Err(refused(problems.join("; "))),
        }
    }

    /// The seats `serve` learned per model, laid over `earlier` (a file `serve` wrote before:
    /// the models it does not name keep their seats).
    pub fn learned(earlier: Option<MeasuredSeats>, seats_per_model: BTreeMap<String, usize>) -> MeasuredSeats {
        let mut seats = earlier.unwrap_or_default();
        seats.seats_per_gpu.extend(
            seats_per_model
                .into_iter()
                .map(|(model, count)| (model, count.clamp(1, MAX_SEATS))),
        );
        seats.measured_with = Some(format!(
            "{LEARNED_BY_SERVE}: the NVDEC pipelines it seated fell behind their real-time pace past these seats"
        ));
        seats
    }

    /// Whether `serve` wrote the file (so it may write over it); one from `bench` or a
    /// person is theirs.
    pub fn is_learned_by_serve(&self) -> bool {
        self.measured_with
            .as_deref()
            .is_some_and(|with| with.starts_with(LEARNED_BY_SERVE))
    }

    /// The file's text: a comment saying what it is and how to use it, then the table.
    pub fn to_file_text(&self) -> String {
        let table = toml::to_string(self).unwrap_or_default();
        format!(
            "# NVDEC seats per GPU model: live pipelines each GPU of a model kept at their frame rate with no\n\
             # drop, every GPU of the host filled at once. `convstream bench --suite scale --decoder nvdec` measures\n\
             # them; `serve` writes what it learned into a file it wrote or that is not there yet, never into another.\n\
             # `[server] nvdec_seats_file` names this file; `[server] nvdec_seats_per_gpu` overrides it.\n{table}"
        )
    }

    /// The seats measured for a GPU of `model`, if it was.
    pub fn seats_for(&self, model: Option<&str>) -> Option<usize> {
        model.and_then(|model| self.seats_per_gpu.get(model).copied())
    }
}

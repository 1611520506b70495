//! Checks a config that does not deserialize section by section and field by field, so
//! that every type-level mistake (a wrong enum value, an unknown key, a missing `url`) is
//! reported in one pass with its place, as validation reports every range problem; what
//! is well-formed is then validated too.

use serde::de::DeserializeOwned;
use std::collections::BTreeSet;
use std::path::Path;
use toml::{Table, Value};

use crate::error::ConfigError;
use crate::limits::pipeline_place;
use crate::outputs::OutputCheck;
use crate::problem::{Place, Problem};
use crate::schema::{ConfigFile, FilterConfig, LogConfig, PipelineConfig, ServerConfig, SinkConfig, SourceConfig};
use convstream_core::MaskParams;

const TOP_KEYS: &[&str] = &["log", "server", "masks", "pipeline"];
const PIPELINE_KEYS: &[&str] = &["name", "source", "filter", "sink"];

/// Every problem in a config whose text is valid TOML but does not match the schema.
/// Empty when none is found here (the caller then reports the parser's own error).
pub(crate) fn problems(table: &Table, base_dir: Option<&Path>, outputs: OutputCheck) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut repaired = ConfigFile::default();
    let mut broken_masks = BTreeSet::new();
    // Each repaired pipeline's position in the file, for places given by number.
    let mut positions = Vec::new();
    for (key, value) in table {
        match key.as_str() {
            "log" => repaired.log = section::<LogConfig>(value, "log", &[], &mut problems).unwrap_or_default(),
            "server" => {
                repaired.server = section::<ServerConfig>(value, "server", &[], &mut problems).unwrap_or_default()
            }
            "masks" => match value.as_table() {
                Some(masks) => {
                    for (name, params) in masks {
                        match section::<MaskParams>(params, &format!("masks.{name}"), &[], &mut problems) {
                            Some(params) => {
                                repaired.masks.insert(name.clone(), params);
                            }
                            None => {
                                broken_masks.insert(name.clone());
                            }
                        }
                    }
                }
                None => problems.push(Problem::value(
                    "masks",
                    format!("must be tables of named masks ([masks.NAME]), not {}", value.type_str()),
                )),
            },
            "pipeline" => match value.as_array() {
                Some(pipelines) => {
                    for (index, value) in pipelines.iter().enumerate() {
                        if let Some(pipeline) = pipeline(index, value, &mut problems) {
                            repaired.pipelines.push(pipeline);
                            positions.push(index);
                        }
                    }
                }
                None => problems.push(Problem::value(
                    "pipeline",
                    format!("must be an array of tables ([[pipeline]]), not {}", value.type_str()),
                )),
            },
            other => problems.push(Problem::general(unknown_key(other, TOP_KEYS, "the top-level keys"))),
        }
    }
    if problems.is_empty() {
        return problems;
    }
    // What is well-formed is validated as usual; problems that only follow from a part
    // already reported (a broken named mask, a pipeline left out) are not repeated.
    // As `serve` and `check` validate: a file is read before anyone knows it is for `run`
    // (which needs a pipeline, and says so once this is fixed) or for an API-only server.
    if let Err(ConfigError::Invalid(more)) = repaired.validate_for_serve(base_dir, outputs) {
        let renumbered = more.into_iter().map(|problem| renumber(problem, &positions));
        problems.extend(renumbered.filter(|problem| {
            !broken_masks
                .iter()
                .any(|name| problem.message().contains(&format!("unknown mask `{name}`")))
        }));
    }
    problems
}

/// A problem of the repaired config's pipeline `#N` (pipelines left out shift the numbers)
/// placed as the file numbers it.
fn renumber(problem: Problem, positions: &[usize]) -> Problem {
    match problem.place() {
        Place::PipelineNumber(number) => match positions.get(number.wrapping_sub(1)) {
            Some(position) => problem.clone().at(Place::PipelineNumber(position + 1)),
            None => problem,
        },
        _ => problem,
    }
}

/// Every type-level problem of one pipeline given as a value (an API request's body), each
/// with its place; empty when its shape is right.
pub fn pipeline_problems(value: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    pipeline(0, value, &mut problems);
    problems
}

fn unknown_key(key: &str, allowed: &[&str], what: &str) -> String {
    let suggestion = convstream_core::nearest(key, allowed)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    format!(
        "unknown field `{}`{suggestion}; {what} are {}",
        convstream_core::quoted(key),
        allowed.join(", ")
    )
}

/// One `[[pipeline]]`: its problems go to `problems` with its place; returns it when every
/// required part is there (bad fields are left at their defaults, so the rest is checked).
fn pipeline(index: usize, value: &Value, problems: &mut Vec<Problem>) -> Option<PipelineConfig> {
    let Some(table) = value.as_table() else {
        problems.push(
            Problem::general(format!("must be a table, not {}", value.type_str())).at(Place::PipelineNumber(index + 1)),
        );
        return None;
    };
    let name = table.get("name").and_then(Value::as_str);
    let place = match name {
        Some(name) => pipeline_place(index, name),
        None => Place::PipelineNumber(index + 1),
    };
    let mut local = Vec::new();
    match table.get("name") {
        None => local.push(Problem::setting("name", "is missing; every pipeline needs a name")),
        Some(value) if !value.is_str() => local.push(Problem::setting(
            "name",
            format!("must be a string, not {}", value.type_str()),
        )),
        Some(_) => {}
    }
    for key in table.keys().filter(|k| !PIPELINE_KEYS.contains(&k.as_str())) {
        local.push(Problem::general(unknown_key(key, PIPELINE_KEYS, "a pipeline's keys")));
    }
    // `null` stands in for a missing or broken url: as a sink it discards, so it meets no
    // other pipeline's output, and nothing reads it as a source before the fix.
    let url = [("url", Value::String("null".into()))];
    let source = match table.get("source") {
        Some(value) => section::<SourceConfig>(value, "source", &url, &mut local),
        None => {
            local.push(Problem::setting(
                "source",
                "is missing; give [pipeline.source] with a url",
            ));
            None
        }
    };
    let filter = match table.get("filter") {
        Some(value) => section::<FilterConfig>(value, "filter", &[], &mut local),
        None => Some(FilterConfig::default()),
    };
    let sink = match table.get("sink") {
        Some(value) => section::<SinkConfig>(value, "sink", &url, &mut local),
        None => {
            local.push(Problem::setting("sink", "is missing; give [pipeline.sink] with a url"));
            None
        }
    };
    problems.extend(local.into_iter().map(|p| p.at(place.clone())));
    Some(PipelineConfig {
        name: name?.to_string(),
        source: source?,
        filter: filter?,
        sink: sink?,
    })
}

/// The longest parser message shown: it quotes the user's value (`unknown variant ...`).
const MESSAGE_CHARS: usize = 300;

/// A parser message on one line (it quotes the value as written, control characters and
/// all), cut if a long value made it long.
fn shown(error: &toml::de::Error) -> String {
    let message = convstream_core::escape_control(error.message().trim_end());
    if message.chars().count() <= MESSAGE_CHARS {
        return message.into_owned();
    }
    let head: String = message.chars().take(MESSAGE_CHARS).collect();
    format!("{head}...")
}

/// Deserializes one table. When it fails, each field is tried alone (beside placeholders
/// for the `required` fields) to find every bad one; those are reported and left out, and
/// the table is returned with their defaults when the rest holds.
fn section<T: DeserializeOwned>(
    value: &Value,
    place: &str,
    required: &[(&str, Value)],
    problems: &mut Vec<Problem>,
) -> Option<T> {
    let Some(table) = value.as_table() else {
        problems.push(Problem::value(
            place,
            format!("must be a table, not {}", value.type_str()),
        ));
        return None;
    };
    let whole = match value.clone().try_into::<T>() {
        Ok(parsed) => return Some(parsed),
        Err(e) => e,
    };
    let before = problems.len();
    let mut good = table.clone();
    for (key, field) in table {
        let mut probe: Table = required
            .iter()
            .filter(|(name, _)| name != key)
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect();
        probe.insert(key.clone(), field.clone());
        if let Err(e) = Value::Table(probe).try_into::<T>() {
            problems.push(Problem::value(
                format!("{place}.{}", convstream_core::quoted(key)),
                shown(&e),
            ));
            good.remove(key);
        }
    }
    for (name, placeholder) in required {
        if !table.contains_key(*name) {
            problems.push(Problem::setting(format!("{place}.{name}"), "is missing"));
        }
        // A required field missing or broken (reported above) is stood in for, so that the
        // rest of the table is still checked, in this one pass.
        if !good.contains_key(*name) {
            good.insert(name.to_string(), placeholder.clone());
        }
    }
    match Value::Table(good).try_into::<T>() {
        Ok(parsed) if problems.len() > before => Some(parsed),
        _ => {
            if problems.len() == before {
                problems.push(Problem::value(place, shown(&whole)));
            }
            None
        }
    }
}

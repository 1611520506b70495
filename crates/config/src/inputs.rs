//! Inputs a config names that are not there: `check` warns of them (a file may appear before
//! the run, so they are not errors). Read from the TOML table, so that a config with other
//! problems gets these warnings in the same pass.

use toml::{Table, Value};

use crate::limits::{pipeline_place, quoted};
use crate::outputs::OutputTarget;
use crate::problem::Place;

/// A warning for every pipeline whose `source.url` is a local file that does not exist.
pub fn missing_inputs(table: &Table) -> Vec<String> {
    let Some(pipelines) = table.get("pipeline").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    for (index, pipeline) in pipelines.iter().enumerate() {
        let url = pipeline
            .get("source")
            .and_then(|source| source.get("url"))
            .and_then(Value::as_str);
        let Some(url) = url else { continue };
        let place = match pipeline.get("name").and_then(Value::as_str) {
            Some(name) => pipeline_place(index, name),
            None => Place::PipelineNumber(index + 1),
        };
        // `-` is stdin, URLs are opened when the run starts; a local path can be looked at.
        if let OutputTarget::File(path) = OutputTarget::of(url) {
            if url != "-" && !path.exists() {
                warnings.push(format!(
                    "{place}: source.url: `{}` does not exist (yet); the run fails unless it is there by then",
                    quoted(url)
                ));
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_files_that_are_not_there_are_named() {
        let text = r#"
[[pipeline]]
name = "gone"
source = { url = "/nonexistent/clip.mp4" }
[[pipeline]]
name = "here"
source = { url = "Cargo.toml" }
[[pipeline]]
name = "net"
source = { url = "udp://127.0.0.1:5000" }
[[pipeline]]
name = "stdin"
source = { url = "-" }
"#;
        let table: Table = toml::from_str(text).unwrap();
        let warnings = missing_inputs(&table);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("pipeline \"gone\": source.url: `/nonexistent/clip.mp4` does not exist"),
            "{warnings:?}"
        );
    }
}

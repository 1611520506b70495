//! The element's properties and the filter they make, resolved exactly as `convstream run`
//! resolves its flags (presets, custom matrices, named masks of a config file), with every
//! problem named by the property that has it.

use std::path::Path;

use convstream_config::{
    ConfigError, ConfigFile, FilterConfig, FilterSettings, Overrides, Place, Problem, NO_OUTPUT_CHECK,
};

use super::choices::{device_text, Border, EngineKind, Planes};

pub const DEFAULT_MASK: &str = "gaussian:size=5";

/// What the properties say.
#[derive(Debug, Clone)]
pub struct Settings {
    pub mask: String,
    /// `y=edge,uv=neutral`: a mask per plane, separated by `;` or `,` outside brackets.
    pub plane_masks: String,
    pub planes: Planes,
    pub border: Border,
    pub engine: EngineKind,
    /// The GPU, as nvcodec elements number them; -1: the least loaded one.
    pub cuda_device_id: i32,
    /// A `device` alias that named no device: kept, so that negotiation fails naming it
    /// rather than filtering where the user did not ask.
    pub bad_device: Option<String>,
    pub streams: u32,
    pub frames_per_stream: u32,
    /// A TOML file whose `[masks.*]` `mask` may name.
    pub config: Option<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            mask: DEFAULT_MASK.to_string(),
            plane_masks: String::new(),
            planes: Planes::All,
            border: Border::Reflect,
            engine: EngineKind::Auto,
            cuda_device_id: -1,
            bad_device: None,
            streams: 4,
            frames_per_stream: 2,
            config: None,
        }
    }
}

impl Settings {
    /// What the `device` alias reads: `engine` and `cuda-device-id` as one text.
    pub fn device(&self) -> String {
        self.bad_device
            .clone()
            .unwrap_or_else(|| device_text(self.engine, self.cuda_device_id))
    }

    /// The filter these properties make, or every problem with them, each named by its
    /// property.
    pub fn resolve(&self) -> Result<FilterSettings, String> {
        let mut problems = Vec::new();
        if let Some(device) = &self.bad_device {
            problems.push(format!(
                "device: `{device}` is not a device; use auto, cpu, cuda or cuda:N (or engine and cuda-device-id)"
            ));
        }
        let plane_masks = split_plane_masks(&self.plane_masks, &mut problems);
        match self.filter(plane_masks) {
            Ok(filter) if problems.is_empty() => return Ok(filter),
            Ok(_) => {}
            Err(error) => match error.problems() {
                Some(found) => problems.extend(found.iter().map(as_property_problem)),
                None => problems.push(format!("config: {error}")),
            },
        }
        Err(problems.join("; "))
    }

    /// The filter `convstream run` would make of these masks and names, with the config's
    /// masks to name.
    fn filter(&self, plane_masks: Vec<(String, String)>) -> Result<FilterSettings, ConfigError> {
        let (config, base_dir) = match &self.config {
            Some(path) => {
                let config = ConfigFile::load(Path::new(path), NO_OUTPUT_CHECK)?;
                (config, Path::new(path).parent().map(Path::to_path_buf))
            }
            None => (ConfigFile::default(), None),
        };
        let overrides = Overrides {
            mask: Some(self.mask.clone()),
            planes: Some(self.planes.into()),
            plane_masks,
            border: Some(self.border.into()),
            device: Some(device_text(self.engine, self.cuda_device_id)),
            streams: Some(self.streams as usize),
            frames_per_stream: Some(self.frames_per_stream as usize),
            ..Overrides::default()
        };
        let mut filter = FilterConfig::default();
        overrides.apply_to_filter(&mut filter);
        config.validate_filter(&filter, base_dir.as_deref())
    }
}

/// A problem the configuration check found, named by the element's property that has it:
/// `pipeline "main": filter.plane_masks.y: size: 4 is even` reads
/// `plane-masks: y: size: 4 is even`. Problems of a config file's own pipelines keep their place.
fn as_property_problem(problem: &Problem) -> String {
    let ours = matches!(problem.place(), Place::Config) || problem.place().is_standalone();
    match problem {
        _ if !ours => problem.to_string(),
        Problem::Value { field, message, .. } => format!("{}: {message}", property_of(field)),
        other => other.unplaced(),
    }
}

/// The property a config setting is: `filter.frames_per_stream` is `frames-per-stream`,
/// `filter.plane_masks.y` is `plane-masks: y`.
fn property_of(field: &str) -> String {
    let field = field.strip_prefix("filter.").unwrap_or(field);
    match field.split_once('.') {
        Some(("plane_masks", plane)) => format!("plane-masks: {plane}"),
        _ => field.replace('_', "-"),
    }
}

/// `y=edge, uv=neutral` as (plane, spec) pairs; commas inside brackets belong to a matrix.
fn split_plane_masks(text: &str, problems: &mut Vec<String>) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut pieces = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ';' | ',' if depth == 0 => {
                pieces.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    // A comma also separates a spec's own keys (`gaussian:size=5,sigma=2`): a piece without
    // `PLANE=` continues the spec before it.
    for piece in pieces.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        match piece.split_once('=') {
            Some((plane, spec)) if is_plane(plane.trim()) => {
                pairs.push((plane.trim().to_string(), spec.trim().to_string()))
            }
            _ => match pairs.last_mut() {
                Some((_, spec)) => {
                    spec.push(',');
                    spec.push_str(piece);
                }
                None => problems.push(format!(
                    "plane-masks: `{piece}` names no plane; write PLANE=SPEC (y, u, v, uv, r, g, b)"
                )),
            },
        }
    }
    pairs
}

fn is_plane(name: &str) -> bool {
    matches!(name, "y" | "u" | "v" | "uv" | "r" | "g" | "b")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plane_masks_split_on_planes_not_on_a_specs_own_commas() {
        let mut problems = Vec::new();
        let pairs = split_plane_masks(
            "y=gaussian:size=5,sigma=2; uv=custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],normalize=true,v=neutral",
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            pairs,
            [
                ("y".to_string(), "gaussian:size=5,sigma=2".to_string()),
                (
                    "uv".to_string(),
                    "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],normalize=true".to_string()
                ),
                ("v".to_string(), "neutral".to_string()),
            ]
        );
        split_plane_masks("edge", &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn properties_resolve_as_the_command_line_does_and_list_every_problem() {
        let settings = Settings {
            mask: "sharpen".into(),
            plane_masks: "uv=neutral".into(),
            engine: EngineKind::Cpu,
            ..Settings::default()
        };
        let pipeline = settings.resolve().unwrap();
        assert_eq!(pipeline.filter.mask.description(), "sharpen");
        assert_eq!(pipeline.filter.plane_masks.len(), 2, "u and v");
        let bad = Settings {
            mask: "blurry".into(),
            plane_masks: "y=gaussian:size=4".into(),
            bad_device: Some("gpu".into()),
            ..Settings::default()
        };
        let error = bad.resolve().unwrap_err();
        for problem in [
            "device: `gpu` is not a device",
            "mask: unknown mask `blurry`",
            "plane-masks: y: size: 4 is even",
        ] {
            assert!(error.contains(problem), "{problem} missing from: {error}");
        }
        // The element's properties, not the configuration's fields.
        assert!(
            !error.contains("pipeline \"main\"") && !error.contains("filter."),
            "{error}"
        );
    }
}

//! The element's properties and the filter they make, resolved exactly as `convstream run`
//! resolves its flags (presets, custom matrices, named masks of a config file).

use std::path::Path;

use convstream::config::{ConfigFile, Overrides, PipelineSettings};
use convstream::filter::{BorderMode, PlaneSelection};

pub const DEFAULT_MASK: &str = "gaussian:size=5";

/// What the properties say.
#[derive(Debug, Clone)]
pub struct Settings {
    pub mask: String,
    /// `y=edge,uv=neutral`: a mask per plane, separated by `;` or `,` outside brackets.
    pub plane_masks: String,
    pub planes: String,
    pub border: String,
    pub device: String,
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
            planes: "all".to_string(),
            border: "reflect".to_string(),
            device: "auto".to_string(),
            streams: 4,
            frames_per_stream: 2,
            config: None,
        }
    }
}

impl Settings {
    /// The pipeline settings these properties make, or every problem with them.
    pub fn resolve(&self) -> Result<PipelineSettings, String> {
        let mut problems = Vec::new();
        let planes = <PlaneSelection as clap::ValueEnum>::from_str(&self.planes, true)
            .map_err(|_| problems.push(format!("planes: `{}` is not all, luma or chroma", self.planes)))
            .ok();
        let border = <BorderMode as clap::ValueEnum>::from_str(&self.border, true)
            .map_err(|_| {
                problems.push(format!(
                    "border: `{}` is not constant, nearest, reflect, mirror or wrap",
                    self.border
                ))
            })
            .ok();
        let plane_masks = split_plane_masks(&self.plane_masks, &mut problems);
        // The masks are checked even when the names above were not, so every problem shows.
        let pipeline = self.pipeline(planes, plane_masks, border);
        match pipeline {
            Ok(pipeline) if problems.is_empty() => Ok(pipeline),
            Ok(_) => Err(problems.join("; ")),
            Err(problem) => {
                problems.push(problem);
                Err(problems.join("; "))
            }
        }
    }

    /// The pipeline `convstream run` would make of these masks and names, with the config's
    /// masks to name.
    fn pipeline(
        &self,
        planes: Option<PlaneSelection>,
        plane_masks: Vec<(String, String)>,
        border: Option<BorderMode>,
    ) -> Result<PipelineSettings, String> {
        let (mut config, base_dir) = match &self.config {
            Some(path) => {
                let config = ConfigFile::load(Path::new(path)).map_err(|e| e.to_string())?;
                (config, Path::new(path).parent().map(Path::to_path_buf))
            }
            None => (ConfigFile::default(), None),
        };
        let overrides = Overrides {
            input: Some("element".to_string()),
            output: Some("null".to_string()),
            mask: Some(self.mask.clone()),
            planes,
            plane_masks,
            border,
            device: Some(self.device.clone()),
            streams: Some(self.streams as usize),
            frames_per_stream: Some(self.frames_per_stream as usize),
            ..Overrides::default()
        };
        config.pipelines = overrides.standalone().map_err(|e| e.to_string())?.pipelines;
        let mut settings = config.validate(base_dir.as_deref()).map_err(|e| e.to_string())?;
        settings
            .pipelines
            .pop()
            .ok_or_else(|| "the properties made no pipeline".to_string())
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
            device: "cpu".into(),
            ..Settings::default()
        };
        let pipeline = settings.resolve().unwrap();
        assert_eq!(pipeline.filter.mask.description(), "sharpen");
        assert_eq!(pipeline.filter.plane_masks.len(), 2, "u and v");
        let bad = Settings {
            mask: "blurry".into(),
            planes: "some".into(),
            border: "fold".into(),
            ..Settings::default()
        };
        let error = bad.resolve().unwrap_err();
        for problem in ["planes: `some`", "border: `fold`", "blurry"] {
            assert!(error.contains(problem), "{problem} missing from: {error}");
        }
    }
}

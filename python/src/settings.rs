//! What the Python functions take (mask SPEC, border, planes, device and the `run` options),
//! resolved exactly as `convstream run` resolves its flags: the same presets, the same
//! validation and the same messages, each problem named by the keyword argument that has it.

use std::path::{Path, PathBuf};

use convstream_config::{
    ConfigError, ConfigFile, FilterConfig, FilterSettings, Overrides, PipelineSettings, Place, Problem,
};
use convstream_core::MaskParams;
use convstream_core::{BorderMode, PlaneSelection};
use convstream_media::output_problems;
use pyo3::exceptions::PyValueError;
use pyo3::PyErr;

/// The Python keyword arguments a pipeline is made of, as text.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub input: String,
    pub output: String,
    pub mask: String,
    pub border: Option<String>,
    pub planes: Option<String>,
    pub plane_masks: Vec<(String, String)>,
    pub device: Option<String>,
    /// A TOML file whose `[masks.NAME]` tables `mask` may name.
    pub config: Option<String>,
    /// Everything else `convstream run` takes (input and output options).
    pub overrides: Overrides,
    /// A mask given as an array: its coefficients and keys, taken as a `[masks.NAME]` table
    /// takes them (no SPEC text to outgrow: a 63 x 63 matrix is some 8,000 characters).
    pub array_mask: Option<MaskParams>,
}

/// The name an array mask goes by among the config's masks.
const ARRAY_MASK: &str = "python-array";

/// What the arguments say before validation: the config (and its folder) whose masks they
/// may name, the flags they amount to, and the problems found reading them.
struct Prepared {
    config: ConfigFile,
    base_dir: Option<PathBuf>,
    overrides: Overrides,
    problems: Vec<String>,
}

impl Request {
    /// The one pipeline these arguments make, or a `ValueError` naming every problem.
    pub fn resolve(&self) -> Result<PipelineSettings, PyErr> {
        let Prepared {
            mut config,
            base_dir,
            overrides,
            problems,
        } = self.prepare()?;
        let resolved = overrides.standalone().and_then(|file| {
            config.pipelines = file.pipelines;
            config.validate(base_dir.as_deref(), output_problems)
        });
        let settings = settings_or_problems(resolved, problems)?;
        let mut pipelines = settings.pipelines;
        pipelines
            .pop()
            .ok_or_else(|| PyValueError::new_err("the arguments made no pipeline"))
    }

    /// The filter alone these arguments make (no input, no output), or a `ValueError` naming
    /// every problem: what `Filter` runs.
    pub fn resolve_filter(&self) -> Result<FilterSettings, PyErr> {
        let Prepared {
            config,
            base_dir,
            overrides,
            problems,
        } = self.prepare()?;
        let mut filter = FilterConfig::default();
        overrides.apply_to_filter(&mut filter);
        settings_or_problems(config.validate_filter(&filter, base_dir.as_deref()), problems)
    }

    fn prepare(&self) -> Result<Prepared, PyErr> {
        let mut problems = Vec::new();
        let border = self
            .border
            .as_deref()
            .and_then(|text| parse_border(text, &mut problems));
        let planes = self
            .planes
            .as_deref()
            .and_then(|text| parse_planes(text, &mut problems));
        let (mut config, base_dir) = match &self.config {
            Some(path) => {
                let config = ConfigFile::load(Path::new(path), output_problems)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                (config, Path::new(path).parent().map(Path::to_path_buf))
            }
            None => (ConfigFile::default(), None),
        };
        let mask = match &self.array_mask {
            Some(params) => {
                config.masks.insert(ARRAY_MASK.to_string(), params.clone());
                ARRAY_MASK.to_string()
            }
            None => self.mask.clone(),
        };
        let overrides = Overrides {
            input: Some(self.input.clone()),
            output: Some(self.output.clone()),
            mask: Some(mask),
            planes,
            plane_masks: self.plane_masks.clone(),
            border,
            device: self.device.clone(),
            ..self.overrides.clone()
        };
        Ok(Prepared {
            config,
            base_dir,
            overrides,
            problems,
        })
    }
}

/// What validation made, when neither it nor reading the arguments found a problem; else a
/// `ValueError` naming every problem, each by its keyword argument.
fn settings_or_problems<T>(resolved: Result<T, ConfigError>, mut problems: Vec<String>) -> Result<T, PyErr> {
    match resolved {
        Ok(settings) if problems.is_empty() => return Ok(settings),
        Ok(_) => {}
        Err(error) => match error.problems() {
            Some(found) => problems.extend(found.iter().map(as_argument_problem)),
            None => problems.push(error.to_string()),
        },
    }
    Err(PyValueError::new_err(problems.join("; ")))
}

/// A border mode by its name or an alias (`reflect_101`, `replicate`...), as `--border` takes it.
pub fn parse_border(text: &str, problems: &mut Vec<String>) -> Option<BorderMode> {
    // Any case, as the keyword always took it (every name is lower-case ASCII).
    let found = text.to_ascii_lowercase().parse::<BorderMode>().ok();
    if found.is_none() {
        let names: Vec<&str> = BorderMode::ALL.iter().map(|b| b.name()).collect();
        let aliases: Vec<&str> = BorderMode::ALL
            .iter()
            .flat_map(|b| b.aliases().iter().copied())
            .collect();
        problems.push(format!(
            "border: invalid value '{text}' [possible values: {}; aliases: {}]",
            names.join(", "),
            aliases.join(", ")
        ));
    }
    found
}

/// `all`, `luma` or `chroma`, as `--planes` takes it.
pub fn parse_planes(text: &str, problems: &mut Vec<String>) -> Option<PlaneSelection> {
    let found = text.to_ascii_lowercase().parse::<PlaneSelection>().ok();
    if found.is_none() {
        problems.push(format!(
            "planes: invalid value '{text}' [possible values: all, luma, chroma]"
        ));
    }
    found
}

/// A problem the configuration check found, named by the keyword argument that has it:
/// `pipeline "main": filter.mask: size: 4 is even` reads `mask: size: 4 is even`, the part
/// after the name being the CLI's message word for word. Problems of a config file's own
/// pipelines keep their place.
fn as_argument_problem(problem: &Problem) -> String {
    let ours = matches!(problem.place(), Place::Config) || problem.place().is_standalone();
    match problem {
        _ if !ours => problem.to_string(),
        Problem::Value { field, message, .. } => format!("{}: {message}", argument_of(field)),
        other => other.unplaced(),
    }
}

/// The keyword argument a config setting is: `filter.border` is `border`, `sink.options.crf`
/// is `options.crf`.
fn argument_of(field: &str) -> &str {
    field
        .strip_prefix("filter.")
        .or_else(|| field.strip_prefix("source."))
        .or_else(|| field.strip_prefix("sink."))
        .unwrap_or(field)
}

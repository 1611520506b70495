//! Turns a parsed [`ConfigFile`] into [`Settings`] the pipelines run with, collecting
//! every problem, each prefixed with where it is (`pipeline "cam1": filter.mask: ...`).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::{
    ConfigError, ConfigFile, LogConfig, MaskSelection, PipelineConfig, ServerConfig, SinkConfig, SourceConfig,
};
use crate::engine::DeviceChoice;
use crate::filter::FilterSpec;
use crate::mask::{Mask, MaskError, MaskParams, PRESETS};

use crate::engine::{MAX_FRAMES_PER_STREAM, MAX_STREAMS};

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub log: LogConfig,
    pub server: ServerConfig,
    pub pipelines: Vec<PipelineSettings>,
}

/// One pipeline, ready to run.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    pub name: String,
    pub source: SourceConfig,
    pub filter: FilterSpec,
    pub device: DeviceChoice,
    pub streams: usize,
    pub frames_per_stream: usize,
    /// The configured cap on pinned frames, if any (see `pipeline::pooled_frames`).
    pub pinned_frames: Option<usize>,
    pub sink: SinkConfig,
    /// The pipeline as written, for reload comparisons and the API.
    pub config: PipelineConfig,
}

impl ConfigFile {
    /// Checks everything and builds every mask. `base_dir` resolves relative mask files
    /// (the config file's folder).
    pub fn validate(&self, base_dir: Option<&Path>) -> Result<Settings, ConfigError> {
        let mut problems = Vec::new();
        let named = build_named_masks(&self.masks, base_dir, &mut problems);
        if let Some(level) = &self.log.level {
            if tracing_subscriber::EnvFilter::try_new(level).is_err() {
                problems.push(format!(
                    "log.level: `{level}` is not a log filter (try info, debug, or convstream=debug)"
                ));
            }
        }
        validate_server(&self.server, &mut problems);
        if self.pipelines.is_empty() {
            problems.push("no [[pipeline]] defined; a config needs at least one".to_string());
        }
        let mut seen = HashSet::new();
        let mut pipelines = Vec::new();
        for (index, pipeline) in self.pipelines.iter().enumerate() {
            let place = if pipeline.name.trim().is_empty() {
                problems.push(format!("pipeline #{}: name is empty", index + 1));
                format!("pipeline #{}", index + 1)
            } else {
                format!("pipeline {:?}", pipeline.name)
            };
            if !pipeline.name.trim().is_empty() && !seen.insert(pipeline.name.clone()) {
                problems.push(format!(
                    "{place}: the name is used by another pipeline; names must be unique"
                ));
            }
            let mut local = Vec::new();
            let settings = validate_pipeline(pipeline, &self.masks, &named, base_dir, &mut local);
            problems.extend(local.into_iter().map(|p| format!("{place}: {p}")));
            pipelines.extend(settings);
        }
        problems.extend(super::outputs::check(&self.pipelines));
        if problems.is_empty() {
            Ok(Settings {
                log: self.log.clone(),
                server: self.server.clone(),
                pipelines,
            })
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }
}

fn build_named_masks(
    masks: &BTreeMap<String, MaskParams>,
    base_dir: Option<&Path>,
    problems: &mut Vec<String>,
) -> BTreeMap<String, Mask> {
    let mut built = BTreeMap::new();
    for (name, params) in masks {
        if PRESETS.iter().any(|p| p.name == name) {
            problems.push(format!(
                "masks.{name}: the name hides the preset `{name}`; choose another name"
            ));
            continue;
        }
        match Mask::build(params, base_dir) {
            Ok(mask) => {
                let description = format!("{name} ({})", mask.description());
                built.insert(name.clone(), mask.with_description(description));
            }
            Err(errors) => problems.extend(errors.into_iter().map(|e| format!("masks.{name}: {e}"))),
        }
    }
    built
}

fn validate_pipeline(
    pipeline: &PipelineConfig,
    defined: &BTreeMap<String, MaskParams>,
    named: &BTreeMap<String, Mask>,
    base_dir: Option<&Path>,
    problems: &mut Vec<String>,
) -> Option<PipelineSettings> {
    if pipeline.source.url.trim().is_empty() {
        problems.push("source.url is empty; give a path, `-` for stdin, or a URL".to_string());
    }
    if pipeline.sink.url.trim().is_empty() {
        problems.push("sink.url is empty; give a path, `-` for stdout, `null`, or a URL".to_string());
    }
    let decoder = pipeline.source.decoder.as_str();
    if decoder.trim().is_empty() {
        problems.push("source.decoder is empty; use auto, software, nvdec or an FFmpeg decoder name".to_string());
    }
    validate_source_timing(&pipeline.source, problems);
    let filter = &pipeline.filter;
    let device = DeviceChoice::parse(&filter.device);
    if device.is_none() {
        problems.push(format!(
            "filter.device: `{}` is not a device; use auto, cpu, cuda or cuda:N",
            filter.device
        ));
    }
    if !(1..=MAX_STREAMS).contains(&filter.streams) {
        problems.push(format!(
            "filter.streams: {} is out of range; allowed 1..={MAX_STREAMS}",
            filter.streams
        ));
    }
    if !(1..=MAX_FRAMES_PER_STREAM).contains(&filter.frames_per_stream) {
        problems.push(format!(
            "filter.frames_per_stream: {} is out of range; allowed 1..={MAX_FRAMES_PER_STREAM}",
            filter.frames_per_stream
        ));
    }
    let mask = match &filter.mask {
        MaskSelection::Named(text) => match named.get(text) {
            Some(mask) => Ok(mask.clone()),
            // Defined but broken: its problems are listed under `masks.NAME` already.
            None if defined.contains_key(text) => Err(Vec::new()),
            None => MaskParams::parse_spec(text)
                .and_then(|params| Mask::build(&params, base_dir))
                .map_err(|errors| errors.into_iter().map(|e| with_named_masks(e, defined)).collect()),
        },
        MaskSelection::Inline(params) => Mask::build(params, base_dir),
    };
    let mask = match mask {
        Ok(mask) => Some(mask),
        Err(errors) => {
            problems.extend(errors.into_iter().map(|e| format!("filter.mask: {e}")));
            None
        }
    };
    Some(PipelineSettings {
        name: pipeline.name.clone(),
        source: pipeline.source.clone(),
        filter: FilterSpec {
            mask: mask?,
            border: filter.border,
            planes: filter.planes,
        },
        device: device?,
        streams: filter.streams,
        frames_per_stream: filter.frames_per_stream,
        pinned_frames: filter.pinned_frames,
        sink: pipeline.sink.clone(),
        config: pipeline.clone(),
    })
}

fn validate_server(server: &ServerConfig, problems: &mut Vec<String>) {
    if server.listen.parse::<std::net::SocketAddr>().is_err() {
        problems.push(format!(
            "server.listen: `{}` is not an address and port such as 127.0.0.1:8686 or 0.0.0.0:8686",
            server.listen
        ));
    }
    if !(server.shutdown_timeout.is_finite() && server.shutdown_timeout > 0.0) {
        problems.push(format!(
            "server.shutdown_timeout: {} must be a positive number of seconds",
            server.shutdown_timeout
        ));
    }
    if let Some(name) = &server.token_env {
        let valid = !name.is_empty() && !name.contains('=') && !name.contains('\0');
        if !valid {
            problems.push(format!(
                "server.token_env: `{name}` is not an environment variable name"
            ));
        }
    }
}

fn validate_source_timing(source: &SourceConfig, problems: &mut Vec<String>) {
    let positive = |value: f64| value.is_finite() && value > 0.0;
    if !positive(source.idle_timeout) {
        problems.push(format!(
            "source.idle_timeout: {} must be a positive number of seconds",
            source.idle_timeout
        ));
    }
    let reconnect = &source.reconnect;
    if !positive(reconnect.initial) || !positive(reconnect.max) {
        problems.push(format!(
            "source.reconnect: initial ({}) and max ({}) must be positive numbers of seconds",
            reconnect.initial, reconnect.max
        ));
    } else if reconnect.initial > reconnect.max {
        problems.push(format!(
            "source.reconnect: initial ({}) is more than max ({})",
            reconnect.initial, reconnect.max
        ));
    }
}

/// An unknown mask name in a config may be a typo of one of its `[masks.NAME]` tables:
/// suggest those too, and list them.
fn with_named_masks(error: MaskError, defined: &BTreeMap<String, MaskParams>) -> MaskError {
    match error {
        MaskError::UnknownPreset {
            name,
            suggestion,
            allowed,
        } if !defined.is_empty() => {
            let tables: Vec<&str> = defined.keys().map(String::as_str).collect();
            let mut candidates: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            candidates.extend(&tables);
            MaskError::UnknownPreset {
                suggestion: crate::mask::nearest(&name, &candidates).or(suggestion),
                allowed: format!("{allowed}; the config's [masks] tables are {}", tables.join(", ")),
                name,
            }
        }
        other => other,
    }
}

impl PipelineSettings {
    /// The sink as a short string for logs.
    pub fn describe(&self) -> String {
        format!(
            "{} -> {} [{} {} border={} planes={}] -> {}",
            self.name,
            self.source.url,
            self.filter.mask.description(),
            match self.device {
                DeviceChoice::Auto => "auto".to_string(),
                DeviceChoice::Cpu => "cpu".to_string(),
                DeviceChoice::AnyCuda => "cuda".to_string(),
                DeviceChoice::Cuda(n) => format!("cuda:{n}"),
            },
            self.filter.border,
            self.filter.planes,
            self.sink.url
        )
    }
}

//! A pipeline's `[filter]` turned into what the engine runs: its masks built (presets,
//! inline tables, the config's `[masks.NAME]`), planes and border, the engine and its
//! tuning, every problem at once. Validation does this for each pipeline; a front end that
//! only filters (the GStreamer element, Python's `Filter`) asks for it alone with
//! [`ConfigFile::validate_filter`].

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::ConfigError;
use crate::limits;
use crate::problem::Problem;
use crate::schema::{ConfigFile, FilterConfig, MaskSelection};
use convstream_core::{DeviceChoice, GpuTuning, MAX_FRAMES_PER_STREAM, MAX_STREAMS};
use convstream_core::{FilterSpec, PlaneMasks, PlaneName};
use convstream_core::{Mask, MaskError, MaskParams, PRESETS};

/// A validated `[filter]`: what the engine computes and where it runs.
#[derive(Debug, Clone)]
pub struct FilterSettings {
    /// The built masks, planes and border.
    pub filter: FilterSpec,
    /// The engine it runs on.
    pub device: DeviceChoice,
    /// The CUDA engine's streams.
    pub streams: usize,
    /// Frames in flight per CUDA stream.
    pub frames_per_stream: usize,
    /// The configured cap on pinned frames, if any.
    pub pinned_frames: Option<usize>,
    /// The CUDA engine's spin-wait and tilings.
    pub gpu: GpuTuning,
    /// FFmpeg's filters before the engine: `ffmpeg_before`, or the graph's part before its
    /// convolution stage.
    pub ffmpeg_before: Option<String>,
    /// FFmpeg's filters after the engine: `ffmpeg_after`, or the graph's part after it.
    pub ffmpeg_after: Option<String>,
    /// What `filter.graph` takes differently from how it reads, as FFmpeg takes it (an
    /// `rdiv` FFmpeg 5.1's convolution sets aside): said by `check` and when the pipeline starts.
    pub graph_warnings: Vec<String>,
}

impl ConfigFile {
    /// `filter` checked and built on its own, with this config's `[masks]` to name (relative
    /// mask files resolve from `base_dir`): what a front end that only filters needs, with
    /// the same problems, placed outside any pipeline, that a pipeline with this filter gets.
    pub fn validate_filter(
        &self,
        filter: &FilterConfig,
        base_dir: Option<&Path>,
    ) -> Result<FilterSettings, ConfigError> {
        let mut problems = Vec::new();
        let named = build_named_masks(&self.masks, base_dir, &mut problems);
        limits::filter_limits(filter, &mut problems);
        let settings = validate_filter(filter, &self.masks, &named, base_dir, &mut problems);
        match settings {
            Some(settings) if problems.is_empty() => Ok(settings),
            _ => Err(ConfigError::Invalid(problems)),
        }
    }
}

/// Every `[masks.NAME]` table built; the problems of those that do not build go to `problems`.
pub(crate) fn build_named_masks(
    masks: &BTreeMap<String, MaskParams>,
    base_dir: Option<&Path>,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Mask> {
    let mut built = BTreeMap::new();
    for (name, params) in masks {
        if PRESETS.iter().any(|p| p.name == name) {
            problems.push(Problem::value(
                format!("masks.{name}"),
                format!("the name hides the preset `{name}`; choose another name"),
            ));
            continue;
        }
        match Mask::build(params, base_dir) {
            Ok(mask) => {
                let description = format!("{name} ({})", mask.description());
                built.insert(name.clone(), mask.with_description(description));
            }
            Err(errors) => problems.extend(
                errors
                    .into_iter()
                    .map(|e| Problem::value(format!("masks.{name}"), e.to_string())),
            ),
        }
    }
    built
}

/// Checks `filter` and builds its masks (`defined` are the config's `[masks]` tables, `named`
/// those that built); its problems go to `problems`.
pub(crate) fn validate_filter(
    filter: &FilterConfig,
    defined: &BTreeMap<String, MaskParams>,
    named: &BTreeMap<String, Mask>,
    base_dir: Option<&Path>,
    problems: &mut Vec<Problem>,
) -> Option<FilterSettings> {
    // The graph's convolution filters become the masks it is built from; its problems are
    // listed with the rest, and the masks are then not built.
    let resolved = crate::graph::resolve(filter, problems);
    let filter = resolved.as_ref().map_or(filter, |resolved| &resolved.filter);
    let device = DeviceChoice::parse(&filter.device);
    if device.is_none() {
        problems.push(Problem::value(
            "filter.device",
            format!(
                "`{}` is not a device; use auto, cpu, cuda or cuda:N",
                limits::quoted(&filter.device)
            ),
        ));
    }
    if !(1..=MAX_STREAMS).contains(&filter.streams) {
        problems.push(Problem::value(
            "filter.streams",
            format!("{} is out of range; allowed 1..={MAX_STREAMS}", filter.streams),
        ));
    }
    if !(1..=MAX_FRAMES_PER_STREAM).contains(&filter.frames_per_stream) {
        problems.push(Problem::value(
            "filter.frames_per_stream",
            format!(
                "{} is out of range; allowed 1..={MAX_FRAMES_PER_STREAM}",
                filter.frames_per_stream
            ),
        ));
    }
    if let Some(problem) = filter.gpu.spin_problem() {
        problems.push(Problem::value("filter.gpu.spin_us", problem));
    }
    let build = |field: &str, selection: &MaskSelection, problems: &mut Vec<Problem>| {
        selected_mask(selection, defined, named, base_dir)
            .map_err(|errors| problems.extend(errors.into_iter().map(|e| Problem::value(field, e.to_string()))))
            .ok()
    };
    let mask = build("filter.mask", &filter.mask, problems);
    let mut plane_masks = Some(PlaneMasks::new());
    let mut named_by: BTreeMap<PlaneName, &str> = BTreeMap::new();
    for key in filter.plane_masks.keys() {
        for name in PlaneName::parse_key(key).unwrap_or(&[]) {
            if let Some(first) = named_by.insert(*name, key) {
                problems.push(Problem::value(
                    "filter.plane_masks",
                    format!("plane {name} is given twice, by `{first}` and by `{key}`; keep one"),
                ));
                plane_masks = None;
            }
        }
    }
    for (key, selection) in &filter.plane_masks {
        let field = format!("filter.plane_masks.{}", limits::quoted(key));
        let built = build(&field, selection, problems);
        match (PlaneName::parse_key(key), built) {
            (Some(names), Some(mask)) => {
                if let Some(masks) = plane_masks.as_mut() {
                    masks.extend(names.iter().map(|name| (*name, mask.clone())));
                }
            }
            (names, _) => {
                plane_masks = None;
                if names.is_none() {
                    let keys: Vec<&str> = PlaneName::KEYS.iter().map(|(k, _)| *k).collect();
                    problems.push(Problem::value(field, format!("not a plane; use {}", keys.join(", "))));
                }
            }
        }
    }
    Some(FilterSettings {
        filter: FilterSpec {
            mask: mask?,
            border: filter.border,
            planes: filter.planes,
            plane_masks: plane_masks?,
        },
        device: device?,
        streams: filter.streams,
        frames_per_stream: filter.frames_per_stream,
        pinned_frames: filter.pinned_frames,
        gpu: filter.gpu,
        ffmpeg_before: resolved.as_ref()?.before.clone(),
        ffmpeg_after: resolved.as_ref()?.after.clone(),
        graph_warnings: resolved?.warnings,
    })
}

/// The mask a `mask` value selects: a named mask of the config, a SPEC or an inline table.
fn selected_mask(
    selection: &MaskSelection,
    defined: &BTreeMap<String, MaskParams>,
    named: &BTreeMap<String, Mask>,
    base_dir: Option<&Path>,
) -> Result<Mask, Vec<MaskError>> {
    match selection {
        MaskSelection::Named(text) => match named.get(text) {
            Some(mask) => Ok(mask.clone()),
            // Defined but broken: its problems are listed under `masks.NAME` already.
            None if defined.contains_key(text) => Err(Vec::new()),
            None => MaskParams::parse_spec(text)
                .and_then(|params| Mask::build(&params, base_dir))
                .map_err(|errors| errors.into_iter().map(|e| with_named_masks(e, defined)).collect()),
        },
        MaskSelection::Inline(params) => Mask::build(params, base_dir),
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
                suggestion: convstream_core::nearest(&name, &candidates).or(suggestion),
                allowed: format!("{allowed}; the config's [masks] tables are {}", tables.join(", ")),
                name,
            }
        }
        other => other,
    }
}

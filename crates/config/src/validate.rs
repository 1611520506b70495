//! Turns a parsed [`ConfigFile`] into [`Settings`] the pipelines run with, collecting
//! every problem, each prefixed with where it is (`pipeline "cam1": filter.mask: ...`).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use crate::error::ConfigError;
use crate::filter::{build_named_masks, validate_filter};
use crate::limits;
use crate::log_filter;
use crate::outputs::OutputCheck;
use crate::problem::Problem;
use crate::schema::{ConfigFile, PipelineConfig, ServerConfig, SourceConfig};
use crate::settings::{PipelineSettings, Settings};
use convstream_core::DeviceChoice;
use convstream_core::{Mask, MaskParams};

/// The problem of a config without pipelines.
pub(super) const NO_PIPELINE: &str = "no [[pipeline]] defined; a config needs at least one";

/// Whether a config must define a pipeline: a run's must, a server's need not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Pipeline,
    Nothing,
}

impl ConfigFile {
    /// Checks everything and builds every mask. `base_dir` resolves relative mask files
    /// (the config file's folder); `outputs` checks each sink's container and encoder (see
    /// [`OutputCheck`]). A config without pipelines is refused: a run would have nothing to do.
    pub fn validate(&self, base_dir: Option<&Path>, outputs: OutputCheck) -> Result<Settings, ConfigError> {
        self.validate_as(base_dir, outputs, Needs::Pipeline)
    }

    /// [`ConfigFile::validate`] for `serve` (and `check`, which cannot tell what a config is
    /// for): a config without pipelines is an API-only server, whose pipelines all come
    /// through the API.
    pub fn validate_for_serve(&self, base_dir: Option<&Path>, outputs: OutputCheck) -> Result<Settings, ConfigError> {
        self.validate_as(base_dir, outputs, Needs::Nothing)
    }

    fn validate_as(
        &self,
        base_dir: Option<&Path>,
        outputs: OutputCheck,
        needs: Needs,
    ) -> Result<Settings, ConfigError> {
        let mut problems = Vec::new();
        let named = build_named_masks(&self.masks, base_dir, &mut problems);
        if let Some(level) = &self.log.level {
            problems.extend(log_filter::problem(level));
        }
        validate_server(&self.server, &mut problems);
        limits::server_limits(&self.server, &mut problems);
        server_folders(&self.server, base_dir, &mut problems);
        if let Err(problem) = self.server.measured_nvdec_seats(base_dir) {
            problems.push(Problem::value("server.nvdec_seats_file", problem));
        }
        // A shard may own none of the pipelines, and holds only its own against
        // max_pipelines: `serve` checks both once it knows which shard it is.
        let sharded = self.server.shard.is_some();
        if self.pipelines.is_empty() && !sharded && needs == Needs::Pipeline {
            problems.push(Problem::general(NO_PIPELINE));
        }
        if self.pipelines.len() > self.server.max_pipelines && !sharded {
            problems.push(Problem::general(format!(
                "{} pipelines, more than server.max_pipelines ({}); raise it (up to {}; an H100 alone keeps about \
                 56 NVDEC 1080p25 pipelines, a host of several GPUs fewer each, as they share one NVDEC ceiling; \
                 `convstream doctor` says more, and the CPU's cores decode the software ones) or remove some",
                self.pipelines.len(),
                self.server.max_pipelines,
                limits::MAX_PIPELINES
            )));
        }
        let mut seen = HashSet::new();
        let mut pipelines = Vec::new();
        for (index, pipeline) in self.pipelines.iter().enumerate() {
            let place = limits::pipeline_place(index, &pipeline.name);
            if let Some(problem) = limits::name_problem(&pipeline.name) {
                problems.push(problem.at(place.clone()));
            } else if !seen.insert(pipeline.name.clone()) {
                problems.push(
                    Problem::general("the name is used by another pipeline; names must be unique").at(place.clone()),
                );
            }
            let mut local = Vec::new();
            limits::pipeline_limits(pipeline, &mut local);
            let settings = validate_pipeline(pipeline, &self.masks, &named, base_dir, &mut local);
            problems.extend(local.into_iter().map(|p| p.at(place.clone())));
            pipelines.extend(settings);
        }
        problems.extend(self.pipelines.iter().flat_map(outputs));
        problems.extend(crate::outputs::check_outputs(&self.pipelines));
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

fn validate_pipeline(
    pipeline: &PipelineConfig,
    defined: &BTreeMap<String, MaskParams>,
    named: &BTreeMap<String, Mask>,
    base_dir: Option<&Path>,
    problems: &mut Vec<Problem>,
) -> Option<PipelineSettings> {
    if pipeline.source.url.trim().is_empty() {
        problems.push(Problem::setting(
            "source.url",
            "is empty; give a path, `-` for stdin, or a URL",
        ));
    }
    if pipeline.sink.url.trim().is_empty() {
        problems.push(Problem::setting(
            "sink.url",
            "is empty; give a path, `-` for stdout, `null`, or a URL",
        ));
    }
    let decoder = pipeline.source.decoder.as_str();
    if decoder.trim().is_empty() {
        problems.push(Problem::setting(
            "source.decoder",
            "is empty; use auto, software, nvdec or an FFmpeg decoder name",
        ));
    }
    if pipeline.source.format.as_deref() == Some("rawvideo") && !pipeline.source.options.contains_key("video_size") {
        problems.push(Problem::value(
            "source.options.video_size",
            "raw video has no header to tell its picture size; give it as WxH (1920x1080), with the pixel format and frame rate when they are not yuv420p and 25",
        ));
    }
    validate_source_timing(&pipeline.source, problems);
    let filter = validate_filter(&pipeline.filter, defined, named, base_dir, problems)?;
    Some(PipelineSettings {
        name: pipeline.name.clone(),
        source: pipeline.source.clone(),
        filter: filter.filter,
        device: filter.device,
        streams: filter.streams,
        frames_per_stream: filter.frames_per_stream,
        pinned_frames: filter.pinned_frames,
        gpu: filter.gpu,
        ffmpeg_before: filter.ffmpeg_before,
        ffmpeg_after: filter.ffmpeg_after,
        graph_warnings: filter.graph_warnings,
        sink: pipeline.sink.clone(),
        config: pipeline.clone(),
    })
}

fn validate_server(server: &ServerConfig, problems: &mut Vec<Problem>) {
    if server.listen.parse::<std::net::SocketAddr>().is_err() {
        problems.push(Problem::value(
            "server.listen",
            format!(
                "`{}` is not an address and port such as 127.0.0.1:8686 or 0.0.0.0:8686",
                limits::quoted(&server.listen)
            ),
        ));
    }
    limits::seconds_problem("server.shutdown_timeout", server.shutdown_timeout, problems);
    if !(1..=limits::MAX_PIPELINES).contains(&server.max_pipelines) {
        problems.push(Problem::value(
            "server.max_pipelines",
            format!(
                "{} is out of range; allowed 1..={}",
                server.max_pipelines,
                limits::MAX_PIPELINES
            ),
        ));
    }
    if server.pinned_memory_mb == Some(0) || server.pinned_memory_mb.is_some_and(|mb| mb > limits::MAX_PINNED_MB) {
        problems.push(Problem::value(
            "server.pinned_memory_mb",
            format!(
                "{} is out of range; allowed 1..={} (leave it out for a quarter of the host's memory)",
                server.pinned_memory_mb.unwrap_or(0),
                limits::MAX_PINNED_MB
            ),
        ));
    }
    if let Some(count) = server
        .starting_at_once
        .filter(|n| !(1..=limits::MAX_PIPELINES).contains(n))
    {
        problems.push(Problem::value(
            "server.starting_at_once",
            format!("{count} is out of range; allowed 1..={}", limits::MAX_PIPELINES),
        ));
    }
    if let Some(seats) = server
        .nvdec_seats_per_gpu
        .filter(|n| !(1..=limits::MAX_PIPELINES).contains(n))
    {
        problems.push(Problem::value(
            "server.nvdec_seats_per_gpu",
            format!(
                "{seats} is out of range; allowed 1..={} (for a GPU that should keep no NVDEC pipeline, \
                 give those pipelines decoder = \"software\")",
                limits::MAX_PIPELINES
            ),
        ));
    }
    crate::shard_spec::config_problems(server.shard.as_deref(), server.shards, problems);
    if let Some(name) = &server.token_env {
        let valid = !name.is_empty() && !name.contains('=') && !name.contains('\0');
        if !valid {
            problems.push(Problem::value(
                "server.token_env",
                format!("`{}` is not an environment variable name", limits::quoted(name)),
            ));
        }
    }
}

fn validate_source_timing(source: &SourceConfig, problems: &mut Vec<Problem>) {
    limits::seconds_problem("source.idle_timeout", source.idle_timeout, problems);
    let reconnect = &source.reconnect;
    let before = problems.len();
    limits::seconds_problem("source.reconnect.initial", reconnect.initial, problems);
    limits::seconds_problem("source.reconnect.max", reconnect.max, problems);
    if problems.len() == before && reconnect.initial > reconnect.max {
        problems.push(Problem::value(
            "source.reconnect",
            format!("initial ({}) is more than max ({})", reconnect.initial, reconnect.max),
        ));
    }
}

/// `[server] mask_dir` and `allow_paths` must be folders that exist (relative ones are
/// resolved from the config file's folder, as mask files are).
fn server_folders(server: &ServerConfig, base_dir: Option<&Path>, problems: &mut Vec<Problem>) {
    let folders = server.mask_dir.iter().map(|dir| ("server.mask_dir", dir));
    let folders = folders.chain(server.allow_paths.iter().map(|dir| ("server.allow_paths", dir)));
    for (place, dir) in folders {
        let resolved = ServerConfig::resolve_folder(dir, base_dir);
        if !resolved.is_dir() {
            problems.push(Problem::value(
                place,
                format!(
                    "`{}` is not a folder that exists",
                    limits::quoted(&resolved.to_string_lossy())
                ),
            ));
        }
    }
}

impl ServerConfig {
    /// A `[server]` folder setting as a path: relative ones from the config file's folder.
    pub fn resolve_folder(dir: &Path, base_dir: Option<&Path>) -> std::path::PathBuf {
        match base_dir {
            Some(base) if dir.is_relative() => base.join(dir),
            _ => dir.to_path_buf(),
        }
    }
}

impl PipelineSettings {
    /// The sink as a short string for logs.
    pub fn describe(&self) -> String {
        let ffmpeg = |chain: &Option<String>| {
            chain.as_deref().map_or(String::new(), |chain| {
                format!(" ffmpeg[{}]", limits::escape_control(chain))
            })
        };
        format!(
            "{} -> {}{} [{} {} border={} planes={}]{} -> {}",
            self.name,
            limits::escape_control(&self.source.url),
            ffmpeg(&self.ffmpeg_before),
            limits::escape_control(&self.filter.description()),
            match self.device {
                DeviceChoice::Auto => "auto".to_string(),
                DeviceChoice::Cpu => "cpu".to_string(),
                DeviceChoice::AnyCuda => "cuda".to_string(),
                DeviceChoice::Cuda(n) => format!("cuda:{n}"),
            },
            self.filter.border,
            self.filter.planes,
            ffmpeg(&self.ffmpeg_after),
            limits::escape_control(&self.sink.url)
        )
    }
}

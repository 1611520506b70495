//! The e2e suite: decode-only against decode, filter and discard of real clips, with each
//! decoder, measured in the same run, plus the latency of a run paced at the frame rate, and
//! the same clips through whole commands (FFmpeg's CLI against `convstream run`, [`cli_runs`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::cli_runs::{self, CliCase, CliPrograms};
use super::workload::E2E_MASK;
use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::E2eRow;
use convstream_config::{FilterConfig, MaskSelection, PipelineConfig, PipelineSettings, SinkConfig, SourceConfig};
use convstream_core::Mask;
use convstream_core::{BorderMode, FilterSpec, PlaneSelection};
use convstream_core::{DeviceChoice, GpuTuning};
use convstream_media::SampleContent;
use convstream_media::{decode_only, run_pipeline, RunOptions};

/// A generated clip of `content` in the output folder (kept between runs), named by its
/// content and size: H.264 where the FFmpeg build has libx264, else MPEG-4 Part 2.
pub(super) fn generated_clip(
    out: &Path,
    content: SampleContent,
    width: u32,
    height: u32,
    frames: u32,
) -> Result<PathBuf, BenchError> {
    let path = out.join(format!("{}-{width}x{height}-{frames}.mp4", content.name()));
    if !path.exists() {
        tracing::info!("generating {}", path.display());
        let spec = convstream_media::SampleSpec {
            width,
            height,
            fps: 30,
            frames,
            prefer_h264: true,
        };
        convstream_media::generate_sample_content(&path, spec, content).map_err(BenchError::Other)?;
    }
    Ok(path)
}

/// The clips the suite runs: the one given, or a smooth and a textured one of each size.
fn inputs(options: &BenchOptions) -> Result<Vec<PathBuf>, BenchError> {
    let sizes: &[(u32, u32, u32)] = match (&options.input, options.quick) {
        (Some(path), _) => return Ok(vec![path.clone()]),
        (None, true) => &[(320, 180, 30)],
        (None, false) => &[(1920, 1080, 600), (3840, 2160, 240)],
    };
    let mut clips = Vec::new();
    for &(width, height, frames) in sizes {
        for content in [SampleContent::Smooth, SampleContent::Textured] {
            clips.push(generated_clip(&options.out, content, width, height, frames)?);
        }
    }
    Ok(clips)
}

pub fn e2e(options: &BenchOptions, gpu: Option<usize>, skipped: &mut Vec<String>) -> Result<Vec<E2eRow>, BenchError> {
    let inputs = inputs(options)?;
    let programs = CliPrograms::find(options.ffmpeg.as_deref(), options.rounds, &options.out);
    let decoders: &[&str] = if gpu.is_some() {
        &["software", "nvdec"]
    } else {
        &["software"]
    };
    let device = gpu.map_or(DeviceChoice::Cpu, DeviceChoice::Cuda);
    let mask = Mask::from_spec(E2E_MASK).expect("a valid preset");
    let mut rows = Vec::new();
    for input in &inputs {
        for &decoder in decoders {
            let source = SourceConfig {
                decoder: decoder.into(),
                ..SourceConfig::from_url(&input.display().to_string())
            };
            // Decode-only first and filtered second would favour the second (warm file cache):
            // decode once untimed so both timed runs start warm.
            if let Err(e) = decode_only(&source) {
                skipped.push(format!("e2e {} with the {decoder} decoder: {e}", input.display()));
                continue;
            }
            let (decoded, decode_seconds) = decode_only(&source)?;
            let report = filtered_run(&source, &mask, device, options.tuning)?;
            let decode_only_fps = decoded as f64 / decode_seconds;
            let case = CliCase {
                clip: input,
                decoder,
                device,
                mask: E2E_MASK,
                // Ten times the in-process run, plus start-up: far past any healthy run.
                bound: std::time::Duration::from_secs_f64(30.0 + 10.0 * report.seconds.max(decode_seconds)),
            };
            let cli = cli_runs::compare(&programs, &case, skipped);
            rows.push(E2eRow {
                input: input
                    .file_name()
                    .map_or_else(|| input.display().to_string(), |n| n.to_string_lossy().into_owned()),
                decoder: decoder.into(),
                frames: report.frames_out,
                decode_only_fps,
                filtered_fps: report.fps,
                ratio: report.fps / decode_only_fps,
                latency_p50_ms: report.latency_p50_ms,
                latency_p99_ms: report.latency_p99_ms,
                latency_slowest: report.latency_slowest.clone(),
                mask: mask.description().to_string(),
                engine: report.engine,
                cli: Some(cli),
            });
            tracing::info!(
                "e2e {} {decoder}: decode-only {decode_only_fps:.0} fps, filtered {:.0} fps",
                input.display(),
                report.fps
            );
        }
        // The GPU stage's latency when frames arrive at their real rate (30 fps), not as
        // fast as the decoder can go: the first input, paced.
        if gpu.is_some() && !options.quick && input == &inputs[0] {
            let paced = SourceConfig {
                decoder: "software".into(),
                realtime: true,
                ..SourceConfig::from_url(&input.display().to_string())
            };
            let report = filtered_run(&paced, &mask, device, options.tuning)?;
            rows.push(E2eRow {
                input: input
                    .file_name()
                    .map_or_else(|| input.display().to_string(), |n| n.to_string_lossy().into_owned()),
                decoder: "software, paced at the frame rate".into(),
                frames: report.frames_out,
                decode_only_fps: report.fps,
                filtered_fps: report.fps,
                ratio: 1.0,
                latency_p50_ms: report.latency_p50_ms,
                latency_p99_ms: report.latency_p99_ms,
                latency_slowest: report.latency_slowest.clone(),
                mask: mask.description().to_string(),
                engine: report.engine,
                cli: None,
            });
        }
    }
    Ok(rows)
}

/// Decode, filter with `mask` on every plane with 4 streams (default frames per stream) and
/// `tuning`, discard: one pipeline run.
fn filtered_run(
    source: &SourceConfig,
    mask: &Mask,
    device: DeviceChoice,
    tuning: GpuTuning,
) -> Result<convstream_media::PipelineReport, BenchError> {
    let settings = bench_settings(source, mask, device, tuning);
    Ok(run_pipeline(
        &settings,
        &bench_run_options(Arc::new(AtomicBool::new(false))),
    )?)
}

/// How the bench runs a pipeline: no progress, trace or stage times, stopped by `stop`.
pub(super) fn bench_run_options(stop: Arc<AtomicBool>) -> RunOptions {
    RunOptions {
        stop,
        progress: None,
        trace: None,
        stage_times: false,
        outputs: convstream_media::OutputPolicy::Command,
        io_grace: std::time::Duration::from_secs(5),
        protected: Vec::new(),
        overlap_gpu_start: false,
        keep_empty_outputs: false,
        start_gate: None,
    }
}

/// A pipeline named "bench": `source`, `mask` on every plane with 4 streams (default frames
/// per stream) and `tuning` on `device`, a null sink.
pub(super) fn bench_settings(
    source: &SourceConfig,
    mask: &Mask,
    device: DeviceChoice,
    tuning: GpuTuning,
) -> PipelineSettings {
    let sink = SinkConfig {
        url: "null".into(),
        format: None,
        codec: None,
        lossless: false,
        options: Default::default(),
        muxer_options: Default::default(),
        audio_codec: None,
        audio_options: Default::default(),
        audio: false,
        subtitles: false,
        overwrite: false,
    };
    let filter = FilterConfig {
        mask: MaskSelection::Named(mask.description().to_string()),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        streams: 4,
        gpu: tuning,
        ..FilterConfig::default()
    };
    PipelineSettings {
        name: "bench".into(),
        source: source.clone(),
        filter: FilterSpec {
            mask: mask.clone(),
            border: filter.border,
            planes: filter.planes,
            plane_masks: Default::default(),
        },
        device,
        streams: filter.streams,
        frames_per_stream: filter.frames_per_stream,
        pinned_frames: filter.pinned_frames,
        gpu: filter.gpu,
        ffmpeg_before: None,
        ffmpeg_after: None,
        graph_warnings: Vec::new(),
        sink: sink.clone(),
        config: PipelineConfig {
            name: "bench".into(),
            source: source.clone(),
            filter,
            sink,
        },
    }
}

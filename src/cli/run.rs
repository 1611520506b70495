//! `convstream run`: flags laid over the config, the side outputs checked, the pipelines run
//! with signals handled, and their summaries.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::args::RunArgs;
use super::logging::init_logging;
use super::{config_failure, usage, Failure};
use convstream::config::{ConfigError, ConfigFile, LogFormat, Overrides, Settings};
use convstream::pipeline::{run_all, OutputPolicy, RunOptions};

/// SIGINT/SIGTERM set the stop flag (drain and finalise); a second one exits at once.
/// SIGHUP (a closed terminal, or a habit from `serve`) is logged and ignored: its default
/// action would kill the run and lose the output.
pub(crate) fn install_signal_handlers() -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone())
            .context("installing signal handlers")?;
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let mut hangups = signal_hook::iterator::Signals::new([SIGHUP]).context("installing signal handlers")?;
    std::thread::Builder::new()
        .name("sighup".into())
        .spawn(move || {
            for _ in hangups.forever() {
                tracing::warn!("SIGHUP ignored: run has nothing to reload (SIGINT or SIGTERM stop it)");
            }
        })
        .context("installing signal handlers")?;
    Ok(stop)
}

pub(crate) fn load_settings(args: &RunArgs) -> Result<Settings, Failure> {
    let overrides = Overrides {
        input: args.input.clone(),
        output: args.output.clone(),
        input_format: args.input_format.clone(),
        output_format: args.format.clone(),
        mask: args.mask.clone(),
        planes: args.planes,
        plane_masks: args.plane_masks.clone(),
        border: args.border,
        device: args.device.clone(),
        streams: args.streams,
        frames_per_stream: args.frames_per_stream,
        decoder: args.decoder.clone(),
        codec: args.codec.clone(),
        lossless: args.lossless,
        overwrite: args.overwrite,
        encoder_options: encoder_options(args),
        no_audio: args.no_audio,
        start: args.ss,
        duration: args.duration,
        frames: args.frames,
        depth: args.depth,
        input_options: input_options(args),
    };
    let (file, base_dir) = match &args.config {
        Some(path) => {
            let mut file = ConfigFile::load(path).map_err(config_failure)?;
            overrides
                .apply(&mut file, args.pipeline.as_deref())
                .map_err(config_failure)?;
            (file, path.parent().map(Path::to_path_buf))
        }
        None => {
            if args.pipeline.is_some() {
                return Err(usage(anyhow::anyhow!("--pipeline needs --config")));
            }
            (overrides.standalone().map_err(config_failure)?, None)
        }
    };
    let settings = file.validate(base_dir.as_deref()).map_err(config_failure)?;
    // Before anything opens: an existing output is kept unless replacing it was asked for.
    convstream::config::refuse_existing_outputs(&settings.pipelines).map_err(config_failure)?;
    Ok(settings)
}

/// The encoder options the flags set, in the order given (later ones win).
fn encoder_options(args: &RunArgs) -> Vec<(String, String)> {
    let named = [("crf", &args.crf), ("b", &args.bitrate), ("preset", &args.preset)];
    options_of(named, &args.encoder_opts)
}

/// The demuxer options the flags set: raw video's geometry, then `--input-opt`s.
fn input_options(args: &RunArgs) -> Vec<(String, String)> {
    let raw = [
        ("video_size", &args.size),
        ("pixel_format", &args.pix_fmt),
        ("framerate", &args.framerate),
    ];
    options_of(raw, &args.input_opts)
}

/// FFmpeg options from flags of their own (those given) followed by `KEY=VALUE` ones.
fn options_of<const N: usize>(
    named: [(&str, &Option<String>); N],
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    named
        .into_iter()
        .filter_map(|(key, value)| value.as_ref().map(|v| (key.to_string(), v.clone())))
        .chain(extra.iter().cloned())
        .collect()
}

pub(crate) fn run(args: RunArgs) -> Result<(), Failure> {
    let settings = load_settings(&args)?;
    // The side outputs are checked as outputs are, before anything runs.
    let pipelines: Vec<_> = settings.pipelines.iter().map(|p| p.config.clone()).collect();
    let side_outputs = [("--stats-json", &args.stats_json), ("--trace", &args.trace)];
    let problems: Vec<String> = side_outputs
        .into_iter()
        .filter_map(|(flag, path)| path.as_deref().map(|path| (flag, path)))
        .flat_map(|(flag, path)| convstream::config::side_output_problems(flag, path, &pipelines, args.overwrite))
        .collect();
    if !problems.is_empty() {
        return Err(config_failure(ConfigError::Invalid(problems)));
    }
    init_logging(&settings.log);
    run_settings(&settings, !args.no_progress, args.stats_json.as_deref(), args.trace)
}

pub(crate) fn run_settings(
    settings: &Settings,
    progress: bool,
    stats_json: Option<&Path>,
    trace: Option<PathBuf>,
) -> Result<(), Failure> {
    let stop = install_signal_handlers()?;
    let results = run_all(
        &settings.pipelines,
        &RunOptions {
            stop,
            progress,
            trace,
            stage_times: false,
            outputs: OutputPolicy::Command,
            io_grace: std::time::Duration::try_from_secs_f64(settings.server.shutdown_timeout / 2.0)
                .unwrap_or(std::time::Duration::MAX),
            protected: Vec::new(),
        },
    );
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    // Exit 2 when every failure is a usage error (the input could never be read as asked).
    let mut all_usage = true;
    for result in results {
        match result {
            Ok(report) => {
                print_summary(&report, settings.log.format);
                reports.push(report);
            }
            Err(e) => {
                all_usage &= e.is_usage();
                failures.push(e.to_string());
            }
        }
    }
    if let Some(path) = stats_json {
        let json = serde_json::json!({ "pipelines": reports, "failures": failures });
        let text = serde_json::to_string_pretty(&json).context("encoding the stats")?;
        std::fs::write(path, text).with_context(|| format!("writing stats to {}", path.display()))?;
    }
    match failures.len() {
        0 => Ok(()),
        _ if all_usage => Err(usage(anyhow::anyhow!("{}", failures.join("\n")))),
        _ => Err(anyhow::anyhow!("{}", failures.join("\n")).into()),
    }
}

/// The run's summary on stderr: a line of text, or with JSON logs one JSON event like
/// every other line, the summary's numbers as fields.
pub(crate) fn print_summary(report: &convstream::stats::PipelineReport, format: LogFormat) {
    match format {
        LogFormat::Pretty => eprintln!("{}", convstream::text::redact_credentials(&report.summary())),
        LogFormat::Json => tracing::info!(
            pipeline = %report.pipeline,
            summary = true,
            frames_in = report.frames_in,
            frames_out = report.frames_out,
            frames_dropped = report.frames_dropped,
            seconds = report.seconds,
            fps = report.fps,
            engine = %report.engine,
            mask = %report.mask,
            output_encoder = report.output_encoder.as_deref().unwrap_or(""),
            output_kbps = report.output_kbps.unwrap_or(0.0),
            "{}",
            report.summary()
        ),
    }
}

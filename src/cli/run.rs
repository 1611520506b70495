//! `convstream run`: flags laid over the config, the side outputs checked, the pipelines run
//! with signals handled, and their summaries.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use super::args::RunArgs;
use super::logging::init_logging;
use super::progress::TerminalProgress;
use super::{config_failure, names, usage, Failure};
use convstream_config::{ConfigError, ConfigFile, FileIdentity, LogFormat, Overrides, Problem, Settings};
use convstream_media::output_problems;
use convstream_media::{run_all, OutputPolicy, Progress, RunOptions};

/// What a run's signal handlers share: the stop flag the pipelines watch, and the signal
/// that set it (0 while none came), for the exit code.
pub(crate) struct Stopping {
    pub(crate) stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Stopping {
    /// The exit code of a run stopped by a signal, as shells report one (128 + its number:
    /// 130 for SIGINT, 143 for SIGTERM), and its name.
    fn exit_code(&self) -> Option<(u8, &'static str)> {
        match self.signal.load(Ordering::SeqCst) as i32 {
            0 => None,
            libc::SIGINT => Some((130, "SIGINT")),
            libc::SIGTERM => Some((143, "SIGTERM")),
            other => Some(((128 + other).clamp(129, 255) as u8, "a signal")),
        }
    }
}

/// SIGINT/SIGTERM set the stop flag (drain and finalise); a second one exits at once.
/// SIGHUP (a closed terminal, or a habit from `serve`) is logged and ignored: its default
/// action would kill the run and lose the output.
pub(crate) fn install_signal_handlers() -> anyhow::Result<Stopping> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    let signal_seen = Arc::new(AtomicUsize::new(0));
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, stop.clone())
            .context("installing signal handlers")?;
        signal_hook::flag::register_usize(signal, signal_seen.clone(), signal as usize)
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
    Ok(Stopping {
        stop,
        signal: signal_seen,
    })
}

/// FFmpeg's filters after the mask: `--ffmpeg-after`, then those the output's size, pixel
/// format and frame rate add, in FFmpeg's order.
fn filters_after(args: &RunArgs) -> Result<Option<String>, Failure> {
    let tail = convstream_media::OutputFilterOptions {
        size: args.output_size.clone(),
        pix_fmt: args.output_pix_fmt.clone(),
        frame_rate: args.output_framerate.clone(),
    }
    .chain()
    .map_err(|e| usage(anyhow::anyhow!(e)))?;
    Ok(match (args.ffmpeg_after.clone(), tail) {
        (Some(chain), Some(tail)) => Some(format!("{chain},{tail}")),
        (chain, tail) => chain.or(tail),
    })
}

pub(crate) fn load_settings(args: &RunArgs) -> Result<Settings, Failure> {
    let overrides = Overrides {
        input: args.input.clone(),
        output: args.output.clone().or_else(|| args.output_file.clone()),
        input_format: args.input_format.clone(),
        output_format: args.format.clone(),
        mask: args.mask.clone(),
        planes: args.planes,
        plane_masks: args.plane_masks.clone(),
        border: args.border,
        ffmpeg_before: args.ffmpeg_before.clone(),
        ffmpeg_after: filters_after(args)?,
        graph: None,
        device: args.device.clone(),
        streams: args.streams,
        frames_per_stream: args.frames_per_stream,
        decoder: args.decoder.clone(),
        codec: args.codec.clone(),
        lossless: args.lossless,
        overwrite: args.overwrite,
        no_overwrite: args.no_overwrite,
        encoder_options: encoder_options(args),
        no_audio: args.no_audio,
        no_subtitles: args.no_subtitles,
        start: args.ss,
        duration: args.duration,
        frames: args.frames,
        depth: args.depth,
        decoder_threads: args.decoder_threads,
        input_options: input_options(args),
        muxer_options: args.muxer_opts.clone(),
        audio_codec: args.audio_codec.clone(),
        audio_options: args.audio_opts.clone(),
        realtime: args.realtime,
        looping: args.looping,
        loop_count: args.loop_count,
        copyts: args.copyts,
    };
    let (file, base_dir) = match &args.config {
        Some(path) => {
            let mut file = ConfigFile::load(path, output_problems).map_err(config_failure)?;
            overrides
                .apply(&mut file, args.pipeline.as_deref())
                .map_err(config_failure)?;
            (file, path.parent().map(Path::to_path_buf))
        }
        None => {
            if args.pipeline.is_some() {
                return Err(usage(anyhow::anyhow!("--pipeline needs --config")));
            }
            let file = overrides.standalone().map_err(|e| config_failure(names::as_flags(e)))?;
            (file, None)
        }
    };
    // A run made of flags alone hears about the flags, not the config's places.
    let speak_flags = |error| match args.config {
        Some(_) => config_failure(error),
        None => config_failure(names::as_flags(error)),
    };
    // The config file is an input of its own run: no sink may write it.
    if let Some(path) = &args.config {
        let problems = convstream_config::config_file_problems(path, &file.pipelines);
        if !problems.is_empty() {
            return Err(config_failure(ConfigError::Invalid(problems)));
        }
    }
    let settings = file
        .validate(base_dir.as_deref(), output_problems)
        .map_err(speak_flags)?;
    // Before anything opens: an existing output is kept unless replacing it was asked for.
    convstream_config::refuse_existing_outputs(&settings.pipelines).map_err(config_failure)?;
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
    let mut settings = load_settings(&args)?;
    if let Some(level) = &args.log_level {
        settings.log.level = Some(level.clone());
    }
    if let Some(format) = args.log_format {
        settings.log.format = format;
    }
    // The side outputs are checked as outputs are, before anything runs.
    let pipelines: Vec<_> = settings.pipelines.iter().map(|p| p.config.clone()).collect();
    let side_outputs = [("--stats-json", &args.stats_json), ("--trace", &args.trace)];
    let problems: Vec<Problem> = side_outputs
        .into_iter()
        .filter_map(|(flag, path)| path.as_deref().map(|path| (flag, path)))
        .flat_map(|(flag, path)| convstream_config::side_output_problems(flag, path, &pipelines, args.overwrite))
        .collect();
    let mut problems = problems;
    if let (Some(stats), Some(trace)) = (&args.stats_json, &args.trace) {
        // One file under any name: a link, a hard link, `./x`, a folder through a link.
        if FileIdentity::of(stats) == FileIdentity::of(trace) {
            problems.push(Problem::general(format!(
                "--stats-json and --trace name one file ({}): one would overwrite the other; give each its own",
                convstream_core::quoted(&stats.display().to_string())
            )));
        }
    }
    if !problems.is_empty() {
        return Err(config_failure(ConfigError::Invalid(problems)));
    }
    init_logging(&settings.log);
    let ending = RunEnding {
        allow_empty: args.allow_empty,
    };
    run_settings(
        &settings,
        !args.no_progress,
        args.stats_json.as_deref(),
        args.trace,
        ending,
    )
}

/// How a finished run counts beyond its failures.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunEnding {
    /// A pipeline that wrote no frame is a success too (`--allow-empty`).
    pub(crate) allow_empty: bool,
}

pub(crate) fn run_settings(
    settings: &Settings,
    progress: bool,
    stats_json: Option<&Path>,
    trace: Option<PathBuf>,
    ending: RunEnding,
) -> Result<(), Failure> {
    let stopping = install_signal_handlers()?;
    let results = run_all(
        &settings.pipelines,
        &RunOptions {
            stop: stopping.stop.clone(),
            progress: progress.then(|| Arc::new(TerminalProgress) as Arc<dyn Progress>),
            trace,
            stage_times: false,
            outputs: OutputPolicy::Command,
            io_grace: std::time::Duration::try_from_secs_f64(settings.server.shutdown_timeout / 2.0)
                .unwrap_or(std::time::Duration::MAX),
            protected: Vec::new(),
            overlap_gpu_start: true,
            keep_empty_outputs: ending.allow_empty,
            start_gate: None,
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
            // Stopped by a signal before its input opened: the user's wish, not a failure
            // (the exit code below still says a signal ended the run).
            Err(e) if e.is_stop() => match settings.log.format {
                LogFormat::Pretty => eprintln!("{}", convstream_core::for_terminal(&e.to_string())),
                LogFormat::Json => tracing::info!("{e}"),
            },
            Err(e) => {
                all_usage &= e.is_usage();
                failures.push(e.to_string());
            }
        }
    }
    if let Some(path) = stats_json {
        let json = serde_json::json!({ "pipelines": reports, "failures": failures });
        let text = serde_json::to_string_pretty(&json).context("encoding the stats")?;
        // The outputs and failures it names may quote URLs: their credentials stay hidden.
        let text = convstream_core::redact_credentials(&text);
        // Whole or not at all: a full disk leaves an older stats file as it was.
        convstream_core::write_whole(path, text.as_bytes())
            .with_context(|| format!("writing stats to {}", path.display()))?;
    }
    if !failures.is_empty() {
        return match all_usage {
            true => Err(usage(anyhow::anyhow!("{}", failures.join("\n")))),
            false => Err(anyhow::anyhow!("{}", failures.join("\n")).into()),
        };
    }
    // Stopped by a signal: the outputs are finalised, and the exit code says how it ended,
    // as a shell expects of a program it interrupted.
    if let Some((code, name)) = stopping.exit_code() {
        return Err(Failure {
            code,
            error: match reports.is_empty() {
                true => anyhow::anyhow!("stopped by {name}"),
                false => anyhow::anyhow!("stopped by {name}; the output was finalised"),
            },
        });
    }
    let empty: Vec<String> = reports
        .iter()
        // An output closed by its reader ended as its reader chose: not an empty run.
        .filter(|report| report.frames_out == 0 && report.stopped_early.is_none() && !ending.allow_empty)
        .map(|report| {
            // Why there was nothing: every packet failed to decode, or the part asked for was empty.
            let why = match report.corrupt_packets {
                0 => "the input had none in the part asked for: is --ss past its end?".to_string(),
                n => format!("none of its {n} packets decoded: does this decoder decode this stream?"),
            };
            format!(
                "pipeline {:?}: no frame was written to {} ({why}); it was left as it was (a file there is kept, none is created); pass --allow-empty to accept an empty output",
                report.pipeline,
                convstream_core::redact_credentials(&report.output)
            )
        })
        .collect();
    if !empty.is_empty() {
        return Err(anyhow::anyhow!("{}", empty.join("\n")).into());
    }
    Ok(())
}

/// The run's summary on stderr: a line of text, or with JSON logs one JSON event like
/// every other line, the summary's numbers as fields.
pub(crate) fn print_summary(report: &convstream_media::PipelineReport, format: LogFormat) {
    match format {
        LogFormat::Pretty => eprintln!("{}", convstream_core::for_terminal(&report.summary())),
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

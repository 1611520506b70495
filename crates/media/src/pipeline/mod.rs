//! Wires source -> engine -> sink as named threads joined by bounded channels. Dropping a
//! sender is the end-of-stream signal: the engine drains its lanes, the sink flushes the
//! encoder and writes the trailer. A stop flag (signals) ends reading the same way.
//!
//! The run's steps are modules of their own: `opening` (input, frame pool, engine, output),
//! `threads` (the stages' threads and queues), `filter_stage`, `monitor`; this file holds the
//! run's options, errors, its order of steps and its report.

mod filter_stage;
mod monitor;
mod nvdec_admission;
mod opening;
pub mod snapshot;
mod threads;

pub use monitor::{EngineStatus, FilterSwitch, PipelineMonitor, PipelineState};
pub use opening::fit_to_filter;

use crossbeam_channel::{bounded, Receiver};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use self::opening::{asks_for_nvdec, build, late_pool, open_sink, open_source, start_engine};
use self::threads::{finish, run_threads, spawn_source, Queues, Stages};
use crate::config::{PipelineSettings, SourceConfig};
use crate::ffmpeg::PassthroughPacket;
use crate::sink::{FileId, SinkError, SinkOutcome, WhenExists};
use crate::source::{Source, SourceError};
use crate::stats::{Counters, PipelineReport};
use convstream_core::engine::EngineError;
use convstream_core::frame::Frame;
use convstream_core::host_buffers::{BufferPool, HeapMemory};

/// Decoded frames waiting for the engine, and filtered frames waiting for the sink.
/// Small: enough to ride out jitter, bounded so a slow stage holds the others back.
const FRAME_QUEUE: usize = 8;
/// Audio packets run ahead of video by the frames in flight; this holds several seconds.
const PACKET_QUEUE: usize = 1024;

/// Pictures a decoder holds besides those it has output: its reference pictures (up to 16
/// in H.264 and HEVC) and one being decoded by each frame thread (up to 16).
const DECODER_PICTURES: usize = 32;

/// Frames the engine's pinned pool may hold: every frame the pipeline can hold at once (both
/// queues full, the lanes busy, one being encoded, one held by the filter stage, one being
/// dropped, and the decoder's own pictures, which it decodes into the pool), or fewer if the
/// config caps it. The pool grows only as far as it is used; past its limit, pictures and
/// frames go to ordinary memory and are staged through the lanes' own buffers.
pub fn pooled_frames(settings: &PipelineSettings) -> usize {
    let most_held = 2 * FRAME_QUEUE + settings.streams * settings.frames_per_stream + 3 + DECODER_PICTURES;
    settings.pinned_frames.map_or(most_held, |cap| cap.min(most_held))
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    // The cause is part of the message, not a `source()`, so that a chain printed whole
    // (`{:#}`) names it once.
    #[error("pipeline {pipeline:?}: {error}")]
    Source { pipeline: String, error: SourceError },
    #[error("pipeline {pipeline:?}: {error}")]
    Sink { pipeline: String, error: SinkError },
    #[error("pipeline {pipeline:?}: {error}")]
    Engine { pipeline: String, error: EngineError },
    #[error("pipeline {pipeline:?}: {message}")]
    Setup { pipeline: String, message: String },
    /// The filter asks for what the input's frames cannot give (a plane they lack).
    #[error("pipeline {pipeline:?}: filter: {message}")]
    FilterUnsuitable { pipeline: String, message: String },
    #[error("pipeline {pipeline:?}: the {stage} thread panicked: {message}")]
    Panicked {
        pipeline: String,
        stage: &'static str,
        message: String,
    },
    /// A stop came while the input was still opening (a live input that has not sent, a
    /// FIFO with no writer): nothing went wrong, and nothing was written. An error only in
    /// that there is no report to give.
    #[error("pipeline {pipeline:?}: stopped while opening its input; nothing was written")]
    StoppedBeforeInput { pipeline: String },
}

impl PipelineError {
    /// Whether the pipeline could never have run as configured (an unknown protocol, a
    /// stream the chosen decoder cannot take, an odd size for a 4:2:0 encoder): a usage
    /// error, exit code 2 for `run`.
    pub fn is_usage(&self) -> bool {
        match self {
            PipelineError::Source { error, .. } => error.is_usage(),
            PipelineError::Sink { error, .. } => error.is_usage(),
            PipelineError::FilterUnsuitable { .. } => true,
            _ => false,
        }
    }

    /// Whether the run ended because it was asked to stop, not because anything failed.
    pub fn is_stop(&self) -> bool {
        matches!(self, PipelineError::StoppedBeforeInput { .. })
    }
}

/// How a pipeline run is watched and stopped.
#[derive(Clone)]
pub struct RunOptions {
    /// Set by a signal: stop reading, drain, finalise.
    pub stop: Arc<AtomicBool>,
    /// Draw a progress bar (only when stderr is a terminal).
    pub progress: bool,
    /// Write a Chrome trace of every frame's engine stages here (either engine).
    pub trace: Option<std::path::PathBuf>,
    /// Time every frame's engine stages (for metrics); costs a few CUDA events per frame.
    pub stage_times: bool,
    /// How outputs treat a file already at their path.
    pub outputs: OutputPolicy,
    /// How long a stop lets output I/O block (a FIFO nobody reads) before it gives up.
    pub io_grace: Duration,
    /// Files no output may write, under any name (`serve`: its own config file).
    pub protected: Vec<FileId>,
    /// Take frames while a GPU engine is made, when the process has no GPU context yet
    /// (`run`: a fresh process waits about 0.2 s for the driver and the context): the first
    /// filtered on the CPU, the next held in memory for the GPU (`engine::starting`).
    /// `serve` leaves it off: its GPU context is made once for all its pipelines, and many
    /// starting at once would each hold frames.
    pub overlap_gpu_start: bool,
}

/// Who runs the pipeline, which decides what happens to a file already at its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPolicy {
    /// `run`: refuse an existing file unless the sink has `overwrite` (FFmpeg's -n / -y).
    Command,
    /// `serve`: keep an existing file and write the next free name beside it; `overwrite`
    /// replaces a file from before the service started the pipeline, never what the
    /// pipeline itself wrote before a restart. MP4 is fragmented so a crash leaves it playable.
    Service { restarted: bool },
}

impl OutputPolicy {
    fn when_exists(self, overwrite: bool) -> WhenExists {
        match (self, overwrite) {
            (OutputPolicy::Command, true) | (OutputPolicy::Service { restarted: false }, true) => WhenExists::Replace,
            (OutputPolicy::Command, false) => WhenExists::Refuse,
            (OutputPolicy::Service { .. }, _) => WhenExists::NextFreeName,
        }
    }
}

/// Frames the run will write, as far as known: the input's, cut by `start`, `duration`
/// and `frames`.
fn trimmed_length(expected: Option<u64>, source: &SourceConfig, frame_rate: f64) -> Option<u64> {
    let at_rate = |seconds: f64| (seconds * frame_rate).round().max(0.0) as u64;
    let after_start = match (expected, source.start) {
        (Some(n), Some(start)) => Some(n.saturating_sub(at_rate(start))),
        (n, _) => n,
    };
    let by_duration = source.duration.filter(|_| frame_rate > 0.0).map(at_rate);
    let lengths = [after_start, by_duration, source.frames];
    // Looping repeats the input: only `frames` bounds it.
    if source.looping {
        return source.frames;
    }
    lengths.into_iter().flatten().min()
}

/// The progress line: frames, frames per second and speed against real time, as
/// FFmpeg's (`fps=250 speed=10x`).
fn progress_bar(enabled: bool, expected: Option<u64>, frame_rate: f64, name: &str) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let rate = |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = write!(w, "{:.0} fps", state.per_sec());
    };
    let speed = move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        if frame_rate > 0.0 {
            let _ = write!(w, "{:.2}x", state.per_sec() / frame_rate);
        }
    };
    let bar = match expected {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} frames, {rate}, speed {speed}, ETA {eta}")
                .expect("valid template")
                .with_key("rate", rate)
                .with_key("speed", speed)
                .progress_chars("=> "),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{prefix} {spinner} {pos} frames, {rate}, speed {speed}")
                .expect("valid template")
                .with_key("rate", rate)
                .with_key("speed", speed),
        ),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    bar.with_prefix(name.to_string())
}

/// Runs one pipeline to the end of its input (or a stop) and reports what happened.
pub fn run_pipeline(settings: &PipelineSettings, options: &RunOptions) -> Result<PipelineReport, PipelineError> {
    // Every message of the pipeline, from any of its threads, names it once, through this
    // span (as `serve` does).
    let span = tracing::info_span!("pipeline", pipeline = %settings.name);
    let _entered = span.enter();
    let monitor = Arc::new(PipelineMonitor::new(&settings.name, &settings.filter));
    // Nobody switches filters in a plain run: the sender goes at once.
    let (_, switches) = bounded(1);
    run_monitored(settings, options, &monitor, switches)
}

/// Runs one pipeline, publishing its progress in `monitor` and applying the filter switches
/// that arrive on `switches`. The monitor's state ends as `Finished` (the input ended),
/// `Stopped` (the stop flag was set) or `Failed`.
pub fn run_monitored(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &Arc<PipelineMonitor>,
    switches: Receiver<FilterSwitch>,
) -> Result<PipelineReport, PipelineError> {
    // A panic anywhere in the pipeline ends this pipeline only: it is failed, with the
    // panic's message, and the process and the other pipelines go on.
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        inject_panic(&settings.name, "pipeline");
        run_stages(settings, options, monitor, switches)
    }))
    .unwrap_or_else(|payload| {
        Err(PipelineError::Panicked {
            pipeline: settings.name.clone(),
            stage: "pipeline",
            message: panic_message(payload.as_ref()),
        })
    });
    match &result {
        // An operator's stop is no failure: `last_error` stays empty.
        Err(e) if e.is_stop() => monitor.set_state(PipelineState::Stopped),
        Ok(_) if options.stop.load(Ordering::Relaxed) => monitor.set_state(PipelineState::Stopped),
        Ok(_) => monitor.set_state(PipelineState::Finished),
        Err(e) => {
            monitor.set_error(&e.to_string());
            monitor.set_state(PipelineState::Failed);
        }
    }
    result
}

/// The text of a panic's payload (a `&str` or `String` for `panic!` and failed asserts).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    // A panic's message is the program's own, and is what tells the bug: shown whole up to
    // a bound (a user value it quotes is escaped and cut already), not cut to a value's 48.
    convstream_core::text::quoted_up_to(text, PANIC_MESSAGE_CHARS)
}

/// The most characters of a panic's message kept in `last_error` and the logs.
const PANIC_MESSAGE_CHARS: usize = 2000;

/// Fault injection for the reliability tests: `CONVSTREAM_INJECT_PANIC=NAME:STAGE,...`
/// makes pipeline NAME panic in STAGE (`pipeline`, `source`, `filter` or `sink`). Read once;
/// unset (always, in service) it costs one branch per stage start.
fn inject_panic(pipeline: &str, stage: &str) {
    static PLAN: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    let plan = PLAN.get_or_init(|| {
        std::env::var("CONVSTREAM_INJECT_PANIC")
            .unwrap_or_default()
            .split(',')
            .filter_map(|entry| entry.split_once(':'))
            .map(|(name, stage)| (name.trim().to_string(), stage.trim().to_string()))
            .collect()
    });
    if plan.iter().any(|(name, at)| name == pipeline && at == stage) {
        panic!("injected panic in the {stage} stage (CONVSTREAM_INJECT_PANIC)");
    }
}

fn run_stages(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &Arc<PipelineMonitor>,
    switches: Receiver<FilterSwitch>,
) -> Result<PipelineReport, PipelineError> {
    let started = monitor.started_at;
    // The GPU's set-up that needs nothing of the input (the driver, the context, NVRTC:
    // 0.2-0.4 s) goes on while the input is opened and probed.
    convstream_core::engine::warm_up(settings.device);
    let (source, _nvdec_seat) = open_source(settings, options, monitor)?;
    let info = source.info().clone();
    let queues = Queues::new();
    let filter_ended = Arc::new(AtomicBool::new(false));
    let (source_thread, engine) = if asks_for_nvdec(&settings.source) {
        // NVDEC's pictures stay on the engine's GPU: the engine first, then the decoding.
        let (source, engine) = start_engine(settings, options, monitor, source, None)?;
        let source_thread = spawn_source(settings, options, monitor, source, &queues, &filter_ended)?;
        (source_thread, Ok(engine))
    } else {
        // Decoding starts now, into a pool the engine's memory joins once it is made.
        let pool = late_pool(settings, &info);
        let source = source.with_frame_pool(pool.as_ref().map(|late| late.pool.clone()));
        let source_thread = spawn_source(settings, options, monitor, source, &queues, &filter_ended)?;
        let engine = build(settings, options, monitor, &info, pool);
        (source_thread, engine)
    };
    let sink = engine.and_then(|engine| Ok((engine, open_sink(settings, options, monitor, &info)?)));
    let (engine, sink) = match sink {
        Ok(parts) => parts,
        Err(e) => {
            // The source stops at its next frame, finding nobody to take it (a source that
            // drops frames itself looks at the flag).
            filter_ended.store(true, Ordering::Relaxed);
            drop(queues);
            let _ = source_thread.join();
            return Err(e);
        }
    };
    tracing::info!(
        "{} {}x{} {} ({}) -> {} on {} -> {}",
        info.url,
        info.width,
        info.height,
        info.format,
        info.decoder,
        settings.filter.description(),
        engine.name(),
        sink.path()
            .map_or(settings.sink.url.clone(), |p| p.display().to_string())
    );
    monitor.set_state(PipelineState::Running);
    let setup_seconds = started.elapsed().as_secs_f64();
    let running = Running {
        output_encoder: sink.encoder(),
        output_size: format!("{}x{}", info.width, info.height),
        frame_rate: f64::from(info.frame_rate),
    };
    let bar = progress_bar(
        options.progress,
        trimmed_length(info.expected_frames, &settings.source, running.frame_rate),
        running.frame_rate,
        &settings.name,
    );
    let stages = Stages {
        source: source_thread,
        engine,
        sink,
        filter_ended,
    };
    let ended = run_threads(settings, monitor, switches, stages, queues, &bar)?;
    bar.finish_and_clear();
    let outcome = finish(settings, options, ended)?;
    Ok(report(
        settings,
        options,
        monitor,
        started,
        setup_seconds,
        running,
        outcome,
    ))
}

/// What the report needs of the running pipeline's parts, kept once the threads own them.
struct Running {
    output_encoder: Option<String>,
    /// The picture size written, `WIDTHxHEIGHT`.
    output_size: String,
    frame_rate: f64,
}

/// The finished run's report, from its counters.
fn report(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
    started: Instant,
    setup_seconds: f64,
    running: Running,
    outcome: SinkOutcome,
) -> PipelineReport {
    let counters = &monitor.counters;
    let seconds = started.elapsed().as_secs_f64();
    let counted = counters.snapshot();
    let written = counted.frames_written;
    let stopped_early = match outcome {
        SinkOutcome::OutputClosed => Some("the output was closed by its reader".to_string()),
        SinkOutcome::Finished if options.stop.load(Ordering::Relaxed) => Some("interrupted by a signal".to_string()),
        SinkOutcome::Finished => None,
    };
    let to_seconds = |ns: u64| ns as f64 / 1e9;
    let startup = counters.startup.since(started);
    PipelineReport {
        pipeline: settings.name.clone(),
        input: settings.source.url.clone(),
        output: settings.sink.url.clone(),
        // The engine it ended on (a run that started on the CPU for its first frames names the GPU's).
        engine: monitor
            .engine()
            .map_or_else(|| "none".to_string(), |engine| engine.name),
        mask: settings.filter.description(),
        output_kbps: running.output_encoder.as_ref().and_then(|_| {
            let seconds = written as f64 / running.frame_rate;
            (written > 0 && counted.video_bytes_out > 0 && seconds.is_finite() && seconds > 0.0)
                .then(|| counted.video_bytes_out as f64 * 8.0 / seconds / 1000.0)
        }),
        output_encoder: running.output_encoder,
        output_size: running.output_size,
        frames_in: counted.frames_decoded,
        frames_out: written,
        frames_dropped: counted.frames_dropped,
        corrupt_packets: counted.corrupt_packets,
        read_errors: counted.read_errors,
        damaged_frames: counted.damaged_frames,
        decoder_restarts: counted.decoder_restarts,
        ended_early: counted.ended_early,
        packets_passed_through: counted.packets_passed_through,
        seconds,
        setup_seconds,
        time_to_first_frame: startup.first_frame,
        startup,
        fps: if seconds > setup_seconds {
            written as f64 / (seconds - setup_seconds)
        } else {
            0.0
        },
        source_seconds: to_seconds(counted.source_busy_ns),
        filter_seconds: to_seconds(counted.filter_busy_ns),
        sink_seconds: to_seconds(counted.sink_busy_ns),
        latency_p50_ms: counters.latency_quantile_ms(0.5),
        latency_p99_ms: counters.latency_quantile_ms(0.99),
        latency_slowest: counters.slowest_latencies(crate::stats::SLOWEST_FRAMES),
        stopped_early,
    }
}

/// Runs every pipeline at once, each on its own threads, and returns each one's result.
pub fn run_all(pipelines: &[PipelineSettings], options: &RunOptions) -> Vec<Result<PipelineReport, PipelineError>> {
    if pipelines.len() == 1 {
        return vec![run_pipeline(&pipelines[0], options)];
    }
    thread::scope(|scope| {
        let handles: Vec<_> = pipelines
            .iter()
            .map(|p| scope.spawn(move || run_pipeline(p, options)))
            .collect();
        handles
            .into_iter()
            .zip(pipelines)
            .map(|(h, p)| {
                h.join().unwrap_or_else(|payload| {
                    Err(PipelineError::Panicked {
                        pipeline: p.name.clone(),
                        stage: "pipeline",
                        message: panic_message(payload.as_ref()),
                    })
                })
            })
            .collect()
    })
}

/// Decodes `source` to the end and discards the frames: the decoder's own speed, the
/// baseline filtered runs are compared with. Frames are made in reused heap buffers, as a
/// filtered run makes them in reused pinned ones, so neither pays for fresh allocations.
/// Returns the frames and the seconds from the input being open to the last frame.
pub fn decode_only(source: &SourceConfig) -> Result<(u64, f64), PipelineError> {
    let stop = Arc::new(AtomicBool::new(false));
    let opened =
        Source::open(source, stop.clone(), &convstream_core::engine::nvdec_probe(), None).map_err(|error| {
            PipelineError::Source {
                pipeline: "decode-only".into(),
                error,
            }
        })?;
    let info = opened.info();
    let shapes = info.format.plane_shapes(info.width, info.height);
    let frame_bytes: usize = shapes.iter().map(|plane| plane.pooled_bytes()).sum();
    let pool = BufferPool::new(Box::new(HeapMemory), (FRAME_QUEUE + 4) * frame_bytes);
    let opened = opened.with_frame_pool(Some(pool));
    let counters = Counters::default();
    let (frames_tx, frames_rx) = bounded::<Frame>(FRAME_QUEUE);
    // No receiver for other streams: the source skips their packets.
    let (packets_tx, _) = bounded::<PassthroughPacket>(1);
    let started = Instant::now();
    let result = thread::scope(|scope| {
        let counted = scope.spawn(|| frames_rx.iter().count() as u64);
        let decoded = opened.run(&frames_tx, &packets_tx, &stop, &counters, None);
        drop(frames_tx);
        decoded.map(|()| counted.join().unwrap_or(0))
    });
    let frames = result.map_err(|error| PipelineError::Source {
        pipeline: "decode-only".into(),
        error,
    })?;
    Ok((frames, started.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::{panic_message, OutputPolicy, WhenExists};

    #[test]
    fn a_panic_message_is_kept_whole_up_to_its_bound() {
        let message = format!(
            "index out of bounds: the len is 3 but the index is 7 in {}",
            "x".repeat(150)
        );
        let payload: Box<dyn std::any::Any + Send> = Box::new(message.clone());
        assert_eq!(panic_message(payload.as_ref()), message);
        let huge: Box<dyn std::any::Any + Send> = Box::new("y".repeat(100_000));
        assert!(panic_message(huge.as_ref()).len() < 2100);
    }

    #[test]
    fn an_existing_file_is_replaced_only_with_consent_and_never_by_a_restart() {
        assert_eq!(OutputPolicy::Command.when_exists(false), WhenExists::Refuse);
        assert_eq!(OutputPolicy::Command.when_exists(true), WhenExists::Replace);
        let first = OutputPolicy::Service { restarted: false };
        assert_eq!(first.when_exists(false), WhenExists::NextFreeName);
        assert_eq!(first.when_exists(true), WhenExists::Replace);
        let again = OutputPolicy::Service { restarted: true };
        assert_eq!(again.when_exists(false), WhenExists::NextFreeName);
        assert_eq!(again.when_exists(true), WhenExists::NextFreeName);
    }
}

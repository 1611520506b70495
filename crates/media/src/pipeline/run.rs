//! Running pipelines: one to its end ([`run_pipeline`]), one watched and steered by a
//! monitor ([`run_monitored`]), or several at once ([`run_all`]). A run opens its parts
//! (`opening`), runs the stages' threads (`threads`) and reports (`report`).

use crossbeam_channel::{bounded, Receiver};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use super::error::PipelineError;
use super::monitor::{FilterSwitch, PipelineMonitor, PipelineState};
use super::opening::{self, Opened};
use super::options::RunOptions;
use super::panics::{inject_panic, panic_message};
use super::progress::trimmed_length;
use super::report::{report, Running};
use super::threads::{finish, run_threads};
use crate::stats::PipelineReport;
use convstream_config::PipelineSettings;

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
    // Counted among the pipelines sharing the host's cores while it runs.
    let _share = crate::source::PipelineShare::join();
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
        Err(e) if e.is_stop() || cut_short_by_stop(e, &options.stop) => monitor.set_state(PipelineState::Stopped),
        Ok(_) if options.stop.load(Ordering::Relaxed) => monitor.set_state(PipelineState::Stopped),
        Ok(_) => monitor.set_state(PipelineState::Finished),
        Err(e) => {
            monitor.set_error(&e.to_string());
            monitor.set_state(PipelineState::Failed);
        }
    }
    result
}

/// Whether `error` is what a stop does to a run's input or output: the stop came first, and
/// the error is the input's or output's (a named pipe whose reader never came or was given
/// one that left, I/O given up after the stop's grace, a read the stop interrupted). Such a
/// run was stopped, not failed. A panic or an engine error stays a failure.
pub fn cut_short_by_stop(error: &PipelineError, stop: &AtomicBool) -> bool {
    stop.load(Ordering::SeqCst) && matches!(error, PipelineError::Source { .. } | PipelineError::Sink { .. })
}

/// The run itself: its parts opened, its stages' threads run to the end, its report.
fn run_stages(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &Arc<PipelineMonitor>,
    switches: Receiver<FilterSwitch>,
) -> Result<PipelineReport, PipelineError> {
    let started = monitor.started_at;
    // The NVDEC seat, when one was taken, is held until the run returns.
    let Opened {
        info,
        stages,
        queues,
        nvdec_seat: _nvdec_seat,
        start_turn: _start_turn,
    } = opening::open(settings, options, monitor)?;
    monitor.set_state(PipelineState::Running);
    let setup_seconds = started.elapsed().as_secs_f64();
    let running = Running {
        output_encoder: stages.sink.encoder(),
        output_size: format!("{}x{}", info.width, info.height),
        frame_rate: f64::from(info.frame_rate),
    };
    let progress = options.progress.as_ref().map(|progress| {
        progress.start(
            &settings.name,
            trimmed_length(info.expected_frames, &settings.source, running.frame_rate),
            running.frame_rate,
        )
    });
    let ended = run_threads(settings, monitor, switches, stages, queues, progress.clone())?;
    if let Some(progress) = &progress {
        progress.finish();
    }
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

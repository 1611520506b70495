//! The report of a finished run, made from its counters and what the run kept of its parts.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::monitor::PipelineMonitor;
use super::options::RunOptions;
use crate::sink::SinkOutcome;
use crate::stats::PipelineReport;
use convstream_config::PipelineSettings;

/// What the report needs of the running pipeline's parts, kept once the threads own them.
pub(super) struct Running {
    pub(super) output_encoder: Option<String>,
    /// The picture size written, `WIDTHxHEIGHT`.
    pub(super) output_size: String,
    pub(super) frame_rate: f64,
}

/// The finished run's report, from its counters.
pub(super) fn report(
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

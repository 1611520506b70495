//! The running pipeline: the queues between its stages, the source's thread (started as soon
//! as the input is open), the filter and sink threads, and what each returned.

use crossbeam_channel::{bounded, Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use super::after_stage::AfterFilters;
use super::capacity::{FRAME_QUEUE, PACKET_QUEUE};
use super::error::PipelineError;
use super::filter_stage;
use super::monitor::{FilterSwitch, PipelineMonitor};
use super::options::RunOptions;
use super::panics::{inject_panic, panic_message};
use super::progress::RunProgress;
use crate::ffmpeg::PassthroughPacket;
use crate::sink::{self, SinkError, SinkOutcome};
use crate::source::{DropOldest, Source, SourceError};
use convstream_config::{DropPolicy, PipelineSettings};
use convstream_core::Frame;
use convstream_core::{write_chrome_trace, Engine, EngineError, TraceSpan};

/// The queues between the stages: decoded frames, filtered frames, and the packets of the
/// streams copied as they are (audio, subtitles).
pub(super) struct Queues {
    pub(super) decoded: (Sender<Frame>, Receiver<Frame>),
    pub(super) filtered: (Sender<Frame>, Receiver<Frame>),
    pub(super) packets: (Sender<PassthroughPacket>, Receiver<PassthroughPacket>),
}

impl Queues {
    pub(super) fn new() -> Queues {
        Queues {
            decoded: bounded(FRAME_QUEUE),
            filtered: bounded(FRAME_QUEUE),
            packets: bounded(PACKET_QUEUE),
        }
    }
}

pub(super) fn spawn_error(pipeline: &str) -> impl FnOnce(std::io::Error) -> PipelineError + '_ {
    move |e| PipelineError::Setup {
        pipeline: pipeline.to_string(),
        message: format!("cannot start a thread: {e}"),
    }
}

/// Starts the source's thread: it reads and decodes into the decoded queue from now on.
pub(super) fn spawn_source(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
    source: Source,
    queues: &Queues,
    filter_ended: &Arc<AtomicBool>,
) -> Result<thread::JoinHandle<Result<(), SourceError>>, PipelineError> {
    let name = &settings.name;
    let (counters, stop) = (monitor.counters.clone(), options.stop.clone());
    // Each stage logs inside the caller's span (serve opens one per pipeline).
    let span = tracing::Span::current();
    let source_name = name.clone();
    let (decoded, packets) = (queues.decoded.0.clone(), queues.packets.0.clone());
    // A source dropping frames looks at the queue and at whether the filter stage ended.
    let drop_oldest = (settings.source.drop == DropPolicy::Oldest).then(|| DropOldest {
        queue: queues.decoded.1.clone(),
        consumer_ended: filter_ended.clone(),
    });
    thread::Builder::new()
        .name(format!("{name}-source"))
        .spawn(move || {
            let _entered = span.enter();
            inject_panic(&source_name, "source");
            source.run(&decoded, &packets, &stop, &counters, drop_oldest)
        })
        .map_err(spawn_error(name))
}

/// A pipeline's parts once all are made: the source's thread (running), the engine and the sink.
pub(super) struct Stages {
    pub(super) source: thread::JoinHandle<Result<(), SourceError>>,
    pub(super) engine: Box<dyn Engine>,
    pub(super) sink: Box<dyn sink::Sink>,
    /// FFmpeg's filters between the engine and the sink, if any.
    pub(super) after: Option<AfterFilters>,
    /// Set when the filter stage ends (see `DropOldest`).
    pub(super) filter_ended: Arc<AtomicBool>,
}

/// What each stage's thread returned, every one joined.
pub(super) struct Ended {
    pub(super) source: Result<(), SourceError>,
    pub(super) engine: Result<Vec<TraceSpan>, EngineError>,
    pub(super) sink: Result<SinkOutcome, SinkError>,
    pub(super) after: Result<(), String>,
}

/// Runs filter and sink on threads of their own beside the source's, joined by bounded
/// queues, until the input ends (or a stop), and joins them all, so the sink has finished
/// the output whatever failed.
pub(super) fn run_threads(
    settings: &PipelineSettings,
    monitor: &Arc<PipelineMonitor>,
    switches: Receiver<FilterSwitch>,
    stages: Stages,
    queues: Queues,
    progress: Option<Arc<dyn RunProgress>>,
) -> Result<Ended, PipelineError> {
    let name = &settings.name;
    let counters = monitor.counters.clone();
    let Queues {
        decoded: (decoded_tx, decoded_rx),
        filtered: (filtered_tx, filtered_rx),
        packets: (packets_tx, packets_rx),
    } = queues;
    // Only the source sends decoded frames and packets: the queues close when it ends.
    drop((decoded_tx, packets_tx));
    let Stages {
        source: source_thread,
        engine,
        sink,
        after,
        filter_ended,
    } = stages;
    // A sink that copies no stream must not hold the packet queue open: the source would
    // block on it once full. A closed queue makes the source skip those packets.
    let packets_rx = if sink.copies_packets() {
        packets_rx
    } else {
        drop(packets_rx);
        bounded(0).1
    };
    let span = tracing::Span::current();
    let filter_thread = {
        let (monitor, span) = (monitor.clone(), span.clone());
        thread::Builder::new()
            .name(format!("{name}-filter"))
            .spawn(move || {
                let _entered = span.enter();
                inject_panic(&monitor.name, "filter");
                let result = filter_stage::run_engine(engine, &decoded_rx, &filtered_tx, &monitor, switches);
                filter_ended.store(true, Ordering::Relaxed);
                result
            })
            .map_err(spawn_error(name))?
    };
    // FFmpeg's filters after the engine, on a thread of their own between it and the sink.
    let (filtered_rx, after_thread) = match after {
        None => (filtered_rx, None),
        Some(after) => {
            let (after_tx, after_rx) = bounded(FRAME_QUEUE);
            let span = span.clone();
            let thread = thread::Builder::new()
                .name(format!("{name}-after"))
                .spawn(move || {
                    let _entered = span.enter();
                    after.run(&filtered_rx, &after_tx)
                })
                .map_err(spawn_error(name))?;
            (after_rx, Some(thread))
        }
    };
    let sink_thread = {
        let (counters, sink_name) = (counters.clone(), name.clone());
        thread::Builder::new()
            .name(format!("{name}-sink"))
            .spawn(move || {
                let _entered = span.enter();
                inject_panic(&sink_name, "sink");
                let on_frame = || {
                    if let Some(progress) = &progress {
                        progress.frame_written();
                    }
                };
                sink.run(&filtered_rx, &packets_rx, &counters, &on_frame)
            })
            .map_err(spawn_error(name))?
    };

    let panicked = |stage, payload: Box<dyn std::any::Any + Send>| PipelineError::Panicked {
        pipeline: name.clone(),
        stage,
        message: panic_message(payload.as_ref()),
    };
    // Join every stage before reporting, so the sink has finished the output whatever failed.
    let source_joined = source_thread.join();
    let engine_joined = filter_thread.join();
    let after_joined = after_thread.map_or(Ok(Ok(())), |thread| thread.join());
    let sink_joined = sink_thread.join();
    Ok(Ended {
        source: source_joined.map_err(|p| panicked("source", p))?,
        engine: engine_joined.map_err(|p| panicked("filter", p))?,
        sink: sink_joined.map_err(|p| panicked("sink", p))?,
        after: after_joined.map_err(|p| panicked("after-filters", p))?,
    })
}

/// The run's outcome from its stages' results: the first failure that explains the others,
/// else how the output ended. Writes the trace when one was asked for.
pub(super) fn finish(
    settings: &PipelineSettings,
    options: &RunOptions,
    ended: Ended,
) -> Result<SinkOutcome, PipelineError> {
    let name = &settings.name;
    // An engine failure stops the flow, so it is reported first; a sink failure (a closed
    // output) makes the source stop, so it comes before the source's result.
    let spans = ended.engine.map_err(|error| PipelineError::Engine {
        pipeline: name.clone(),
        error,
    })?;
    if let Some(path) = &options.trace {
        write_chrome_trace(path, name, &spans).map_err(|e| PipelineError::Setup {
            pipeline: name.clone(),
            message: format!("cannot write the trace {}: {e}", path.display()),
        })?;
    }
    ended.after.map_err(|message| PipelineError::AfterFilters {
        pipeline: name.clone(),
        message,
    })?;
    let outcome = ended.sink.map_err(|error| PipelineError::Sink {
        pipeline: name.clone(),
        error,
    })?;
    ended.source.map_err(|error| PipelineError::Source {
        pipeline: name.clone(),
        error,
    })?;
    Ok(outcome)
}

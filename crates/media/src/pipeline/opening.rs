//! A pipeline's start, in its order ([`open`]): the GPU's warm-up, the input opened in the
//! layout the filter needs (an NVDEC pipeline first takes a seat on its GPU's NVDEC
//! engines), its turn among the pipelines starting (`start_gate`), decoding started into a frame pool made before the engine exists, the engine,
//! and the output. Each step is a function of its own below.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::after_stage::AfterFilters;
use super::capacity::pooled_frames;
use super::error::PipelineError;
use super::monitor::{EngineStatus, PipelineMonitor};
use super::nvdec_admission::{NvdecSeat, SeatBoard, SeatWanted};
use super::options::{OutputPolicy, RunOptions};
use super::seat_pace::CountersPace;
use super::threads::{spawn_source, Queues, Stages};
use crate::ffmpeg::SourceInfo;
use crate::sink::FileId;
use crate::sink::{self, OutputGuard, OutputOptions, SinkKind, StopWatch};
use crate::source::Source;
use crate::stats::StartupMarks;
use convstream_config::{OutputTarget, PipelineSettings, SourceConfig};
use convstream_core::{build_engine, Engine, EngineOptions, FrameShape};
use convstream_core::{HeapMemory, LatePool};

/// A pipeline once every part is made: the source's thread (decoding already), the engine
/// and the output, the queues between them, and what the input is.
pub(super) struct Opened {
    /// The input as the filter takes it.
    pub(super) info: SourceInfo,
    pub(super) stages: Stages,
    pub(super) queues: Queues,
    /// An NVDEC pipeline's seat on its GPU's NVDEC engines, held for the run.
    pub(super) nvdec_seat: Option<NvdecSeat>,
    /// Its turn among the pipelines starting (see `start_gate`), held for the run: the
    /// first frame written ends it sooner.
    pub(super) start_turn: Option<super::start_gate::StartTurn>,
}

/// Starts a pipeline's parts in their order. The GPU's set-up that needs nothing of the
/// input goes first, on a thread of its own; then the input opens. An NVDEC pipeline makes
/// its engine next and only then starts decoding (its pictures go to the engine's GPU);
/// any other starts decoding at once, into a pool the engine's memory joins once it is made.
/// The output opens last. If the engine or the output fails, the source's thread is stopped
/// and joined before the error returns.
pub(super) fn open(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
) -> Result<Opened, PipelineError> {
    // The GPU's set-up that needs nothing of the input (the driver, the context, NVRTC:
    // 0.2-0.4 s) goes on while the input is opened and probed.
    convstream_core::warm_up(settings.device);
    let (source, nvdec_seat) = open_source(settings, options, monitor)?;
    // The costly part of a start (decoder threads, the engine, the frame pool's first
    // pinned buffers, the first frames) waits for its turn among the pipelines starting.
    let start_turn = match &options.start_gate {
        Some(gate) => match gate.wait_for_turn(monitor, &options.stop) {
            Some(turn) => Some(turn),
            None => {
                return Err(PipelineError::StoppedBeforeInput {
                    pipeline: settings.name.clone(),
                })
            }
        },
        None => None,
    };
    // The engine runs on the GPU whose NVDEC seat the pipeline holds: its decoder's context.
    let on_seat_gpu;
    let settings = match &nvdec_seat {
        Some(seat) => {
            on_seat_gpu = PipelineSettings {
                device: convstream_core::DeviceChoice::Cuda(seat.ordinal()),
                ..settings.clone()
            };
            &on_seat_gpu
        }
        None => settings,
    };
    let info = source.info().clone();
    // A real-time NVDEC pipeline shows admission its pace: what the host's seats are learned
    // from. Its frames written are measured against the input's rate, so a pipeline whose
    // filters after the engine may add, drop or retime frames (`fps`, `-r`) shows none.
    let retimed = settings.ffmpeg_after.is_some();
    if let Some(seat) = nvdec_seat.as_ref().filter(|_| info.real_time && !retimed) {
        let counters = monitor.counters.clone();
        seat.show_pace(Arc::new(CountersPace::new(counters, f64::from(info.frame_rate))));
    }
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
    let sink = engine.and_then(|engine| {
        let (after, written) = after_filters(settings, &info)?;
        Ok((engine, after, open_sink(settings, options, monitor, &written)?))
    });
    let (engine, after, sink) = match sink {
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
    let stages = Stages {
        source: source_thread,
        engine,
        sink,
        after,
        filter_ended,
    };
    Ok(Opened {
        info,
        stages,
        queues,
        nvdec_seat,
        start_turn,
    })
}

/// FFmpeg's filters after the engine, made for its frames, and what the sink then writes.
fn after_filters(
    settings: &PipelineSettings,
    info: &SourceInfo,
) -> Result<(Option<AfterFilters>, SourceInfo), PipelineError> {
    let Some(chain) = &settings.ffmpeg_after else {
        return Ok((None, info.clone()));
    };
    let (after, written) = AfterFilters::new(chain, info).map_err(|message| PipelineError::FilterUnsuitable {
        pipeline: settings.name.clone(),
        message,
    })?;
    Ok((Some(after), written))
}

/// Whether the source's decoder is NVDEC (`nvdec`, or a `*_cuvid` decoder by name).
fn asks_for_nvdec(source: &SourceConfig) -> bool {
    source.decoder == "nvdec" || source.decoder.ends_with("_cuvid")
}

/// Opens the input (waiting for a live one) in the layout the filter needs, and checks the
/// filter can work on its frames. An NVDEC pipeline first takes a seat on its GPU's NVDEC
/// engines (see `nvdec_admission`), held for the run.
fn open_source(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
) -> Result<(Source, Option<NvdecSeat>), PipelineError> {
    let name = &settings.name;
    let counters = &monitor.counters;
    // An NVDEC pipeline takes its seat first; its decoder is opened once, in the seat's GPU
    // context (the engine's too: see `open`), rather than on a context of its own and again
    // on the engine's.
    let seat = if asks_for_nvdec(&settings.source) {
        match take_nvdec_seat(settings, options, monitor) {
            Some(seat) => Some(seat),
            None if options.stop.load(Ordering::Relaxed) => {
                return Err(PipelineError::StoppedBeforeInput { pipeline: name.clone() })
            }
            None => None,
        }
    } else {
        None
    };
    refuse_protected_input(settings, options)?;
    let gpu = seat
        .as_ref()
        .and_then(|seat| convstream_core::gpu_context(seat.ordinal()));
    // Whatever a stop interrupted while opening ("Immediate exit requested" from FFmpeg, a
    // wait for a live sender cut short) is the stop, not a fault of the input.
    let source = Source::connect_guarded(
        &settings.source,
        &options.stop,
        counters,
        false,
        &convstream_core::nvdec_probe(),
        gpu,
        &options.protected,
    )
    .map_err(|error| {
        if options.stop.load(Ordering::Relaxed) {
            PipelineError::StoppedBeforeInput { pipeline: name.clone() }
        } else {
            PipelineError::Source {
                pipeline: name.clone(),
                error,
            }
        }
    })?;
    StartupMarks::mark(&counters.startup.input_opened);
    counters.reconnecting.store(false, Ordering::Relaxed);
    let source = fit_to_filter(settings, source).map_err(|message| PipelineError::FilterUnsuitable {
        pipeline: name.clone(),
        message,
    })?;
    let info = source.info();
    for warning in settings
        .graph_warnings
        .iter()
        .cloned()
        .chain(settings.filter.warnings(info.format))
    {
        tracing::warn!("{warning}");
    }
    monitor.set_format(info.format);
    Ok((source, seat))
}

/// Refuses an input that is one of the files the run may never touch (the service's config
/// file), by device and inode, so that no name or hard link leads a pipeline to read it.
fn refuse_protected_input(settings: &PipelineSettings, options: &RunOptions) -> Result<(), PipelineError> {
    if options.protected.is_empty() {
        return Ok(());
    }
    let OutputTarget::File(path) = OutputTarget::of(&settings.source.url) else {
        return Ok(());
    };
    match FileId::at(&path) {
        Some(id) if options.protected.contains(&id) => Err(PipelineError::ProtectedInput {
            pipeline: settings.name.clone(),
            path: path.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// The source as the filter needs its frames: at the bit depth the settings ask for, and
/// planar where the filter gives the chroma planes masks of their own. `Err` lists every way
/// the filter cannot work on them, joined by "; ". Shared by pipelines and the Python
/// module's reader.
pub fn fit_to_filter(settings: &PipelineSettings, source: Source) -> Result<Source, String> {
    let source = source.with_ffmpeg_filters(settings.ffmpeg_before.as_deref(), settings.ffmpeg_after.as_deref())?;
    let source = match settings.source.depth {
        Some(bits) if bits != source.info().format.bits() => match source.info().format.with_depth(bits) {
            Some(format) => source.with_format(format, &format!("{bits} bits per sample were asked for")),
            None => source,
        },
        _ => source,
    };
    let source = match settings.filter.planar_format_for(source.info().format) {
        Some(format) => source.with_format(format, "the filter gives its planes different masks"),
        None => source,
    };
    let info = source.info();
    let mut problems = settings.filter.problems_with(info.format);
    if !info.format.has_luma_plane() && settings.filter.planes != convstream_core::PlaneSelection::All {
        problems.push(format!(
            "planes = {} needs a YUV or gray input, but {} decodes to packed {}; use planes = all",
            settings.filter.planes, info.url, info.format
        ));
    }
    if problems.is_empty() {
        Ok(source)
    } else {
        Err(problems.join("; "))
    }
}

/// A seat on the NVDEC engines of the GPU the pipeline's device allows (see
/// `nvdec_admission`): `cuda:N` waits for GPU N's, `auto`/`cuda` take any GPU's. While it
/// waits, the monitor and one warning say why. `None` on the CPU, without a GPU, or when
/// stopped first.
fn take_nvdec_seat(settings: &PipelineSettings, options: &RunOptions, monitor: &PipelineMonitor) -> Option<NvdecSeat> {
    use convstream_core::DeviceChoice;
    let wanted = match settings.device {
        DeviceChoice::Cpu => return None,
        DeviceChoice::Cuda(ordinal) => SeatWanted::Gpu(ordinal),
        DeviceChoice::Auto | DeviceChoice::AnyCuda => SeatWanted::AnyGpu,
    };
    let inventory = convstream_core::gpu_inventory();
    if inventory.is_empty() {
        return None;
    }
    let engines = convstream_core::Placements::global().active();
    let seat = SeatBoard::global().admit(&inventory, wanted, &engines, &options.stop, &mut |why| {
        tracing::warn!(
            "pipeline {} waits for {why}: every NVDEC seat it may take is taken (decoder = \"software\" decodes \
             on the CPU instead)",
            settings.name
        );
        monitor.set_waiting_for(Some(why.to_string()));
    });
    monitor.set_waiting_for(None);
    seat
}

/// The pool a pipeline's frames are decoded into from the first one, before the engine is
/// made. A GPU engine puts its page-locked memory in it once made; for the CPU engine (or a
/// host without a GPU driver) it holds ordinary memory from the start, so decoded pictures
/// are reused blocks rather than a fresh allocation and a copy each (at 2160p, 12 MB of page
/// faults and copying per frame). `None` with `pinned_frames = 0`.
fn late_pool(settings: &PipelineSettings, info: &SourceInfo) -> Option<LatePool> {
    let frames = pooled_frames(settings);
    if frames == 0 {
        return None;
    }
    let frame_bytes: usize = info
        .format
        .plane_shapes(info.width, info.height)
        .iter()
        .map(|plane| plane.pooled_bytes())
        .sum();
    let pool = LatePool::new(frames * frame_bytes);
    let on_the_cpu = settings.device == convstream_core::DeviceChoice::Cpu || !convstream_core::gpu_driver_present();
    if on_the_cpu {
        pool.memory.install(Box::new(HeapMemory));
    }
    Some(pool)
}

/// How much memory frames may wait in for a GPU still starting (see `engine::starting`).
/// Holding pays where nothing downstream works on the frames (a null sink): the cores go to
/// the decoder, which a 13x13 mask on the CPU would slow to a quarter of its rate. An
/// encoder, though, would wait for them, idle: there the CPU filters while the GPU starts,
/// keeping the encoder busy (a filtered transcode measured 108-114% of FFmpeg's unfiltered
/// one that way; BENCHMARKS.md, "Start-up and whole commands").
fn held_for_gpu(settings: &PipelineSettings) -> usize {
    match SinkKind::of_sink(&settings.sink) {
        SinkKind::Null => convstream_core::HELD_BYTES,
        SinkKind::Encoded => 0,
    }
}

/// Whether a frame's latency matters more than the host's cores: frames that come at their
/// pace (a live input, or a file read at its frame rate). The CUDA engine's completion thread
/// then polls a lane before blocking on it; for a file read as fast as it decodes it blocks at
/// once, leaving the cores to the decoder (`GpuTuning::spin`; BENCHMARKS.md, "Start-up and
/// whole commands").
fn low_latency(settings: &PipelineSettings) -> bool {
    settings.source.realtime || settings.source.is_live()
}

/// The options the engine is made with, for the input's frames.
fn engine_options(
    settings: &PipelineSettings,
    options: &RunOptions,
    info: &SourceInfo,
    pool: Option<LatePool>,
) -> EngineOptions {
    EngineOptions {
        shape: Some(FrameShape {
            format: info.format,
            width: info.width,
            height: info.height,
        }),
        trace: options.trace.is_some(),
        stage_times: options.stage_times,
        pooled_frames: pooled_frames(settings),
        frames_per_stream: settings.frames_per_stream,
        tuning: settings.gpu,
        low_latency: low_latency(settings),
        overlap_gpu_start: options.overlap_gpu_start && pool.is_some(),
        held_for_gpu: held_for_gpu(settings),
        frame_pool: pool,
        ..EngineOptions::new(settings.device, settings.streams, &settings.name)
    }
}

/// Builds the engine for the input's frames (in `pool`, when given) and says so to the monitor.
fn build(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
    info: &SourceInfo,
    pool: Option<LatePool>,
) -> Result<Box<dyn Engine>, PipelineError> {
    let engine =
        build_engine(settings.filter.clone(), &engine_options(settings, options, info, pool)).map_err(|error| {
            PipelineError::Engine {
                pipeline: settings.name.clone(),
                error,
            }
        })?;
    let ready = StartupMarks::mark(&monitor.counters.startup.engine_ready);
    if engine.settled() {
        monitor.counters.startup.engine_settled.get_or_init(|| ready);
    }
    monitor.set_engine(
        EngineStatus {
            device: engine.device(),
            name: engine.name(),
        },
        engine.preparer(),
    );
    Ok(engine)
}

/// Builds the engine before decoding starts (NVDEC: the decoder's pictures go to the
/// engine's GPU) and has the source decode into the engine's memory.
fn start_engine(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
    source: Source,
    pool: Option<LatePool>,
) -> Result<(Source, Box<dyn Engine>), PipelineError> {
    let info = source.info().clone();
    let engine = build(settings, options, monitor, &info, pool)?;
    let source = source
        .with_frame_pool(engine.frame_pool())
        // NVDEC's pictures are NV12, P010 or P016: kept on the GPU only when the engine takes
        // them so.
        .with_device_pictures(
            engine
                .device_pictures_on()
                .filter(|_| info.format.layout() == convstream_core::PixelLayout::SemiPlanar420),
        );
    Ok((source, engine))
}

/// Opens the output for the input's frames.
fn open_sink(
    settings: &PipelineSettings,
    options: &RunOptions,
    monitor: &PipelineMonitor,
    info: &SourceInfo,
) -> Result<Box<dyn sink::Sink>, PipelineError> {
    let output_options = OutputOptions {
        when_exists: options.outputs.when_exists(settings.sink.overwrite),
        fragment_mp4: matches!(options.outputs, OutputPolicy::Service { .. }),
        stop: StopWatch::new(options.stop.clone(), options.io_grace),
        guard: match options.outputs {
            OutputPolicy::Command => OutputGuard::command(),
            OutputPolicy::Service { .. } => OutputGuard::service(options.protected.clone()),
        },
        keep_empty: options.keep_empty_outputs,
        // A GPU may encode where the run may use one: not on `--device cpu`, nor where no
        // driver is installed (the NVENC probe would only fail there).
        gpu: settings.device != convstream_core::DeviceChoice::Cpu && convstream_core::gpu_driver_present(),
    };
    // An output that nobody came to read before the stop stays an error (its message says
    // so): unlike a live input that has not sent yet, a consumer was expected to be there.
    let sink = sink::open(&settings.sink, info, &output_options).map_err(|error| PipelineError::Sink {
        pipeline: settings.name.clone(),
        error,
    })?;
    StartupMarks::mark(&monitor.counters.startup.output_opened);
    monitor.set_output_path(sink.path());
    Ok(sink)
}

#[cfg(test)]
mod tests {
    use crate::pipeline::test_config::one_pipeline;

    #[test]
    fn only_inputs_that_come_at_their_pace_are_latency_bound() {
        let latency_bound = |source: &str| {
            super::low_latency(&one_pipeline(&format!(
                "[[pipeline]]\nname = \"cam1\"\n[pipeline.source]\n{source}\n[pipeline.sink]\nurl = \"null\"\n"
            )))
        };
        assert!(!latency_bound("url = \"in.mp4\""), "a file read as fast as it decodes");
        assert!(
            latency_bound("url = \"in.mp4\"\nrealtime = true"),
            "a file read at its frame rate"
        );
        assert!(
            latency_bound("url = \"udp://0.0.0.0:5000\"\nformat = \"mpegts\""),
            "a network input"
        );
        assert!(
            latency_bound("url = \"in.mp4\"\nlive = true"),
            "a file told to act live"
        );
    }
}

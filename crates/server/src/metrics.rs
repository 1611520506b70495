//! `/metrics`: every pipeline's counters, gauges and histograms in the Prometheus
//! (OpenMetrics) text format, read from the pipelines' monitors at scrape time through a
//! prometheus-client collector, so a removed pipeline simply stops being reported. The
//! [`registry`] adds the server's own counters ([`ServerCounters`]), the build, and the
//! process, GPU and shard collectors.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::gpu_metrics::GpuCollector;
use super::nvdec_metrics::NvdecSeatCollector;
use super::process_metrics::ProcessCollector;
use super::shard::{ShardCollector, Sharding};
use super::supervisor::Supervisor;
use convstream_media::CounterSnapshot;
use convstream_media::{PipelineMonitor, PipelineState};

/// Counters of the server itself (not of one pipeline).
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// Reloads by outcome: `applied` or `rejected`.
    pub reloads: Family<Vec<(&'static str, &'static str)>, Counter>,
    /// Requests refused for a missing or wrong token.
    pub unauthorized: Counter,
    /// Times the whole process stood still for a second or more (see `pause_watch`).
    pub pauses: Counter,
    /// Seconds it stood still in all.
    pub paused_seconds: Counter<f64, AtomicU64>,
}

/// Builds the registry `/metrics` encodes.
/// With a sharded config every series carries `shard="INDEX/COUNT"`.
pub fn registry(
    supervisor: Arc<Supervisor>,
    server: &ServerCounters,
    shard: Option<Arc<Sharding>>,
    commit: &'static str,
) -> Registry {
    let mut registry = match &shard {
        Some(shard) => Registry::with_labels(std::iter::once(("shard".into(), shard.label().into()))),
        None => Registry::default(),
    };
    registry.register(
        "convstream_config_reloads",
        "Configuration reloads, by result",
        server.reloads.clone(),
    );
    registry.register(
        "convstream_http_unauthorized",
        "API requests refused for a missing or wrong bearer token",
        server.unauthorized.clone(),
    );
    registry.register(
        "convstream_process_pauses",
        "Times the whole process stood still for a second or more (the host paused it or gave it no CPU)",
        server.pauses.clone(),
    );
    registry.register(
        "convstream_process_paused_seconds",
        "Seconds the whole process stood still in all",
        server.paused_seconds.clone(),
    );
    registry.register(
        "convstream_build",
        "The version and commit of this binary, and whether it has the CUDA engine",
        Info::new(vec![
            ("version", env!("CARGO_PKG_VERSION")),
            ("commit", commit),
            ("cuda", if cfg!(feature = "cuda") { "true" } else { "false" }),
        ]),
    );
    registry.register_collector(Box::new(PipelineCollector { supervisor }));
    registry.register_collector(Box::new(ProcessCollector));
    registry.register_collector(Box::new(GpuCollector));
    registry.register_collector(Box::new(NvdecSeatCollector::global()));
    if let Some(shard) = shard {
        registry.register_collector(Box::new(ShardCollector(shard)));
    }
    registry
}

#[derive(Debug)]
struct PipelineCollector {
    supervisor: Arc<Supervisor>,
}

type Labels = Vec<(&'static str, String)>;

fn labels(monitor: &PipelineMonitor) -> Labels {
    let device = monitor.engine().map_or_else(|| "none".to_string(), |e| e.device);
    vec![("pipeline", monitor.name.clone()), ("device", device)]
}

/// One pipeline at scrape time: its monitor, and its counters read once.
struct Scraped<'a> {
    labels: Labels,
    monitor: &'a PipelineMonitor,
    counted: CounterSnapshot,
}

/// A per-pipeline value read at scrape time.
type Read = fn(&Scraped) -> u64;

const COUNTERS: &[(&str, &str, Read)] = &[
    ("convstream_frames_decoded", "Frames decoded from the input", |p| {
        p.counted.frames_decoded
    }),
    ("convstream_frames_filtered", "Frames the engine filtered", |p| {
        p.counted.frames_filtered
    }),
    ("convstream_frames_written", "Frames the sink wrote", |p| {
        p.counted.frames_written
    }),
    (
        "convstream_frames_dropped",
        "Decoded frames dropped because the filter or sink fell behind (drop = \"oldest\")",
        |p| p.counted.frames_dropped,
    ),
    (
        "convstream_frames_late",
        "Real-time frames that came more than 4 frame intervals (0.1-1 s) past their due time: the input's pace not kept",
        |p| p.counted.frames_late,
    ),
    (
        "convstream_frames_held_up",
        "Frames that took a second or more from decoded to filtered (the log says where the time went)",
        |p| p.counted.frames_held_up,
    ),
    (
        "convstream_corrupt_packets",
        "Input packets flagged corrupt or rejected by the decoder, skipped",
        |p| p.counted.corrupt_packets,
    ),
    ("convstream_read_errors", "Input read errors skipped", |p| {
        p.counted.read_errors
    }),
    (
        "convstream_damaged_frames",
        "Frames decoded with errors concealed",
        |p| p.counted.damaged_frames,
    ),
    ("convstream_input_bytes", "Bytes of input packets read", |p| {
        p.counted.bytes_in
    }),
    (
        "convstream_output_bytes",
        "Bytes of packets written to the output",
        |p| p.counted.bytes_out,
    ),
    (
        "convstream_source_reconnects",
        "Times a live input was lost and opened again",
        |p| p.counted.reconnects,
    ),
    (
        "convstream_decoder_restarts",
        "Times an NVDEC decoder failed mid-stream and was made anew (no frame lost by it)",
        |p| p.counted.decoder_restarts,
    ),
    (
        "convstream_frame_pool_allocations",
        "Blocks the engine's frame pool allocated (page-locked on the GPU; steady once settled)",
        |p| p.counted.pool_allocations,
    ),
    (
        "convstream_frame_pool_releases",
        "Blocks the engine's frame pool gave back as idle",
        |p| p.counted.pool_releases,
    ),
    (
        "convstream_frame_pool_fallbacks",
        "Frame planes that found no free pool block and went to ordinary memory",
        |p| p.counted.pool_fallbacks,
    ),
    (
        "convstream_pipeline_restarts",
        "Times the pipeline was restarted by a reload (changed source, sink or device)",
        |p| p.monitor.restarts.load(Ordering::Relaxed),
    ),
];

const GAUGES: &[(&str, &str, Read)] = &[
    (
        "convstream_decoded_queue_frames",
        "Decoded frames waiting for the filter",
        |p| p.counted.decoded_queue,
    ),
    (
        "convstream_filtered_queue_frames",
        "Filtered frames waiting for the sink",
        |p| p.counted.filtered_queue,
    ),
    (
        "convstream_pinned_bytes",
        "Page-locked host memory the engine holds (its frame pool and staging buffers)",
        |p| p.counted.pinned_bytes,
    ),
    (
        "convstream_ordinary_pool_bytes",
        "Ordinary memory the frame pool holds for frames past its page-locked blocks (a start, a burst), given back once idle",
        |p| p.counted.ordinary_pool_bytes,
    ),
    (
        "convstream_gpu_memory_bytes",
        "GPU memory the engine's frames go through (its lanes' input and output buffers)",
        |p| p.counted.gpu_memory_bytes,
    ),
    (
        "convstream_reconnecting",
        "1 while a live input is lost and being reconnected",
        |p| p.monitor.reconnecting() as u64,
    ),
];

impl Collector for PipelineCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let monitors = self.supervisor.monitors();
        let scraped: Vec<Scraped> = monitors
            .iter()
            .map(|monitor| Scraped {
                labels: labels(monitor),
                monitor,
                counted: monitor.counters.snapshot(),
            })
            .collect();
        encode_counters(&mut encoder, &scraped)?;
        encode_gauges(&mut encoder, &scraped)?;
        encode_pinned_by_device(&mut encoder, &scraped)?;
        encode_rates_and_states(&mut encoder, &scraped)?;
        encode_histograms(&mut encoder, &scraped)
    }
}

/// The counter families of [`COUNTERS`], one series per pipeline.
fn encode_counters(encoder: &mut DescriptorEncoder, scraped: &[Scraped]) -> Result<(), std::fmt::Error> {
    for (name, help, read) in COUNTERS {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for pipeline in scraped {
            family
                .encode_family(&pipeline.labels)?
                .encode_counter::<NoLabelSet, _, u64>(&read(pipeline), None)?;
        }
    }
    Ok(())
}

/// The gauge families of [`GAUGES`], one series per pipeline.
fn encode_gauges(encoder: &mut DescriptorEncoder, scraped: &[Scraped]) -> Result<(), std::fmt::Error> {
    for (name, help, read) in GAUGES {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for pipeline in scraped {
            family
                .encode_family(&pipeline.labels)?
                .encode_gauge(&(read(pipeline) as i64))?;
        }
    }
    Ok(())
}

/// Pinned memory is a host-wide budget per GPU (and for the pool of CPU pipelines): the
/// per-pipeline gauge summed by device, so an operator sees it without a query.
fn encode_pinned_by_device(encoder: &mut DescriptorEncoder, scraped: &[Scraped]) -> Result<(), std::fmt::Error> {
    let mut by_device: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for pipeline in scraped {
        let device = pipeline
            .labels
            .iter()
            .find(|(key, _)| *key == "device")
            .map(|(_, v)| v.clone());
        *by_device.entry(device.unwrap_or_default()).or_default() += pipeline.counted.pinned_bytes;
    }
    let mut family = encoder.encode_descriptor(
        "convstream_device_pinned_bytes",
        "Page-locked host memory held by all the pipelines on each device",
        None,
        MetricType::Gauge,
    )?;
    for (device, bytes) in by_device {
        family
            .encode_family(&vec![("device", device)])?
            .encode_gauge(&(bytes as i64))?;
    }
    // The process's whole page-locked memory against its budget ([server] pinned_memory_mb):
    // past it, frame pools lend ordinary memory.
    let budget = convstream_core::PinnedBudget::host();
    let host_wide = [
        (
            "convstream_pinned_memory_budget_bytes",
            "Page-locked host memory the frame pools may hold together ([server] pinned_memory_mb)",
            budget.limit().min(i64::MAX as usize) as i64,
        ),
        (
            "convstream_pinned_memory_used_bytes",
            "Page-locked host memory the process holds now (frame pools and staging buffers)",
            budget.in_use() as i64,
        ),
    ];
    for (name, help, value) in host_wide {
        encoder
            .encode_descriptor(name, help, None, MetricType::Gauge)?
            .encode_gauge(&value)?;
    }
    Ok(())
}

/// The monitor's own gauges: the recent frame rate, the time to the first frame, and a
/// one-hot series per pipeline state.
fn encode_rates_and_states(encoder: &mut DescriptorEncoder, scraped: &[Scraped]) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "convstream_frames_per_second",
        "Frames written per second over the last 5 s",
        None,
        MetricType::Gauge,
    )?;
    for Scraped { labels, monitor, .. } in scraped {
        family.encode_family(labels)?.encode_gauge(&monitor.fps())?;
    }
    let mut family = encoder.encode_descriptor(
        "convstream_time_to_first_frame_seconds",
        "From the pipeline's start to its first frame written (absent until one is)",
        None,
        MetricType::Gauge,
    )?;
    for Scraped { labels, monitor, .. } in scraped {
        if let Some(seconds) = monitor.startup().first_frame {
            family.encode_family(labels)?.encode_gauge(&seconds)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "convstream_pipeline_state",
        "1 for the state each pipeline is in",
        None,
        MetricType::Gauge,
    )?;
    for Scraped { labels, monitor, .. } in scraped {
        let state = monitor.state();
        for candidate in PipelineState::ALL {
            let mut with_state = labels.clone();
            with_state.push(("state", format!("{candidate:?}").to_lowercase()));
            family
                .encode_family(&with_state)?
                .encode_gauge(&((candidate == state) as i64))?;
        }
    }
    Ok(())
}

/// The time per frame in each stage, and from decoder to sink, as histograms.
fn encode_histograms(encoder: &mut DescriptorEncoder, scraped: &[Scraped]) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "convstream_stage_seconds",
        "Time per frame in each stage: decode, upload, gpu, download (CUDA events), cpu_filter, encode",
        None,
        MetricType::Histogram,
    )?;
    for Scraped { labels, monitor, .. } in scraped {
        for (stage, histogram) in monitor.counters.stages.named() {
            let mut with_stage = labels.clone();
            with_stage.push(("stage", stage.to_string()));
            histogram.encode(family.encode_family(&with_stage)?)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "convstream_end_to_end_seconds",
        "From a frame leaving the decoder to it written by the sink",
        None,
        MetricType::Histogram,
    )?;
    for Scraped { labels, monitor, .. } in scraped {
        monitor
            .counters
            .stages
            .end_to_end
            .encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

/// Counts outcomes for the reload counter family.
pub fn count_reload(server: &ServerCounters, applied: bool) {
    let result = if applied { "applied" } else { "rejected" };
    server.reloads.get_or_create(&vec![("result", result)]).inc();
}

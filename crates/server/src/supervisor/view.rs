//! What the API shows of a pipeline: its settings, where it runs, and its counters.

use serde::Serialize;
use std::sync::atomic::Ordering;

use super::contract::{Origin, PipelineId};
use super::handle::Handle;
use convstream_config::FilterConfig;
use convstream_core::{BorderMode, PlaneSelection};
use convstream_media::CounterSnapshot;
use convstream_media::PipelineState;

/// What the API shows of a pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineView {
    pub name: String,
    /// Which pipeline the name stands for: the same through its stops, starts and restarts,
    /// another once it is deleted and added again.
    pub id: PipelineId,
    pub origin: Origin,
    pub state: PipelineState,
    pub reconnecting: bool,
    pub source: String,
    pub sink: String,
    pub mask: String,
    pub border: BorderMode,
    pub planes: PlaneSelection,
    /// Planes with a mask of their own, and that mask.
    pub plane_masks: std::collections::BTreeMap<String, String>,
    /// What the config asks for (`auto`, `cuda:1`, ...).
    pub device_requested: String,
    /// Where it runs (`cpu`, `cuda:0`), once the engine is up.
    pub device: Option<String>,
    pub engine: Option<String>,
    pub fps: f64,
    pub uptime_seconds: f64,
    /// Seconds from the start to the input open, the engine ready, the output open and the
    /// first frame written (`null` until reached).
    pub startup: convstream_media::StartupTimes,
    pub counters: CounterView,
    pub last_error: Option<String>,
    /// What a starting pipeline waits for (an NVDEC seat while the host's are taken).
    pub waiting_for: Option<String>,
}

/// A pipeline's counters in the API: every counter of its current run, and the restarts
/// that reloads made (which outlive a run).
#[derive(Debug, Clone, Serialize)]
pub struct CounterView {
    #[serde(flatten)]
    pub counted: CounterSnapshot,
    pub restarts: u64,
}

pub(super) fn view_of(handle: &Handle) -> PipelineView {
    let monitor = &handle.monitor;
    let counters = &monitor.counters;
    let engine = monitor.engine();
    let FilterConfig { device, .. } = &handle.settings.config.filter;
    PipelineView {
        name: monitor.name.clone(),
        id: handle.id,
        origin: handle.origin,
        state: monitor.state(),
        reconnecting: monitor.reconnecting(),
        source: convstream_core::for_display(&handle.settings.source.url),
        sink: convstream_core::for_display(&handle.settings.sink.url),
        mask: monitor.filter(),
        border: handle.settings.filter.border,
        planes: handle.settings.filter.planes,
        plane_masks: handle
            .settings
            .filter
            .plane_masks
            .iter()
            .map(|(plane, mask)| (plane.to_string(), mask.description().to_string()))
            .collect(),
        device_requested: device.clone(),
        device: engine.as_ref().map(|e| e.device.clone()),
        engine: engine.map(|e| e.name),
        fps: monitor.fps(),
        uptime_seconds: monitor.started_at.elapsed().as_secs_f64(),
        startup: monitor.startup(),
        counters: CounterView {
            counted: counters.snapshot(),
            restarts: monitor.restarts.load(Ordering::Relaxed),
        },
        last_error: monitor.last_error().map(|error| convstream_core::for_display(&error)),
        waiting_for: monitor.waiting_for(),
    }
}

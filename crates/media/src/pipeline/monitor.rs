//! What a running pipeline shares with whoever watches and steers it (the server): its
//! state, counters, engine, current filter, and the channel a live filter switch goes by.

use crossbeam_channel::Sender;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::stats::Counters;
use convstream_core::FilterSpec;
use convstream_core::{EngineError, FilterPreparer};

/// Where a pipeline is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PipelineState {
    /// Opening the input (a live one may wait for its sender), the engine or the output.
    Starting,
    /// Every part is open and frames flow.
    Running,
    /// Stop requested: finishing the frames read, finalising the output.
    Stopping,
    /// Ended at the end of its input (or its output's reader closing it).
    Finished,
    /// Ended by a stop (a signal, a delete, a reload, a shutdown): what was read is written
    /// and finalised, and a stop before the input opened wrote nothing. Not a failure.
    Stopped,
    /// Ended by an error (see [`PipelineMonitor::last_error`]).
    Failed,
}

impl PipelineState {
    /// Every state, in the order of a pipeline's life.
    pub const ALL: [PipelineState; 6] = [
        PipelineState::Starting,
        PipelineState::Running,
        PipelineState::Stopping,
        PipelineState::Finished,
        PipelineState::Stopped,
        PipelineState::Failed,
    ];

    /// Whether the run is over (its threads have returned).
    pub fn has_ended(self) -> bool {
        matches!(
            self,
            PipelineState::Finished | PipelineState::Stopped | PipelineState::Failed
        )
    }
}

/// A request to filter with `filter` from the next frame on. The reply is the index of
/// the first frame the new filter applies to.
pub struct FilterSwitch {
    /// The filter to switch to.
    pub filter: FilterSpec,
    /// Where the filter stage answers: the first frame filtered anew, or why it could not switch.
    pub reply: Sender<Result<u64, EngineError>>,
}

/// The engine a pipeline runs on, once built.
#[derive(Debug, Clone, Serialize)]
pub struct EngineStatus {
    /// `cpu` or `cuda:N`.
    pub device: String,
    /// With the GPU's name.
    pub name: String,
}

/// Shared by a pipeline's threads and its watchers. Cheap to read at any time.
pub struct PipelineMonitor {
    /// The pipeline's name.
    pub name: String,
    /// The counters its stages update.
    pub counters: Arc<Counters>,
    /// When the pipeline started, before its input opened.
    pub started_at: Instant,
    state: Mutex<PipelineState>,
    engine: Mutex<Option<EngineStatus>>,
    filter: Mutex<String>,
    /// The layout of the frames the engine is given, once the input is open.
    format: Mutex<Option<convstream_core::PixelFormat>>,
    preparer: Mutex<Option<FilterPreparer>>,
    last_error: Mutex<Option<String>>,
    /// What a starting pipeline waits for (an NVDEC seat while the host's are taken).
    waiting_for: Mutex<Option<String>>,
    /// The file the output went to, once open (a numbered name when the one asked for was kept).
    output_path: Mutex<Option<std::path::PathBuf>>,
    /// Times the supervisor started this pipeline again (a changed source or sink).
    pub restarts: AtomicU64,
    /// Copies of an input and an output frame, made when a preview asks for them.
    pub snapshots: super::snapshot::Snapshots,
}

impl PipelineMonitor {
    /// The steps of the pipeline's start reached so far, counted from its start.
    pub fn startup(&self) -> crate::stats::StartupTimes {
        self.counters.startup.since(self.started_at)
    }

    /// A monitor of the pipeline `name`, starting, filtering with `filter`.
    pub fn new(name: &str, filter: &FilterSpec) -> PipelineMonitor {
        PipelineMonitor {
            name: name.to_string(),
            counters: Arc::new(Counters::default()),
            started_at: Instant::now(),
            state: Mutex::new(PipelineState::Starting),
            engine: Mutex::new(None),
            filter: Mutex::new(filter.description()),
            format: Mutex::new(None),
            preparer: Mutex::new(None),
            last_error: Mutex::new(None),
            waiting_for: Mutex::new(None),
            output_path: Mutex::new(None),
            restarts: AtomicU64::new(0),
            snapshots: Default::default(),
        }
    }

    /// The file the output is written to, once open.
    pub fn output_path(&self) -> Option<std::path::PathBuf> {
        self.output_path.lock().ok().and_then(|p| p.clone())
    }

    /// Records the file the output is written to (`None`: not a local file).
    pub fn set_output_path(&self, path: Option<std::path::PathBuf>) {
        if let Ok(mut slot) = self.output_path.lock() {
            *slot = path;
        }
    }

    /// Where the pipeline is in its life.
    pub fn state(&self) -> PipelineState {
        self.state.lock().map_or(PipelineState::Failed, |s| *s)
    }

    /// Moves the pipeline to `state`; a stop asked for before it ran keeps it stopping.
    pub fn set_state(&self, state: PipelineState) {
        if let Ok(mut slot) = self.state.lock() {
            // A stop asked for before the pipeline ran stays a stop.
            if !(*slot == PipelineState::Stopping && state == PipelineState::Running) {
                *slot = state;
            }
        }
    }

    /// The engine the pipeline runs on, once built.
    pub fn engine(&self) -> Option<EngineStatus> {
        self.engine.lock().ok().and_then(|e| e.clone())
    }

    /// Records the engine once built, and how filters are prepared for it (see [`Self::prepare`]).
    pub fn set_engine(&self, status: EngineStatus, preparer: FilterPreparer) {
        if let Ok(mut slot) = self.engine.lock() {
            *slot = Some(status);
        }
        if let Ok(mut slot) = self.preparer.lock() {
            *slot = Some(preparer);
        }
    }

    /// The layout of the pipeline's frames, once its input is open.
    pub fn format(&self) -> Option<convstream_core::PixelFormat> {
        self.format.lock().ok().and_then(|f| *f)
    }

    /// Records the layout of the frames the engine is given.
    pub fn set_format(&self, format: convstream_core::PixelFormat) {
        if let Ok(mut slot) = self.format.lock() {
            *slot = Some(format);
        }
    }

    /// The mask now applied, as its SPEC or name.
    pub fn filter(&self) -> String {
        self.filter.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// Records the filter now applied.
    pub fn set_filter(&self, filter: &FilterSpec) {
        if let Ok(mut slot) = self.filter.lock() {
            *slot = filter.description();
        }
    }

    /// Compiles what `filter` needs on the caller's thread (see `Engine::preparer`).
    /// Before the engine exists there is nothing to prepare.
    pub fn prepare(&self, filter: &FilterSpec) -> Result<(), EngineError> {
        let preparer = self.preparer.lock().ok().and_then(|p| p.clone());
        match preparer {
            Some(prepare) => prepare(filter),
            None => Ok(()),
        }
    }

    /// What the starting pipeline waits for, if it waits.
    pub fn waiting_for(&self) -> Option<String> {
        self.waiting_for.lock().ok().and_then(|w| w.clone())
    }

    /// Records what the starting pipeline waits for (`None`: it no longer waits).
    pub fn set_waiting_for(&self, what: Option<String>) {
        if let Ok(mut slot) = self.waiting_for.lock() {
            *slot = what;
        }
    }

    /// Why the pipeline failed, if it did.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// Records why the pipeline failed.
    pub fn set_error(&self, error: &str) {
        if let Ok(mut slot) = self.last_error.lock() {
            *slot = Some(error.to_string());
        }
    }

    /// Whether the live input is lost and being reconnected.
    pub fn reconnecting(&self) -> bool {
        self.counters.reconnecting.load(Ordering::Relaxed)
    }

    /// Frames per second written over the last few seconds (`crate::stats::RATE_WINDOW`).
    pub fn fps(&self) -> f64 {
        self.counters.written_rate.per_second(Instant::now())
    }
}

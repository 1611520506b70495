//! One pipeline the supervisor started: which one it is, its settings, monitor, stop flag,
//! switch channel and thread; and which running pipeline's files a new one would collide with.

use crossbeam_channel::{Receiver, Sender};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::contract::{Origin, PipelineId};
use convstream_config::{PipelineConfig, PipelineSettings};
use convstream_media::{FilterSwitch, PipelineMonitor};

/// One pipeline the supervisor started.
pub(super) struct Handle {
    /// Which pipeline this is: kept by its restarts, new when the name is listed anew.
    pub(super) id: PipelineId,
    pub(super) settings: PipelineSettings,
    pub(super) origin: Origin,
    pub(super) monitor: Arc<PipelineMonitor>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) switches: Sender<FilterSwitch>,
    /// The run's thread, shared with a stop in progress: every holder of the name sees
    /// whether it still runs, whoever waits for it.
    pub(super) thread: Option<Arc<JoinHandle<()>>>,
    /// Closes when the run's thread returns (nothing is ever sent): a wait on the run (a
    /// filter switch) selects on it, so that it ends with the run instead of at its timeout.
    pub(super) run_ended: Receiver<Infallible>,
    /// Stopped through `POST /pipelines/{name}/stop`: kept listed with its settings, so
    /// that a start runs it again.
    pub(super) operator_stopped: bool,
    /// Set once the run counted as ready (see `readiness`): it stays ready.
    pub(super) was_ready: Arc<AtomicBool>,
}

impl Handle {
    /// A handle to stop this run with, sharing its thread and monitor with the one left
    /// listed, so that the listed one shows the run stopping, then ended, and keeps its name
    /// and files taken while the thread still runs.
    pub(super) fn share_for_stop(&self) -> Handle {
        Handle {
            id: self.id,
            settings: self.settings.clone(),
            origin: self.origin,
            monitor: self.monitor.clone(),
            stop: self.stop.clone(),
            switches: self.switches.clone(),
            thread: self.thread.clone(),
            run_ended: self.run_ended.clone(),
            operator_stopped: self.operator_stopped,
            was_ready: self.was_ready.clone(),
        }
    }

    /// Whether the run's thread has not ended yet (it may outlive a stop, blocked in I/O).
    pub(super) fn thread_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|thread| !thread.is_finished())
    }
}

/// Why `pipeline` cannot run beside those of `pipelines` that `among` selects (see
/// `Supervisor::output_conflict`).
pub(super) fn conflict_among(
    pipelines: &BTreeMap<String, Handle>,
    pipeline: &PipelineConfig,
    among: impl Fn(&Handle) -> bool,
) -> Option<String> {
    let mut running: Vec<PipelineConfig> = Vec::new();
    for handle in pipelines.values() {
        // A run whose thread outlives its stop may still write its files.
        let active = !handle.monitor.state().has_ended() || handle.thread_running();
        if handle.settings.name == pipeline.name || !active || !among(handle) {
            continue;
        }
        running.push(handle.settings.config.clone());
        // Written under a numbered name: that file is in use too.
        if let Some(path) = handle.monitor.output_path() {
            let mut actual = handle.settings.config.clone();
            actual.sink.url = path.display().to_string();
            running.push(actual);
        }
    }
    let running: Vec<&PipelineConfig> = running.iter().collect();
    convstream_config::conflicts_with_running(pipeline, &running)
}

//! The supervisor and the life of its pipelines: the set of them under one lock, starting
//! (from the config or the API), stopping, starting again, removing, shutting down, and
//! what the API reads of them. Filter switches are `switch.rs`, reloads `reload.rs`.
//!
//! Every change to the set of running pipelines goes through this one type, so that names,
//! stops and reloads cannot race.

use crossbeam_channel::bounded;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::contract::{Listed, Origin, PipelineId};
use super::error::SupervisorError;
use super::handle::{conflict_among, Handle};
use super::stopping::stop_and_join;
use super::view::{view_of, PipelineView};
use convstream_config::{ConfigFile, PipelineConfig, PipelineSettings};
use convstream_media::output_problems;
use convstream_media::FileId;
use convstream_media::{
    cut_short_by_stop, run_monitored, FilterSwitch, OutputPolicy, PipelineMonitor, PipelineState, RunOptions, StartGate,
};

pub struct Supervisor {
    /// The config last applied (its masks resolve names in API requests).
    config: Mutex<ConfigFile>,
    /// The config file's folder, for relative mask files.
    pub(super) base_dir: Option<PathBuf>,
    pipelines: Mutex<BTreeMap<String, Handle>>,
    /// Outputs (by [`convstream_config::output_key`]) a pipeline of this process has written: a
    /// later start on one of them is a restart, which writes beside what was written instead
    /// of replacing it.
    written: Mutex<HashSet<String>>,
    /// Half the shutdown timeout: how long a stop lets output I/O block.
    io_grace: Duration,
    /// Files no pipeline may write (the service's config file): looked up at each start, so
    /// a config file replaced since (a ConfigMap's swap) is the one protected.
    protected: Vec<PathBuf>,
    /// Pipelines start through it a few at a time (`[server] starting_at_once`).
    start_gate: Arc<StartGate>,
    /// The last [`PipelineId`] given.
    last_id: AtomicU64,
}

impl Supervisor {
    pub fn new(config: ConfigFile, base_dir: Option<PathBuf>) -> Supervisor {
        let io_grace = Duration::try_from_secs_f64(config.server.shutdown_timeout / 2.0).unwrap_or(Duration::MAX);
        let start_gate = StartGate::new(
            config
                .server
                .starting_at_once
                .unwrap_or_else(StartGate::default_at_once),
        );
        Supervisor {
            config: Mutex::new(config),
            base_dir,
            pipelines: Mutex::new(BTreeMap::new()),
            written: Mutex::new(HashSet::new()),
            io_grace,
            protected: Vec::new(),
            start_gate,
            last_id: AtomicU64::new(0),
        }
    }

    /// The same supervisor, whose pipelines never write `files` under any name or link.
    pub fn protecting(self, files: Vec<PathBuf>) -> Supervisor {
        Supervisor {
            protected: files,
            ..self
        }
    }

    pub(super) fn pipelines(&self) -> MutexGuard<'_, BTreeMap<String, Handle>> {
        // A panic while holding the lock leaves the map itself consistent: keep using it.
        self.pipelines.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn config(&self) -> MutexGuard<'_, ConfigFile> {
        self.config.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts every pipeline of the config it was made with.
    pub fn start_configured(&self) -> Result<(), SupervisorError> {
        let config = self.config().clone();
        let settings = config
            .validate_for_serve(self.base_dir.as_deref(), output_problems)
            .map_err(SupervisorError::Invalid)?;
        for pipeline in settings.pipelines {
            self.start(pipeline, Origin::ConfigFile, self.new_id())?;
        }
        Ok(())
    }

    /// Validates one pipeline against the current config (its masks, the names in use) and
    /// starts it. The name, the count and the files in use are checked and the pipeline
    /// inserted under one hold of the pipelines' lock: two requests racing on one name
    /// cannot both start (the loser's run would go on, listed nowhere).
    pub fn add(&self, pipeline: PipelineConfig) -> Result<PipelineView, SupervisorError> {
        let settings = self.validate_one(pipeline)?;
        let max = self.config().server.max_pipelines;
        let name = settings.name.clone();
        let mut pipelines = self.pipelines();
        if let Some(listed) = pipelines.get(&name) {
            return Err(
                if listed.thread_running() && listed.monitor.state() != PipelineState::Running {
                    SupervisorError::StillEnding(name)
                } else {
                    SupervisorError::Exists(name)
                },
            );
        }
        if pipelines.len() >= max {
            return Err(SupervisorError::TooMany {
                count: pipelines.len(),
                max,
            });
        }
        if let Some(conflict) = conflict_among(&pipelines, &settings.config, |_| true) {
            return Err(SupervisorError::OutputInUse(conflict));
        }
        self.start_in(&mut pipelines, settings, Origin::Api, self.new_id())?;
        pipelines.get(&name).map(view_of).ok_or(SupervisorError::NotFound(name))
    }

    /// Every problem validation finds in `pipeline` (masks, numbers, names), none when it is
    /// valid: what the API lists beside the problems of its own checks.
    pub fn problems_of(&self, pipeline: PipelineConfig) -> Vec<String> {
        match self.validate_one(pipeline) {
            Ok(_) => Vec::new(),
            Err(SupervisorError::Invalid(convstream_config::ConfigError::Invalid(problems))) => {
                problems.iter().map(ToString::to_string).collect()
            }
            Err(other) => vec![other.to_string()],
        }
    }

    pub(super) fn validate_one(&self, pipeline: PipelineConfig) -> Result<PipelineSettings, SupervisorError> {
        let mut config = self.config().clone();
        config.pipelines = vec![pipeline];
        let mut settings = config
            .validate(self.base_dir.as_deref(), output_problems)
            .map_err(SupervisorError::Invalid)?;
        Ok(settings.pipelines.remove(0))
    }

    /// Why `pipeline` cannot run beside the running pipelines that `among` selects: it
    /// would write a file one of them reads or writes, or read one it writes.
    pub(super) fn output_conflict(&self, pipeline: &PipelineConfig, among: impl Fn(&Handle) -> bool) -> Option<String> {
        conflict_among(&self.pipelines(), pipeline, among)
    }

    /// An id no pipeline of this process had: for a name listed anew.
    pub(super) fn new_id(&self) -> PipelineId {
        PipelineId(self.last_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Starts pipeline `id` (a new one, or one listed already that runs again).
    pub(super) fn start(
        &self,
        settings: PipelineSettings,
        origin: Origin,
        id: PipelineId,
    ) -> Result<(), SupervisorError> {
        self.start_in(&mut self.pipelines(), settings, origin, id)
    }

    /// Starts pipeline `id` and lists it in `pipelines` (the map under the caller's lock).
    fn start_in(
        &self,
        pipelines: &mut BTreeMap<String, Handle>,
        settings: PipelineSettings,
        origin: Origin,
        id: PipelineId,
    ) -> Result<(), SupervisorError> {
        let name = settings.name.clone();
        let restarted = !self
            .written
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(convstream_config::output_key(&settings.sink.url));
        let monitor = Arc::new(PipelineMonitor::new(&name, &settings.filter));
        let stop = Arc::new(AtomicBool::new(false));
        let (switches_tx, switches_rx) = bounded::<FilterSwitch>(4);
        let (run_ending, run_ended) = bounded::<std::convert::Infallible>(0);
        let options = RunOptions {
            stop: stop.clone(),
            progress: None,
            trace: None,
            stage_times: true,
            outputs: OutputPolicy::Service { restarted },
            io_grace: self.io_grace,
            protected: self.protected.iter().filter_map(|path| FileId::at(path)).collect(),
            overlap_gpu_start: false,
            start_gate: Some(self.start_gate.clone()),
            // A pipeline stopped before its first frame leaves no empty file behind.
            keep_empty_outputs: false,
        };
        let thread = {
            let (settings, monitor) = (settings.clone(), monitor.clone());
            std::thread::Builder::new()
                .name(format!("{name}-run"))
                .spawn(move || {
                    // Dropped as the thread returns, however it returns: `run_ended` closes.
                    let _run_ending = run_ending;
                    let span = tracing::info_span!("pipeline", pipeline = %settings.name, pipeline_id = id.0);
                    let _entered = span.enter();
                    match run_monitored(&settings, &options, &monitor, switches_rx) {
                        Ok(report) => tracing::info!("{}", report.summary()),
                        // The operator stopped it before it opened: said, not alarmed about.
                        Err(e) if e.is_stop() => tracing::info!("{e}"),
                        // What the stop did to its input or output (a pipe's reader gone):
                        // a stop, said as one.
                        Err(e) if cut_short_by_stop(&e, &options.stop) => {
                            tracing::info!("stopped; the stop cut its input or output short: {e}")
                        }
                        Err(e) => tracing::error!("{e}"),
                    }
                })
                .map_err(|e| SupervisorError::Spawn {
                    name: name.clone(),
                    reason: e.to_string(),
                })?
        };
        tracing::info!("pipeline {name:?} started: {}", settings.describe());
        pipelines.insert(
            name,
            Handle {
                id,
                settings,
                origin,
                monitor,
                stop,
                switches: switches_tx,
                thread: Some(Arc::new(thread)),
                run_ended,
                operator_stopped: false,
                was_ready: Arc::new(AtomicBool::new(false)),
            },
        );
        Ok(())
    }

    /// Stops a pipeline (drain, finalise the output) and forgets it once its threads have
    /// ended. Blocks until they have or `timeout` passed. The name stays listed (and its
    /// files taken) during the wait, and after it while the threads still run: a name is
    /// free only when no thread of its run is left.
    /// Returns its last state, and whether its threads ended (false: still blocked after
    /// `timeout` and the pipe unblocking, see `stop_and_join`; it is then kept listed).
    pub fn remove(&self, name: &str, timeout: Duration) -> Result<(PipelineView, bool), SupervisorError> {
        let mut stopping = {
            let pipelines = self.pipelines();
            let handle = pipelines
                .get(name)
                .ok_or_else(|| SupervisorError::NotFound(name.to_string()))?;
            handle.share_for_stop()
        };
        let ended = stop_and_join(std::slice::from_mut(&mut stopping), timeout).is_empty();
        let view = {
            let mut pipelines = self.pipelines();
            let same_run = pipelines
                .get(name)
                .is_some_and(|listed| Arc::ptr_eq(&listed.monitor, &stopping.monitor));
            if ended && same_run {
                pipelines.remove(name);
            }
            match pipelines.get(name).filter(|_| same_run) {
                Some(listed) => view_of(listed),
                None => view_of(&stopping),
            }
        };
        if ended {
            tracing::info!("pipeline {name:?} stopped and removed");
        } else {
            tracing::warn!("pipeline {name:?} is stopping, but its threads are still blocked; it stays listed, and its name and files taken, until they end");
        }
        Ok((view, ended))
    }

    /// Stops a running pipeline (drain, finalise the output) and keeps it listed, stopped,
    /// with its settings, for [`Supervisor::start_again`]. The state is checked and the
    /// pipeline marked stopping under one hold of the pipelines' lock, so that a racing stop
    /// or start on the name sees it stopping; the wait happens outside the lock. Returns its
    /// state after the wait, and whether its threads ended (as [`Supervisor::remove`]).
    pub fn stop(&self, name: &str, timeout: Duration) -> Result<(PipelineView, bool), SupervisorError> {
        let mut stopping = {
            let mut pipelines = self.pipelines();
            let handle = pipelines
                .get_mut(name)
                .ok_or_else(|| SupervisorError::NotFound(name.to_string()))?;
            let state = handle.monitor.state();
            if state.has_ended() || state == PipelineState::Stopping {
                return Err(SupervisorError::WrongState {
                    name: name.to_string(),
                    state,
                    why: "only a starting or running pipeline can be stopped",
                });
            }
            handle.operator_stopped = true;
            // Marked here, under the lock, so a start racing this stop is refused.
            handle.monitor.set_state(PipelineState::Stopping);
            handle.share_for_stop()
        };
        let ended = stop_and_join(std::slice::from_mut(&mut stopping), timeout).is_empty();
        if ended {
            tracing::info!("pipeline {name:?} stopped by request; kept listed");
        } else {
            tracing::warn!("pipeline {name:?} stopped by request, but its threads are still blocked");
        }
        // The listed handle shares the monitor; it may have been deleted meanwhile.
        let view = self.view(name).unwrap_or_else(|_| view_of(&stopping));
        Ok((view, ended))
    }

    /// Starts a pipeline that has ended (stopped, finished or failed) again, with the same
    /// settings and a fresh monitor, as a reload's restart does; its output follows the
    /// restart rules (written beside what an earlier run wrote). Refused while it is
    /// starting, running or still stopping, and while another pipeline uses its files.
    pub fn start_again(&self, name: &str) -> Result<PipelineView, SupervisorError> {
        let mut pipelines = self.pipelines();
        let handle = pipelines
            .get(name)
            .ok_or_else(|| SupervisorError::NotFound(name.to_string()))?;
        let state = handle.monitor.state();
        if !state.has_ended() || handle.thread_running() {
            return Err(SupervisorError::WrongState {
                name: name.to_string(),
                state,
                why: "only a stopped, finished or failed pipeline can be started",
            });
        }
        let (settings, origin, id) = (handle.settings.clone(), handle.origin, handle.id);
        let restarts = handle.monitor.restarts.load(Ordering::Relaxed);
        if let Some(conflict) = conflict_among(&pipelines, &settings.config, |_| true) {
            return Err(SupervisorError::OutputInUse(conflict));
        }
        if let Some(old) = pipelines.get_mut(name).and_then(|h| h.thread.take()) {
            if let Ok(old) = Arc::try_unwrap(old) {
                let _ = old.join(); // finished, checked above
            }
        }
        self.start_in(&mut pipelines, settings, origin, id)?;
        let handle = pipelines
            .get(name)
            .ok_or_else(|| SupervisorError::NotFound(name.to_string()))?;
        handle.monitor.restarts.store(restarts, Ordering::Relaxed);
        Ok(view_of(handle))
    }

    /// Stops every pipeline at once and waits for them, at most `timeout` in all. Returns
    /// the names of those that did not finish in time.
    pub fn shutdown(&self, timeout: Duration) -> Vec<String> {
        let mut handles: Vec<Handle> = std::mem::take(&mut *self.pipelines()).into_values().collect();
        stop_and_join(&mut handles, timeout)
    }

    pub fn names(&self) -> Vec<String> {
        self.pipelines().keys().cloned().collect()
    }

    pub fn monitors(&self) -> Vec<Arc<PipelineMonitor>> {
        self.pipelines().values().map(|h| h.monitor.clone()).collect()
    }

    /// Every listed pipeline: which one it is, and its current run's monitor.
    pub fn listed(&self) -> Vec<Listed> {
        self.pipelines()
            .values()
            .map(|h| Listed {
                id: h.id,
                monitor: h.monitor.clone(),
            })
            .collect()
    }

    pub fn view(&self, name: &str) -> Result<PipelineView, SupervisorError> {
        let pipelines = self.pipelines();
        let handle = pipelines
            .get(name)
            .ok_or_else(|| SupervisorError::NotFound(name.to_string()))?;
        Ok(view_of(handle))
    }

    pub fn views(&self) -> Vec<PipelineView> {
        self.pipelines().values().map(view_of).collect()
    }

    /// Ready once every pipeline keeps up (see `readiness`).
    pub fn ready(&self) -> bool {
        self.not_ready().is_empty()
    }

    /// The pipelines not ready yet, each with what it waits for (see `readiness`). Runs
    /// count as ready together: only when every pipeline is steady at one moment are they
    /// all marked ready for good, so a pipeline steady while the others were still starting
    /// (and then slowed by them) does not make the service ready early. A pipeline added
    /// later must be steady itself. An instance whose every pipeline failed does nothing its
    /// config asks: it is not ready (a rollout of a broken config stops there), whatever it
    /// was before. The reasons stay in `GET /pipelines`, which may need the token `/readyz`
    /// does not.
    pub fn not_ready(&self) -> BTreeMap<String, String> {
        let now = std::time::Instant::now();
        let pipelines = self.pipelines();
        if !pipelines.is_empty()
            && pipelines
                .values()
                .all(|handle| handle.monitor.state() == PipelineState::Failed)
        {
            return pipelines
                .keys()
                .map(|name| {
                    let why = format!("failed, as every pipeline did (GET /pipelines/{name} says why)");
                    (name.clone(), why)
                })
                .collect();
        }
        let waiting: BTreeMap<String, String> = pipelines
            .iter()
            .filter(|(_, handle)| !handle.was_ready.load(Ordering::Relaxed))
            .filter_map(|(name, handle)| {
                super::readiness::readiness(handle.settings.source.is_live(), &handle.monitor, now)
                    .err()
                    .map(|why| (name.clone(), why))
            })
            .collect();
        if waiting.is_empty() {
            for handle in pipelines.values() {
                handle.was_ready.store(true, Ordering::Relaxed);
            }
        }
        waiting
    }
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").field("pipelines", &self.names()).finish()
    }
}

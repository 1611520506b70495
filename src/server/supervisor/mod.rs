//! Starts, stops, switches and reloads the pipelines of `serve`. Each pipeline runs on its
//! own threads; the supervisor only holds their stop flags, switch channels and monitors,
//! so the control plane never waits on pixels (callers run the blocking parts off the
//! async runtime).
//!
//! One job at some length (about 510 lines): every change to the set of running pipelines
//! goes through this one type, so that names, stops and reloads cannot race.

use crossbeam_channel::{bounded, Sender};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::{ConfigError, ConfigFile, MaskSelection, PipelineConfig, PipelineSettings};
use crate::engine::EngineError;
use crate::filter::{BorderMode, FilterSpec, PlaneName, PlaneSelection};
use crate::frame::PixelFormat;
use crate::log_filter::is_log_filter;
use crate::sink::FileId;

mod stopping;
mod view;

use self::stopping::stop_and_join;
use self::view::view_of;
pub use self::view::{CounterView, PipelineView};
use crate::pipeline::{run_monitored, FilterSwitch, OutputPolicy, PipelineMonitor, PipelineState, RunOptions};

/// How long a filter switch may wait for the pipeline to take it.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a pipeline came from: a reload only touches the config file's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    ConfigFile,
    Api,
}

/// A filter change asked for through the API: only what can change without a restart.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterUpdate {
    pub mask: Option<MaskSelection>,
    pub planes: Option<PlaneSelection>,
    pub border: Option<BorderMode>,
    /// Replaces the per-plane masks (`{}` clears them).
    pub plane_masks: Option<std::collections::BTreeMap<String, MaskSelection>>,
    /// Clears the per-plane masks, so that `mask` reaches every plane `planes` selects:
    /// a new `mask` alone leaves a plane that has a mask of its own as it was.
    #[serde(default)]
    pub clear_plane_masks: bool,
}

impl FilterUpdate {
    /// Whether the request asks for any change at all.
    pub fn is_empty(&self) -> bool {
        self.mask.is_none()
            && self.planes.is_none()
            && self.border.is_none()
            && self.plane_masks.is_none()
            && !self.clear_plane_masks
    }
}

/// What a live filter switch did.
#[derive(Debug, Clone)]
pub struct Switched {
    /// The index of the first frame filtered with the new filter.
    pub applies_from: u64,
    /// The planes whose pixels change from that frame on (the names `plane_masks` takes).
    pub changed_planes: Vec<PlaneName>,
    /// Why the switch changes no plane, when it changes none.
    pub unchanged_because: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("no pipeline named {0:?}")]
    NotFound(String),
    #[error("a pipeline named {0:?} exists already")]
    Exists(String),
    /// The pipeline would write a file another running pipeline reads or writes.
    #[error("{0}")]
    OutputInUse(String),
    #[error(transparent)]
    Invalid(ConfigError),
    #[error("pipeline {name:?} is {state:?}; its filter can only switch while it runs")]
    NotRunning { name: String, state: PipelineState },
    /// The engine's error is in the message, and not also a `source()`, so that printing the
    /// chain does not repeat it.
    #[error("pipeline {name:?}: {error}")]
    Engine { name: String, error: EngineError },
    #[error("pipeline {0:?} did not take the new filter within 10 s")]
    SwitchTimedOut(String),
    #[error("cannot start a thread for pipeline {name:?}: {reason}")]
    Spawn { name: String, reason: String },
    /// A stop or start asked of a pipeline in a state that does not allow it.
    #[error("pipeline {name:?} is {state:?}; {why}")]
    WrongState {
        name: String,
        state: PipelineState,
        why: &'static str,
    },
    #[error("{count} pipelines exist, the most [server] max_pipelines allows ({max}); delete one (finished ones count until deleted) or raise max_pipelines")]
    TooMany { count: usize, max: usize },
}

/// One pipeline the supervisor started.
struct Handle {
    settings: PipelineSettings,
    origin: Origin,
    monitor: Arc<PipelineMonitor>,
    stop: Arc<AtomicBool>,
    switches: Sender<FilterSwitch>,
    thread: Option<JoinHandle<()>>,
    /// Stopped through `POST /pipelines/{name}/stop`: kept listed with its settings, so
    /// that a start runs it again.
    operator_stopped: bool,
}

impl Handle {
    /// A handle to stop this run with, holding its thread; the one left behind shares its
    /// monitor, so it shows the run stopping and then ended.
    fn take_for_stop(&mut self) -> Handle {
        Handle {
            settings: self.settings.clone(),
            origin: self.origin,
            monitor: self.monitor.clone(),
            stop: self.stop.clone(),
            switches: self.switches.clone(),
            thread: self.thread.take(),
            operator_stopped: self.operator_stopped,
        }
    }
}

/// What a reload did, for the log and the API.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ReloadSummary {
    pub started: Vec<String>,
    pub stopped: Vec<String>,
    pub restarted: Vec<String>,
    pub switched: Vec<String>,
    pub unchanged: Vec<String>,
    /// Pipelines the new config could not apply to (a switch refused, a name taken).
    pub problems: Vec<String>,
}

pub struct Supervisor {
    /// The config last applied (its masks resolve names in API requests).
    config: Mutex<ConfigFile>,
    /// The config file's folder, for relative mask files.
    base_dir: Option<PathBuf>,
    pipelines: Mutex<BTreeMap<String, Handle>>,
    /// Outputs (by [`crate::config::output_key`]) a pipeline of this process has written: a
    /// later start on one of them is a restart, which writes beside what was written instead
    /// of replacing it.
    written: Mutex<HashSet<String>>,
    /// Half the shutdown timeout: how long a stop lets output I/O block.
    io_grace: Duration,
    /// Files no pipeline may write (the service's config file): looked up at each start, so
    /// a config file replaced since (a ConfigMap's swap) is the one protected.
    protected: Vec<PathBuf>,
}

impl Supervisor {
    pub fn new(config: ConfigFile, base_dir: Option<PathBuf>) -> Supervisor {
        let io_grace = Duration::try_from_secs_f64(config.server.shutdown_timeout / 2.0).unwrap_or(Duration::MAX);
        Supervisor {
            config: Mutex::new(config),
            base_dir,
            pipelines: Mutex::new(BTreeMap::new()),
            written: Mutex::new(HashSet::new()),
            io_grace,
            protected: Vec::new(),
        }
    }

    /// The same supervisor, whose pipelines never write `files` under any name or link.
    pub fn protecting(self, files: Vec<PathBuf>) -> Supervisor {
        Supervisor {
            protected: files,
            ..self
        }
    }

    fn pipelines(&self) -> MutexGuard<'_, BTreeMap<String, Handle>> {
        // A panic while holding the lock leaves the map itself consistent: keep using it.
        self.pipelines.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn config(&self) -> MutexGuard<'_, ConfigFile> {
        self.config.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts every pipeline of the config it was made with.
    pub fn start_configured(&self) -> Result<(), SupervisorError> {
        let config = self.config().clone();
        let settings = config
            .validate(self.base_dir.as_deref(), is_log_filter)
            .map_err(SupervisorError::Invalid)?;
        for pipeline in settings.pipelines {
            self.start(pipeline, Origin::ConfigFile)?;
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
        if pipelines.contains_key(&name) {
            return Err(SupervisorError::Exists(name));
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
        self.start_in(&mut pipelines, settings, Origin::Api)?;
        pipelines.get(&name).map(view_of).ok_or(SupervisorError::NotFound(name))
    }

    fn validate_one(&self, pipeline: PipelineConfig) -> Result<PipelineSettings, SupervisorError> {
        let mut config = self.config().clone();
        config.pipelines = vec![pipeline];
        let mut settings = config
            .validate(self.base_dir.as_deref(), is_log_filter)
            .map_err(SupervisorError::Invalid)?;
        Ok(settings.pipelines.remove(0))
    }

    /// Why `pipeline` cannot run beside the running pipelines that `among` selects: it
    /// would write a file one of them reads or writes, or read one it writes.
    fn output_conflict(&self, pipeline: &PipelineConfig, among: impl Fn(&Handle) -> bool) -> Option<String> {
        conflict_among(&self.pipelines(), pipeline, among)
    }

    fn start(&self, settings: PipelineSettings, origin: Origin) -> Result<(), SupervisorError> {
        self.start_in(&mut self.pipelines(), settings, origin)
    }

    /// Starts a pipeline and lists it in `pipelines` (the map under the caller's lock).
    fn start_in(
        &self,
        pipelines: &mut BTreeMap<String, Handle>,
        settings: PipelineSettings,
        origin: Origin,
    ) -> Result<(), SupervisorError> {
        let name = settings.name.clone();
        let restarted = !self
            .written
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(crate::config::output_key(&settings.sink.url));
        let monitor = Arc::new(PipelineMonitor::new(&name, &settings.filter));
        let stop = Arc::new(AtomicBool::new(false));
        let (switches_tx, switches_rx) = bounded::<FilterSwitch>(4);
        let options = RunOptions {
            stop: stop.clone(),
            progress: None,
            trace: None,
            stage_times: true,
            outputs: OutputPolicy::Service { restarted },
            io_grace: self.io_grace,
            protected: self.protected.iter().filter_map(|path| FileId::at(path)).collect(),
            overlap_gpu_start: false,
        };
        let thread = {
            let (settings, monitor) = (settings.clone(), monitor.clone());
            std::thread::Builder::new()
                .name(format!("{name}-run"))
                .spawn(move || {
                    let span = tracing::info_span!("pipeline", pipeline = %settings.name);
                    let _entered = span.enter();
                    match run_monitored(&settings, &options, &monitor, switches_rx) {
                        Ok(report) => tracing::info!("{}", report.summary()),
                        // The operator stopped it before it opened: said, not alarmed about.
                        Err(e) if e.is_stop() => tracing::info!("{e}"),
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
                settings,
                origin,
                monitor,
                stop,
                switches: switches_tx,
                thread: Some(thread),
                operator_stopped: false,
            },
        );
        Ok(())
    }

    /// Stops a pipeline (drain, finalise the output) and forgets it. Blocks until it has
    /// finished or `timeout` passed.
    /// Returns its last state, and whether its threads ended (false: still blocked after
    /// `timeout` and the pipe unblocking, see [`stop_and_join`]).
    pub fn remove(&self, name: &str, timeout: Duration) -> Result<(PipelineView, bool), SupervisorError> {
        let handle = self
            .pipelines()
            .remove(name)
            .ok_or_else(|| SupervisorError::NotFound(name.to_string()))?;
        let mut stopped = [handle];
        let ended = stop_and_join(&mut stopped, timeout).is_empty();
        let view = view_of(&stopped[0]);
        if ended {
            tracing::info!("pipeline {name:?} stopped and removed");
        } else {
            tracing::warn!("pipeline {name:?} removed, but its threads are still blocked");
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
            handle.take_for_stop()
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
        if !state.has_ended() || handle.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            return Err(SupervisorError::WrongState {
                name: name.to_string(),
                state,
                why: "only a stopped, finished or failed pipeline can be started",
            });
        }
        let (settings, origin) = (handle.settings.clone(), handle.origin);
        let restarts = handle.monitor.restarts.load(Ordering::Relaxed);
        if let Some(conflict) = conflict_among(&pipelines, &settings.config, |_| true) {
            return Err(SupervisorError::OutputInUse(conflict));
        }
        if let Some(old) = pipelines.get_mut(name).and_then(|h| h.thread.take()) {
            let _ = old.join(); // finished, checked above
        }
        self.start_in(&mut pipelines, settings, origin)?;
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

    /// Switches a running pipeline's filter. The kernels are compiled here first, on the
    /// caller's thread; the pipeline then swaps between two frames. Returns the first frame
    /// filtered with the new filter and the planes the switch changes.
    pub fn switch_filter(&self, name: &str, update: FilterUpdate) -> Result<Switched, SupervisorError> {
        if update.clear_plane_masks && update.plane_masks.is_some() {
            return Err(SupervisorError::Invalid(ConfigError::Invalid(vec![format!(
                "pipeline {name:?}: give either plane_masks (which replaces every plane mask; {{}} clears them) or clear_plane_masks, not both"
            )])));
        }
        let current = self.settings(name)?;
        let mut config = current.config.clone();
        let filter = &mut config.filter;
        if let Some(mask) = update.mask {
            filter.mask = mask;
        }
        if let Some(planes) = update.planes {
            filter.planes = planes;
        }
        if let Some(border) = update.border {
            filter.border = border;
        }
        if let Some(plane_masks) = update.plane_masks {
            filter.plane_masks = plane_masks;
        }
        if update.clear_plane_masks {
            filter.plane_masks.clear();
        }
        let settings = self.validate_one(config)?;
        self.switch_to(
            &settings,
            "send the mask with \"clear_plane_masks\": true (or \"plane_masks\": {}) to apply it to every plane",
        )
    }

    /// Switches to `settings`' filter; `clear_hint` says how the caller removes plane masks
    /// that keep a new mask from any plane (the API and the config file differ).
    fn switch_to(&self, settings: &PipelineSettings, clear_hint: &str) -> Result<Switched, SupervisorError> {
        let name = &settings.name;
        let (monitor, switches, before) = {
            let pipelines = self.pipelines();
            let handle = pipelines
                .get(name)
                .ok_or_else(|| SupervisorError::NotFound(name.clone()))?;
            (
                handle.monitor.clone(),
                handle.switches.clone(),
                handle.settings.filter.clone(),
            )
        };
        let state = monitor.state();
        if state != PipelineState::Running {
            return Err(SupervisorError::NotRunning {
                name: name.clone(),
                state,
            });
        }
        let engine_error = |error| SupervisorError::Engine {
            name: name.clone(),
            error,
        };
        if let Some(format) = monitor.format() {
            let problems = settings.filter.problems_with(format);
            if !problems.is_empty() {
                let place = |p: String| format!("pipeline {name:?}: filter: {p}");
                return Err(SupervisorError::Invalid(ConfigError::Invalid(
                    problems.into_iter().map(place).collect(),
                )));
            }
            for warning in settings.filter.warnings(format) {
                tracing::warn!(pipeline = %name, "{warning}");
            }
        }
        let started = Instant::now();
        monitor.prepare(&settings.filter).map_err(engine_error)?;
        tracing::debug!(
            "pipeline {name:?}: kernels for {} ready in {:.0} ms",
            settings.filter.description(),
            started.elapsed().as_secs_f64() * 1e3
        );
        let (reply_tx, reply_rx) = bounded(1);
        switches
            .send_timeout(
                FilterSwitch {
                    filter: settings.filter.clone(),
                    reply: reply_tx,
                },
                SWITCH_TIMEOUT,
            )
            .map_err(|_| SupervisorError::SwitchTimedOut(name.clone()))?;
        let applies_from = reply_rx
            .recv_timeout(SWITCH_TIMEOUT)
            .map_err(|_| SupervisorError::SwitchTimedOut(name.clone()))?
            .map_err(engine_error)?;
        if let Some(handle) = self.pipelines().get_mut(name) {
            handle.settings = settings.clone();
        }
        // A running pipeline knows its frames' format; the planes follow from it.
        let format = monitor.format();
        let changed_planes = format.map_or_else(Vec::new, |format| before.changed_planes(&settings.filter, format));
        let unchanged_because = format
            .filter(|_| changed_planes.is_empty())
            .map(|format| why_unchanged(&before, &settings.filter, format, clear_hint));
        if let Some(reason) = &unchanged_because {
            tracing::warn!(pipeline = %name, "the filter switch from frame {applies_from} changes no plane: {reason}");
        }
        Ok(Switched {
            applies_from,
            changed_planes,
            unchanged_because,
        })
    }

    fn settings(&self, name: &str) -> Result<PipelineSettings, SupervisorError> {
        self.pipelines()
            .get(name)
            .map(|h| h.settings.clone())
            .ok_or_else(|| SupervisorError::NotFound(name.to_string()))
    }

    /// Applies a new config file: pipelines it drops are stopped, new ones started, those
    /// with other source, sink, device, streams, frames per stream, pinned frames or GPU
    /// tuning restarted, and those with only
    /// another filter switched live. Pipelines started through the API are left alone.
    /// An invalid config changes nothing.
    pub fn reload(&self, new: ConfigFile, timeout: Duration) -> Result<ReloadSummary, SupervisorError> {
        let settings = new
            .validate(self.base_dir.as_deref(), is_log_filter)
            .map_err(SupervisorError::Invalid)?;
        let mut summary = ReloadSummary::default();
        let old = self.config().clone();
        if old.server != new.server {
            summary
                .problems
                .push("[server] changed; the listen address and token apply at the next start".into());
        }
        *self.config() = new;
        let wanted: BTreeMap<String, PipelineSettings> =
            settings.pipelines.into_iter().map(|p| (p.name.clone(), p)).collect();

        let mut gone: Vec<Handle> = {
            let mut pipelines = self.pipelines();
            let names: Vec<String> = pipelines
                .iter()
                .filter(|(name, h)| h.origin == Origin::ConfigFile && !wanted.contains_key(*name))
                .map(|(name, _)| name.clone())
                .collect();
            summary.stopped.extend(names.iter().cloned());
            names.iter().filter_map(|name| pipelines.remove(name)).collect()
        };
        stop_and_join(&mut gone, timeout);

        for (name, next) in wanted {
            let current = self
                .pipelines()
                .get(&name)
                .map(|h| (h.origin, h.settings.clone(), h.monitor.clone()));
            // A file pipeline may not take a file that a pipeline started through the API uses.
            if let Some(conflict) = self.output_conflict(&next.config, |h| h.origin == Origin::Api) {
                summary
                    .problems
                    .push(format!("{conflict}; the config's pipeline is not started"));
                continue;
            }
            match current {
                None => match self.start(next, Origin::ConfigFile) {
                    Ok(()) => summary.started.push(name),
                    Err(e) => summary.problems.push(e.to_string()),
                },
                Some((Origin::Api, ..)) => summary.problems.push(format!(
                    "pipeline {name:?}: the name is taken by a pipeline started through the API; the config's is not started"
                )),
                Some((Origin::ConfigFile, current, monitor)) => {
                    // Only a running pipeline can switch its filter live; one that is still
                    // starting, or has ended, starts again with the new settings.
                    let changed = current.config != next.config || current.filter != next.filter;
                    let restart = current.config.source != next.config.source
                        || current.config.sink != next.config.sink
                        || current.device != next.device
                        || current.streams != next.streams
                        || current.frames_per_stream != next.frames_per_stream
                        || current.pinned_frames != next.pinned_frames
                        || current.gpu != next.gpu
                        || changed && monitor.state() != PipelineState::Running;
                    if restart {
                        let restarts = monitor.restarts.load(Ordering::Relaxed) + 1;
                        // The old run stays listed (as stopping) until the new one takes
                        // its place, so the pipeline never vanishes from the API meanwhile.
                        let stopping = self.pipelines().get_mut(&name).map(Handle::take_for_stop);
                        if let Some(handle) = stopping {
                            stop_and_join(&mut [handle], timeout);
                        }
                        match self.start(next, Origin::ConfigFile) {
                            Ok(()) => {
                                if let Some(handle) = self.pipelines().get(&name) {
                                    handle.monitor.restarts.store(restarts, Ordering::Relaxed);
                                }
                                summary.restarted.push(name);
                            }
                            Err(e) => {
                                self.pipelines().remove(&name);
                                summary.problems.push(e.to_string());
                            }
                        }
                    } else if current.filter != next.filter {
                        match self.switch_to(&next, "remove plane_masks from the file to apply it to every plane") {
                            Ok(Switched { applies_from, .. }) => {
                                summary.switched.push(format!("{name} (from frame {applies_from})"))
                            }
                            Err(e) => summary.problems.push(e.to_string()),
                        }
                    } else {
                        if let Some(handle) = self.pipelines().get_mut(&name) {
                            handle.settings = next; // same run, the config as now written
                        }
                        summary.unchanged.push(name);
                    }
                }
            }
        }
        Ok(summary)
    }

    pub fn names(&self) -> Vec<String> {
        self.pipelines().keys().cloned().collect()
    }

    pub fn monitors(&self) -> Vec<Arc<PipelineMonitor>> {
        self.pipelines().values().map(|h| h.monitor.clone()).collect()
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

    /// Ready once every pipeline can take its input: a file pipeline once it has started
    /// (engine built, kernels compiled), a live one from the start. A live pipeline stays
    /// starting until its sender's first frames size the engine, so waiting for it to leave
    /// that state would keep senders that are routed to ready instances only (a Kubernetes
    /// Service) from ever reaching it. A pipeline stopped on request counts as ready: the
    /// operator chose to stop it.
    pub fn ready(&self) -> bool {
        self.pipelines()
            .values()
            .all(|h| takes_input(h.settings.source.is_live(), h.monitor.state()))
    }
}

/// Why `pipeline` cannot run beside those of `pipelines` that `among` selects (see
/// [`Supervisor::output_conflict`]).
fn conflict_among(
    pipelines: &BTreeMap<String, Handle>,
    pipeline: &PipelineConfig,
    among: impl Fn(&Handle) -> bool,
) -> Option<String> {
    let mut running: Vec<PipelineConfig> = Vec::new();
    for handle in pipelines.values() {
        let active = !handle.monitor.state().has_ended();
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
    crate::config::conflicts_with_running(pipeline, &running)
}

/// Why switching from `before` to `after` leaves every plane of `format` frames as it was.
fn why_unchanged(before: &FilterSpec, after: &FilterSpec, format: PixelFormat, clear_hint: &str) -> String {
    let names = |planes: Vec<PlaneName>| planes.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
    if !before.mask.filters_like(&after.mask) && after.mask_unused(format) {
        let masked_over = after.planes_masked_over(format);
        if masked_over.is_empty() {
            return format!(
                "mask `{}` applies to the planes `planes` selects, and planes = {} selects none of {format}'s",
                after.mask.description(),
                after.planes
            );
        }
        return format!(
            "mask `{}` applies only to planes without a mask of their own, and plane_masks gives one to every plane planes = {} selects ({}); {clear_hint}",
            after.mask.description(),
            after.planes,
            names(masked_over)
        );
    }
    "every plane keeps the mask and border it had".to_string()
}

/// Whether a pipeline in `state` counts as ready (see [`Supervisor::ready`]).
fn takes_input(live: bool, state: PipelineState) -> bool {
    live || state != PipelineState::Starting
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").field("pipelines", &self.names()).finish()
    }
}

#[cfg(test)]
mod tests;

//! Live filter switches: the new filter checked against the pipeline's frames, its kernels
//! made on the caller's thread, then handed to the pipeline, which swaps between two frames.
//! The hand-over waits for the run's answer, its end or [`SWITCH_TIMEOUT`], whichever comes
//! first: a pipeline that ends meanwhile (its input ends, a stop) is an ended pipeline, not
//! a timeout.

use crossbeam_channel::{bounded, select, Receiver, Sender};
use std::convert::Infallible;
use std::time::{Duration, Instant};

use super::contract::{FilterUpdate, Switched};
use super::error::SupervisorError;
use super::lifecycle::Supervisor;
use convstream_config::{ConfigError, EngineStage, FilterConfig, PipelineSettings, Place, Problem};
use convstream_core::PixelFormat;
use convstream_core::{EngineError, FilterSpec, PlaneName};
use convstream_media::{FilterSwitch, PipelineState};

/// How long a filter switch may wait for the pipeline to take it.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What a switch does to a graph's own convolution filters (`convolution`, `sobel`...): they
/// give way to `null@mask`, where the switch's masks run; FFmpeg's filters before and after it
/// stay as they are. The graph's border stays unless the switch gives one. A switch of the
/// border or the planes alone (`keep_masks`) keeps the filters' masks, as plane masks there.
fn mask_stage_for_graph(filter: &mut FilterConfig, keep_masks: bool) {
    let Some(graph) = &filter.graph else {
        return;
    };
    // The graph ran, so it reads; one that no longer does is left for validation to name.
    let Ok(stages) = convstream_media::split_graph("filter.graph", graph) else {
        return;
    };
    if let EngineStage::Filters { border, .. } = &stages.engine {
        filter.graph = Some(stages.with_mask_placeholder());
        filter.plane_masks = if keep_masks {
            stages.engine.plane_mask_selections()
        } else {
            Default::default()
        };
        filter.border = border.and_then(|name| name.parse().ok()).unwrap_or_default();
    }
}

impl Supervisor {
    /// Switches a running pipeline's filter. The kernels are compiled here first, on the
    /// caller's thread; the pipeline then swaps between two frames. Returns the first frame
    /// filtered with the new filter and the planes the switch changes.
    pub fn switch_filter(&self, name: &str, update: FilterUpdate) -> Result<Switched, SupervisorError> {
        if update.clear_plane_masks && update.plane_masks.is_some() {
            return Err(SupervisorError::Invalid(ConfigError::Invalid(vec![Problem::general(
                "give either plane_masks (which replaces every plane mask; {} clears them) or clear_plane_masks, not both",
            )
            .at(Place::Pipeline(name.to_string()))])));
        }
        let current = self.settings(name)?;
        let mut config = current.config.clone();
        let filter = &mut config.filter;
        let touches_masks = update.mask.is_some() || update.plane_masks.is_some() || update.clear_plane_masks;
        if touches_masks || update.border.is_some() || update.planes.is_some() {
            mask_stage_for_graph(filter, !touches_masks);
        }
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
    pub(super) fn switch_to(&self, settings: &PipelineSettings, clear_hint: &str) -> Result<Switched, SupervisorError> {
        let name = &settings.name;
        let (id, monitor, switches, run_ended, before) = {
            let pipelines = self.pipelines();
            let handle = pipelines
                .get(name)
                .ok_or_else(|| SupervisorError::NotFound(name.clone()))?;
            (
                handle.id,
                handle.monitor.clone(),
                handle.switches.clone(),
                handle.run_ended.clone(),
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
        let mut warnings = Vec::new();
        if let Some(format) = monitor.format() {
            let problems = settings.filter.problems_with(format);
            if !problems.is_empty() {
                let placed = |p: String| Problem::value("filter", p).at(Place::Pipeline(name.to_string()));
                return Err(SupervisorError::Invalid(ConfigError::Invalid(
                    problems.into_iter().map(placed).collect(),
                )));
            }
            warnings = settings.filter.warnings(format);
            for warning in &warnings {
                tracing::warn!(pipeline = %name, pipeline_id = id.0, "{warning}");
            }
        }
        let started = Instant::now();
        monitor.prepare(&settings.filter).map_err(engine_error)?;
        tracing::debug!(
            "pipeline {name:?}: kernels for {} ready in {:.0} ms",
            settings.filter.description(),
            started.elapsed().as_secs_f64() * 1e3
        );
        let applies_from = hand_over(name, settings.filter.clone(), &switches, &run_ended)?.map_err(engine_error)?;
        // The run switched; the name may list another pipeline by now, which it did not.
        if let Some(handle) = self.pipelines().get_mut(name).filter(|handle| handle.id == id) {
            handle.settings = settings.clone();
        }
        // A running pipeline knows its frames' format; the planes follow from it.
        let format = monitor.format();
        let changed_planes = format.map_or_else(Vec::new, |format| before.changed_planes(&settings.filter, format));
        let unchanged_because = format
            .filter(|_| changed_planes.is_empty())
            .map(|format| why_unchanged(&before, &settings.filter, format, clear_hint));
        if let Some(reason) = &unchanged_because {
            tracing::warn!(pipeline = %name, pipeline_id = id.0, "the filter switch from frame {applies_from} changes no plane: {reason}");
        }
        Ok(Switched {
            applies_from,
            changed_planes,
            unchanged_because,
            warnings,
        })
    }

    fn settings(&self, name: &str) -> Result<PipelineSettings, SupervisorError> {
        self.pipelines()
            .get(name)
            .map(|h| h.settings.clone())
            .ok_or_else(|| SupervisorError::NotFound(name.to_string()))
    }
}

/// Hands `filter` to the run of pipeline `name` through `switches` and waits for its answer
/// (the first frame filtered anew, or the engine's refusal), all within [`SWITCH_TIMEOUT`].
/// The run's end (`run_ended` closes, or `switches` has no receiver left) ends the wait as
/// [`SupervisorError::EndedDuringSwitch`]: a switch queued as the input ended is never taken,
/// and a closed channel is no timeout.
fn hand_over(
    name: &str,
    filter: FilterSpec,
    switches: &Sender<FilterSwitch>,
    run_ended: &Receiver<Infallible>,
) -> Result<Result<u64, EngineError>, SupervisorError> {
    let deadline = Instant::now() + SWITCH_TIMEOUT;
    let ended = || SupervisorError::EndedDuringSwitch(name.to_string());
    let timed_out = || SupervisorError::SwitchTimedOut(name.to_string());
    let (reply, answer) = bounded(1);
    let switch = FilterSwitch { filter, reply };
    select! {
        send(switches, switch) -> sent => sent.map_err(|_| ended())?,
        recv(run_ended) -> _ => return Err(ended()),
        default(deadline.saturating_duration_since(Instant::now())) => return Err(timed_out()),
    }
    select! {
        // No answer and no sender left: the run dropped the switch as it ended.
        recv(answer) -> answered => answered.map_err(|_| ended()),
        // The answer may have come just before the run's thread returned.
        recv(run_ended) -> _ => answer.try_recv().map_err(|_| ended()),
        default(deadline.saturating_duration_since(Instant::now())) => Err(timed_out()),
    }
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

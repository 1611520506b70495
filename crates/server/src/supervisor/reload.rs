//! Reloading the config file into the running set: pipelines the file drops stopped, new
//! ones started, changed ones restarted or switched live; API pipelines left alone.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::contract::{Origin, ReloadSummary, Switched};
use super::error::SupervisorError;
use super::handle::Handle;
use super::lifecycle::Supervisor;
use super::stopping::stop_and_join;
use convstream_config::{ConfigFile, PipelineSettings};
use convstream_media::output_problems;
use convstream_media::PipelineState;

impl Supervisor {
    /// Applies a new config file: pipelines it drops are stopped, new ones started, those
    /// with other source, sink, device, streams, frames per stream, pinned frames or GPU
    /// tuning restarted, and those with only
    /// another filter switched live. Pipelines started through the API are left alone.
    /// An invalid config changes nothing.
    pub fn reload(&self, new: ConfigFile, timeout: Duration) -> Result<ReloadSummary, SupervisorError> {
        let settings = new
            .validate_for_serve(self.base_dir.as_deref(), output_problems)
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

        self.stop_dropped(&wanted, timeout, &mut summary);

        for (name, next) in wanted {
            let current = self
                .pipelines()
                .get(&name)
                .map(|h| (h.origin, h.settings.clone(), h.monitor.clone(), h.id));
            // A file pipeline may not take a file that a pipeline started through the API uses.
            if let Some(conflict) = self.output_conflict(&next.config, |h| h.origin == Origin::Api) {
                summary
                    .problems
                    .push(format!("{conflict}; the config's pipeline is not started"));
                continue;
            }
            match current {
                None => match self.start(next, Origin::ConfigFile, self.new_id()) {
                    Ok(()) => summary.started.push(name),
                    Err(e) => summary.problems.push(e.to_string()),
                },
                Some((Origin::Api, ..)) => summary.problems.push(format!(
                    "pipeline {name:?}: the name is taken by a pipeline started through the API; the config's is not started"
                )),
                Some((Origin::ConfigFile, current, monitor, id)) => {
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
                        // FFmpeg's filters around the engine (a graph's, or the chains) are
                        // built when the run opens: a change of theirs is a new run.
                        || current.ffmpeg_before != next.ffmpeg_before
                        || current.ffmpeg_after != next.ffmpeg_after
                        || changed && monitor.state() != PipelineState::Running;
                    if restart {
                        let restarts = monitor.restarts.load(Ordering::Relaxed) + 1;
                        // The old run stays listed (as stopping) until the new one takes
                        // its place, so the pipeline never vanishes from the API meanwhile.
                        let stopping = self.pipelines().get(&name).map(Handle::share_for_stop);
                        let late = stopping.map_or_else(Vec::new, |handle| stop_and_join(&mut [handle], timeout));
                        if !late.is_empty() {
                            // Two runs would write its files: the new one waits for a later reload.
                            summary.problems.push(format!(
                                "pipeline {name:?}: its threads have not ended within the stop timeout (blocked in I/O); it is not started again"
                            ));
                            continue;
                        }
                        // The same pipeline, run again: its id (and so its history) stays.
                        match self.start(next, Origin::ConfigFile, id) {
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

    /// Stops the config's pipelines the file no longer has. They stay listed while they
    /// stop, and are forgotten only once their threads have ended: a name is free only then.
    fn stop_dropped(
        &self,
        wanted: &BTreeMap<String, PipelineSettings>,
        timeout: Duration,
        summary: &mut ReloadSummary,
    ) {
        let mut gone: Vec<Handle> = {
            let pipelines = self.pipelines();
            let gone: Vec<Handle> = pipelines
                .iter()
                .filter(|(name, h)| h.origin == Origin::ConfigFile && !wanted.contains_key(*name))
                .map(|(_, h)| h.share_for_stop())
                .collect();
            summary.stopped.extend(gone.iter().map(|h| h.monitor.name.clone()));
            gone
        };
        let late = stop_and_join(&mut gone, timeout);
        {
            let mut pipelines = self.pipelines();
            for handle in &gone {
                let name = &handle.monitor.name;
                let same_run = pipelines
                    .get(name)
                    .is_some_and(|listed| Arc::ptr_eq(&listed.monitor, &handle.monitor));
                if same_run && !late.contains(name) {
                    pipelines.remove(name);
                }
            }
        }
        for name in &late {
            summary.problems.push(format!(
                "pipeline {name:?}: its threads have not ended within the stop timeout (blocked in I/O); it stays listed until they do"
            ));
        }
    }
}

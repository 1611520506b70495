//! What the supervisor is asked and what it answers: which pipeline a name stands for now,
//! where a pipeline came from, a filter change, what a switch did, what a reload did.

use serde::Serialize;
use std::sync::Arc;

use convstream_config::MaskSelection;
use convstream_core::{BorderMode, PlaneName, PlaneSelection};
use convstream_media::PipelineMonitor;

/// Which pipeline a name stands for: a number given when the name is listed (a POST, the
/// config file, a reload adding it), never given again in the process, and kept while the
/// name stays listed, through stops, starts and a reload's restarts. What the server keeps
/// of a pipeline beside the supervisor (its history, its log lines) is keyed by it, not by
/// the name, so that a pipeline deleted and added again under its name starts with none of
/// the old one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PipelineId(pub u64);

impl std::fmt::Display for PipelineId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A listed pipeline as the server's keepers read it: which one it is and its current run.
#[derive(Clone)]
pub struct Listed {
    pub id: PipelineId,
    pub monitor: Arc<PipelineMonitor>,
}

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
    /// What the new filter likely does that was not meant, for these frames (a zero-sum
    /// mask on chroma turning the picture green, a custom matrix changing brightness), as
    /// `check` and `run` warn of it.
    pub warnings: Vec<String>,
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

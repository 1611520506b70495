//! A pipeline's filter as a picker edits it ([`FilterChoice`]): every mask as its keys (a
//! `[masks.NAME]` as its table, a SPEC as the keys it sets), with border and planes, so
//! that a client opens on what runs and sends back exactly that; and a mask a request
//! names, built as a switch would build it, for a preview.

use serde::Serialize;
use std::collections::BTreeMap;

use super::lifecycle::Supervisor;
use convstream_config::MaskSelection;
use convstream_core::{BorderMode, PlaneSelection};
use convstream_core::{Mask, MaskParams};

/// The filter a pipeline runs, mask by mask.
#[derive(Debug, Clone, Serialize)]
pub struct FilterChoice {
    /// The mask of every plane without a mask of its own.
    pub mask: MaskParams,
    /// The `[masks.NAME]` it was selected by, if it was.
    pub mask_name: Option<String>,
    /// Per-plane masks by the keys `plane_masks` takes (`y`, `uv`, ...).
    pub plane_masks: BTreeMap<String, MaskParams>,
    pub border: BorderMode,
    pub planes: PlaneSelection,
}

impl Supervisor {
    /// The filter pipeline `name` runs, as [`FilterChoice`]; `None` for an unknown name.
    pub fn filter_choice(&self, name: &str) -> Option<FilterChoice> {
        let filter = self.pipelines().get(name)?.settings.config.filter.clone();
        let (mask, mask_name) = self.mask_keys(&filter.mask);
        let plane_masks = filter
            .plane_masks
            .iter()
            .map(|(plane, selection)| (plane.clone(), self.mask_keys(selection).0))
            .collect();
        Some(FilterChoice {
            mask,
            mask_name,
            plane_masks,
            border: filter.border,
            planes: filter.planes,
        })
    }

    /// The keys a selection sets, and the name of the config's mask it selects, if any. A
    /// SPEC that no longer parses (it ran, so it did) is shown as its preset name.
    fn mask_keys(&self, selection: &MaskSelection) -> (MaskParams, Option<String>) {
        match selection {
            MaskSelection::Inline(params) => (params.clone(), None),
            MaskSelection::Named(text) => {
                if let Some(params) = self.config().masks.get(text) {
                    return (params.clone(), Some(text.clone()));
                }
                let params = MaskParams::parse_spec(text).unwrap_or_else(|_| MaskParams {
                    preset: Some(text.clone()),
                    ..MaskParams::default()
                });
                (params, None)
            }
        }
    }

    /// Builds the mask `selection` names, resolving the config's named masks and relative
    /// files as a switch does; every problem as text.
    pub fn build_mask(&self, selection: &MaskSelection) -> Result<Mask, Vec<String>> {
        let params = match selection {
            MaskSelection::Inline(params) => params.clone(),
            MaskSelection::Named(text) => match self.config().masks.get(text) {
                Some(params) => params.clone(),
                None => MaskParams::parse_spec(text)
                    .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?,
            },
        };
        Mask::build(&params, self.base_dir.as_deref())
            .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }
}

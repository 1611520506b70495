//! What a pipeline computes, independent of the engine that computes it: the mask,
//! the border mode and which planes are filtered.
//!
//! Here: the modules and what they give the crates above. The named choices (border,
//! planes) are in `choices.rs`, the filter itself in `spec.rs`.

mod choices;
mod spec;

pub use crate::format::PlaneName;
pub use choices::{BorderMode, PlaneSelection};
pub use spec::{FilterSpec, PlaneMasks};

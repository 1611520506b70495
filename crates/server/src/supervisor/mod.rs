//! Starts, stops, switches and reloads the pipelines of `serve`. Each pipeline runs on its
//! own threads; the supervisor only holds their stop flags, switch channels and monitors,
//! so the control plane never waits on pixels (callers run the blocking parts off the
//! async runtime).

mod contract;
mod error;
mod filter_choice;
mod handle;
mod lifecycle;
mod readiness;
mod reload;
mod stopping;
mod switch;
mod view;

pub use contract::{FilterUpdate, Listed, Origin, PipelineId, ReloadSummary, Switched};
pub use error::SupervisorError;
pub use filter_choice::FilterChoice;
pub use lifecycle::Supervisor;
pub use readiness::STEADY_FOR;
pub use view::{CounterView, PipelineView};

#[cfg(test)]
mod tests;

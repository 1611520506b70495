//! Every pipeline's recent past, kept by the server so that any client (the console after a
//! reload, a script) reads the same, and served at `GET /pipelines/{name}/history`.
//!
//! - `store`: [`PipelineHistory`], its points and the task of `serve` that takes them;
//! - `routes`: [`routes`], the endpoint.

mod routes;
mod store;

pub use routes::routes;
pub use store::{HistoryPoint, PipelineHistory, HISTORY_INTERVAL, HISTORY_POINTS};

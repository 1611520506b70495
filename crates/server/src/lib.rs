//! `convstream serve`: runs every pipeline of a config at once behind an HTTP API, with
//! Prometheus metrics, live filter switching, reload (SIGHUP, the console or a changed
//! file) and a graceful stop. This tokio control plane never touches pixels: it starts,
//! stops and reconfigures pipeline threads through the [`supervisor::Supervisor`] and reads
//! their counters. Start to stop is [`serve`] (`serve.rs`); the handlers share
//! [`state::ApiState`].

pub mod api;
mod console;
mod gpu_metrics;
mod graph_policy;
pub mod guard;
pub mod history;
mod learned_seats;
pub mod metrics;
mod nvdec_metrics;
mod pause_watch;
pub mod pipeline_logs;
pub mod policy;
mod process_metrics;
pub mod reload;
mod serve;
pub mod shard;
pub mod snapshot;
pub mod state;
pub mod supervisor;

pub use serve::{serve, ServeError, ServeOptions};

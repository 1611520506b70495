//! The integration tests, one binary: every module below links FFmpeg, cudarc and axum once
//! instead of once per file. Run one part with a module filter, e.g.
//! `cargo test --release --test it -- serve::`. The engines' own tests (the GPU tests, the CPU
//! oracle, the mask properties) are core's: `crates/core/tests/engines/`.
//!
//! The tests share one process: none may change process-wide state (environment variables,
//! the current directory, signal handlers, FFmpeg's global log level). They pass what the
//! binary under test needs to the child process instead (`common::convstream()`).

mod api_safety;
mod bad_input;
mod bench;
mod bounds_and_text;
mod cli;
mod common;
mod config_check;
mod confinement;
mod console;
mod console_history;
mod data_kept;
mod data_loss;
mod deploy;
mod depth;
mod empty_runs;
mod exit_handoff;
mod ffmpeg_corpus;
mod ffmpeg_dropin;
mod ffmpeg_graphs;
mod ffmpeg_language;
mod flags;
mod graph_config;
mod host_fill;
mod image_encoders;
mod outputs;
mod peers;
mod pipeline_identity;
mod properties;
mod refusals_round_four;
mod runaways;
mod serve;
mod service_truth;
mod shards;
mod stop_start;
mod stops;
mod streams;
mod structure;
mod thread_names;

//! The TOML configuration: the schema (`deny_unknown_fields` everywhere) and the
//! validation that turns it into runnable pipeline settings, reporting every problem at once.
//!
//! - `file`: reading and parsing a config; `structure`: every problem of a text that does
//!   not fit the schema; `schema`: the file's shape; `error`: [`ConfigError`].
//! - `validate`: a parsed config turned into [`Settings`] (`settings`), with [`limits`],
//!   `log_filter`, `inputs` and `outputs` checks.
//! - `overrides`: command-line flags laid over a config.

mod error;
mod file;
mod inputs;
pub mod limits;
mod log_filter;
mod outputs;
mod overrides;
mod schema;
mod settings;
pub mod shard_spec;
mod structure;
mod validate;

pub use error::ConfigError;
pub use file::{read_config_bytes, DEFAULT_CONFIG, MAX_CONFIG_BYTES};
pub use inputs::missing_inputs;
pub use log_filter::LogFilterCheck;
pub use outputs::{
    check_outputs, config_file_problems, conflicts_with_running, container_of_scheme, output_key,
    refuse_existing_outputs, side_output_problems, FileIdentity, OutputTarget,
};
pub use overrides::Overrides;
pub use schema::{
    ConfigFile, DropPolicy, FilterConfig, LogConfig, LogFormat, MaskSelection, PipelineConfig, ReconnectConfig,
    ServerConfig, SinkConfig, SourceConfig,
};
pub use settings::{PipelineSettings, Settings};
pub use structure::pipeline_problems;

#[cfg(test)]
mod tests;

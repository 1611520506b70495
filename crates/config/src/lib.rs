//! convstream's configuration: the TOML schema (`deny_unknown_fields` everywhere) and the
//! validation that turns it into runnable pipeline settings, reporting every problem at once,
//! each a typed [`Problem`] with its [`Place`]. The command line, `serve`, the GStreamer
//! element and Python all enter through it; none of it needs FFmpeg: what only FFmpeg can
//! tell (whether a container or an encoder exists) is passed in as an [`OutputCheck`].
//!
//! - `file`: reading and parsing a config; `structure`: every problem of a text that does
//!   not fit the schema; `schema`: the file's shape; `error`: [`ConfigError`]; `problem`:
//!   [`Problem`] and [`Place`].
//! - `validate`: a parsed config turned into [`Settings`] (`settings`), with [`limits`],
//!   `log_filter`, `inputs` and `outputs` checks; `filter`: a `[filter]` alone, as
//!   [`FilterSettings`]; `graph`: `filter.graph`, split by the reader the media crate
//!   installs ([`install_graph_reader`]).
//! - `overrides`: command-line flags laid over a config; [`shard_spec`]: `--shard`'s syntax;
//!   `measured_seats`: the NVDEC seats file `[server] nvdec_seats_file` names.
//!
//! ```
//! use convstream_config::{ConfigFile, Place, Problem, NO_OUTPUT_CHECK};
//!
//! let text = "[[pipeline]]\nname = \"cam1\"\nsource.url = \"in.mkv\"\nsink.url = \"null\"\nfilter.mask = \"gaussian:size=4\"\n";
//! let config = ConfigFile::parse(text, "cam1.toml", NO_OUTPUT_CHECK).unwrap();
//! let error = config.validate(None, NO_OUTPUT_CHECK).unwrap_err();
//! let problem = &error.problems().unwrap()[0];
//! assert_eq!(problem.place(), &Place::Pipeline("cam1".into()));
//! assert_eq!(problem.field(), Some("filter.mask"));
//! assert!(problem.to_string().starts_with("pipeline \"cam1\": filter.mask: "));
//! ```

#![deny(missing_docs)]

mod error;
mod file;
mod filter;
mod graph;
mod inputs;
pub mod limits;
mod log_filter;
mod measured_seats;
mod outputs;
mod overrides;
mod problem;
mod schema;
mod settings;
pub mod shard_spec;
mod structure;
mod validate;

pub use error::ConfigError;
pub use file::{read_config_bytes, DEFAULT_CONFIG, MAX_CONFIG_BYTES};
pub use filter::FilterSettings;
pub use graph::{
    install_graph_reader, read_graph, EngineStage, GraphReader, GraphStages, MASK_PLACEHOLDER, MAX_GRAPH_CHARS,
};
pub use inputs::missing_inputs;
pub use log_filter::is_log_filter;
pub use measured_seats::MeasuredSeats;
pub use outputs::{
    check_outputs, config_file_problems, conflicts_with_running, container_of_scheme, existing_outputs, output_key,
    refuse_existing_outputs, side_output_problems, FileIdentity, OutputCheck, OutputTarget, NO_OUTPUT_CHECK,
};
pub use overrides::Overrides;
pub use problem::{Place, Problem, STANDALONE_PIPELINE};
pub use schema::{
    ConfigFile, DropPolicy, FilterConfig, LogConfig, LogFormat, MaskSelection, PipelineConfig, ReconnectConfig,
    ServerConfig, SinkConfig, SourceConfig,
};
pub use settings::{PipelineSettings, Settings};
pub use structure::pipeline_problems;

#[cfg(test)]
mod tests;

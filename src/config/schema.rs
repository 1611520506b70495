//! The shape of the TOML file, field by field, with defaults.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

use crate::filter::{BorderMode, PlaneSelection};
use crate::mask::MaskParams;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub log: LogConfig,
    /// Named masks that pipelines select with `mask = "NAME"`.
    #[serde(default)]
    pub masks: BTreeMap<String, MaskParams>,
    #[serde(default, rename = "pipeline")]
    pub pipelines: Vec<PipelineConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// A tracing filter such as `info` or `convstream=debug`; `RUST_LOG` overrides it.
    pub level: Option<String>,
    #[serde(default)]
    pub format: LogFormat,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Pretty,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    pub name: String,
    pub source: SourceConfig,
    #[serde(default)]
    pub filter: FilterConfig,
    pub sink: SinkConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// A path, `-` for stdin, or any URL the FFmpeg build opens.
    pub url: String,
    /// Force a demuxer (`-f` in ffmpeg), e.g. `mpegts` for a UDP stream.
    pub format: Option<String>,
    /// `auto` (software, frame-threaded), `software`, `nvdec`, or an FFmpeg decoder name.
    #[serde(default = "default_decoder")]
    pub decoder: String,
    /// Decoder threads; 0 lets FFmpeg choose.
    #[serde(default)]
    pub threads: usize,
    /// Start over at the end of the input.
    #[serde(default, rename = "loop")]
    pub looping: bool,
    /// Pace reading at the stream's frame rate (for testing live setups with files).
    #[serde(default)]
    pub realtime: bool,
}

fn default_decoder() -> String {
    "auto".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    #[serde(default)]
    pub mask: MaskSelection,
    #[serde(default)]
    pub planes: PlaneSelection,
    #[serde(default)]
    pub border: BorderMode,
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    #[serde(default = "default_device")]
    pub device: String,
    /// CUDA lanes (streams, frames in flight), 1..=16.
    #[serde(default = "default_streams")]
    pub streams: usize,
}

impl Default for FilterConfig {
    fn default() -> Self {
        FilterConfig {
            mask: MaskSelection::default(),
            planes: PlaneSelection::default(),
            border: BorderMode::default(),
            device: default_device(),
            streams: default_streams(),
        }
    }
}

fn default_device() -> String {
    "auto".to_string()
}

fn default_streams() -> usize {
    4
}

/// `mask = "SPEC or NAME"` or an inline table of mask keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MaskSelection {
    Named(String),
    Inline(MaskParams),
}

impl Default for MaskSelection {
    fn default() -> Self {
        MaskSelection::Named("identity".to_string())
    }
}

/// Deserialised by hand so that a bad inline table gets the table's own error
/// ("unknown field `sigmaa`, expected one of ...") instead of "no variant matched".
impl<'de> Deserialize<'de> for MaskSelection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        match value {
            toml::Value::String(s) => Ok(MaskSelection::Named(s)),
            toml::Value::Table(table) => MaskParams::deserialize(table)
                .map(MaskSelection::Inline)
                .map_err(|e| serde::de::Error::custom(format!("in the mask table: {}", e.message()))),
            other => Err(serde::de::Error::custom(format!(
                "mask must be a string (a preset SPEC or the name of a [masks.NAME] table) or a table of mask keys, not a {}",
                other.type_str()
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkConfig {
    /// A path, `-` for stdout (YUV4MPEG2), `null` to discard, or a URL.
    pub url: String,
    /// Force a muxer (`-f` in ffmpeg): `mpegts`, `yuv4mpegpipe`, `matroska`, ...
    pub format: Option<String>,
    /// Video encoder name; by default one suited to the container.
    pub codec: Option<String>,
    /// Prefer a lossless encoder (ffv1) where the container takes it.
    #[serde(default)]
    pub lossless: bool,
    /// Encoder options, as `ffmpeg -OPTION VALUE` would set them (`b = "8M"`, `qscale = "2"`).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Copy audio and other non-video streams when the container can hold them.
    #[serde(default = "default_true")]
    pub audio: bool,
}

fn default_true() -> bool {
    true
}

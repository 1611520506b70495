//! What a validated configuration is: [`Settings`], and each pipeline's
//! [`PipelineSettings`], ready to run.

use super::schema::{LogConfig, PipelineConfig, ServerConfig, SinkConfig, SourceConfig};
use convstream_core::engine::{DeviceChoice, GpuTuning};
use convstream_core::filter::FilterSpec;

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    pub log: LogConfig,
    pub server: ServerConfig,
    pub pipelines: Vec<PipelineSettings>,
}

/// One pipeline, ready to run.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    pub name: String,
    pub source: SourceConfig,
    pub filter: FilterSpec,
    pub device: DeviceChoice,
    pub streams: usize,
    pub frames_per_stream: usize,
    /// The configured cap on pinned frames, if any (see `pipeline::pooled_frames`).
    pub pinned_frames: Option<usize>,
    /// The CUDA engine's spin-wait and tilings.
    pub gpu: GpuTuning,
    pub sink: SinkConfig,
    /// The pipeline as written, for reload comparisons and the API.
    pub config: PipelineConfig,
}

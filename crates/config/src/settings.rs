//! What a validated configuration is: [`Settings`], and each pipeline's
//! [`PipelineSettings`], ready to run.

use crate::schema::{LogConfig, PipelineConfig, ServerConfig, SinkConfig, SourceConfig};
use convstream_core::FilterSpec;
use convstream_core::{DeviceChoice, GpuTuning};

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `[log]` as written.
    pub log: LogConfig,
    /// `[server]` as written.
    pub server: ServerConfig,
    /// Every pipeline, in the file's order.
    pub pipelines: Vec<PipelineSettings>,
}

/// One pipeline, ready to run.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// The pipeline's name, unique among the config's.
    pub name: String,
    /// The input as configured.
    pub source: SourceConfig,
    /// What the engine computes: the built masks, planes and border.
    pub filter: FilterSpec,
    /// The engine it runs on.
    pub device: DeviceChoice,
    /// The CUDA engine's streams.
    pub streams: usize,
    /// Frames in flight per CUDA stream.
    pub frames_per_stream: usize,
    /// The configured cap on pinned frames, if any (see `pipeline::pooled_frames`).
    pub pinned_frames: Option<usize>,
    /// The CUDA engine's spin-wait and tilings.
    pub gpu: GpuTuning,
    /// FFmpeg's filters before the engine (`filter.ffmpeg_before`, or the graph's part
    /// before its convolution stage).
    pub ffmpeg_before: Option<String>,
    /// FFmpeg's filters after the engine (`filter.ffmpeg_after`, or the graph's part after).
    pub ffmpeg_after: Option<String>,
    /// What `filter.graph` takes differently from how it reads (see `FilterSettings`).
    pub graph_warnings: Vec<String>,
    /// The output as configured.
    pub sink: SinkConfig,
    /// The pipeline as written, for reload comparisons and the API.
    pub config: PipelineConfig,
}

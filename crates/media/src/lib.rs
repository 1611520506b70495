//! convstream's media layer: the FFmpeg source (demux and decode, software or NVDEC) and sink
//! (encode and mux), the pipeline that runs them around an engine of the core crate, each
//! stage a thread joined by bounded channels ([`run_pipeline`], [`run_all`], [`run_monitored`]).
//! The configuration that describes pipelines is `convstream_config`'s.
//!
//! The modules are private; what other crates use is re-exported here, in one place:
//! - `ffmpeg`: FFmpeg's start-up ([`init_ffmpeg`]), the config's check of outputs
//!   ([`output_problems`]), encoders and options by name;
//! - `pipeline`: running pipelines, their monitor, start gate and NVDEC seats, frame previews;
//! - `source` and `sink`: FFmpeg's input and output;
//! - `stats`: counters and reports, and what the process uses ([`cpu_and_resident`]);
//! - `graph`: FFmpeg filter graphs read by libavfilter ([`parse_chain`]) and split into the
//!   engine's stage and FFmpeg's filters around it ([`split_graph`], the config's graph
//!   reader: [`install_graph_reader`]);
//! - `sample`: the generated sample clip.

#![deny(missing_docs)]

mod ffmpeg;
mod graph;
mod pipeline;
mod sample;
mod sink;
mod source;
mod stats;

pub use ffmpeg::encoders::{default_encoders, encoder_usable, first_usable, nvenc_usable, video_encoder_names};
pub use ffmpeg::options::{option_owner, OptionOwner};
pub use ffmpeg::{guess_muxer, init as init_ffmpeg, output_problems, PassthroughPacket};
pub use graph::chain::{parse_chain, ChainError, ChainFilter};
pub use graph::install_graph_reader;
pub use graph::stages::split_graph;
pub use graph::tail::OutputFilterOptions;
pub use pipeline::snapshot::{Snapshot, SnapshotPlane, SnapshotStage};
pub use pipeline::{
    cut_short_by_stop, decode_only, decode_only_on, fit_to_filter, panic_message, pooled_frames, run_all,
    run_monitored, run_pipeline, seats_of, AfterFilters, EngineStatus, FilterSwitch, GpuLearned, GpuSeats, Learned,
    LearnedListener, NvdecSeat, OutputPolicy, PaceGauge, PaceReading, PipelineError, PipelineMonitor, PipelineState,
    Progress, RunOptions, RunProgress, SeatBoard, SeatSource, SeatWanted, StartGate, StartTurn, LONGEST_TURN,
};
pub use sample::{generate as generate_sample, generate_content as generate_sample_content, SampleContent, SampleSpec};
pub use sink::{mark_stdout_closed, FileId, SinkKind};
pub use source::{Source, SourceError};
pub use stats::process::{cpu_and_resident, open_fds, read_process_stat, ProcessStat};
pub use stats::{quantile_ms_of, CounterSnapshot, Counters, FrameLatency, PipelineReport, StartupTimes};

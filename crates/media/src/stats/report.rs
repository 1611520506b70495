//! What a finished pipeline reports: the summary line and `--stats-json`.

use serde::Serialize;

use super::counters::EndedEarly;
use super::latency::FrameLatency;
use super::startup::StartupTimes;

/// What a finished pipeline reports, printed as a summary and written by `--stats-json`.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineReport {
    /// The pipeline's name.
    pub pipeline: String,
    /// The input as configured.
    pub input: String,
    /// The output as configured.
    pub output: String,
    /// The engine it ended on, by its name (with the GPU's), or `none` when none was made.
    pub engine: String,
    /// The filter, as its SPEC or name.
    pub mask: String,
    /// The video encoder, its settings and the container (`None` for the null sink).
    pub output_encoder: Option<String>,
    /// The picture size written, `WIDTHxHEIGHT`.
    pub output_size: String,
    /// The encoded video's bitrate over the frames written, at the stream's frame rate.
    #[serde(serialize_with = "super::rounding::optional_thousandths")]
    pub output_kbps: Option<f64>,
    /// Frames decoded.
    pub frames_in: u64,
    /// Frames written.
    pub frames_out: u64,
    /// Frames dropped before the filter (`drop = "oldest"`).
    pub frames_dropped: u64,
    /// Packets flagged corrupt or rejected by the decoder, skipped.
    pub corrupt_packets: u64,
    /// Read errors skipped.
    pub read_errors: u64,
    /// Frames decoded with errors concealed.
    pub damaged_frames: u64,
    /// NVDEC decoders made anew after failing mid-stream (no frame lost by it).
    pub decoder_restarts: u64,
    /// Where the input ended, when well before the length its container announces.
    pub ended_early: Option<EndedEarly>,
    /// Packets of copied streams written.
    pub packets_passed_through: u64,
    /// Seconds from the pipeline's start to its end.
    #[serde(serialize_with = "super::rounding::seconds")]
    pub seconds: f64,
    /// Of `seconds`, the time spent opening the input and output and preparing the engine
    /// (GPU context, kernels, buffers); `fps` counts the rest.
    #[serde(serialize_with = "super::rounding::seconds")]
    pub setup_seconds: f64,
    /// From the pipeline's start to its first frame written (`None`: none was).
    #[serde(serialize_with = "super::rounding::optional_seconds")]
    pub time_to_first_frame: Option<f64>,
    /// The steps of the start: input open, engine ready, output open, first frame.
    pub startup: StartupTimes,
    /// Frames written per second once set up (over `seconds - setup_seconds`).
    #[serde(serialize_with = "super::rounding::thousandths")]
    pub fps: f64,
    /// Time each stage spent working (not waiting on its neighbours), in seconds.
    #[serde(serialize_with = "super::rounding::seconds")]
    pub source_seconds: f64,
    /// The filter stage's working time, in seconds.
    #[serde(serialize_with = "super::rounding::seconds")]
    pub filter_seconds: f64,
    /// The sink's working time, in seconds.
    #[serde(serialize_with = "super::rounding::seconds")]
    pub sink_seconds: f64,
    /// From a frame decoded to it filtered (queueing included), median and 99th percentile.
    #[serde(serialize_with = "super::rounding::optional_milliseconds")]
    pub latency_p50_ms: Option<f64>,
    /// The 99th percentile of that latency.
    #[serde(serialize_with = "super::rounding::optional_milliseconds")]
    pub latency_p99_ms: Option<f64>,
    /// The slowest frames, to tell a start-up tail from one spread over the run.
    pub latency_slowest: Vec<FrameLatency>,
    /// Stopped early by a signal or because the output was closed.
    pub stopped_early: Option<String>,
}

impl PipelineReport {
    /// The summary line `run` prints for the pipeline.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{}: {} frames in, {} out, {} dropped in {:.2} s ({:.1} fps) on {}; stage time: decode {:.2} s, filter {:.2} s, encode {:.2} s",
            self.pipeline,
            self.frames_in,
            self.frames_out,
            self.frames_dropped,
            self.seconds,
            self.fps,
            self.engine,
            self.source_seconds,
            self.filter_seconds,
            self.sink_seconds
        );
        if let Some(first) = self.time_to_first_frame {
            text.push_str(&format!("; first frame after {:.0} ms", first * 1e3));
        }
        match &self.output_encoder {
            Some(encoder) => {
                text.push_str(&format!("; output: {encoder}, {}", self.output_size));
                if let Some(kbps) = self.output_kbps {
                    text.push_str(&format!(", {kbps:.0} kb/s"));
                }
            }
            // The null output (`null`, `-f null`): the frames were filtered, then dropped.
            None => text.push_str("; output: null, nothing encoded"),
        }
        let damage = self.damage();
        if !damage.is_empty() {
            text.push_str(&format!("; input damage: {}", damage.join(", ")));
        }
        if self.decoder_restarts > 0 {
            text.push_str(&format!("; NVDEC decoder made anew {} time(s)", self.decoder_restarts));
        }
        if let Some(reason) = &self.stopped_early {
            text.push_str(&format!("; stopped early: {reason}"));
        }
        text
    }

    /// What was wrong with the input, one phrase per kind of damage; empty when nothing was.
    pub fn damage(&self) -> Vec<String> {
        let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut damage = Vec::new();
        if self.corrupt_packets > 0 {
            damage.push(count(
                self.corrupt_packets,
                "corrupt packet skipped",
                "corrupt packets skipped",
            ));
        }
        if self.read_errors > 0 {
            damage.push(count(self.read_errors, "read error skipped", "read errors skipped"));
        }
        if self.damaged_frames > 0 {
            damage.push(count(
                self.damaged_frames,
                "frame decoded with errors concealed",
                "frames decoded with errors concealed",
            ));
        }
        if let Some(ended) = &self.ended_early {
            damage.push(format!(
                "the input ended at {:.2} s of the {:.2} s its container announces (truncated?)",
                ended.ended_at_seconds, ended.announced_seconds
            ));
        }
        damage
    }
}

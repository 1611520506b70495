//! One frame's latency through the pipeline, split where it went.

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use convstream_core::Timeline;

/// One frame's latency, and where it went. `frame` is its number from the pipeline's start
/// (as in filter switches), so a tail made of the first frames shows as small numbers. The
/// parts add up to `ms`: waiting, then submitting, then in the engine, then handed back.
/// A part is unset when the frame did not pass the point it starts at (see [`Timeline`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FrameLatency {
    /// The frame's number from the pipeline's start.
    pub frame: u64,
    /// From decoded to filtered, in milliseconds.
    #[serde(serialize_with = "super::rounding::milliseconds")]
    pub ms: f64,
    /// Before the filter stage began handing the frame to the engine: in the decoded queue,
    /// or the filter thread waking up.
    #[serde(default, serialize_with = "super::rounding::optional_milliseconds")]
    pub waited_ms: Option<f64>,
    /// Handing it to the engine (the CUDA engine: queueing its copies and kernels).
    #[serde(default, serialize_with = "super::rounding::optional_milliseconds")]
    pub submit_ms: Option<f64>,
    /// In the engine after that, until its work was seen done.
    #[serde(default, serialize_with = "super::rounding::optional_milliseconds")]
    pub engine_ms: Option<f64>,
    /// Of `engine_ms`, GPU time from the start of its upload to the end of its download
    /// (the CUDA engine with stage timing on).
    #[serde(default, serialize_with = "super::rounding::optional_milliseconds")]
    pub gpu_ms: Option<f64>,
    /// From its work done until the filter stage took it back (for a frame staged
    /// through the CUDA engine's own buffers, copying it out included).
    #[serde(default, serialize_with = "super::rounding::optional_milliseconds")]
    pub handoff_ms: Option<f64>,
}

impl FrameLatency {
    /// The latency of a frame taken back from the engine `now`, split at its timeline's
    /// points. None when the frame has no decode time to start from.
    pub fn of(frame: u64, timeline: &Timeline, gpu: Option<Duration>, now: Instant) -> Option<FrameLatency> {
        let decoded = timeline.decoded?;
        let ms = |from: Instant, to: Instant| to.saturating_duration_since(from).as_secs_f64() * 1e3;
        let between = |from: Option<Instant>, to: Option<Instant>| Some(ms(from?, to?));
        Some(FrameLatency {
            frame,
            ms: ms(decoded, now),
            waited_ms: between(Some(decoded), timeline.submitted),
            submit_ms: between(timeline.submitted, timeline.enqueued),
            engine_ms: between(timeline.enqueued, timeline.finished),
            gpu_ms: gpu.map(|gpu| gpu.as_secs_f64() * 1e3),
            handoff_ms: between(timeline.finished, Some(now)),
        })
    }

    /// "#474 2.10 ms: waited 0.05, submit 0.03, engine 1.90 (GPU 0.40), handoff 0.10", with
    /// the parts that were measured.
    pub fn describe(&self) -> String {
        let engine = self.engine_ms.map(|ms| match self.gpu_ms {
            Some(gpu) => format!("engine {ms:.2} (GPU {gpu:.2})"),
            None => format!("engine {ms:.2}"),
        });
        let parts: Vec<String> = [
            self.waited_ms.map(|ms| format!("waited {ms:.2}")),
            self.submit_ms.map(|ms| format!("submit {ms:.2}")),
            engine,
            self.handoff_ms.map(|ms| format!("handoff {ms:.2}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        match parts.is_empty() {
            true => format!("#{} {:.2} ms", self.frame, self.ms),
            false => format!("#{} {:.2} ms: {}", self.frame, self.ms, parts.join(", ")),
        }
    }
}

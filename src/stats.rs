//! Counters a pipeline's stages update while they run and the summary made from them.

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Frames whose filter latency is kept for the report (8 MB of samples at most).
pub const MAX_LATENCY_SAMPLES: usize = 1 << 19;

/// How many of the slowest frames a report lists.
pub const SLOWEST_FRAMES: usize = 10;

/// One frame's latency. `frame` is its number from the pipeline's start (as in filter
/// switches), so a tail made of the first frames shows as small numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FrameLatency {
    pub frame: u64,
    pub ms: f64,
    /// Of `ms`, the time before the filter stage handed the frame to the engine (waiting in
    /// the decoded queue, or for the filter thread to wake); the rest is the engine's.
    #[serde(default)]
    pub waited_ms: Option<f64>,
}

/// Live counters, shared by a pipeline's threads (and read by progress and metrics).
#[derive(Debug, Default)]
pub struct Counters {
    pub frames_decoded: AtomicU64,
    pub frames_filtered: AtomicU64,
    pub frames_written: AtomicU64,
    pub frames_dropped: AtomicU64,
    /// Packets the demuxer flagged corrupt or the decoder rejected; skipped.
    pub corrupt_packets: AtomicU64,
    /// Read errors from the input that were skipped.
    pub read_errors: AtomicU64,
    /// Frames the decoder returned with errors concealed (damaged data patched over).
    pub damaged_frames: AtomicU64,
    /// Set when the input ended well before the length its container announces.
    pub ended_early: Mutex<Option<EndedEarly>>,
    pub packets_passed_through: AtomicU64,
    /// Bytes of input packets read, and of packets the sink wrote.
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Times a live input was lost and opened again.
    pub reconnects: AtomicU64,
    /// Set while a live input is lost and being reconnected.
    pub reconnecting: AtomicBool,
    /// Set when the filter stage has ended (no more frames will be taken).
    pub filter_ended: AtomicBool,
    /// Frames waiting in the decoded and filtered queues, as last seen by their senders.
    pub decoded_queue: AtomicU64,
    pub filtered_queue: AtomicU64,
    /// Page-locked host memory the engine holds, as last seen by the filter stage.
    pub pinned_bytes: AtomicU64,
    pub source_busy_ns: AtomicU64,
    pub filter_busy_ns: AtomicU64,
    pub sink_busy_ns: AtomicU64,
    /// Per frame, its number and the time from decoded to filtered in microseconds.
    pub filter_latency_us: Mutex<Vec<(u32, u32)>>,
    /// Per frame, its number and the time from decoded to submitted to the engine, in
    /// microseconds, in submission (frame) order.
    pub filter_wait_us: Mutex<Vec<(u32, u32)>>,
    pub stages: StageHistograms,
}

/// Per-frame time histograms (seconds) of each stage, and of the whole way through.
#[derive(Debug)]
pub struct StageHistograms {
    /// Source time per frame: reading, decoding, converting.
    pub decode: Histogram,
    /// CUDA engine: host-to-device copy, kernels, device-to-host copy (from CUDA events).
    pub upload: Histogram,
    pub gpu: Histogram,
    pub download: Histogram,
    /// CPU engine: the convolution itself.
    pub cpu_filter: Histogram,
    /// Sink time per frame: encoding and writing.
    pub encode: Histogram,
    /// From a frame leaving the decoder to it written by the sink.
    pub end_to_end: Histogram,
}

impl StageHistograms {
    /// The stage histograms with the names metrics give them.
    pub fn named(&self) -> [(&'static str, &Histogram); 6] {
        [
            ("decode", &self.decode),
            ("upload", &self.upload),
            ("gpu", &self.gpu),
            ("download", &self.download),
            ("cpu_filter", &self.cpu_filter),
            ("encode", &self.encode),
        ]
    }
}

impl Default for StageHistograms {
    fn default() -> Self {
        // 10 us to about 2.6 s: from one GPU stage of a small frame to a stalled output.
        let histogram = || Histogram::new(exponential_buckets(10e-6, 2.0, 19));
        StageHistograms {
            decode: histogram(),
            upload: histogram(),
            gpu: histogram(),
            download: histogram(),
            cpu_filter: histogram(),
            encode: histogram(),
            end_to_end: histogram(),
        }
    }
}

impl Counters {
    /// Records that a frame decoded `since` has been filtered now. Only the first
    /// `MAX_LATENCY_SAMPLES` frames are kept, so a looping or live input does not grow memory.
    pub fn record_latency(&self, frame: u64, since: std::time::Instant) {
        record_sample(&self.filter_latency_us, frame, since);
    }

    /// Records that a frame decoded `since` is being handed to the engine now.
    pub fn record_wait(&self, frame: u64, since: std::time::Instant) {
        record_sample(&self.filter_wait_us, frame, since);
    }

    /// The `q` quantile (0..=1) of the recorded latencies, in milliseconds.
    pub fn latency_quantile_ms(&self, q: f64) -> Option<f64> {
        let mut latencies: Vec<u32> = self
            .filter_latency_us
            .lock()
            .ok()?
            .iter()
            .map(|&(_, micros)| micros)
            .collect();
        if latencies.is_empty() {
            return None;
        }
        latencies.sort_unstable();
        let index = ((latencies.len() - 1) as f64 * q).round() as usize;
        Some(latencies[index] as f64 / 1e3)
    }

    /// The `count` slowest recorded frames, slowest first (ties: earlier frame first).
    pub fn slowest_latencies(&self, count: usize) -> Vec<FrameLatency> {
        let Ok(latencies) = self.filter_latency_us.lock() else {
            return Vec::new();
        };
        let mut frames = latencies.clone();
        drop(latencies);
        frames.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        frames.truncate(count);
        let waits = self.filter_wait_us.lock().map(|w| w.clone()).unwrap_or_default();
        frames
            .into_iter()
            .map(|(frame, micros)| FrameLatency {
                frame: frame.into(),
                ms: micros as f64 / 1e3,
                // Frames are submitted in order, so the waits are sorted by frame number.
                waited_ms: waits
                    .binary_search_by_key(&frame, |&(f, _)| f)
                    .ok()
                    .map(|i| waits[i].1 as f64 / 1e3),
            })
            .collect()
    }

    pub fn observe(histogram: &Histogram, time: Duration) {
        histogram.observe(time.as_secs_f64());
    }

    pub fn set(gauge: &AtomicU64, value: u64) {
        gauge.store(value, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_time(counter: &AtomicU64, time: Duration) {
        counter.fetch_add(time.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn set_ended_early(&self, ended: EndedEarly) {
        if let Ok(mut slot) = self.ended_early.lock() {
            *slot = Some(ended);
        }
    }

    pub fn ended_early(&self) -> Option<EndedEarly> {
        self.ended_early.lock().ok().and_then(|slot| *slot)
    }
}

/// An input whose packets stop short of the duration its container announces: most
/// likely a truncated file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EndedEarly {
    /// Where the last packet ends, from the start of the input.
    pub ended_at_seconds: f64,
    pub announced_seconds: f64,
}

/// What a finished pipeline reports, printed as a summary and written by `--stats-json`.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineReport {
    pub pipeline: String,
    pub input: String,
    pub output: String,
    pub engine: String,
    pub mask: String,
    pub frames_in: u64,
    pub frames_out: u64,
    pub frames_dropped: u64,
    pub corrupt_packets: u64,
    pub read_errors: u64,
    pub damaged_frames: u64,
    pub ended_early: Option<EndedEarly>,
    pub packets_passed_through: u64,
    pub seconds: f64,
    /// Of `seconds`, the time spent opening the input and output and preparing the engine
    /// (GPU context, kernels, buffers); `fps` counts the rest.
    pub setup_seconds: f64,
    pub fps: f64,
    /// Time each stage spent working (not waiting on its neighbours), in seconds.
    pub source_seconds: f64,
    pub filter_seconds: f64,
    pub sink_seconds: f64,
    /// From a frame decoded to it filtered (queueing included), median and 99th percentile.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    /// The slowest frames, to tell a start-up tail from one spread over the run.
    pub latency_slowest: Vec<FrameLatency>,
    /// Stopped early by a signal or because the output was closed.
    pub stopped_early: Option<String>,
}

/// Appends (frame, microseconds since `since`) to `samples`, up to [`MAX_LATENCY_SAMPLES`].
fn record_sample(samples: &Mutex<Vec<(u32, u32)>>, frame: u64, since: std::time::Instant) {
    let micros = since.elapsed().as_micros().min(u32::MAX as u128) as u32;
    let frame = frame.min(u32::MAX as u64) as u32;
    if let Ok(mut samples) = samples.lock() {
        if samples.len() < MAX_LATENCY_SAMPLES {
            samples.push((frame, micros));
        }
    }
}

impl PipelineReport {
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
        let damage = self.damage();
        if !damage.is_empty() {
            text.push_str(&format!("; input damage: {}", damage.join(", ")));
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

#[cfg(test)]
mod tests {
    use super::{Counters, FrameLatency};

    #[test]
    fn slowest_latencies_name_their_frames_slowest_first() {
        let counters = Counters::default();
        // Frame 3 was dropped: numbers are the frames' own, not their places in the list.
        for (frame, micros) in [(0, 300), (1, 1900), (2, 250), (4, 400), (5, 1900), (6, 350)] {
            counters.filter_latency_us.lock().unwrap().push((frame, micros));
        }
        // Waits of frames 0 to 5 only: frame 6's was not recorded.
        for (frame, micros) in [(0, 10), (1, 1500), (2, 10), (4, 20), (5, 30)] {
            counters.filter_wait_us.lock().unwrap().push((frame, micros));
        }
        let slowest = counters.slowest_latencies(3);
        let expected = [(1, 1.9, Some(1.5)), (5, 1.9, Some(0.03)), (4, 0.4, Some(0.02))]
            .map(|(frame, ms, waited_ms)| FrameLatency { frame, ms, waited_ms });
        assert_eq!(slowest, expected);
        assert_eq!(counters.slowest_latencies(10).len(), 6, "no more than were recorded");
    }
}

//! The live counters a pipeline's stages update while they run ([`Counters`]), their
//! histograms, and the snapshot the API, the metrics and the report read.

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::latency::FrameLatency;
use super::latency_histogram::LatencyHistogram;
use super::recent_rate::RecentRate;
use super::startup::StartupMarks;

/// Frames whose filter latency is kept for the report (8 MB of samples at most).
pub const MAX_LATENCY_SAMPLES: usize = 1 << 19;

/// How many of the slowest frames a report lists.
pub const SLOWEST_FRAMES: usize = 10;

/// Live counters, shared by a pipeline's threads (and read by progress and metrics).
#[derive(Debug, Default)]
pub struct Counters {
    /// Frames the source decoded.
    pub frames_decoded: AtomicU64,
    /// Frames the engine filtered.
    pub frames_filtered: AtomicU64,
    /// Frames the sink wrote: count them with [`Counters::count_written`], which also
    /// feeds the recent rate.
    pub frames_written: AtomicU64,
    /// Frames written per second lately (the `fps` of the API and the metrics).
    pub written_rate: RecentRate,
    /// Decoded frames dropped from a full queue before the filter (`drop = "oldest"`):
    /// count them with [`Counters::count_drop`], which also notes when.
    pub frames_dropped: AtomicU64,
    /// When a frame was last dropped (readiness waits for a while without drops).
    pub last_drop: Mutex<Option<Instant>>,
    /// Real-time frames that came later than their due time by more than a few frames
    /// (see [`Counters::note_behind`]): the input's pace was not kept.
    pub frames_late: AtomicU64,
    /// Frames that took a second or more from decoded to filtered (the pipeline's log says
    /// where their time went, once a minute at most).
    pub frames_held_up: AtomicU64,
    /// When a real-time input last found itself behind its pace (readiness waits for a
    /// while on time).
    pub last_behind: Mutex<Option<Instant>>,
    /// Packets the demuxer flagged corrupt or the decoder rejected; skipped.
    pub corrupt_packets: AtomicU64,
    /// Read errors from the input that were skipped.
    pub read_errors: AtomicU64,
    /// Frames the decoder returned with errors concealed (damaged data patched over).
    pub damaged_frames: AtomicU64,
    /// Set when the input ended well before the length its container announces.
    pub ended_early: Mutex<Option<EndedEarly>>,
    /// Packets of copied streams (audio, subtitles) the sink wrote.
    pub packets_passed_through: AtomicU64,
    /// Bytes of input packets read.
    pub bytes_in: AtomicU64,
    /// Bytes of packets the sink wrote.
    pub bytes_out: AtomicU64,
    /// Of `bytes_out`, the encoded video's.
    pub video_bytes_out: AtomicU64,
    /// Times a live input was lost and opened again.
    pub reconnects: AtomicU64,
    /// Times an NVDEC decoder failed mid-stream (a stream change, damaged data) and was made anew.
    pub decoder_restarts: AtomicU64,
    /// Set while a live input is lost and being reconnected.
    pub reconnecting: AtomicBool,
    /// Frames waiting in the decoded and filtered queues, as last seen by their senders.
    pub decoded_queue: AtomicU64,
    /// Frames waiting in the filtered queue (see `decoded_queue`).
    pub filtered_queue: AtomicU64,
    /// Page-locked host memory the engine holds, as last seen by the filter stage.
    pub pinned_bytes: AtomicU64,
    /// GPU memory the engine's frames go through, as last seen by the filter stage.
    pub gpu_memory_bytes: AtomicU64,
    /// Ordinary memory the frame pool holds for frames past its page-locked blocks (a start,
    /// a burst after a stall), lent or free, as last seen by the filter stage: given back
    /// after an idle window, so it stays at 0 once a pipeline has settled.
    pub ordinary_pool_bytes: AtomicU64,
    /// Blocks the engine's frame pool allocated (each page-locked allocation also holds up
    /// the GPU's other streams for a moment): steady once a pipeline has settled, so a
    /// rise shows the pool growing through a stall.
    pub pool_allocations: AtomicU64,
    /// Blocks the frame pool gave back as idle.
    pub pool_releases: AtomicU64,
    /// Frame planes that found no free pool block and went to ordinary memory.
    pub pool_fallbacks: AtomicU64,
    /// Nanoseconds the source spent reading and decoding.
    pub source_busy_ns: AtomicU64,
    /// Nanoseconds the filter stage spent on frames.
    pub filter_busy_ns: AtomicU64,
    /// Nanoseconds the sink spent encoding and writing.
    pub sink_busy_ns: AtomicU64,
    /// Per frame, the time from decoded to filtered in microseconds (for the report's exact
    /// quantiles; the first `MAX_LATENCY_SAMPLES` frames).
    pub filter_latency_us: Mutex<Vec<u32>>,
    /// The same latencies over the whole run, bucketed: what live readers (the console, the
    /// server's history) take quantiles of without sorting anything.
    pub filter_latency: LatencyHistogram,
    /// The slowest frames so far, slowest first, at most `SLOWEST_FRAMES`.
    pub slowest_frames: Mutex<Vec<FrameLatency>>,
    /// Per-frame time histograms of each stage.
    pub stages: StageHistograms,
    /// When the pipeline's input was open, its engine ready, its output open and its first
    /// frame written.
    pub startup: StartupMarks,
}

/// Per-frame time histograms (seconds) of each stage, and of the whole way through.
#[derive(Debug)]
pub struct StageHistograms {
    /// Source time per frame: reading, decoding, converting.
    pub decode: Histogram,
    /// CUDA engine: host-to-device copy, kernels, device-to-host copy (from CUDA events).
    pub upload: Histogram,
    /// CUDA engine: the kernels.
    pub gpu: Histogram,
    /// CUDA engine: the device-to-host copy.
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
    /// Counts a frame dropped before the filter (see [`Counters::frames_dropped`]).
    pub fn count_drop(&self) {
        self.frames_dropped.fetch_add(1, Ordering::Relaxed);
        *self.last_drop.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// When a frame was last dropped, if one was.
    pub fn last_drop(&self) -> Option<Instant> {
        *self.last_drop.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that a real-time input's frame came later than its due time by more than a
    /// few frames: the pipeline does not keep up, and the burst it sends once it catches
    /// up may overflow its queue.
    pub fn note_behind(&self) {
        self.frames_late.fetch_add(1, Ordering::Relaxed);
        *self.last_behind.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// When a real-time input was last behind its pace, if it was.
    pub fn last_behind(&self) -> Option<Instant> {
        *self.last_behind.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a frame the sink has written.
    pub fn count_written(&self) {
        StartupMarks::mark(&self.startup.first_frame_written);
        Counters::add(&self.frames_written, 1);
        self.written_rate.record(Instant::now());
    }

    /// Records the latency of a frame the filter stage has just taken back from the engine.
    /// Quantiles keep only the first `MAX_LATENCY_SAMPLES` frames, so a looping or live
    /// input does not grow memory; the slowest frames are kept over the whole run.
    pub fn record_latency(&self, latency: FrameLatency) {
        let micros = (latency.ms * 1e3).round().min(u32::MAX as f64) as u32;
        self.filter_latency.record(micros);
        if let Ok(mut samples) = self.filter_latency_us.lock() {
            if samples.len() < MAX_LATENCY_SAMPLES {
                samples.push(micros);
            }
        }
        if let Ok(mut slowest) = self.slowest_frames.lock() {
            // Strictly slower only: on a tie the earlier frame stays.
            let place = slowest.partition_point(|kept| kept.ms >= latency.ms);
            if place < SLOWEST_FRAMES {
                slowest.insert(place, latency);
                slowest.truncate(SLOWEST_FRAMES);
            }
        }
    }

    /// The `q` quantile (0..=1) of the recorded latencies, in milliseconds.
    pub fn latency_quantile_ms(&self, q: f64) -> Option<f64> {
        let mut latencies: Vec<u32> = self.filter_latency_us.lock().ok()?.clone();
        if latencies.is_empty() {
            return None;
        }
        latencies.sort_unstable();
        let index = ((latencies.len() - 1) as f64 * q).round() as usize;
        Some(latencies[index] as f64 / 1e3)
    }

    /// The `count` slowest recorded frames (up to `SLOWEST_FRAMES`), slowest first (ties:
    /// earlier frame first).
    pub fn slowest_latencies(&self, count: usize) -> Vec<FrameLatency> {
        let slowest = self.slowest_frames.lock().map(|s| s.clone()).unwrap_or_default();
        slowest.into_iter().take(count).collect()
    }

    /// Adds `time` to `histogram`, in seconds.
    pub fn observe(histogram: &Histogram, time: Duration) {
        histogram.observe(time.as_secs_f64());
    }

    /// Sets a gauge.
    pub fn set(gauge: &AtomicU64, value: u64) {
        gauge.store(value, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds `time` to a counter of nanoseconds.
    pub fn add_time(counter: &AtomicU64, time: Duration) {
        counter.fetch_add(time.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Records that the input ended early.
    pub fn set_ended_early(&self, ended: EndedEarly) {
        if let Ok(mut slot) = self.ended_early.lock() {
            *slot = Some(ended);
        }
    }

    /// Whether (and where) the input ended early.
    pub fn ended_early(&self) -> Option<EndedEarly> {
        self.ended_early.lock().ok().and_then(|slot| *slot)
    }
}

/// The counters' values at one moment. The one place they are read: the API's pipeline
/// view, the Prometheus metrics and the finished pipeline's report all start from it, so a
/// new counter is added here once and shows in all three where they want it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CounterSnapshot {
    /// See [`Counters::frames_decoded`].
    pub frames_decoded: u64,
    /// See [`Counters::frames_filtered`].
    pub frames_filtered: u64,
    /// See [`Counters::frames_written`].
    pub frames_written: u64,
    /// See [`Counters::frames_dropped`].
    pub frames_dropped: u64,
    /// See [`Counters::frames_late`].
    pub frames_late: u64,
    /// See [`Counters::corrupt_packets`].
    pub corrupt_packets: u64,
    /// See [`Counters::read_errors`].
    pub read_errors: u64,
    /// See [`Counters::damaged_frames`].
    pub damaged_frames: u64,
    /// See [`Counters::frames_held_up`].
    pub frames_held_up: u64,
    /// See [`Counters::decoder_restarts`].
    pub decoder_restarts: u64,
    /// See [`Counters::packets_passed_through`].
    pub packets_passed_through: u64,
    /// See [`Counters::bytes_in`].
    pub bytes_in: u64,
    /// See [`Counters::bytes_out`].
    pub bytes_out: u64,
    /// See [`Counters::video_bytes_out`].
    pub video_bytes_out: u64,
    /// See [`Counters::reconnects`].
    pub reconnects: u64,
    /// See [`Counters::decoded_queue`].
    pub decoded_queue: u64,
    /// See [`Counters::filtered_queue`].
    pub filtered_queue: u64,
    /// Page-locked host memory the engine holds.
    pub pinned_bytes: u64,
    /// See [`Counters::gpu_memory_bytes`].
    pub gpu_memory_bytes: u64,
    /// See [`Counters::ordinary_pool_bytes`].
    pub ordinary_pool_bytes: u64,
    /// See [`Counters::pool_allocations`].
    pub pool_allocations: u64,
    /// See [`Counters::pool_releases`].
    pub pool_releases: u64,
    /// See [`Counters::pool_fallbacks`].
    pub pool_fallbacks: u64,
    /// Time each stage spent working, in nanoseconds.
    pub source_busy_ns: u64,
    /// See [`Counters::filter_busy_ns`].
    pub filter_busy_ns: u64,
    /// See [`Counters::sink_busy_ns`].
    pub sink_busy_ns: u64,
    /// See [`Counters::ended_early`].
    pub ended_early: Option<EndedEarly>,
}

impl Counters {
    /// Reads every counter once (each read is atomic on its own; the set is not taken at one
    /// instant, which no reader needs).
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = Counters::get;
        CounterSnapshot {
            frames_decoded: get(&self.frames_decoded),
            frames_filtered: get(&self.frames_filtered),
            frames_written: get(&self.frames_written),
            frames_dropped: get(&self.frames_dropped),
            frames_late: get(&self.frames_late),
            corrupt_packets: get(&self.corrupt_packets),
            read_errors: get(&self.read_errors),
            damaged_frames: get(&self.damaged_frames),
            frames_held_up: get(&self.frames_held_up),
            decoder_restarts: get(&self.decoder_restarts),
            packets_passed_through: get(&self.packets_passed_through),
            bytes_in: get(&self.bytes_in),
            bytes_out: get(&self.bytes_out),
            video_bytes_out: get(&self.video_bytes_out),
            reconnects: get(&self.reconnects),
            decoded_queue: get(&self.decoded_queue),
            filtered_queue: get(&self.filtered_queue),
            pinned_bytes: get(&self.pinned_bytes),
            gpu_memory_bytes: get(&self.gpu_memory_bytes),
            ordinary_pool_bytes: get(&self.ordinary_pool_bytes),
            pool_allocations: get(&self.pool_allocations),
            pool_releases: get(&self.pool_releases),
            pool_fallbacks: get(&self.pool_fallbacks),
            source_busy_ns: get(&self.source_busy_ns),
            filter_busy_ns: get(&self.filter_busy_ns),
            sink_busy_ns: get(&self.sink_busy_ns),
            ended_early: self.ended_early(),
        }
    }
}

/// An input whose packets stop short of the duration its container announces: most
/// likely a truncated file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EndedEarly {
    /// Where the last packet ends, from the start of the input.
    pub ended_at_seconds: f64,
    /// The duration the container announces.
    pub announced_seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::{Counters, EndedEarly, FrameLatency, SLOWEST_FRAMES};
    use convstream_core::Timeline;
    use std::time::{Duration, Instant};

    fn latency(frame: u64, ms: f64) -> FrameLatency {
        FrameLatency {
            frame,
            ms,
            waited_ms: None,
            submit_ms: None,
            engine_ms: None,
            gpu_ms: None,
            handoff_ms: None,
        }
    }

    #[test]
    fn slowest_latencies_name_their_frames_slowest_first() {
        let counters = Counters::default();
        // Frame 3 was dropped: numbers are the frames' own, not their places in the list.
        for (frame, ms) in [(0, 0.3), (1, 1.9), (2, 0.25), (4, 0.4), (5, 1.9), (6, 0.35)] {
            counters.record_latency(latency(frame, ms));
        }
        let frames: Vec<(u64, f64)> = counters.slowest_latencies(3).iter().map(|l| (l.frame, l.ms)).collect();
        assert_eq!(
            frames,
            [(1, 1.9), (5, 1.9), (4, 0.4)],
            "slowest first, the earlier of a tie first"
        );
        assert_eq!(counters.slowest_latencies(20).len(), 6, "no more than were recorded");
        assert_eq!(counters.latency_quantile_ms(1.0), Some(1.9));
        assert_eq!(counters.latency_quantile_ms(0.0), Some(0.25));
    }

    #[test]
    fn the_slowest_frames_are_kept_over_a_long_run_in_bounded_memory() {
        let counters = Counters::default();
        // A slow frame late in a long run still shows.
        for frame in 0..1000u64 {
            let ms = if frame == 990 { 9.0 } else { (frame % 97) as f64 / 100.0 };
            counters.record_latency(latency(frame, ms));
        }
        let slowest = counters.slowest_latencies(SLOWEST_FRAMES);
        assert_eq!(slowest.len(), SLOWEST_FRAMES);
        assert_eq!(counters.slowest_frames.lock().unwrap().len(), SLOWEST_FRAMES);
        assert_eq!((slowest[0].frame, slowest[0].ms), (990, 9.0));
        assert!(
            slowest.windows(2).all(|pair| pair[0].ms >= pair[1].ms),
            "sorted slowest first"
        );
        assert_eq!(slowest[1].ms, 0.96, "then the frames at 96 mod 97");
    }

    #[test]
    fn a_frame_latency_is_split_at_its_timeline_points() {
        let decoded = Instant::now();
        let at = |micros: u64| Some(decoded + Duration::from_micros(micros));
        let timeline = Timeline {
            decoded: Some(decoded),
            submitted: at(100),
            enqueued: at(150),
            finished: at(1150),
        };
        let gpu = Some(Duration::from_micros(400));
        let split = FrameLatency::of(7, &timeline, gpu, decoded + Duration::from_micros(1400)).unwrap();
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9;
        assert_eq!(split.frame, 7);
        assert!((split.ms - 1.4).abs() < 1e-9);
        assert!(close(split.waited_ms, 0.1));
        assert!(close(split.submit_ms, 0.05));
        assert!(close(split.engine_ms, 1.0));
        assert!(close(split.gpu_ms, 0.4));
        assert!(close(split.handoff_ms, 0.25));
        assert_eq!(
            split.describe(),
            "#7 1.40 ms: waited 0.10, submit 0.05, engine 1.00 (GPU 0.40), handoff 0.25"
        );

        // An engine that does not mark its points leaves its parts unset, not zero.
        let bare = Timeline {
            decoded: Some(decoded),
            submitted: at(100),
            ..Timeline::default()
        };
        let split = FrameLatency::of(8, &bare, None, decoded + Duration::from_micros(300)).unwrap();
        assert!(close(split.waited_ms, 0.1));
        assert_eq!(
            (split.submit_ms, split.engine_ms, split.gpu_ms, split.handoff_ms),
            (None, None, None, None)
        );
        assert_eq!(split.describe(), "#8 0.30 ms: waited 0.10");
        assert!(
            FrameLatency::of(9, &Timeline::default(), None, decoded).is_none(),
            "no decode time, no latency"
        );
    }

    #[test]
    fn a_snapshot_reads_every_counter() {
        let counters = Counters::default();
        // A distinct value per counter, so a field read from the wrong counter shows.
        let all = [
            &counters.frames_decoded,
            &counters.frames_filtered,
            &counters.frames_written,
            &counters.frames_dropped,
            &counters.frames_late,
            &counters.corrupt_packets,
            &counters.read_errors,
            &counters.damaged_frames,
            &counters.frames_held_up,
            &counters.decoder_restarts,
            &counters.packets_passed_through,
            &counters.bytes_in,
            &counters.bytes_out,
            &counters.reconnects,
            &counters.decoded_queue,
            &counters.filtered_queue,
            &counters.pinned_bytes,
            &counters.gpu_memory_bytes,
            &counters.ordinary_pool_bytes,
            &counters.pool_allocations,
            &counters.pool_releases,
            &counters.pool_fallbacks,
            &counters.source_busy_ns,
            &counters.filter_busy_ns,
            &counters.sink_busy_ns,
        ];
        for (value, counter) in all.into_iter().enumerate() {
            Counters::set(counter, value as u64 + 1);
        }
        let ended = EndedEarly {
            ended_at_seconds: 1.5,
            announced_seconds: 4.0,
        };
        counters.set_ended_early(ended);
        let snapshot = counters.snapshot();
        let read = [
            snapshot.frames_decoded,
            snapshot.frames_filtered,
            snapshot.frames_written,
            snapshot.frames_dropped,
            snapshot.frames_late,
            snapshot.corrupt_packets,
            snapshot.read_errors,
            snapshot.damaged_frames,
            snapshot.frames_held_up,
            snapshot.decoder_restarts,
            snapshot.packets_passed_through,
            snapshot.bytes_in,
            snapshot.bytes_out,
            snapshot.reconnects,
            snapshot.decoded_queue,
            snapshot.filtered_queue,
            snapshot.pinned_bytes,
            snapshot.gpu_memory_bytes,
            snapshot.ordinary_pool_bytes,
            snapshot.pool_allocations,
            snapshot.pool_releases,
            snapshot.pool_fallbacks,
            snapshot.source_busy_ns,
            snapshot.filter_busy_ns,
            snapshot.sink_busy_ns,
        ];
        assert_eq!(read.to_vec(), (1..=all.len() as u64).collect::<Vec<u64>>());
        assert_eq!(snapshot.ended_early, Some(ended));
    }
}

//! Every figure a benchmark run gives, as `results.json` holds it: the run's description and
//! one row type per suite. Fields added since results were first published read with a
//! default, so older results still parse.

use serde::{Deserialize, Serialize};

use convstream_core::GpuTuning;

/// Where and how the figures were taken.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub device: String,
    pub driver: Option<String>,
    pub fp32_peak_tflops: Option<f64>,
    pub commit: String,
    pub date: String,
    pub host_threads: usize,
    pub quick: bool,
    pub suites: String,
    /// The CUDA engine's spin-wait and tilings the figures were taken with (results written
    /// before it was recorded read as the defaults, which they ran with unless an
    /// environment variable said otherwise).
    #[serde(default)]
    pub tuning: GpuTuning,
    /// The host's CPU: model, threads, SIMD width and the FP32 FMA peak they bound (the
    /// CPU engine's `FP32 peak` column is a fraction of it).
    #[serde(default)]
    pub host_cpu: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelRow {
    pub plane: String,
    /// Bits per sample of the plane (8: bytes; above: 16-bit words).
    #[serde(default = "eight_bits")]
    pub bits: u8,
    pub mask: String,
    pub size: usize,
    pub path: String,
    pub median_us: f64,
    pub p10_us: f64,
    pub p90_us: f64,
    /// The median time per kernel with launches queued back to back (GPU rows): the kernel
    /// without the launch and event costs that one launch between its own events carries.
    #[serde(default)]
    pub queued_us: Option<f64>,
    /// Bytes read and written once each (the plane in, the plane out) over
    /// [`KernelRow::queued_us`], in GB/s: the memory traffic the kernel cannot do without.
    #[serde(default)]
    pub queued_gbytes_per_s: Option<f64>,
    pub gpixels_per_s: f64,
    /// 2 x multiply-adds per pixel x pixels / time, in GFLOP/s.
    #[serde(default)]
    pub gflop_per_s: Option<f64>,
    /// [`KernelRow::gflop_per_s`] over the device's FP32 peak (the CPU's: see `cpu_info`).
    pub fraction_of_fp32_peak: Option<f64>,
    /// The baseline's time over this one (same plane and size).
    pub speedup_vs_baseline: Option<f64>,
    /// This time over the same path's on an 8-bit plane of the same size and mask (rows
    /// above 8 bits, when the 8-bit row was timed in the same run).
    #[serde(default)]
    pub time_vs_eight_bit: Option<f64>,
    pub checked_against: String,
}

fn eight_bits() -> u8 {
    8
}

/// Fills each deeper row's [`KernelRow::time_vs_eight_bit`] from the 8-bit row of the same
/// plane, mask size and path.
pub fn compare_with_eight_bit(rows: &mut [KernelRow]) {
    let eight: Vec<(String, usize, String, f64)> = rows
        .iter()
        .filter(|r| r.bits == 8)
        .map(|r| (r.plane.clone(), r.size, r.path.clone(), r.median_us))
        .collect();
    for row in rows.iter_mut().filter(|r| r.bits > 8) {
        row.time_vs_eight_bit = eight
            .iter()
            .find(|(plane, size, path, _)| *plane == row.plane && *size == row.size && *path == row.path)
            .map(|(_, _, _, us)| row.median_us / us);
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TransferRow {
    pub bytes: usize,
    pub memory: String,
    pub h2d_us: f64,
    pub d2h_us: f64,
    pub both_us: f64,
    pub h2d_gb_s: f64,
    pub d2h_gb_s: f64,
    /// Bytes moved in both directions at once over the time.
    pub both_gb_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OverlapRow {
    pub frame: String,
    /// Where the submitted frames live: `pool` (the engine's page-locked buffers, no CPU
    /// copy) or `heap` (ordinary memory, staged through pinned buffers by the CPU).
    #[serde(default)]
    pub frames_in: String,
    pub streams: usize,
    /// Frames queued on each stream (the engine holds `streams x frames_per_stream`).
    #[serde(default = "one")]
    pub frames_per_stream: usize,
    pub frames: u64,
    pub fps: f64,
    pub speedup_vs_one_stream: f64,
    /// Per frame, microseconds: CPU copy into pinned memory (staged frames only) and
    /// enqueue, GPU upload, kernels, download, CPU wait and copy out.
    pub host_copy_in_us: f64,
    pub upload_us: Option<f64>,
    pub kernels_us: Option<f64>,
    pub download_us: Option<f64>,
    pub host_copy_out_us: f64,
    /// 1 / the busiest stage (enqueueing, or the time per frame some upload, kernel or
    /// download was under way): what perfect overlap would give.
    pub ideal_fps: f64,
    pub pinned_bytes: usize,
}

impl OverlapRow {
    /// One line of the overlap plot: the frame size, where frames live and how many each
    /// stream holds.
    pub fn series(&self) -> String {
        format!("{}, {}, {}/stream", self.frame, self.frames_in, self.frames_per_stream)
    }
}

/// Results written before frames per stream could be set held one.
fn one() -> usize {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct E2eRow {
    pub input: String,
    pub decoder: String,
    pub frames: u64,
    pub decode_only_fps: f64,
    pub filtered_fps: f64,
    /// Filtered over decode-only frames/s, measured in the same run.
    pub ratio: f64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    /// The slowest frames of the filtered run (frame numbers count from 0).
    #[serde(default)]
    pub latency_slowest: Vec<convstream_media::FrameLatency>,
    pub mask: String,
    pub engine: String,
    /// Whole commands as a user runs them, as subprocesses of this run: FFmpeg's CLI
    /// decoding alone against `convstream run` filtering (`None` in results written before
    /// it was measured, and for the paced row).
    #[serde(default)]
    pub cli: Option<CliComparison>,
}

/// FFmpeg's CLI decoding a clip to nothing against `convstream run` filtering it to the null
/// sink, each a whole process timed from spawn to exit, in alternating rounds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CliComparison {
    /// `ffmpeg -version`'s first line and the program's path.
    pub ffmpeg_version: Option<String>,
    pub ffmpeg: Option<CliMeasure>,
    pub convstream: Option<CliMeasure>,
    /// convstream's wall-clock frames/s (start-up included) over FFmpeg's, of the medians:
    /// 0.9 means convstream's whole command took 1 / 0.9 times FFmpeg's.
    pub wall_ratio: Option<f64>,
    /// convstream's steady-state frames/s over FFmpeg's, of the medians.
    pub steady_ratio: Option<f64>,
}

/// One program's figures: medians over its rounds, and every round.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CliMeasure {
    /// The command line, as it was run.
    pub command: String,
    /// Seconds from spawning the process to its exit, median of the rounds that finished.
    pub wall_seconds: Option<f64>,
    /// Frames over [`CliMeasure::wall_seconds`] (start-up included), median.
    pub wall_fps: Option<f64>,
    /// Frames over the program's own timing of its work (FFmpeg: `-benchmark`'s `rtime`;
    /// convstream: `--stats-json`'s `fps`, set-up excluded), median.
    pub steady_fps: Option<f64>,
    pub rounds: Vec<CliRound>,
}

/// One run of one program.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CliRound {
    /// Which round (from 0); within a round the programs alternate which runs first.
    pub round: usize,
    pub wall_seconds: Option<f64>,
    /// Frames the program said it decoded (FFmpeg's last `frame=`) or wrote (convstream).
    pub frames: Option<u64>,
    pub wall_fps: Option<f64>,
    pub steady_fps: Option<f64>,
    /// Why a figure is missing: the run failed or timed out, or its output did not parse.
    pub note: Option<String>,
}

/// One step of the scale suite: `pipelines` paced copies of a clip at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScaleRow {
    pub decoder: String,
    /// Pipelines on each device of the step (each GPU's, with `--gpus`).
    pub pipelines: usize,
    /// GPUs filled at once (`--gpus`), each with `pipelines`; 1 otherwise.
    #[serde(default = "one")]
    pub gpus: usize,
    /// The clip's frame rate, which every pipeline is paced at.
    pub frame_rate: f64,
    /// Frames/s of the slowest pipeline and of the median one, over the measured window.
    pub fps_min: f64,
    pub fps_median: f64,
    /// Frames dropped in the window, all pipelines together.
    pub frames_dropped: u64,
    /// Decoded-to-filtered latency of the frames filtered in the window, all pipelines'.
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// The process's CPU time over the window, as a share of all the host's cores.
    pub host_cpu_percent: f64,
    /// The GPU's kernel-busy share (NVML), averaged over the window.
    pub gpu_busy_percent: Option<f64>,
    pub resident_bytes: u64,
    pub pinned_bytes: u64,
    /// Seconds until every pipeline had written two seconds of frames.
    #[serde(default)]
    pub start_seconds: f64,
    /// Why the step failed (the ramp stops there); `None` when it passed.
    pub failure: Option<String>,
}

/// The scale suite's steps and, per decoder, the most pipelines that passed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ScaleResults {
    pub rows: Vec<ScaleRow>,
    /// Per decoder, the most pipelines per device that passed.
    pub max_pipelines: std::collections::BTreeMap<String, usize>,
    /// The NVDEC ramp's result as `[server] nvdec_seats_file` takes it (written beside the
    /// results as `nvdec-seats.toml`); `None` without an NVDEC ramp that passed a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvdec_seats: Option<convstream_config::MeasuredSeats>,
    /// What FFmpeg's own decoders get from this host, measured in the same run.
    #[serde(default)]
    pub decode_capacity: Vec<DecodeCapacityRow>,
}

/// The host's decode capacity with one decoder: `parallel` unpaced decodes at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DecodeCapacityRow {
    pub decoder: String,
    pub parallel: usize,
    /// The GPUs the NVDEC decodes ran on at once (0: software, on the CPU's cores).
    #[serde(default)]
    pub gpus: usize,
    /// Frames decoded a second, all decodes together.
    pub frames_per_second: f64,
    /// That rate over the clip's frame rate: live streams the host could decode.
    pub live_streams: f64,
}

impl DecodeCapacityRow {
    /// " on 2 GPU(s)" for NVDEC decodes, nothing for software ones: for the log and the report.
    pub fn on_gpus(&self) -> String {
        if self.gpus > 0 {
            format!(" on {} GPU(s)", self.gpus)
        } else {
            String::new()
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    pub run: RunInfo,
    pub kernel: Vec<KernelRow>,
    pub transfer: Vec<TransferRow>,
    pub overlap: Vec<OverlapRow>,
    pub e2e: Vec<E2eRow>,
    #[serde(default)]
    pub scale: ScaleResults,
    /// Suites or cases that could not run here, and why.
    pub skipped: Vec<String>,
}

//! The scale suite: how many live pipelines one host filters. N copies of a clip, each paced
//! at its frame rate like a camera and looping, run in this process as `serve` runs them
//! (one pipeline per source, `drop = "oldest"`, the e2e mask on every plane, a null sink).
//! N grows until a pipeline falls under 99% of the frame rate, drops a frame, sees a p99
//! latency over 50 ms, or fails to start; the gap between the last N that passed and the
//! first that failed is then halved (to within a tenth) and the largest N that passed is
//! `max_pipelines`. With `--gpus`, each step runs N pipelines on every GPU named at once, as
//! a full host runs them, and the NVDEC ramp's result is the seats each GPU model kept
//! (`nvdec-seats.toml`, which `[server] nvdec_seats_file` reads). NVDEC admission's own
//! seats are lifted for the measurement: what is measured is what the GPUs keep up with.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::decode_capacity::{decode_capacity, MEDIA_SECONDS};
use super::e2e::{bench_run_options, bench_settings, generated_clip};
use super::workload::E2E_MASK;
use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::{DecodeCapacityRow, ScaleResults, ScaleRow};
use convstream_config::MeasuredSeats;
use convstream_config::{DropPolicy, SourceConfig};
use convstream_core::DeviceChoice;
use convstream_core::Mask;
use convstream_media::PipelineReport;
use convstream_media::SampleContent;
use convstream_media::{run_monitored, PipelineMonitor, SeatBoard};

/// A step passes when every pipeline keeps at least this share of the frame rate.
const MIN_RATE_SHARE: f64 = 0.99;
/// A step passes when the p99 latency of the frames filtered in its window (every
/// pipeline's together) is at most this.
const MAX_P99_MS: f64 = 50.0;
/// The pipeline counts tried, in order, up to `--max-pipelines`.
const SCHEDULE: [usize; 16] = [1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256];
/// Software decoder threads per pipeline: many pipelines share the host's cores.
const SOFTWARE_THREADS: usize = 2;

/// Runs the ramp for each decoder and reports every step.
pub fn scale(
    options: &BenchOptions,
    gpu: Option<usize>,
    skipped: &mut Vec<String>,
) -> Result<ScaleResults, BenchError> {
    let clip: PathBuf = match &options.input {
        Some(path) => path.clone(),
        None if options.quick => generated_clip(&options.out, SampleContent::Smooth, 320, 240, 60)?,
        None => generated_clip(&options.out, SampleContent::Smooth, 1920, 1080, 300)?,
    };
    let decoders: Vec<String> = match &options.decoder {
        Some(decoder) => vec![decoder.clone()],
        None if gpu.is_some() => vec!["software".into(), "nvdec".into()],
        None => vec!["software".into()],
    };
    let schedule: Vec<usize> = match &options.pipelines {
        Some(counts) => counts.clone(),
        None if options.quick => vec![1, 2, 4],
        None => SCHEDULE.into_iter().filter(|&n| n <= options.max_pipelines).collect(),
    };
    let window = Duration::from_secs_f64(options.scale_seconds.unwrap_or(if options.quick { 2.0 } else { 10.0 }));
    let warm_up = if options.quick {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(3)
    };
    let devices: Vec<DeviceChoice> = match &options.gpus {
        Some(gpus) => gpus.iter().map(|&n| DeviceChoice::Cuda(n)).collect(),
        None => vec![gpu.map_or(DeviceChoice::Cpu, DeviceChoice::Cuda)],
    };
    let frame_rate = clip_frame_rate(&clip)?;
    // The seats admission predicts would cap the ramp: lifted, so the GPUs' own limit shows.
    SeatBoard::global().set_seats_per_gpu(Some(usize::MAX));
    let refine = options.pipelines.is_none() && !options.quick;
    let mut results = ScaleResults::default();
    for decoder in &decoders {
        let mut ramp = Ramp::new(schedule.clone(), refine);
        while let Some(count) = ramp.next_count() {
            let step = Step {
                clip: &clip,
                decoder,
                count,
                devices: &devices,
                frame_rate,
                warm_up,
                window,
                options,
            };
            let row = match step.run() {
                Ok(row) => row,
                Err(e) => {
                    skipped.push(format!("scale with the {decoder} decoder: {e}"));
                    break;
                }
            };
            tracing::info!(
                "scale {decoder} x{count}{}: fps min {:.1} median {:.1}, dropped {}, p99 {:.1} ms, cpu {:.0}%{}",
                if devices.len() > 1 {
                    format!(" on each of {} GPUs", devices.len())
                } else {
                    String::new()
                },
                row.fps_min,
                row.fps_median,
                row.frames_dropped,
                row.latency_p99_ms,
                row.host_cpu_percent,
                row.failure.as_deref().map(|f| format!(": {f}")).unwrap_or_default()
            );
            ramp.record(count, row.failure.is_none());
            results.rows.push(row);
        }
        results.max_pipelines.insert(decoder.clone(), ramp.passed);
        match host_decode_capacity(&clip, decoder, &devices, frame_rate, options.quick) {
            Ok(row) => results.decode_capacity.push(row),
            Err(e) => skipped.push(e.to_string()),
        }
        if decoder == "nvdec" && ramp.passed > 0 {
            results.nvdec_seats = measured_seats(&devices, ramp.passed, ramp.failed.is_none(), frame_rate);
        }
    }
    SeatBoard::global().set_seats_per_gpu(None);
    Ok(results)
}

/// What `decoder` gets from the host with no pacing and no filter, the ramp's yardstick (see
/// `decode_capacity.rs`): NVDEC on every GPU of the ramp at once. Quick runs (CI) check the
/// measurement itself with two short decodes.
fn host_decode_capacity(
    clip: &std::path::Path,
    decoder: &str,
    devices: &[DeviceChoice],
    frame_rate: f64,
    quick: bool,
) -> Result<DecodeCapacityRow, BenchError> {
    let (parallel, seconds) = if quick { (Some(2), 4.0) } else { (None, MEDIA_SECONDS) };
    let mut gpus: Vec<usize> = devices
        .iter()
        .filter_map(|device| match device {
            DeviceChoice::Cuda(n) => Some(*n),
            _ => None,
        })
        .collect();
    if gpus.is_empty() {
        gpus.push(0);
    }
    let row = decode_capacity(clip, decoder, parallel, seconds, frame_rate, &gpus)?;
    tracing::info!(
        "decode capacity, {decoder}: {} decodes at once{}, {:.0} fps in all = {:.1} live streams",
        row.parallel,
        row.on_gpus(),
        row.frames_per_second,
        row.live_streams
    );
    Ok(row)
}

/// The pipeline counts a ramp tries: the schedule until a step fails, then (when refining)
/// the middle of the gap between the last count that passed and the first that failed, until
/// the gap is within a tenth of what passed.
struct Ramp {
    schedule: std::vec::IntoIter<usize>,
    refine: bool,
    passed: usize,
    failed: Option<usize>,
}

impl Ramp {
    fn new(schedule: Vec<usize>, refine: bool) -> Ramp {
        Ramp {
            schedule: schedule.into_iter(),
            refine,
            passed: 0,
            failed: None,
        }
    }

    fn next_count(&mut self) -> Option<usize> {
        match self.failed {
            None => self.schedule.next(),
            Some(failed) => {
                let gap = failed - self.passed;
                (self.refine && gap > 1 && gap * 10 > self.passed).then(|| self.passed + gap / 2)
            }
        }
    }

    fn record(&mut self, count: usize, ok: bool) {
        if ok {
            self.passed = self.passed.max(count);
        } else {
            self.failed = Some(self.failed.map_or(count, |failed| failed.min(count)));
        }
    }
}

/// Whether a pipeline that wrote `fps` frames a second over a window of `seconds` kept
/// `MIN_RATE_SHARE` of `frame_rate`. Its counter is read at two moments that fall between its
/// frames, so one frame more or less is sampling, not speed: over a 2 s window at 25 fps, 49
/// frames (24.5 fps) keep up, 48 do not.
fn keeps_up(fps: f64, frame_rate: f64, seconds: f64) -> bool {
    fps * seconds + 1.0 >= MIN_RATE_SHARE * frame_rate * seconds
}

/// The NVDEC seats each GPU model of `devices` kept: `passed` pipelines per GPU.
fn measured_seats(
    devices: &[DeviceChoice],
    passed: usize,
    never_failed: bool,
    frame_rate: f64,
) -> Option<MeasuredSeats> {
    let inventory = convstream_core::gpu_inventory();
    let models: Vec<String> = devices
        .iter()
        .filter_map(|device| match device {
            DeviceChoice::Cuda(n) => inventory.iter().find(|gpu| gpu.ordinal == *n)?.model.clone(),
            _ => None,
        })
        .collect();
    if models.is_empty() {
        return None;
    }
    if models.len() < inventory.len() {
        tracing::warn!(
            "NVDEC seats measured with {} of this host's {} GPUs decoding: the GPUs of a host share one NVDEC \
             ceiling, so with all of them decoding each may keep fewer; `--gpus all` measures the host as `serve` fills it",
            models.len(),
            inventory.len()
        );
    }
    let bound = if never_failed { "at least (no step failed) " } else { "" };
    Some(MeasuredSeats {
        measured_with: Some(format!(
            "{bound}{passed} live {frame_rate:.2} fps pipelines per GPU, {} on every plane, {} of the host's {} \
             GPU(s) filled at once, measured {}",
            E2E_MASK,
            models.len(),
            inventory.len(),
            super::run_info::utc_now()
        )),
        seats_per_gpu: models.into_iter().map(|model| (model, passed)).collect(),
    })
}

/// The clip's frame rate, which each pipeline is paced at: the stream's base rate
/// (`r_frame_rate`), which timestamps follow, rather than an average from the duration.
fn clip_frame_rate(clip: &std::path::Path) -> Result<f64, BenchError> {
    convstream_media::init_ffmpeg();
    let input = ffmpeg_next::format::input(&clip).map_err(|e| BenchError::Other(format!("{}: {e}", clip.display())))?;
    let stream = input
        .streams()
        .best(ffmpeg_next::media::Type::Video)
        .ok_or_else(|| BenchError::Other(format!("{}: no video stream", clip.display())))?;
    let rate = f64::from(stream.rate());
    if rate.is_finite() && rate > 0.0 {
        Ok(rate)
    } else {
        Err(BenchError::Other(format!("{}: no frame rate", clip.display())))
    }
}

/// One step of the ramp: `count` pipelines on each of `devices` for a warm-up and a
/// measured window.
struct Step<'a> {
    clip: &'a std::path::Path,
    decoder: &'a str,
    count: usize,
    devices: &'a [DeviceChoice],
    frame_rate: f64,
    warm_up: Duration,
    window: Duration,
    options: &'a BenchOptions,
}

type Running = (Arc<PipelineMonitor>, JoinHandle<Result<PipelineReport, String>>);

impl Step<'_> {
    fn run(&self) -> Result<ScaleRow, BenchError> {
        let mask = Mask::from_spec(E2E_MASK).expect("a valid preset");
        let stop = Arc::new(AtomicBool::new(false));
        let run_options = bench_run_options(stop.clone());
        let running: Vec<Running> = (0..self.count * self.devices.len())
            .map(|index| {
                let device = self.devices[index % self.devices.len()];
                let source = SourceConfig {
                    decoder: self.decoder.into(),
                    threads: if self.decoder == "nvdec" { 0 } else { SOFTWARE_THREADS },
                    looping: true,
                    realtime: true,
                    drop: DropPolicy::Oldest,
                    ..SourceConfig::from_url(&self.clip.display().to_string())
                };
                let mut settings = bench_settings(&source, &mask, device, self.options.tuning);
                settings.name = format!("scale-{index}");
                let monitor = Arc::new(PipelineMonitor::new(&settings.name, &settings.filter));
                let (_switch, switches) = crossbeam_channel::bounded(1);
                let (options, watched) = (run_options.clone(), monitor.clone());
                let handle = std::thread::spawn(move || {
                    run_monitored(&settings, &options, &watched, switches).map_err(|e| e.to_string())
                });
                (monitor, handle)
            })
            .collect();
        // Many pipelines take a while to start (memory pinned, decoders opened): the window
        // opens once every pipeline has written two seconds of frames, plus the warm-up.
        let started = Instant::now();
        let start_limit = Duration::from_secs(60) + Duration::from_millis(500) * running.len() as u32;
        loop {
            let slowest = running
                .iter()
                .map(|(monitor, _)| monitor.counters.snapshot().frames_written)
                .min()
                .unwrap_or(0);
            let ended = running.iter().any(|(_, handle)| handle.is_finished());
            if slowest as f64 >= 2.0 * self.frame_rate || ended || started.elapsed() > start_limit {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let start_seconds = started.elapsed().as_secs_f64();
        std::thread::sleep(self.warm_up);
        let before = Sample::take(&running);
        let mut gpu_busy = Vec::new();
        let window_end = Instant::now() + self.window;
        while Instant::now() < window_end {
            std::thread::sleep(Duration::from_millis(500).min(window_end.saturating_duration_since(Instant::now())));
            // The GPUs' mean: they carry equal shares.
            let busy: Vec<f64> = self.devices.iter().filter_map(|&d| gpu_busy_percent(d)).collect();
            if !busy.is_empty() {
                gpu_busy.push(busy.iter().sum::<f64>() / busy.len() as f64);
            }
        }
        let after = Sample::take(&running);
        stop.store(true, Ordering::Relaxed);
        let reports: Vec<Result<PipelineReport, String>> = running
            .into_iter()
            .map(|(_, handle)| {
                handle
                    .join()
                    .unwrap_or_else(|_| Err("the pipeline thread panicked".into()))
            })
            .collect();
        let mut row = self.row(&before, &after, &reports, gpu_busy);
        row.start_seconds = start_seconds;
        Ok(row)
    }

    fn row(
        &self,
        before: &Sample,
        after: &Sample,
        reports: &[Result<PipelineReport, String>],
        gpu_busy: Vec<f64>,
    ) -> ScaleRow {
        let seconds = (after.at - before.at).as_secs_f64().max(1e-9);
        let mut fps: Vec<f64> = after
            .frames
            .iter()
            .zip(&before.frames)
            .map(|(a, b)| a.saturating_sub(*b) as f64 / seconds)
            .collect();
        fps.sort_by(f64::total_cmp);
        let dropped: u64 = after
            .dropped
            .iter()
            .zip(&before.dropped)
            .map(|(a, b)| a.saturating_sub(*b))
            .sum();
        let failed: Vec<&String> = reports.iter().filter_map(|r| r.as_ref().err()).collect();
        // Latency of the frames filtered in the window, every pipeline's together: the
        // start-up of many pipelines at once (kernels loaded, memory pinned) is left out.
        let mut window: Vec<u32> = after
            .latencies
            .iter()
            .zip(&before.latencies)
            .flat_map(|(a, b)| a.get(b.len()..).unwrap_or_default().iter().copied())
            .collect();
        window.sort_unstable();
        let quantile = |q: f64| {
            (!window.is_empty()).then(|| window[((window.len() - 1) as f64 * q).round() as usize] as f64 / 1e3)
        };
        let (p50, p99) = (quantile(0.5).unwrap_or(0.0), quantile(0.99).unwrap_or(0.0));
        let fps_min = fps.first().copied().unwrap_or(0.0);
        let failure = if let Some(error) = failed.first() {
            Some(format!(
                "{} of {} pipelines failed: {error}",
                failed.len(),
                reports.len()
            ))
        } else if !keeps_up(fps_min, self.frame_rate, seconds) {
            Some(format!(
                "a pipeline ran at {fps_min:.2} fps, under {:.0}% of {:.2} (less one frame of the {seconds:.1} s window)",
                MIN_RATE_SHARE * 100.0,
                self.frame_rate
            ))
        } else if dropped > 0 {
            Some(format!("{dropped} frames dropped"))
        } else if p99 > MAX_P99_MS {
            Some(format!("p99 latency {p99:.1} ms over {MAX_P99_MS} ms"))
        } else {
            None
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        ScaleRow {
            decoder: self.decoder.to_string(),
            pipelines: self.count,
            gpus: self.devices.len(),
            frame_rate: self.frame_rate,
            fps_min,
            fps_median: fps.get(fps.len() / 2).copied().unwrap_or(0.0),
            frames_dropped: dropped,
            latency_p50_ms: p50,
            latency_p99_ms: p99,
            host_cpu_percent: 100.0 * (after.cpu_seconds - before.cpu_seconds) / seconds / cores,
            gpu_busy_percent: (!gpu_busy.is_empty()).then(|| gpu_busy.iter().sum::<f64>() / gpu_busy.len() as f64),
            resident_bytes: after.resident_bytes,
            pinned_bytes: after.pinned_bytes,
            start_seconds: 0.0,
            failure,
        }
    }
}

/// The pipelines' counters and the process's CPU time and memory at one moment.
struct Sample {
    at: Instant,
    frames: Vec<u64>,
    dropped: Vec<u64>,
    /// Each pipeline's decoded-to-filtered latencies so far (microseconds, in frame order).
    latencies: Vec<Vec<u32>>,
    pinned_bytes: u64,
    cpu_seconds: f64,
    resident_bytes: u64,
}

impl Sample {
    fn take(running: &[Running]) -> Sample {
        let snapshots: Vec<_> = running.iter().map(|(monitor, _)| monitor.counters.snapshot()).collect();
        let (cpu_seconds, resident_bytes) = convstream_media::cpu_and_resident().unwrap_or((0.0, 0));
        Sample {
            at: Instant::now(),
            frames: snapshots.iter().map(|s| s.frames_written).collect(),
            dropped: snapshots.iter().map(|s| s.frames_dropped).collect(),
            latencies: running
                .iter()
                .map(|(monitor, _)| {
                    monitor
                        .counters
                        .filter_latency_us
                        .lock()
                        .map(|l| l.clone())
                        .unwrap_or_default()
                })
                .collect(),
            pinned_bytes: snapshots.iter().map(|s| s.pinned_bytes).sum(),
            cpu_seconds,
            resident_bytes,
        }
    }
}

/// The GPU's busy share now (NVML), for a CUDA device.
fn gpu_busy_percent(device: DeviceChoice) -> Option<f64> {
    let DeviceChoice::Cuda(ordinal) = device else {
        return None;
    };
    convstream_core::gpu_usage()
        .into_iter()
        .find(|gpu| gpu.index as usize == ordinal)
        .and_then(|gpu| gpu.busy_percent)
        .map(f64::from)
}

#[cfg(test)]
mod tests {
    use super::{keeps_up, Ramp};

    #[test]
    fn one_frame_of_the_window_is_sampling_and_more_is_falling_behind() {
        // 25 fps over 2 s: 50 frames expected, 49.5 needed.
        assert!(keeps_up(24.5, 25.0, 2.0), "49 frames: one short of 50 is sampling");
        assert!(!keeps_up(24.0, 25.0, 2.0), "48 frames fall behind");
        // Over 10 s one frame is a tenth of a frame a second.
        assert!(keeps_up(24.65, 25.0, 10.0));
        assert!(!keeps_up(24.5, 25.0, 10.0));
    }

    /// The counts a ramp tries when every count up to `limit` passes.
    fn tried(schedule: &[usize], refine: bool, limit: usize) -> (Vec<usize>, usize) {
        let mut ramp = Ramp::new(schedule.to_vec(), refine);
        let mut counts = Vec::new();
        while let Some(count) = ramp.next_count() {
            counts.push(count);
            ramp.record(count, count <= limit);
        }
        (counts, ramp.passed)
    }

    #[test]
    fn the_gap_after_the_first_failure_is_halved_to_within_a_tenth() {
        let schedule = [1, 2, 4, 8, 16, 24, 32, 48, 64, 80];
        assert_eq!(
            tried(&schedule, true, 44),
            (vec![1, 2, 4, 8, 16, 24, 32, 48, 40, 44], 44)
        );
        assert_eq!(
            tried(&schedule, true, 57),
            (vec![1, 2, 4, 8, 16, 24, 32, 48, 64, 56, 60], 56)
        );
        assert_eq!(tried(&schedule, true, 3), (vec![1, 2, 4, 3], 3));
        assert_eq!(tried(&schedule, true, 0), (vec![1], 0));
        // Counts asked for by name are run as they are.
        assert_eq!(tried(&schedule, false, 44), (vec![1, 2, 4, 8, 16, 24, 32, 48], 32));
        // A ramp that never fails stops at the schedule's end.
        assert_eq!(tried(&schedule, true, 1000).1, 80);
    }
}

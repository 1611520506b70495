//! GPU measurements for `convstream bench`: kernel times and copy bandwidths, timed with
//! CUDA events after a warm-up, as medians over rotated inputs. Every kernel result is
//! checked before it is timed.

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, HostSlice};
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::device::{self, DeviceInfo};
use super::engine_error::{allocation_error, CudaResultExt};
use super::kernels::{KernelSet, PlaneGeometry, Variant};
use crate::engine::cpu::convolve_plane;
use crate::engine::{EngineError, GpuTuning, KernelPath};
use crate::filter::BorderMode;
use crate::frame::{Plane, SampleDepth};
use crate::mask::Mask;

/// Distinct input planes a timing loop cycles through, so caches do not flatter.
const ROTATED_INPUTS: usize = 4;

/// Launches queued back to back between one pair of events for a kernel's queued time: the
/// GPU runs them one after another while the host is still queueing, so the launch and
/// event costs that a lone launch between its own events shows are spread over many.
const QUEUED_LAUNCHES: usize = 20;

/// A GPU opened for measuring.
pub struct Bench {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The GPU's facts.
    pub info: DeviceInfo,
    /// Tilings the kernel suite times instead of the policy's.
    tuning: GpuTuning,
}

/// The median and spread of repeated timings, in microseconds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Timing {
    /// The median, in microseconds.
    pub median_us: f64,
    /// The 10th percentile, in microseconds.
    pub p10_us: f64,
    /// The 90th percentile, in microseconds.
    pub p90_us: f64,
    /// How many timings there were.
    pub repetitions: usize,
}

impl Timing {
    /// The median and percentiles of `samples` (microseconds; at least one).
    pub fn from_samples(mut samples: Vec<f64>) -> Timing {
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Timing {
            median_us: at(0.5),
            p10_us: at(0.1),
            p90_us: at(0.9),
            repetitions: samples.len(),
        }
    }
}

impl Bench {
    /// Opens GPU `ordinal` and a stream to time on.
    pub fn open(ordinal: usize) -> Result<Bench, EngineError> {
        let context = device::open(ordinal)?;
        let info = DeviceInfo::read(&context, ordinal)?;
        let stream = context
            .new_stream()
            .context(|| "creating the benchmark stream".into())?;
        Ok(Bench {
            context,
            stream,
            info,
            tuning: GpuTuning::default(),
        })
    }

    /// Times kernels with the tilings `tuning` asks for.
    pub fn with_tuning(self, tuning: GpuTuning) -> Bench {
        Bench { tuning, ..self }
    }

    fn timing_event(&self) -> Result<CudaEvent, EngineError> {
        self.context
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .context(|| "creating an event".into())
    }

    fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>, EngineError> {
        // SAFETY: every buffer is written (upload or kernel) before it is read.
        unsafe { self.stream.alloc::<u8>(bytes) }
            .map_err(|e| allocation_error(e, &self.context, "benchmark buffer".into(), bytes))
    }

    /// Times `repetitions` runs of `work` (enqueued on the benchmark stream) with events,
    /// after running it for `warm_up` first so clocks ramp up.
    fn time_with_events(
        &self,
        plan: TimingPlan,
        mut work: impl FnMut(usize) -> Result<(), EngineError>,
    ) -> Result<Timing, EngineError> {
        let started = Instant::now();
        let mut n = 0;
        while started.elapsed() < plan.warm_up || n < 3 {
            work(n)?;
            n += 1;
            if n % 16 == 0 {
                self.stream.synchronize().context(|| "warming up".into())?;
            }
        }
        let events: Vec<(CudaEvent, CudaEvent)> = (0..plan.repetitions)
            .map(|_| Ok((self.timing_event()?, self.timing_event()?)))
            .collect::<Result<_, EngineError>>()?;
        for (i, (start, end)) in events.iter().enumerate() {
            start.record(&self.stream).context(|| "recording an event".into())?;
            work(i)?;
            end.record(&self.stream).context(|| "recording an event".into())?;
        }
        self.stream
            .synchronize()
            .context(|| "waiting for the timed work".into())?;
        let samples = events
            .iter()
            .map(|(start, end)| {
                start
                    .elapsed_ms(end)
                    .map(|ms| ms as f64 * 1e3)
                    .context(|| "reading an event".into())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Timing::from_samples(samples))
    }

    /// Times one kernel on a `width` x `height` plane of `channels` interleaved samples of `depth`. The result on the first input is
    /// compared with `reference` (computed by the caller, e.g. by the CPU engine) first; a
    /// mismatch is an error, not a timing.
    pub fn time_kernel(
        &self,
        mask: &Mask,
        border: BorderMode,
        path: KernelPath,
        (width, height, channels, depth): (usize, usize, usize, SampleDepth),
        plan: TimingPlan,
        check: KernelCheck,
    ) -> Result<KernelResult, EngineError> {
        let max_shared = self.info.max_shared_per_block;
        let variant = Variant::new(
            mask.width(),
            mask.height(),
            channels,
            border,
            max_shared,
            path,
            width * height,
        )
        .tuned(&self.tuning, path, max_shared)
        .with_depth(depth);
        let set = KernelSet::load(
            &self.context,
            &self.stream,
            variant,
            &self.info.arch(),
            mask,
            max_shared,
        )?;
        let row_bytes = width * channels * depth.bytes();
        let bytes = row_bytes * height;
        let mut rng = rand::rngs::StdRng::seed_from_u64(width as u64 * 31 + height as u64);
        let max = depth.max_value() as u16;
        let planes: Vec<Vec<u8>> = (0..ROTATED_INPUTS)
            .map(|_| match depth.bytes() {
                1 => (0..bytes).map(|_| rng.gen()).collect(),
                _ => (0..width * height * channels)
                    .flat_map(|_| (rng.gen_range(0..=max) << depth.shift).to_le_bytes())
                    .collect(),
            })
            .collect();
        let mut inputs = Vec::new();
        for plane in &planes {
            let mut buffer = self.alloc(bytes)?;
            self.stream
                .memcpy_htod(plane, &mut buffer)
                .context(|| "uploading a benchmark plane".into())?;
            inputs.push(buffer);
        }
        let mut output = self.alloc(bytes)?;
        let geometry = PlaneGeometry {
            width: width as i32,
            height: height as i32,
            src_pitch: row_bytes as i32,
            dst_pitch: row_bytes as i32,
            bias: mask.bias_at(depth),
            ..PlaneGeometry::ONE_PLANE
        };
        let what = || format!("{path:?} kernel, {}", variant.describe());
        let launch = |i: usize, output: &mut CudaSlice<u8>| -> Result<(), EngineError> {
            let input = inputs[i % inputs.len()].slice(0..bytes);
            let mut out = output.slice_mut(0..bytes);
            set.launch(&self.stream, path, &input, &mut out, geometry).context(what)
        };
        launch(0, &mut output)?;
        let produced = self
            .stream
            .clone_dtoh(&output)
            .context(|| "reading the kernel result".into())?;
        let source = Plane {
            width,
            height,
            channels,
            depth,
            stride: row_bytes,
            data: planes[0].clone().into(),
        };
        let (matches, checked_against) = match check {
            KernelCheck::Cpu => (*convolve_plane(&source, mask, border).data == *produced, "cpu"),
            KernelCheck::Baseline => {
                let mut baseline = self.alloc(bytes)?;
                {
                    let input = inputs[0].slice(0..bytes);
                    let mut out = baseline.slice_mut(0..bytes);
                    set.launch(&self.stream, KernelPath::Global, &input, &mut out, geometry)
                        .context(what)?;
                }
                (
                    self.stream
                        .clone_dtoh(&baseline)
                        .context(|| "reading the baseline result".into())?
                        == produced,
                    "global-memory kernel",
                )
            }
        };
        if !matches {
            return Err(EngineError::Internal {
                what: format!(
                    "{} gives a result that differs from the {checked_against} reference; not timing it",
                    what()
                ),
            });
        }
        let timing = self.time_with_events(plan, |i| launch(i, &mut output))?;
        let batch = self.time_with_events(plan, |i| {
            (0..QUEUED_LAUNCHES).try_for_each(|k| launch(i * QUEUED_LAUNCHES + k, &mut output))
        })?;
        let per_launch = |us: f64| us / QUEUED_LAUNCHES as f64;
        Ok(KernelResult {
            timing,
            queued: Timing {
                median_us: per_launch(batch.median_us),
                p10_us: per_launch(batch.p10_us),
                p90_us: per_launch(batch.p90_us),
                repetitions: batch.repetitions,
            },
            checked_against,
        })
    }

    /// Times host-to-device, device-to-host and both at once for a buffer of `bytes`, from
    /// pinned or pageable host memory.
    pub fn time_transfers(&self, bytes: usize, pinned: bool, plan: TimingPlan) -> Result<TransferResult, EngineError> {
        let what = || format!("copying {bytes} bytes");
        let (h2d, d2h, both) = if pinned {
            // SAFETY: host buffers are only copied to and from, never read uninitialised by Rust.
            let upload = unsafe { self.context.alloc_pinned::<u8>(bytes) }
                .map_err(|e| allocation_error(e, &self.context, what(), bytes))?;
            // SAFETY: as above: the buffer is only a copy's destination and source.
            let mut download = unsafe { self.context.alloc_pinned_with_flags::<u8>(bytes, 0) }
                .map_err(|e| allocation_error(e, &self.context, what(), bytes))?;
            self.time_copies(&upload, &mut download, plan)?
        } else {
            self.time_copies(&vec![7u8; bytes], &mut vec![0u8; bytes], plan)?
        };
        Ok(TransferResult {
            bytes,
            pinned,
            h2d,
            d2h,
            both,
        })
    }

    /// Upload from `upload`, download into `download`, and both at once on two streams.
    fn time_copies<Up: HostSlice<u8> + ?Sized, Down: HostSlice<u8> + ?Sized>(
        &self,
        upload: &Up,
        download: &mut Down,
        plan: TimingPlan,
    ) -> Result<(Timing, Timing, Timing), EngineError> {
        let bytes = upload.len();
        let mut device_in = self.alloc(bytes)?;
        let device_out = self.alloc(bytes)?;
        let other = self
            .context
            .new_stream()
            .context(|| "creating a second stream".into())?;
        let what = || format!("copying {bytes} bytes");
        let h2d = self.time_with_events(plan, |_| self.stream.memcpy_htod(upload, &mut device_in).context(what))?;
        let d2h = self.time_with_events(plan, |_| self.stream.memcpy_dtoh(&device_out, download).context(what))?;
        let both = self.time_both(&other, plan.repetitions, |s1, s2| {
            s1.memcpy_htod(upload, &mut device_in).context(what)?;
            s2.memcpy_dtoh(&device_out, download).context(what)
        })?;
        Ok((h2d, d2h, both))
    }

    /// Times work spread on two streams (an upload on one, a download on the other), from
    /// an event before both to an event after both.
    fn time_both(
        &self,
        other: &Arc<CudaStream>,
        repetitions: usize,
        mut work: impl FnMut(&Arc<CudaStream>, &Arc<CudaStream>) -> Result<(), EngineError>,
    ) -> Result<Timing, EngineError> {
        let mut samples = Vec::with_capacity(repetitions);
        for _ in 0..repetitions + 3 {
            let start = self.timing_event()?;
            let other_done = self.timing_event()?;
            let end = self.timing_event()?;
            start.record(&self.stream).context(|| "recording an event".into())?;
            other.wait(&start).context(|| "ordering the streams".into())?;
            work(&self.stream, other)?;
            other_done.record(other).context(|| "recording an event".into())?;
            self.stream
                .wait(&other_done)
                .context(|| "ordering the streams".into())?;
            end.record(&self.stream).context(|| "recording an event".into())?;
            samples.push(start.elapsed_ms(&end).context(|| "reading an event".into())? as f64 * 1e3);
        }
        Ok(Timing::from_samples(samples.split_off(3)))
    }
}

/// How long to warm up and how many timed repetitions to take.
#[derive(Debug, Clone, Copy)]
pub struct TimingPlan {
    /// Timed runs.
    pub repetitions: usize,
    /// How long the work runs untimed first, so clocks ramp up.
    pub warm_up: Duration,
}

/// What a kernel's result is checked against before it is timed.
#[derive(Debug, Clone, Copy)]
pub enum KernelCheck {
    /// The CPU engine (exact).
    Cpu,
    /// The global-memory kernel, itself checked against the CPU on smaller planes (exact).
    Baseline,
}

/// One kernel's timing, once its result was found right.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelResult {
    /// How long one launch took, between its own pair of events (the launch's and the
    /// events' costs included, as for a lone call).
    pub timing: Timing,
    /// The time per launch with launches queued back to back (what a busy stream sees).
    pub queued: Timing,
    /// What its result was checked against (`cpu` or `global-memory kernel`).
    pub checked_against: &'static str,
}

/// Copy timings between host and GPU memory.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TransferResult {
    /// Bytes each copy moved.
    pub bytes: usize,
    /// Whether the host memory was page-locked.
    pub pinned: bool,
    /// Host to device.
    pub h2d: Timing,
    /// Device to host.
    pub d2h: Timing,
    /// An upload and a download of `bytes` each, on two streams at once.
    pub both: Timing,
}

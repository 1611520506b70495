//! The CUDA engine, the only code that talks to the GPU (through cudarc). `submit` enqueues a
//! frame's upload, kernels and download on a free lane's stream; a completion thread waits on
//! lanes in submission order and frees each lane once its frame is back. So frames leave in
//! order while up to `streams x frames_per_stream` frames are in flight, copies in both
//! directions overlap other streams' kernels, and each stream has its next frame queued
//! while the host collects the last one.
//!
//! The engine lends a pool of page-locked frame buffers ([`Engine::frame_pool`]): frames
//! decoded into it go to the GPU and come back into the same memory with no CPU copy. Other
//! frames are staged through the lanes' own pinned buffers (one CPU copy each way).

pub mod device;
mod error;
pub mod kernels;
pub mod lanes;
pub mod measure;
pub mod nvdec;
pub mod pinned;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use self::device::DeviceInfo;
use self::error::CudaResultExt;
use self::kernels::{KernelSet, PlaneGeometry, Variant};
use self::lanes::{Lane, Layout, Routes};
use self::pinned::PinnedMemory;
use super::placement::Seat;
use super::{
    Engine, EngineError, EngineOptions, FilterPreparer, FrameShape, KernelPath, StageTimes, TraceSpan,
    MAX_FRAMES_PER_STREAM, MAX_STREAMS,
};
use crate::filter::FilterSpec;
use crate::frame::Frame;
use crate::host_buffers::BufferPool;

/// Byte written into GPU output buffers before each frame when poisoning (tests).
pub const POISON: u8 = 0xA7;

/// The kernels of one filter, one set per channel count the frame's planes have, each with
/// the kernel path it runs.
struct FilterKernels {
    filter: FilterSpec,
    sets: BTreeMap<usize, (KernelSet, KernelPath)>,
}

impl FilterKernels {
    /// Compiles (or loads from the cache) every variant `layout` needs, before any frame.
    fn build(
        context: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        device: &DeviceInfo,
        filter: FilterSpec,
        layout: &Layout,
        force_path: Option<KernelPath>,
    ) -> Result<FilterKernels, EngineError> {
        let mut sets = BTreeMap::new();
        for (channels, variant, path) in plan_kernels(device, &filter, layout, force_path)? {
            let set = KernelSet::load(
                context,
                stream,
                variant,
                &device.arch(),
                &filter.mask,
                device.max_shared_per_block,
            )?;
            sets.insert(channels, (set, path));
        }
        Ok(FilterKernels { filter, sets })
    }
}

/// The kernel variant and path for each channel count among `layout`'s planes.
fn plan_kernels(
    device: &DeviceInfo,
    filter: &FilterSpec,
    layout: &Layout,
    force_path: Option<KernelPath>,
) -> Result<Vec<(usize, Variant, KernelPath)>, EngineError> {
    let mask = &filter.mask;
    let path = force_path.unwrap_or(if mask.is_separable() {
        KernelPath::Separable
    } else {
        KernelPath::Dense
    });
    if path == KernelPath::Separable && !mask.is_separable() {
        return Err(EngineError::Unsupported(format!(
            "the separable kernel needs a rank-one mask; {} is not",
            mask.description()
        )));
    }
    let max_shared = device.max_shared_per_block;
    let mut plan: Vec<(usize, Variant, KernelPath)> = Vec::new();
    for slot in &layout.slots {
        if plan.iter().any(|(channels, ..)| *channels == slot.channels) {
            continue;
        }
        let variant_for = |path| {
            Variant::new(
                mask.width(),
                mask.height(),
                slot.channels,
                filter.border,
                max_shared,
                path,
                // The first slot of a channel count is its largest plane (luma before chroma).
                slot.width * slot.height,
            )
        };
        let mut chosen = path;
        let mut variant = variant_for(chosen);
        if chosen == KernelPath::Separable && variant.shared_bytes(chosen) > max_shared && force_path.is_none() {
            // The fused separable kernel holds two tiles; the dense one fits where it may not.
            tracing::info!(
                "{} does not fit in {} bytes of shared memory; using the dense kernel",
                variant.describe(),
                max_shared
            );
            chosen = KernelPath::Dense;
            variant = variant_for(chosen);
        }
        let needed = variant.shared_bytes(chosen);
        if needed > max_shared {
            return Err(EngineError::Unsupported(format!(
                "{} needs {needed} bytes of shared memory per block; {} allows {max_shared}",
                variant.describe(),
                device.name
            )));
        }
        plan.push((slot.channels, variant, chosen));
    }
    Ok(plan)
}

/// A frame on its lane, on its way to the completion thread. It holds the kernels it was
/// enqueued with, so they stay loaded until the frame is done even if the filter changes.
struct InFlight {
    lane: Lane,
    frame: Frame,
    routes: Routes,
    layout: Arc<Layout>,
    _kernels: Arc<FilterKernels>,
    origin: Option<Arc<CudaEvent>>,
}

/// A finished frame (or the error that stopped it), with its stage timings.
struct Finished {
    frame: Result<Frame, EngineError>,
    spans: Vec<TraceSpan>,
    stages: Option<StageTimes>,
    copy_out: Duration,
}

/// The completion thread and the channels around it.
struct Completion {
    jobs: Option<Sender<InFlight>>,
    finished: Receiver<Finished>,
    free_lanes: Receiver<Lane>,
    /// Gives a lane back without a frame (when enqueueing failed).
    return_lane: Sender<Lane>,
    thread: Option<JoinHandle<()>>,
}

impl Completion {
    fn start(lanes: Vec<Lane>, pipeline: &str) -> Result<Completion, EngineError> {
        let (jobs_tx, jobs_rx) = unbounded::<InFlight>();
        let (finished_tx, finished_rx) = unbounded::<Finished>();
        let (free_tx, free_rx) = bounded::<Lane>(lanes.len());
        for lane in lanes {
            let _ = free_tx.send(lane);
        }
        let return_lane = free_tx.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{pipeline}-gpu-done"))
            .spawn(move || {
                for job in jobs_rx {
                    let (finished, lane) = complete(job);
                    // Closed channels mean the engine is gone; the lane is dropped with it.
                    let _ = finished_tx.send(finished);
                    let _ = free_tx.send(lane);
                }
            })
            .map_err(|e| EngineError::Unsupported(format!("cannot start the GPU completion thread: {e}")))?;
        Ok(Completion {
            jobs: Some(jobs_tx),
            finished: finished_rx,
            free_lanes: free_rx,
            return_lane,
            thread: Some(thread),
        })
    }

    /// Stops the thread once it has finished the frames already queued (each waits for its
    /// lane's GPU work), so no buffer is freed while the GPU may still use it.
    fn stop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits for a frame's lane, copies its filtered planes out and reads its stage timings.
/// The lane always comes back, even if copying panics (the frame then fails).
fn complete(job: InFlight) -> (Finished, Lane) {
    let InFlight {
        mut lane,
        frame,
        routes,
        layout,
        origin,
        ..
    } = job;
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        finish_frame(&mut lane, frame, &routes, &layout, origin)
    }));
    let (frame, spans) = outcome.unwrap_or_else(|_| {
        let error = EngineError::Unsupported(format!(
            "lane {}: copying a frame out of pinned memory panicked",
            lane.index
        ));
        (Err(error), Vec::new())
    });
    let stages = frame.as_ref().ok().and_then(|_| lane_stage_times(&lane));
    (
        Finished {
            frame,
            spans,
            stages,
            copy_out: started.elapsed(),
        },
        lane,
    )
}

fn finish_frame(
    lane: &mut Lane,
    mut frame: Frame,
    routes: &Routes,
    layout: &Layout,
    origin: Option<Arc<CudaEvent>>,
) -> (Result<Frame, EngineError>, Vec<TraceSpan>) {
    let index = lane.index;
    let what = || format!("lane {index}, frame {}: waiting for the GPU", frame.index);
    let result = wait_for(&lane.events.done).context(what);
    frame.timeline.finished = Some(Instant::now());
    if result.is_ok() {
        lane.drain_output(layout, &mut frame, routes);
    }
    let spans = match (&result, origin) {
        (Ok(()), Some(origin)) => lane_spans(lane, &origin, frame.index).unwrap_or_default(),
        _ => Vec::new(),
    };
    (result.map(|_| frame), spans)
}

/// How long the completion thread polls a lane's done event before blocking on it, in
/// microseconds (`CONVSTREAM_SPIN_US`, default 300; 0 blocks at once). A frame's GPU work
/// takes 0.1-0.5 ms, and a thread blocked in the driver wakes tens of microseconds after
/// its event: with a few lanes that delay is a large share of each lane's cycle.
fn spin_before_blocking() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let micros = std::env::var("CONVSTREAM_SPIN_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300);
        Duration::from_micros(micros)
    })
}

/// Waits for `event`: polls it (yielding the core between polls, so decoder threads that
/// want it get it) for [`spin_before_blocking`], then blocks.
fn wait_for(event: &CudaEvent) -> Result<(), cudarc::driver::DriverError> {
    let (started, spin) = (Instant::now(), spin_before_blocking());
    while started.elapsed() < spin {
        if event.try_is_complete()? {
            return Ok(());
        }
        std::thread::yield_now();
    }
    event.synchronize()
}

/// The upload, kernel and download stages of the frame a lane just finished.
fn lane_spans(lane: &Lane, origin: &CudaEvent, frame: u64) -> Result<Vec<TraceSpan>, cudarc::driver::DriverError> {
    let events = &lane.events;
    let (Some(start), Some(uploaded), Some(filtered)) = (&events.start, &events.uploaded, &events.filtered) else {
        return Ok(Vec::new());
    };
    let at = |event: &CudaEvent| origin.elapsed_ms(event).map(|ms| ms as f64 * 1e3);
    let stamps = [at(start)?, at(uploaded)?, at(filtered)?, at(&events.done)?];
    Ok(["upload", "kernels", "download"]
        .into_iter()
        .zip(stamps.windows(2))
        .map(|(stage, pair)| TraceSpan {
            stream: lane.stream_index,
            frame,
            stage,
            start_us: pair[0],
            duration_us: pair[1] - pair[0],
        })
        .collect())
}

/// How long the upload, kernels and download of a lane's last frame took on the GPU (None
/// when the lane records no timing events).
fn lane_stage_times(lane: &Lane) -> Option<StageTimes> {
    let events = &lane.events;
    let (start, uploaded, filtered) = (
        events.start.as_ref()?,
        events.uploaded.as_ref()?,
        events.filtered.as_ref()?,
    );
    let between = |from: &CudaEvent, to: &CudaEvent| {
        from.elapsed_ms(to)
            .ok()
            .map(|ms| Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    };
    Some(StageTimes::Gpu {
        upload: between(start, uploaded)?,
        kernels: between(uploaded, filtered)?,
        download: between(filtered, &events.done)?,
    })
}

/// Time the CPU spent on frames: staging copies plus enqueueing on the way in, waiting and
/// staging copies on the way out.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostCopyTimes {
    pub frames: u64,
    pub copy_in: Duration,
    pub copy_out: Duration,
}

pub struct CudaEngine {
    context: Arc<CudaContext>,
    device: DeviceInfo,
    options: EngineOptions,
    layout: Option<Arc<Layout>>,
    completion: Option<Completion>,
    kernels: Option<Arc<FilterKernels>>,
    filter: FilterSpec,
    in_flight: usize,
    /// Timing origin for traces, recorded when the lanes were made.
    origin: Option<Arc<CudaEvent>>,
    spans: Vec<TraceSpan>,
    copy_times: HostCopyTimes,
    last_stages: Option<StageTimes>,
    /// Page-locked frame buffers lent to whoever makes frames (the source).
    pool: Option<Arc<BufferPool>>,
    /// The frame geometry the pool was made for.
    pool_shape: Option<FrameShape>,
    /// Pinned bytes of the lanes' staging buffers.
    staging_bytes: Arc<AtomicUsize>,
    /// This engine's place in the per-GPU pipeline count, held while it lives.
    _seat: Option<Seat>,
}

impl CudaEngine {
    pub fn new(filter: FilterSpec, options: &EngineOptions, ordinal: usize) -> Result<CudaEngine, EngineError> {
        if !(1..=MAX_STREAMS).contains(&options.streams) {
            return Err(EngineError::Unsupported(format!(
                "streams = {} is out of range; allowed 1..={MAX_STREAMS}",
                options.streams
            )));
        }
        if !(1..=MAX_FRAMES_PER_STREAM).contains(&options.frames_per_stream) {
            return Err(EngineError::Unsupported(format!(
                "frames_per_stream = {} is out of range; allowed 1..={MAX_FRAMES_PER_STREAM}",
                options.frames_per_stream
            )));
        }
        let context = device::open(ordinal)?;
        let device = DeviceInfo::read(&context, ordinal)?;
        let mut engine = CudaEngine {
            context,
            device,
            options: options.clone(),
            layout: None,
            completion: None,
            kernels: None,
            filter,
            in_flight: 0,
            origin: None,
            spans: Vec::new(),
            copy_times: HostCopyTimes::default(),
            last_stages: None,
            pool: None,
            pool_shape: None,
            staging_bytes: Arc::new(AtomicUsize::new(0)),
            _seat: None,
        };
        if let Some(shape) = options.shape {
            engine.prepare(shape)?;
        }
        Ok(engine)
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Holds `seat` (the GPU placement count) until the engine is dropped.
    pub fn with_seat(mut self, seat: Seat) -> CudaEngine {
        self._seat = Some(seat);
        self
    }

    /// Bytes of pinned host memory held: the frame pool's buffers and the lanes' staging.
    pub fn pinned_bytes(&self) -> usize {
        self.pool.as_ref().map_or(0, |pool| pool.allocated_bytes()) + self.staging_bytes.load(Ordering::Relaxed)
    }

    /// CPU time spent on pinned-memory copies so far.
    pub fn host_copy_times(&self) -> HostCopyTimes {
        self.copy_times
    }

    fn what(&self, lane: usize, action: &str) -> String {
        format!(
            "pipeline {:?}, cuda:{}, lane {lane}: {action}",
            self.options.pipeline, self.device.ordinal
        )
    }

    /// Sizes the lanes for `shape` and compiles the kernels it needs, before any frame.
    fn prepare(&mut self, shape: FrameShape) -> Result<(), EngineError> {
        if self.in_flight > 0 {
            return Err(EngineError::Unsupported(
                "frame geometry changed with frames in flight".into(),
            ));
        }
        if let Some(mut completion) = self.completion.take() {
            completion.stop();
        }
        let layout = Layout::new(shape, self.filter.planes, self.options.pitch_align);
        let streams = (0..self.options.streams)
            .map(|index| {
                self.context.new_stream().context(|| {
                    format!(
                        "pipeline {:?}, cuda:{}: creating CUDA stream {index}",
                        self.options.pipeline, self.device.ordinal
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Lanes take the streams in turn, and frames take the lanes in turn (the completion
        // thread frees them in order): consecutive frames go to different streams. A lane
        // given back after a failed enqueue rejoins at the back, which only shifts the turn.
        let lanes = (0..self.capacity())
            .map(|index| {
                let stream_index = index % streams.len();
                Lane::new(
                    &self.context,
                    index,
                    (stream_index, &streams[stream_index]),
                    &layout,
                    self.options.trace || self.options.stage_times,
                    &self.options.pipeline,
                    &self.staging_bytes,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stream = lanes[0].stream.clone();
        let kernels = FilterKernels::build(
            &self.context,
            &stream,
            &self.device,
            self.filter.clone(),
            &layout,
            self.options.force_path,
        )?;
        self.kernels = Some(Arc::new(kernels));
        if self.options.trace {
            let origin = self
                .context
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .context(|| self.what(0, "creating the trace origin"))?;
            origin
                .record(&stream)
                .context(|| self.what(0, "recording the trace origin"))?;
            self.origin = Some(Arc::new(origin));
        }
        // Laid out again for other planes (a filter switch), the frames keep their geometry:
        // the pool the source already makes frames in stays.
        if self.pool_shape != Some(shape) {
            self.pool = self.frame_pool_for(shape)?;
            self.pool_shape = Some(shape);
        }
        let pool_limit = self.pool.as_ref().map_or(0, |pool| pool.limit());
        tracing::info!(
            pipeline = %self.options.pipeline,
            "cuda:{} {} ready: {} stream(s) x {} frame(s), pinned frame pool up to {} frames ({} bytes), {:?} kernels",
            self.device.ordinal,
            self.device.name,
            streams.len(),
            self.options.frames_per_stream,
            self.options.pooled_frames,
            pool_limit,
            self.kernels.as_ref().map(|k| k.sets.values().map(|(_, path)| *path).collect::<Vec<_>>())
        );
        self.completion = Some(Completion::start(lanes, &self.options.pipeline)?);
        self.layout = Some(Arc::new(layout));
        Ok(())
    }

    /// The pinned pool frames of `shape` are made in, with the frames in flight in steady
    /// state (the lanes' and a few more) allocated now: pinning takes about a millisecond
    /// per megabyte, too slow for the first frames' path.
    fn frame_pool_for(&self, shape: FrameShape) -> Result<Option<Arc<BufferPool>>, EngineError> {
        if self.options.pooled_frames == 0 {
            return Ok(None);
        }
        let plane_bytes: Vec<usize> = shape
            .format
            .plane_shapes(shape.width, shape.height)
            .iter()
            .map(|plane| plane.pooled_bytes())
            .collect();
        let memory = PinnedMemory {
            context: self.context.clone(),
        };
        let pool = BufferPool::new(
            Box::new(memory),
            self.options.pooled_frames * plane_bytes.iter().sum::<usize>(),
        );
        let reserved = self.options.pooled_frames.min(self.capacity() + 4);
        for bytes in plane_bytes {
            pool.reserve(bytes, reserved).map_err(|message| EngineError::Cuda {
                context: format!("pipeline {:?}: reserving the pinned frame pool", self.options.pipeline),
                message,
            })?;
        }
        Ok(Some(pool))
    }

    /// Enqueues upload, kernels and download of `frame` on the lane's stream.
    fn enqueue(
        &self,
        lane: &mut Lane,
        layout: &Layout,
        kernels: &FilterKernels,
        frame: &mut Frame,
    ) -> Result<Routes, EngineError> {
        let context = self.what(lane.index, &format!("frame {}", frame.index));
        let what = |action: &str| format!("{context}: {action}");
        let stream = lane.stream.clone();
        if let Some(event) = &lane.events.start {
            event.record(&stream).context(|| what("recording the start event"))?;
        }
        let routes = lane.upload(layout, frame)?;
        if let Some(event) = &lane.events.uploaded {
            event.record(&stream).context(|| what("recording the upload event"))?;
        }
        if self.options.poison {
            poison_buffer(&stream, &mut lane.device_out).context(|| what("poisoning the output buffer"))?;
        }
        for slot in &layout.slots {
            let (set, path) = &kernels.sets[&slot.channels];
            let geometry = PlaneGeometry {
                width: slot.width as i32,
                height: slot.height as i32,
                src_pitch: slot.pitch as i32,
                dst_pitch: slot.pitch as i32,
                bias: kernels.filter.mask.bias(),
            };
            let range = slot.offset..slot.offset + slot.bytes();
            let src = lane.device_in.slice(range.clone());
            let mut dst = lane.device_out.slice_mut(range);
            set.launch(&stream, *path, &src, &mut dst, geometry)
                .context(|| what(&format!("launching the {path:?} kernel on plane {}", slot.plane)))?;
        }
        if let Some(event) = &lane.events.filtered {
            event.record(&stream).context(|| what("recording the kernel event"))?;
        }
        lane.download(layout, frame, &routes)?;
        lane.events
            .done
            .record(&stream)
            .context(|| what("recording the done event"))?;
        Ok(routes)
    }
}

impl Drop for CudaEngine {
    fn drop(&mut self) {
        if let Some(mut completion) = self.completion.take() {
            completion.stop();
        }
    }
}

/// Fills a device buffer with [`POISON`].
fn poison_buffer(
    stream: &Arc<CudaStream>,
    buffer: &mut cudarc::driver::CudaSlice<u8>,
) -> Result<(), cudarc::driver::DriverError> {
    use cudarc::driver::DevicePtrMut;
    let bytes = buffer.len();
    let (pointer, _record) = buffer.device_ptr_mut(stream);
    // SAFETY: pointer and length describe the whole allocation, used on this stream only.
    unsafe { cudarc::driver::result::memset_d8_async(pointer, POISON, bytes, stream.cu_stream()) }
}

impl Engine for CudaEngine {
    fn name(&self) -> String {
        format!("cuda:{} ({})", self.device.ordinal, self.device.name)
    }

    fn capacity(&self) -> usize {
        self.options.streams * self.options.frames_per_stream
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn submit(&mut self, mut frame: Frame) -> Result<(), EngineError> {
        if self.in_flight >= self.capacity() {
            return Err(EngineError::Unsupported(
                "submit with every lane busy; receive first".into(),
            ));
        }
        if !self.layout.as_ref().is_some_and(|l| l.matches(&frame)) {
            self.prepare(FrameShape {
                format: frame.format,
                width: frame.width,
                height: frame.height,
            })?;
        }
        let (Some(layout), Some(kernels), Some(completion)) =
            (self.layout.clone(), self.kernels.clone(), self.completion.as_ref())
        else {
            return Err(EngineError::Unsupported("engine used before it was prepared".into()));
        };
        // A lane is free once the completion thread has copied its last frame out.
        let mut lane = completion
            .free_lanes
            .recv()
            .map_err(|_| EngineError::Unsupported("the GPU completion thread stopped".into()))?;
        let started = Instant::now();
        let enqueued = self.enqueue(&mut lane, &layout, &kernels, &mut frame);
        let enqueued_at = Instant::now();
        frame.timeline.enqueued = Some(enqueued_at);
        self.copy_times.copy_in += enqueued_at - started;
        let Some(completion) = self.completion.as_ref() else {
            // Not reachable (checked above); the frame must outlive any queued copy.
            let _ = lane.stream.synchronize();
            return enqueued.map(|_| ());
        };
        let routes = match enqueued {
            Ok(routes) => routes,
            Err(error) => {
                // Part of the frame's work may be queued: let it finish before the lane is
                // reused and before the frame's memory is released.
                let _ = lane.stream.synchronize();
                let _ = completion.return_lane.send(lane);
                return Err(error);
            }
        };
        let job = InFlight {
            lane,
            frame,
            routes,
            layout,
            _kernels: kernels,
            origin: self.origin.clone(),
        };
        let sent = completion.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            return Err(EngineError::Unsupported("the GPU completion thread stopped".into()));
        }
        self.in_flight += 1;
        Ok(())
    }

    fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let Some(completion) = self.completion.as_ref() else {
            return Ok(None);
        };
        let finished = completion
            .finished
            .recv()
            .map_err(|_| EngineError::Unsupported("the GPU completion thread stopped".into()))?;
        self.in_flight -= 1;
        self.copy_times.frames += 1;
        self.copy_times.copy_out += finished.copy_out;
        self.spans.extend(finished.spans);
        self.last_stages = finished.stages;
        finished.frame.map(Some)
    }

    fn device(&self) -> String {
        format!("cuda:{}", self.device.ordinal)
    }

    fn last_stage_times(&self) -> Option<StageTimes> {
        self.last_stages
    }

    fn pinned_bytes(&self) -> usize {
        CudaEngine::pinned_bytes(self)
    }

    fn frame_pool(&self) -> Option<Arc<BufferPool>> {
        self.pool.clone()
    }

    fn preparer(&self) -> FilterPreparer {
        let device = self.device.clone();
        let shape = self.layout.as_ref().map(|layout| layout.shape);
        let (pitch_align, force_path) = (self.options.pitch_align, self.options.force_path);
        Arc::new(move |filter: &FilterSpec| {
            // Without a frame shape yet, kernels are compiled with the first frame anyway.
            let Some(shape) = shape else { return Ok(()) };
            let layout = Layout::new(shape, filter.planes, pitch_align);
            for (_, variant, _) in plan_kernels(&device, filter, &layout, force_path)? {
                kernels::compile(&variant, &device.arch())?;
            }
            Ok(())
        })
    }

    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
        if filter.planes != self.filter.planes {
            if self.in_flight > 0 {
                return Err(EngineError::Unsupported(
                    "the planes to filter can only change with no frame in flight".into(),
                ));
            }
            // Other planes go to the GPU: the lanes are laid out again for the next frame.
            self.filter = filter;
            self.layout = None;
            return Ok(());
        }
        if let Some(layout) = &self.layout {
            let stream = self.context.default_stream();
            // Frames in flight hold the old kernels (see InFlight); new frames use these.
            let kernels = FilterKernels::build(
                &self.context,
                &stream,
                &self.device,
                filter.clone(),
                layout,
                self.options.force_path,
            )?;
            self.kernels = Some(Arc::new(kernels));
        }
        self.filter = filter;
        Ok(())
    }

    fn take_trace(&mut self) -> Vec<TraceSpan> {
        std::mem::take(&mut self.spans)
    }
}

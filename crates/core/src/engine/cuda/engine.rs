//! The CUDA engine itself ([`CudaEngine`]): made for a filter and a GPU, it lays its lanes out
//! for a frame geometry, lends its page-locked frame pool, submits frames to free lanes and
//! hands them back in order, and switches filters between frames.
//!
//! One job at some length (about 550 lines): the `Engine` methods of the CUDA engine and the
//! state they share; lanes, completion, kernels and memory are modules of their own.

use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::completion::{Completion, HostCopyTimes, InFlight};
use super::device::{self, DeviceInfo};
use super::engine_error::CudaResultExt;
use super::kernels::{self, PlaneGeometry};
use super::lanes::{Lane, Layout, PlaneRoutes, Route};
use super::pcie::PcieBytes;
use super::pinned::PinnedMemory;
use super::plan::{FilterKernels, Planner};
use crate::engine::placement::Seat;
use crate::engine::{
    Engine, EngineError, EngineOptions, FilterPreparer, FrameShape, GpuContext, StageTimes, TraceSpan,
    UnsupportedRequest, MAX_FRAMES_PER_STREAM, MAX_STREAMS,
};
use crate::filter::FilterSpec;
use crate::frame::{Frame, Plane};
use crate::host_buffers::{BufferPool, IDLE_WINDOW};

/// Byte written into GPU output buffers before each frame when poisoning (tests).
pub const POISON: u8 = 0xA7;

/// The CUDA engine on one GPU: its lanes, kernels and frame pool (see the module's text).
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
    /// Bytes the engine's copies moved over PCIe, each way.
    pcie: PcieBytes,
    last_stages: Option<StageTimes>,
    /// Page-locked frame buffers lent to whoever makes frames (the source).
    pool: Option<Arc<BufferPool>>,
    /// The frame geometry the pool was made for.
    pool_shape: Option<FrameShape>,
    /// Pinned bytes of the lanes' staging buffers.
    staging_bytes: Arc<AtomicUsize>,
    /// How long a lane keeps staging buffers no frame used ([`IDLE_WINDOW`] unless set).
    staging_idle: Duration,
    /// GPU memory of the lanes' input and output buffers, as laid out last.
    lane_device_bytes: usize,
    /// This engine's place in the per-GPU pipeline count, held while it lives.
    _seat: Option<Seat>,
}

impl CudaEngine {
    /// An engine on GPU `ordinal` applying `filter`, its lanes laid out now when `options.shape`
    /// is known, else at the first frame.
    pub fn new(filter: FilterSpec, options: &EngineOptions, ordinal: usize) -> Result<CudaEngine, EngineError> {
        if !(1..=MAX_STREAMS).contains(&options.streams) {
            return Err(EngineError::Unsupported {
                request: UnsupportedRequest::OutOfRange {
                    setting: "streams",
                    value: options.streams,
                    max: MAX_STREAMS,
                },
            });
        }
        if !(1..=MAX_FRAMES_PER_STREAM).contains(&options.frames_per_stream) {
            return Err(EngineError::Unsupported {
                request: UnsupportedRequest::OutOfRange {
                    setting: "frames_per_stream",
                    value: options.frames_per_stream,
                    max: MAX_FRAMES_PER_STREAM,
                },
            });
        }
        let started = Instant::now();
        let context = device::open(ordinal)?;
        let opened = started.elapsed();
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
            pcie: PcieBytes::default(),
            last_stages: None,
            pool: None,
            pool_shape: None,
            staging_bytes: Arc::new(AtomicUsize::new(0)),
            staging_idle: IDLE_WINDOW,
            lane_device_bytes: 0,
            _seat: None,
        };
        if let Some(shape) = options.shape {
            engine.prepare(shape)?;
        }
        // Where a pipeline's wait for its GPU goes (RUST_LOG=debug): the context is the
        // process's, made once (see `device::open`); the rest is this engine's.
        tracing::debug!(
            "cuda:{ordinal} engine made in {:.1} ms, {:.1} of them waiting for the GPU's context",
            started.elapsed().as_secs_f64() * 1e3,
            opened.as_secs_f64() * 1e3
        );
        Ok(engine)
    }

    /// The GPU it runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Holds `seat` (the GPU placement count) until the engine is dropped.
    pub fn with_seat(mut self, seat: Seat) -> CudaEngine {
        self._seat = Some(seat);
        self
    }

    /// Gives back a lane's staging buffers once no frame used them for `idle` instead of
    /// [`IDLE_WINDOW`] (a test's shorter wait).
    pub fn with_staging_idle(mut self, idle: Duration) -> CudaEngine {
        self.staging_idle = idle;
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

    /// Bytes moved over PCIe so far, each way, and the frames they were moved for.
    pub fn pcie_bytes(&self) -> PcieBytes {
        self.pcie
    }

    /// What kernel planning needs of this engine.
    fn planner(&self) -> Planner {
        Planner {
            device: self.device.clone(),
            force_path: self.options.force_path,
            tuning: self.options.tuning,
        }
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
            return Err(EngineError::Unsupported {
                request: UnsupportedRequest::GeometryChangedInFlight,
            });
        }
        if let Some(mut completion) = self.completion.take() {
            completion.stop();
        }
        let laying_out = Instant::now();
        let layout = Layout::new(shape, &self.filter, self.options.pitch_align);
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
        self.lane_device_bytes = lanes.len() * 2 * layout.bytes;
        let lanes_made = Instant::now();
        let kernels = FilterKernels::build(&self.context, &stream, &self.planner(), &self.filter, &layout)?;
        let kernels_loaded = Instant::now();
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
        tracing::debug!(
            "cuda:{} laid out in {:.1} ms: streams and lanes {:.1}, kernels {:.1}, frame pool {:.1}",
            self.device.ordinal,
            laying_out.elapsed().as_secs_f64() * 1e3,
            (lanes_made - laying_out).as_secs_f64() * 1e3,
            (kernels_loaded - lanes_made).as_secs_f64() * 1e3,
            kernels_loaded.elapsed().as_secs_f64() * 1e3,
        );
        let pool_limit = self.pool.as_ref().map_or(0, |pool| pool.limit());
        tracing::info!(
            "cuda:{} {} ready: {} stream(s) x {} frame(s), pinned frame pool up to {} frames ({} bytes), {:?} kernels",
            self.device.ordinal,
            self.device.name,
            streams.len(),
            self.options.frames_per_stream,
            self.options.pooled_frames,
            pool_limit,
            self.kernels
                .as_ref()
                .map(|k| k.sets.values().map(|(_, path, _)| *path).collect::<Vec<_>>())
        );
        self.completion = Some(Completion::start(
            lanes,
            &self.options.pipeline,
            self.options.tuning.spin(self.options.low_latency),
        )?);
        self.layout = Some(Arc::new(layout));
        Ok(())
    }

    /// The pinned pool frames of `shape` are made in, with the frames in flight in steady
    /// state (the lanes' and a few more) asked for at once: pinning takes about half a
    /// millisecond per megabyte, so the pool allocates them on a thread of its own while the
    /// first frames go through heap memory.
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
            pipeline: self.options.pipeline.clone(),
        };
        let pool = match &self.options.frame_pool {
            // The pipeline's pool, which the decoder fills already: it gets this memory.
            Some(late) if late.memory.install(Box::new(memory)) => late.pool.clone(),
            Some(_) | None => BufferPool::new(
                Box::new(PinnedMemory {
                    context: self.context.clone(),
                    pipeline: self.options.pipeline.clone(),
                }),
                self.options.pooled_frames * plane_bytes.iter().sum::<usize>(),
            ),
        };
        let reserved = self.options.pooled_frames.min(self.capacity() + 4);
        for bytes in plane_bytes {
            // PinnedMemory fails with an EngineError that names the pipeline already.
            pool.reserve_in_background(bytes, reserved).map_err(|error| {
                error
                    .downcast::<EngineError>()
                    .unwrap_or_else(|other| EngineError::Internal {
                        what: format!("reserving the pinned frame pool: {other}"),
                    })
            })?;
        }
        Ok(Some(pool))
    }

    /// Gives the frame fresh planes for the results to go to, where its own will not do:
    /// - a plane lent read-only (a decoder's picture, which the decoder may still read) is
    ///   replaced by one from the frame pool and held until the lane is done (its upload may
    ///   still be queued);
    /// - a plane that was staged in (ordinary memory, copied into the lane's buffer already)
    ///   is replaced by a page-locked one when the pool has one to give now, so the results
    ///   come straight back into it instead of through a second CPU copy.
    ///
    /// Returns the routes the download takes.
    fn give_planes_for_results(
        &self,
        layout: &Layout,
        upload: &PlaneRoutes,
        frame: &mut Frame,
        held: &mut Vec<Plane>,
    ) -> PlaneRoutes {
        // Results that stay on the GPU never come back to the host planes.
        let results_on_gpu = frame.device.as_ref().is_some_and(|picture| picture.stays_on_device());
        for (slot, route) in upload.of(layout) {
            let plane = &mut frame.planes[slot.plane];
            if plane.data.is_lent() {
                let fresh = match &self.pool {
                    Some(pool) => Plane::pooled(plane.shape(), pool),
                    None => Plane::with_stride(plane.shape(), slot.pitch),
                };
                held.push(std::mem::replace(plane, fresh));
            } else if route != Route::Direct && !results_on_gpu {
                // Results into a page-locked block when the pool has one free: copied back
                // without waiting (ordinary memory) or staging (another layout).
                if let Some(fresh) = self
                    .pool
                    .as_ref()
                    .and_then(|pool| Plane::pooled_page_locked(plane.shape(), pool))
                {
                    let old = std::mem::replace(plane, fresh);
                    if route == Route::Pageable {
                        // Kept until the lane is done, as an upload's source must be.
                        held.push(old);
                    }
                    // A staged plane's bytes are in the staging buffer already.
                }
            }
        }
        PlaneRoutes::for_frame(layout, frame)
    }

    /// Gives memory to the host planes that have none yet (a picture the decoder left on the
    /// GPU: see `Plane::pending`), now that results are about to be copied into them: from
    /// the pool, page-locked when it has a block, so a frame waiting in a queue held none.
    /// Results that stay on the GPU leave them without.
    fn give_pending_planes_memory(&self, frame: &mut Frame) {
        if frame.device.as_ref().is_some_and(|picture| picture.stays_on_device()) {
            return;
        }
        for plane in frame.planes.iter_mut().filter(|plane| plane.data.is_pending()) {
            *plane = match &self.pool {
                Some(pool) => Plane::pooled(plane.shape(), pool),
                None => Plane::new(plane.shape()),
            };
        }
    }

    /// Enqueues upload, kernels and download of `frame` on the lane's stream.
    fn enqueue(
        &self,
        lane: &mut Lane,
        layout: &Layout,
        kernels: &FilterKernels,
        frame: &mut Frame,
        held: &mut Vec<Plane>,
    ) -> Result<PlaneRoutes, EngineError> {
        let context = self.what(lane.index, &format!("frame {}", frame.index));
        let what = |action: &str| format!("{context}: {action}");
        let stream = lane.stream.clone();
        if let Some(event) = &lane.events.start {
            event.record(&stream).context(|| what("recording the start event"))?;
        }
        self.give_pending_planes_memory(frame);
        let routes = lane.upload(layout, frame)?;
        if let Some(event) = &lane.events.uploaded {
            event.record(&stream).context(|| what("recording the upload event"))?;
        }
        if self.options.poison {
            poison_buffer(&stream, &mut lane.device_out).context(|| what("poisoning the output buffer"))?;
        }
        for slot in &layout.slots {
            let (set, path, bias) = kernels.sets.get(&slot.plane).ok_or_else(|| EngineError::Internal {
                what: format!("{context}: plane {} was laid out without a kernel", slot.plane),
            })?;
            let geometry = PlaneGeometry {
                width: slot.width as i32,
                height: slot.height as i32,
                src_pitch: slot.pitch as i32,
                dst_pitch: slot.pitch as i32,
                bias: *bias,
                ..PlaneGeometry::ONE_PLANE
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
        let routes = self.give_planes_for_results(layout, &routes, frame, held);
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
        let PcieBytes {
            frames,
            to_gpu,
            from_gpu,
        } = self.pcie;
        if let (Some(to), Some(from)) = (to_gpu.checked_div(frames), from_gpu.checked_div(frames)) {
            tracing::info!("PCIe per frame: {to} bytes to the GPU, {from} back ({frames} frames)",);
        }
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

    fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
        if self.in_flight >= self.capacity() {
            // The caller breaks the engine's contract: a bug, not a request's fault.
            return Err(EngineError::Internal {
                what: "submit with every lane busy; receive first".into(),
            });
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
            return Err(EngineError::Internal {
                what: "engine used before it was prepared".into(),
            });
        };
        let mut ticket = completion.take_lane(frame)?;
        let (lane, frame, held) = ticket.parts();
        // The lane is free, so the GPU is done with its staging buffers.
        if let Some(idle) = lane.take_idle_staging(self.staging_idle) {
            match &self.pool {
                Some(pool) => pool.release(idle),
                None => drop(idle),
            }
        }
        let started = Instant::now();
        // On failure the ticket is dropped: it waits for whatever part of the frame's work
        // was queued before the lane is reused and the frame's memory released.
        let enqueued = self.enqueue(lane, &layout, &kernels, frame, held);
        let enqueued_at = Instant::now();
        frame.timeline.enqueued = Some(enqueued_at);
        self.copy_times.copy_in += enqueued_at - started;
        let routes = enqueued?;
        self.pcie.count(&layout, frame);
        completion.send(InFlight {
            ticket,
            routes,
            layout,
            _kernels: kernels,
            origin: self.origin.clone(),
        })?;
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
        let finished = completion.receive()?;
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

    fn device_bytes(&self) -> usize {
        self.lane_device_bytes
    }

    fn frame_pool(&self) -> Option<Arc<BufferPool>> {
        self.pool.clone()
    }

    fn device_pictures_on(&self) -> Option<GpuContext> {
        Some(GpuContext {
            ordinal: self.device.ordinal,
            handle: self.context.cu_ctx() as usize,
            keeper: self.context.clone(),
        })
    }

    fn preparer(&self) -> FilterPreparer {
        let planner = self.planner();
        let shape = self.layout.as_ref().map(|layout| layout.shape);
        let pitch_align = self.options.pitch_align;
        Arc::new(move |filter: &FilterSpec| {
            // Without a frame shape yet, kernels are compiled with the first frame anyway.
            let Some(shape) = shape else { return Ok(()) };
            let layout = Layout::new(shape, filter, pitch_align);
            for plan in planner.plan(filter, &layout)? {
                kernels::compile(&plan.variant, &planner.device.arch())?;
            }
            Ok(())
        })
    }

    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
        let relaid = self
            .layout
            .as_ref()
            .is_some_and(|layout| *layout.as_ref() != Layout::new(layout.shape, &filter, self.options.pitch_align));
        if relaid {
            if self.in_flight > 0 {
                return Err(EngineError::Unsupported {
                    request: UnsupportedRequest::PlanesChangedInFlight,
                });
            }
            // Other planes go to the GPU: the lanes are laid out again for the next frame.
            self.filter = filter;
            self.layout = None;
            return Ok(());
        }
        if let Some(layout) = &self.layout {
            let stream = self.context.default_stream();
            // Frames in flight hold the old kernels (see InFlight); new frames use these.
            let kernels = FilterKernels::build(&self.context, &stream, &self.planner(), &filter, layout)?;
            self.kernels = Some(Arc::new(kernels));
        }
        self.filter = filter;
        Ok(())
    }

    fn take_trace(&mut self) -> Vec<TraceSpan> {
        std::mem::take(&mut self.spans)
    }
}

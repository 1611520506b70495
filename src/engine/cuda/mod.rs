//! The CUDA engine, the only code that talks to the GPU (through cudarc). Frames take the
//! next lane in turn; the oldest lane is waited on first, so frames leave in order while
//! up to `streams` frames are in flight, their copies overlapping other frames' kernels.

pub mod device;
mod error;
pub mod kernels;
pub mod lanes;

use cudarc::driver::{CudaContext, CudaStream};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use self::device::DeviceInfo;
use self::error::CudaResultExt;
use self::kernels::{KernelSet, PlaneGeometry, Variant};
use self::lanes::{Lane, Layout};
use super::{Engine, EngineError, EngineOptions, FrameShape, KernelPath, TraceSpan};
use crate::filter::FilterSpec;
use crate::frame::Frame;

/// Byte written into GPU output buffers before each frame when poisoning (tests).
pub const POISON: u8 = 0xA7;

/// The kernels of one filter, one set per channel count the frame's planes have.
struct FilterKernels {
    filter: FilterSpec,
    path: KernelPath,
    sets: BTreeMap<usize, KernelSet>,
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
        let mut sets = BTreeMap::new();
        for slot in &layout.slots {
            if sets.contains_key(&slot.channels) {
                continue;
            }
            let variant = Variant::new(
                mask.width(),
                mask.height(),
                slot.channels,
                filter.border,
                device.max_shared_per_block,
            );
            let needed = if path == KernelPath::Separable {
                variant.separable_shared_bytes()
            } else {
                variant.dense_shared_bytes()
            };
            if path != KernelPath::Global && needed > device.max_shared_per_block {
                return Err(EngineError::Unsupported(format!(
                    "{} needs {needed} bytes of shared memory per block; {} allows {}",
                    variant.describe(),
                    device.name,
                    device.max_shared_per_block
                )));
            }
            sets.insert(
                slot.channels,
                KernelSet::load(context, stream, variant, &device.arch(), mask)?,
            );
        }
        Ok(FilterKernels { filter, path, sets })
    }
}

/// A frame on a lane, with the kernels it was enqueued with: they stay loaded until the
/// frame is received, even if the filter changes meanwhile.
struct InFlight {
    lane: usize,
    frame: Frame,
    _kernels: Arc<FilterKernels>,
}

pub struct CudaEngine {
    context: Arc<CudaContext>,
    device: DeviceInfo,
    options: EngineOptions,
    layout: Option<Layout>,
    lanes: Vec<Lane>,
    kernels: Option<Arc<FilterKernels>>,
    filter: FilterSpec,
    in_flight: VecDeque<InFlight>,
    next_lane: usize,
    /// Timing origin for traces, recorded when the lanes were made.
    origin: Option<cudarc::driver::CudaEvent>,
    spans: Vec<TraceSpan>,
}

impl CudaEngine {
    pub fn new(filter: FilterSpec, options: &EngineOptions, ordinal: usize) -> Result<CudaEngine, EngineError> {
        if !(1..=16).contains(&options.streams) {
            return Err(EngineError::Unsupported(format!(
                "streams = {} is out of range; allowed 1..=16",
                options.streams
            )));
        }
        let context = device::open(ordinal)?;
        let device = DeviceInfo::read(&context, ordinal)?;
        let mut engine = CudaEngine {
            context,
            device,
            options: options.clone(),
            layout: None,
            lanes: Vec::new(),
            kernels: None,
            filter,
            in_flight: VecDeque::new(),
            next_lane: 0,
            origin: None,
            spans: Vec::new(),
        };
        if let Some(shape) = options.shape {
            engine.prepare(shape)?;
        }
        Ok(engine)
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// Bytes of pinned host memory the lanes hold.
    pub fn pinned_bytes(&self) -> usize {
        self.lanes.len() * 2 * self.layout.as_ref().map_or(0, |l| l.bytes)
    }

    fn what(&self, lane: usize, action: &str) -> String {
        format!(
            "pipeline {:?}, cuda:{}, lane {lane}: {action}",
            self.options.pipeline, self.device.ordinal
        )
    }

    /// Sizes the lanes for `shape` and compiles the kernels it needs. Waits for in-flight
    /// frames first when the geometry changes mid-stream.
    fn prepare(&mut self, shape: FrameShape) -> Result<(), EngineError> {
        if !self.in_flight.is_empty() {
            return Err(EngineError::Unsupported(
                "frame geometry changed with frames in flight".into(),
            ));
        }
        let layout = Layout::new(shape, self.filter.planes, self.options.pitch_align);
        self.lanes.clear();
        for index in 0..self.options.streams {
            self.lanes.push(Lane::new(
                &self.context,
                index,
                &layout,
                self.options.trace,
                &self.options.pipeline,
            )?);
        }
        let stream = self.lanes[0].stream.clone();
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
            self.origin = Some(origin);
        }
        tracing::info!(
            pipeline = %self.options.pipeline,
            "cuda:{} {} ready: {} lane(s), {} pinned bytes, {:?} kernel",
            self.device.ordinal,
            self.device.name,
            self.lanes.len(),
            self.lanes.len() * 2 * layout.bytes,
            self.kernels.as_ref().map(|k| k.path)
        );
        self.layout = Some(layout);
        self.next_lane = 0;
        Ok(())
    }

    /// Enqueues upload, kernels and download of `frame` on its lane.
    fn enqueue(&mut self, lane_index: usize, frame: &Frame) -> Result<(), EngineError> {
        let (Some(layout), Some(kernels)) = (self.layout.as_ref(), self.kernels.clone()) else {
            return Err(EngineError::Unsupported("engine used before it was prepared".into()));
        };
        let context = self.what(lane_index, &format!("frame {}", frame.index));
        let what = |action: &str| format!("{context}: {action}");
        let poison = self.options.poison;
        let lane = &mut self.lanes[lane_index];
        lane.fill_input(layout, frame)?;
        let stream = lane.stream.clone();
        if let Some(event) = &lane.events.start {
            event.record(&stream).context(|| what("recording the start event"))?;
        }
        stream
            .memcpy_htod(&lane.pinned_in, &mut lane.device_in)
            .context(|| what("copying to the GPU"))?;
        if let Some(event) = &lane.events.uploaded {
            event.record(&stream).context(|| what("recording the upload event"))?;
        }
        if poison {
            poison_buffer(&stream, &mut lane.device_out).context(|| what("poisoning the output buffer"))?;
        }
        for slot in &layout.slots {
            let set = &kernels.sets[&slot.channels];
            let geometry = PlaneGeometry {
                width: slot.width as i32,
                height: slot.height as i32,
                src_pitch: slot.pitch as i32,
                dst_pitch: slot.pitch as i32,
                bias: kernels.filter.mask.bias(),
            };
            let range = slot.offset..slot.offset + slot.len();
            let src = lane.device_in.slice(range.clone());
            let mut dst = lane.device_out.slice_mut(range);
            set.launch(&stream, kernels.path, &src, &mut dst, geometry)
                .context(|| {
                    what(&format!(
                        "launching the {:?} kernel on plane {}",
                        kernels.path, slot.plane
                    ))
                })?;
        }
        if let Some(event) = &lane.events.filtered {
            event.record(&stream).context(|| what("recording the kernel event"))?;
        }
        stream
            .memcpy_dtoh(&lane.device_out, &mut lane.pinned_out)
            .context(|| what("copying from the GPU"))?;
        lane.events
            .done
            .record(&stream)
            .context(|| what("recording the done event"))?;
        Ok(())
    }

    /// Reads the stage timings of a finished frame.
    fn record_spans(&mut self, lane_index: usize, frame: u64) -> Result<(), EngineError> {
        let Some(origin) = &self.origin else { return Ok(()) };
        let lane = &self.lanes[lane_index];
        let events = &lane.events;
        let (Some(start), Some(uploaded), Some(filtered)) = (&events.start, &events.uploaded, &events.filtered) else {
            return Ok(());
        };
        let what = || format!("lane {lane_index}: reading stage timings");
        let at = |event: &cudarc::driver::CudaEvent| origin.elapsed_ms(event).map(|ms| ms as f64 * 1e3);
        let stamps = [
            at(start).context(what)?,
            at(uploaded).context(what)?,
            at(filtered).context(what)?,
            at(&events.done).context(what)?,
        ];
        for (stage, pair) in ["upload", "kernels", "download"].into_iter().zip(stamps.windows(2)) {
            self.spans.push(TraceSpan {
                lane: lane_index,
                frame,
                stage,
                start_us: pair[0],
                duration_us: pair[1] - pair[0],
            });
        }
        Ok(())
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
        self.options.streams
    }

    fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
        if self.in_flight.len() >= self.capacity() {
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
        // Lanes are used in turn and finish in turn, so the next lane is always free here.
        let lane = self.next_lane;
        self.next_lane = (lane + 1) % self.lanes.len();
        self.enqueue(lane, &frame)?;
        let kernels = self.kernels.clone().expect("prepare() built the kernels");
        self.in_flight.push_back(InFlight {
            lane,
            frame,
            _kernels: kernels,
        });
        Ok(())
    }

    fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
        let Some(InFlight { lane, mut frame, .. }) = self.in_flight.pop_front() else {
            return Ok(None);
        };
        let what = self.what(lane, &format!("frame {}: waiting for the GPU", frame.index));
        self.lanes[lane].events.done.synchronize().context(|| what)?;
        let layout = self.layout.as_ref().expect("a lane in flight implies a layout");
        self.lanes[lane].drain_output(layout, &mut frame)?;
        self.record_spans(lane, frame.index)?;
        Ok(Some(frame))
    }

    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
        self.filter = filter.clone();
        if let Some(layout) = &self.layout {
            let stream = self.lanes[0].stream.clone();
            // Frames in flight hold the old kernels (see InFlight); new frames use these.
            let kernels = FilterKernels::build(
                &self.context,
                &stream,
                &self.device,
                filter,
                layout,
                self.options.force_path,
            )?;
            self.kernels = Some(Arc::new(kernels));
        }
        Ok(())
    }

    fn take_trace(&mut self) -> Vec<TraceSpan> {
        std::mem::take(&mut self.spans)
    }
}

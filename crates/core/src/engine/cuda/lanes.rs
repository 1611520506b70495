//! Lanes: each carries one frame at a time, with its own device input and output buffers
//! and events, sized once for the frame geometry, on a CUDA stream it may share with other
//! lanes. A frame's selected planes travel host -> device -> kernels -> device -> host on
//! its lane's stream, so frames on different streams overlap their copies and kernels, and
//! a stream with two lanes already holds the next frame's work when one frame finishes.
//!
//! A plane in page-locked memory laid out as on the GPU (a plane from the engine's frame
//! pool) is copied straight from the frame and the result straight back into it: no CPU
//! copy at all. A plane laid out so in the pipeline's ordinary memory (the pool's, lent while
//! its page-locked blocks are short: a pipeline's first frames, frames catching up after a
//! stall) is copied straight too, by the driver through its own staging: the copy back then
//! waits for the frame's work, but nothing is page-locked on the frame path. Any other plane
//! (laid out otherwise, or a caller's: a GStreamer buffer, a NumPy array) goes through the
//! lane's pinned staging buffers, copied in and out by the CPU, with lanes overlapping; those
//! are allocated the first time a frame needs them. Page-locking them there for frames that
//! merely caught up held every pipeline's filter thread up at once: each allocation takes the
//! driver's lock that every other thread's calls wait for.

use cudarc::driver::{result, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engine_error::{allocation_error, CudaResultExt};
use super::pinned::PinnedBlock;
use crate::engine::{EngineError, FrameShape};
use crate::filter::FilterSpec;
use crate::frame::{Frame, Plane, SampleDepth};
use crate::host_buffers::HostBlock;

/// Planes at least this tall are copied to and from pinned memory by several threads.
const PARALLEL_COPY_ROWS: usize = 64;
/// Rows one thread copies at a time: enough to make a task worth scheduling.
const ROWS_PER_TASK: usize = 32;
/// Bytes one thread copies at a time when both sides have the same row layout.
const BYTES_PER_TASK: usize = 256 * 1024;

/// Copies `src` into `dst` (same length) with several threads, in large contiguous pieces.
fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    dst.par_chunks_mut(BYTES_PER_TASK)
        .zip(src.par_chunks(BYTES_PER_TASK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Where one selected plane lives inside a lane's buffers (pinned and device alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneSlot {
    /// Index of the plane in the frame.
    pub plane: usize,
    /// Where the plane starts in the buffers, in bytes (a multiple of 256).
    pub offset: usize,
    /// Bytes between rows in the buffers.
    pub pitch: usize,
    /// Pixels across.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Interleaved channels per pixel.
    pub channels: usize,
    /// How each sample is stored.
    pub depth: SampleDepth,
}

impl PlaneSlot {
    /// Bytes of pixels in one row.
    pub fn row_bytes(&self) -> usize {
        self.width * self.channels * self.depth.bytes()
    }
    /// Bytes the plane takes in the buffers, rows with their padding.
    pub fn bytes(&self) -> usize {
        self.pitch * self.height
    }

    /// Whether `plane` can be copied to and from the GPU as it is: page-locked, with this
    /// slot's row pitch.
    pub fn is_direct_for(&self, plane: &Plane) -> bool {
        plane.data.is_page_locked() && self.is_laid_out_for(plane)
    }

    /// Whether `plane` is the pipeline's own ordinary memory with this slot's row pitch: the
    /// driver copies it as it is (see the module's docs).
    fn is_pageable_for(&self, plane: &Plane) -> bool {
        !plane.data.is_lent_by_caller() && self.is_laid_out_for(plane)
    }

    /// Whether `plane`'s rows sit as this slot's do: one straight copy moves it.
    fn is_laid_out_for(&self, plane: &Plane) -> bool {
        plane.stride == self.pitch && plane.data.len() >= self.bytes()
    }
}

/// The selected planes of a frame shape, packed one after the other with aligned rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The frames laid out.
    pub shape: FrameShape,
    /// The planes a kernel filters, in plane order; the others never go to the GPU.
    pub slots: Vec<PlaneSlot>,
    /// Bytes of each of a lane's buffers (at least 256).
    pub bytes: usize,
}

impl Layout {
    /// The planes `filter` filters in `shape`'s frames (see [`FilterSpec::mask_for`]).
    pub fn new(shape: FrameShape, filter: &FilterSpec, pitch_align: usize) -> Layout {
        let align = pitch_align.max(1);
        let mut offset = 0;
        let mut slots = Vec::new();
        for (index, plane) in shape
            .format
            .plane_shapes(shape.width, shape.height)
            .into_iter()
            .enumerate()
        {
            if filter.mask_for(shape.format, index).is_none() {
                continue;
            }
            let pitch = plane.row_bytes().next_multiple_of(align);
            slots.push(PlaneSlot {
                plane: index,
                offset,
                pitch,
                width: plane.width,
                height: plane.height,
                channels: plane.channels,
                depth: plane.depth,
            });
            // Planes start on 256-byte boundaries, as cudaMalloc'd buffers do.
            offset = (offset + pitch * plane.height).next_multiple_of(256);
        }
        Layout {
            shape,
            slots,
            bytes: offset.max(256),
        }
    }

    /// Whether `frame` has the geometry this layout was made for.
    pub fn matches(&self, frame: &Frame) -> bool {
        self.shape.format == frame.format && self.shape.width == frame.width && self.shape.height == frame.height
    }
}

/// Events a lane records on its stream for one frame; timing events only when tracing.
pub struct LaneEvents {
    /// Before the upload (timing only).
    pub start: Option<CudaEvent>,
    /// After the upload (timing only).
    pub uploaded: Option<CudaEvent>,
    /// After the kernels (timing only).
    pub filtered: Option<CudaEvent>,
    /// After the download: the frame's work is done.
    pub done: CudaEvent,
}

/// Pinned buffers for planes that cannot be copied directly, laid out as [`Layout`] says.
struct Staging {
    /// Written by the CPU, read by the copy engine: write-combined is fine and faster.
    input: PinnedBlock,
    /// Read back by the CPU: must not be write-combined.
    output: PinnedBlock,
}

/// How one plane of a frame travels between the host and the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Copied straight from and back into the frame's page-locked plane.
    Direct,
    /// Copied straight from and back into the frame's plane in the pipeline's own ordinary
    /// memory, by the driver (the copy back returns once done).
    Pageable,
    /// Copied by the CPU through the lane's pinned staging buffers.
    Staged,
}

/// The route of each of a layout's slots for one frame. Decided when the frame is enqueued;
/// the completion side follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneRoutes(Vec<Route>);

impl PlaneRoutes {
    /// Direct for every plane that can go as it is (see [`PlaneSlot::is_direct_for`]),
    /// pageable for one laid out so in the pipeline's own ordinary memory, staged otherwise.
    pub fn for_frame(layout: &Layout, frame: &Frame) -> PlaneRoutes {
        PlaneRoutes(
            layout
                .slots
                .iter()
                .map(|slot| {
                    let plane = &frame.planes[slot.plane];
                    if slot.is_direct_for(plane) {
                        Route::Direct
                    } else if slot.is_pageable_for(plane) {
                        Route::Pageable
                    } else {
                        Route::Staged
                    }
                })
                .collect(),
        )
    }

    /// Each of `layout`'s slots with its route.
    pub fn of<'a>(&'a self, layout: &'a Layout) -> impl Iterator<Item = (&'a PlaneSlot, Route)> + 'a {
        layout.slots.iter().zip(self.0.iter().copied())
    }

    /// The slots of `layout` whose planes are staged.
    pub fn staged<'a>(&'a self, layout: &'a Layout) -> impl Iterator<Item = &'a PlaneSlot> + 'a {
        self.of(layout)
            .filter(|(_, route)| *route == Route::Staged)
            .map(|(slot, _)| slot)
    }
}

/// One frame's way through the GPU: device buffers, events, staging, on a stream.
pub struct Lane {
    /// Its place among the engine's lanes.
    pub index: usize,
    /// Which of the engine's streams the lane queues its work on.
    pub stream_index: usize,
    /// The stream it queues its work on.
    pub stream: Arc<CudaStream>,
    context: Arc<CudaContext>,
    staging: Option<Staging>,
    /// When a frame last went through the staging buffers.
    staged_at: Instant,
    /// The selected planes on the GPU, as the layout packs them.
    pub device_in: CudaSlice<u8>,
    /// The kernels' results, laid out as the input.
    pub device_out: CudaSlice<u8>,
    /// What the lane records for its current frame.
    pub events: LaneEvents,
    pipeline: String,
    /// Staging bytes of every lane of the engine, for its pinned-memory figure.
    staging_total: Arc<AtomicUsize>,
}

impl Lane {
    /// A lane of device buffers for `layout`, on `stream` (timed when `timing`); its staging
    /// buffers come when a frame first needs them.
    pub fn new(
        context: &Arc<CudaContext>,
        index: usize,
        (stream_index, stream): (usize, &Arc<CudaStream>),
        layout: &Layout,
        timing: bool,
        pipeline: &str,
        staging_total: &Arc<AtomicUsize>,
    ) -> Result<Lane, EngineError> {
        let what = |thing: &str| format!("pipeline {pipeline:?}, lane {index}: {thing}");
        let bytes = layout.bytes;
        let stream = stream.clone();
        // Zeroed once here: the kernels write only each row's pixels, so row padding and the
        // gaps between planes would otherwise stay uninitialised.
        let device_in = stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| allocation_error(e, context, what("allocating GPU input memory"), bytes))?;
        let device_out = stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| allocation_error(e, context, what("allocating GPU output memory"), bytes))?;
        let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = |flags| context.new_event(flags).context(|| what("creating an event"));
        let events = LaneEvents {
            start: if timing { Some(event(timed)?) } else { None },
            uploaded: if timing { Some(event(timed)?) } else { None },
            filtered: if timing { Some(event(timed)?) } else { None },
            // Waiting on the done event blocks the thread instead of spinning a core the
            // decoder could use.
            done: event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?,
        };
        Ok(Lane {
            index,
            stream_index,
            stream,
            context: context.clone(),
            staging: None,
            staged_at: Instant::now(),
            device_in,
            device_out,
            events,
            pipeline: pipeline.to_string(),
            staging_total: staging_total.clone(),
        })
    }

    /// The staging buffers, once no frame has gone through them for `idle`: for the caller
    /// to free off the frame path. Frames are staged only when their planes are laid out
    /// otherwise than on the GPU (not the pool's), which a pipeline may see only at times;
    /// kept for good, each lane's staging would hold two page-locked frames that the steady
    /// flow of pooled frames never uses.
    pub fn take_idle_staging(&mut self, idle: Duration) -> Option<Vec<Box<dyn HostBlock>>> {
        if self.staged_at.elapsed() < idle {
            return None;
        }
        let staging = self.staging.take()?;
        self.staging_total.fetch_sub(staging.bytes(), Ordering::Relaxed);
        Some(vec![Box::new(staging.input), Box::new(staging.output)])
    }

    /// The staging buffers, allocated the first time a frame needs them (or the first time
    /// after they were given back as idle).
    fn staging(&mut self, layout: &Layout) -> Result<&mut Staging, EngineError> {
        self.staged_at = Instant::now();
        if self.staging.is_none() {
            let what = |thing: &str| format!("pipeline {:?}, lane {}: {thing}", self.pipeline, self.index);
            let input = PinnedBlock::new(
                &self.context,
                layout.bytes,
                true,
                what("allocating pinned staging input"),
            )?;
            let output = PinnedBlock::new(
                &self.context,
                layout.bytes,
                false,
                what("allocating pinned staging output"),
            )?;
            let staging = Staging { input, output };
            self.staging_total.fetch_add(staging.bytes(), Ordering::Relaxed);
            self.staging = Some(staging);
        }
        Ok(self.staging.as_mut().expect("staging was just set"))
    }

    /// Enqueues the copy of the frame's selected planes to the GPU on the lane's stream,
    /// staging (a CPU copy) the planes that cannot go directly. The caller holds a free lane
    /// (its done event has completed) and keeps `frame` untouched until the lane is done.
    pub fn upload(&mut self, layout: &Layout, frame: &mut Frame) -> Result<PlaneRoutes, EngineError> {
        let routes = PlaneRoutes::for_frame(layout, frame);
        if let Some(picture) = frame.device.clone() {
            // The picture is on the GPU already: nothing to stage in, but staged outputs
            // still need the staging buffers (unless the output stays on the GPU too).
            if routes.staged(layout).next().is_some() && !picture.stays_on_device() {
                self.staging(layout)?;
            }
            self.copy_in_from_device(layout, frame, &picture)?;
            return Ok(routes);
        }
        if routes.staged(layout).next().is_some() {
            let staging = self.staging(layout)?;
            for slot in routes.staged(layout) {
                let region = &mut staging.input.bytes_mut()[slot.offset..slot.offset + slot.bytes()];
                stage_in(slot, &frame.planes[slot.plane], region);
            }
        }
        let (device, _record) = self.device_in.device_ptr(&self.stream);
        for (slot, route) in routes.of(layout) {
            let host = if route == Route::Staged {
                let staging = self.staging.as_ref().expect("staged planes have staging");
                &staging.input.bytes()[slot.offset..slot.offset + slot.bytes()]
            } else {
                &frame.planes[slot.plane].data[..slot.bytes()]
            };
            // SAFETY: the destination range lies inside `device_in` (the layout sized it);
            // `host` stays untouched until the lane's done event (ordinary memory the driver
            // has even read before the call returns): the frame's `LaneTicket` holds the lane
            // and the frame until the completion thread has waited for it (or, dropped
            // early, synchronises the lane's stream).
            unsafe { result::memcpy_htod_async(device + slot.offset as u64, host, self.stream.cu_stream()) }
                .context(|| format!("lane {}: copying plane {} to the GPU", self.index, slot.plane))?;
        }
        Ok(routes)
    }

    /// Enqueues the copy of the filtered planes back: direct planes into the frame itself,
    /// staged ones into the staging output (see [`Lane::drain_output`]).
    pub fn download(&mut self, layout: &Layout, frame: &mut Frame, routes: &PlaneRoutes) -> Result<(), EngineError> {
        if let Some(output) = frame.device.as_ref().and_then(|picture| picture.output.clone()) {
            return self.copy_out_to_device(layout, frame, &output);
        }
        // The download's routes may differ from the upload's (see `give_planes_for_results`).
        if routes.staged(layout).next().is_some() {
            self.staging(layout)?;
        }
        let (device, _record) = self.device_out.device_ptr(&self.stream);
        for (slot, route) in routes.of(layout) {
            let host = if route == Route::Staged {
                let staging = self.staging.as_mut().expect("staged planes have staging");
                &mut staging.output.bytes_mut()[slot.offset..slot.offset + slot.bytes()]
            } else {
                &mut frame.planes[slot.plane].data[..slot.bytes()]
            };
            // SAFETY: as in `upload`; the stream orders this after the frame's own upload,
            // so writing into the plane the upload read from is safe.
            unsafe { result::memcpy_dtoh_async(host, device + slot.offset as u64, self.stream.cu_stream()) }
                .context(|| format!("lane {}: copying plane {} from the GPU", self.index, slot.plane))?;
        }
        Ok(())
    }

    /// Copies the staged planes from the staging output back into the frame. Call only
    /// after the lane's done event has completed (the download is then finished).
    pub fn drain_output(&mut self, layout: &Layout, frame: &mut Frame, routes: &PlaneRoutes) {
        if frame.device.as_ref().is_some_and(|picture| picture.stays_on_device()) {
            return;
        }
        let Some(staging) = self.staging.as_ref() else { return };
        for slot in routes.staged(layout) {
            let region = &staging.output.bytes()[slot.offset..slot.offset + slot.bytes()];
            stage_out(slot, region, &mut frame.planes[slot.plane]);
        }
    }
}

/// Copies a plane's rows into its slot of a staging buffer.
fn stage_in(slot: &PlaneSlot, plane: &Plane, region: &mut [u8]) {
    let copy_row = |(y, row): (usize, &mut [u8])| row[..slot.row_bytes()].copy_from_slice(plane.row(y));
    if plane.stride == slot.pitch {
        parallel_copy(region, &plane.data[..region.len()]);
    } else if slot.height >= PARALLEL_COPY_ROWS {
        region
            .par_chunks_mut(slot.pitch)
            .with_min_len(ROWS_PER_TASK)
            .enumerate()
            .for_each(copy_row);
    } else {
        region.chunks_mut(slot.pitch).enumerate().for_each(copy_row);
    }
}

/// Copies a slot of a staging buffer back into the plane's rows.
fn stage_out(slot: &PlaneSlot, region: &[u8], plane: &mut Plane) {
    let stride = plane.stride;
    let row_bytes = slot.row_bytes();
    let copy_row = |(out, src): (&mut [u8], &[u8])| out[..row_bytes].copy_from_slice(&src[..row_bytes]);
    if stride == slot.pitch {
        let len = region.len();
        parallel_copy(&mut plane.data[..len], region);
    } else if slot.height >= PARALLEL_COPY_ROWS {
        plane
            .data
            .par_chunks_mut(stride)
            .zip(region.par_chunks(slot.pitch))
            .with_min_len(ROWS_PER_TASK)
            .for_each(copy_row);
    } else {
        plane
            .data
            .chunks_mut(stride)
            .zip(region.chunks(slot.pitch))
            .for_each(copy_row);
    }
}

impl Staging {
    fn bytes(&self) -> usize {
        self.input.bytes().len() + self.output.bytes().len()
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        if let Some(staging) = &self.staging {
            self.staging_total.fetch_sub(staging.bytes(), Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{BorderMode, PlaneSelection};
    use crate::frame::PixelFormat;
    use crate::host_buffers::{AllocationError, BufferPool, HeapMemory, HostMemory, PlaneData};
    use crate::mask::Mask;

    /// Heap memory a pool takes for page-locked: enough to see routes chosen (nothing here
    /// is copied to a GPU).
    struct SaysPageLocked;
    impl HostMemory for SaysPageLocked {
        fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
            HeapMemory.allocate(len)
        }
        fn page_locked(&self) -> bool {
            true
        }
    }

    fn layout(width: usize, height: usize) -> Layout {
        let filter = FilterSpec::uniform(
            Mask::from_spec("box:size=3").unwrap(),
            BorderMode::Reflect,
            PlaneSelection::All,
        );
        let shape = FrameShape {
            format: PixelFormat::YUV420P,
            width,
            height,
        };
        Layout::new(shape, &filter, crate::frame::POOLED_ROW_ALIGN)
    }

    fn routes_of(layout: &Layout, frame: &Frame) -> Vec<Route> {
        PlaneRoutes::for_frame(layout, frame)
            .of(layout)
            .map(|(_, route)| route)
            .collect()
    }

    #[test]
    fn pipeline_planes_go_straight_in_either_memory_and_other_layouts_are_staged() {
        let (width, height) = (130, 67); // rows not a multiple of the alignment
        let layout = layout(width, height);
        let pinned = BufferPool::new(Box::new(SaysPageLocked), 1 << 24);
        let ordinary = BufferPool::new(Box::new(HeapMemory), 1 << 24);
        let in_pinned = Frame::new_in(PixelFormat::YUV420P, width, height, Some(&pinned));
        let in_ordinary = Frame::new_in(PixelFormat::YUV420P, width, height, Some(&ordinary));
        let packed = Frame::new_in(PixelFormat::YUV420P, width, height, None);
        assert_eq!(routes_of(&layout, &in_pinned), [Route::Direct; 3]);
        // A frame catching up in the pool's ordinary memory: nothing to page-lock for it.
        assert_eq!(routes_of(&layout, &in_ordinary), [Route::Pageable; 3]);
        // Rows packed at 130 bytes, not at the GPU's pitch: through the staging.
        assert!(packed.planes.iter().all(|plane| plane.stride == plane.width));
        assert_eq!(routes_of(&layout, &packed), [Route::Staged; 3]);
        let staged = PlaneRoutes::for_frame(&layout, &packed);
        assert_eq!(staged.staged(&layout).count(), 3);
        assert_eq!(PlaneRoutes::for_frame(&layout, &in_ordinary).staged(&layout).count(), 0);
    }

    #[test]
    fn a_callers_buffers_are_staged_even_when_their_rows_line_up() {
        let layout = layout(128, 64); // rows already aligned: packed planes line up
        let packed = Frame::new_in(PixelFormat::YUV420P, 128, 64, None);
        assert_eq!(routes_of(&layout, &packed), [Route::Pageable; 3]);
        let shape = packed.planes[0].shape();
        // A caller's buffer (a GStreamer buffer, a NumPy array): the lanes' staging, whose
        // copies overlap, rather than the driver's copies, which wait.
        let owner = vec![7u8; 128 * 64];
        // SAFETY: `owner` outlives the plane (dropped first below) and is not written.
        let callers = unsafe { PlaneData::lent(owner.as_ptr(), owner.len(), false, Box::new(())) };
        assert!(callers.is_lent_by_caller());
        let mut frame = packed.clone();
        frame.planes[0] = Plane::of_data(shape, 128, callers);
        assert_eq!(routes_of(&layout, &frame)[0], Route::Staged);
        // Lent out of a pool's ordinary block (a decoder's picture): the pipeline's own.
        let pool = BufferPool::new(Box::new(HeapMemory), 1 << 24);
        let block = pool.take(128 * 64);
        // SAFETY: the bytes lie in `block`, which outlives the plane (dropped first below).
        let picture = unsafe { PlaneData::lent_from(&block, block.as_ptr(), 128 * 64, Box::new(())) };
        assert!(!picture.is_lent_by_caller() && !picture.is_page_locked());
        frame.planes[0] = Plane::of_data(shape, 128, picture);
        assert_eq!(routes_of(&layout, &frame)[0], Route::Pageable);
        // Shorter than its slot: staged, whatever its memory.
        frame.planes[0] = Plane::of_data(shape, 128, pool.take(128 * 63));
        assert_eq!(routes_of(&layout, &frame)[0], Route::Staged);
        drop(frame);
        drop((block, owner));
    }
}

//! Lanes: each owns a CUDA stream, a pinned input buffer, device input and output buffers,
//! a pinned output buffer and its events, sized once for the frame geometry. A frame's
//! selected planes travel pinned -> device -> kernels -> device -> pinned on its lane's
//! stream, so different lanes' copies and kernels overlap.

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use rayon::prelude::*;
use std::sync::Arc;

use super::error::{allocation_error, CudaResultExt};
use crate::engine::{EngineError, FrameShape};
use crate::filter::PlaneSelection;
use crate::frame::Frame;

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
    pub offset: usize,
    pub pitch: usize,
    pub width: usize,
    pub height: usize,
    pub channels: usize,
}

impl PlaneSlot {
    pub fn row_bytes(&self) -> usize {
        self.width * self.channels
    }
    pub fn bytes(&self) -> usize {
        self.pitch * self.height
    }
}

/// The selected planes of a frame shape, packed one after the other with aligned rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub shape: FrameShape,
    pub slots: Vec<PlaneSlot>,
    pub bytes: usize,
}

impl Layout {
    pub fn new(shape: FrameShape, planes: PlaneSelection, pitch_align: usize) -> Layout {
        let align = pitch_align.max(1);
        let mut offset = 0;
        let mut slots = Vec::new();
        for (index, plane) in shape
            .format
            .plane_shapes(shape.width, shape.height)
            .into_iter()
            .enumerate()
        {
            if !planes.selects(shape.format, index) {
                continue;
            }
            let pitch = (plane.width * plane.channels).next_multiple_of(align);
            slots.push(PlaneSlot {
                plane: index,
                offset,
                pitch,
                width: plane.width,
                height: plane.height,
                channels: plane.channels,
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

    pub fn matches(&self, frame: &Frame) -> bool {
        self.shape.format == frame.format && self.shape.width == frame.width && self.shape.height == frame.height
    }
}

/// Events a lane records on its stream for one frame; timing events only when tracing.
pub struct LaneEvents {
    pub start: Option<CudaEvent>,
    pub uploaded: Option<CudaEvent>,
    pub filtered: Option<CudaEvent>,
    pub done: CudaEvent,
}

pub struct Lane {
    pub index: usize,
    pub stream: Arc<CudaStream>,
    /// Written by the CPU, read by the copy engine: write-combined is fine and faster.
    pub pinned_in: PinnedHostSlice<u8>,
    /// Read back by the CPU: must not be write-combined.
    pub pinned_out: PinnedHostSlice<u8>,
    pub device_in: CudaSlice<u8>,
    pub device_out: CudaSlice<u8>,
    pub events: LaneEvents,
}

impl Lane {
    pub fn new(
        context: &Arc<CudaContext>,
        index: usize,
        layout: &Layout,
        timing: bool,
        pipeline: &str,
    ) -> Result<Lane, EngineError> {
        let what = |thing: &str| format!("pipeline {pipeline:?}, lane {index}: {thing}");
        let bytes = layout.bytes;
        let stream = context.new_stream().context(|| what("creating the stream"))?;
        // Every buffer is zeroed once here: frames write only the pixels of each row, so row
        // padding and the gaps between planes would otherwise stay uninitialised.
        // SAFETY: the pinned buffers are filled with zeros before any other use.
        let mut pinned_in = unsafe { context.alloc_pinned::<u8>(bytes) }
            .map_err(|e| allocation_error(e, context, what("allocating pinned input memory"), bytes))?;
        let mut pinned_out = unsafe { context.alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(|e| allocation_error(e, context, what("allocating pinned output memory"), bytes))?;
        pinned_in
            .as_mut_slice()
            .context(|| what("clearing pinned input memory"))?
            .fill(0);
        pinned_out
            .as_mut_slice()
            .context(|| what("clearing pinned output memory"))?
            .fill(0);
        let device_in = stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| allocation_error(e, context, what("allocating GPU input memory"), bytes))?;
        let device_out = stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| allocation_error(e, context, what("allocating GPU output memory"), bytes))?;
        let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let event = |flags| context.new_event(flags).context(|| what("creating an event"));
        let events = LaneEvents {
            start: if timing { Some(event(timed)?) } else { None },
            uploaded: if timing { Some(event(timed)?) } else { None },
            filtered: if timing { Some(event(timed)?) } else { None },
            // Waiting on the done event blocks the thread instead of spinning a core the
            // decoder could use.
            done: event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))?,
        };
        Ok(Lane {
            index,
            stream,
            pinned_in,
            pinned_out,
            device_in,
            device_out,
            events,
        })
    }

    /// Copies the frame's selected planes into the pinned input buffer. The caller holds a
    /// free lane: its done event has completed, so no copy reads the buffer any more (with
    /// event tracking off, cudarc's own wait in `as_mut_slice` is a no-op).
    pub fn fill_input(&mut self, layout: &Layout, frame: &Frame) -> Result<(), EngineError> {
        let index = self.index;
        let pinned = self
            .pinned_in
            .as_mut_slice()
            .context(|| format!("lane {index}: mapping the pinned input buffer"))?;
        for slot in &layout.slots {
            let plane = &frame.planes[slot.plane];
            let region = &mut pinned[slot.offset..slot.offset + slot.bytes()];
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
        Ok(())
    }

    /// Copies the filtered planes from the pinned output buffer back into the frame. Call only
    /// after the lane's done event has completed (the download is then finished).
    pub fn drain_output(&mut self, layout: &Layout, frame: &mut Frame) -> Result<(), EngineError> {
        let index = self.index;
        let pinned = self
            .pinned_out
            .as_slice()
            .context(|| format!("lane {index}: mapping the pinned output buffer"))?;
        for slot in &layout.slots {
            let plane = &mut frame.planes[slot.plane];
            let region = &pinned[slot.offset..slot.offset + slot.bytes()];
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
        Ok(())
    }
}

//! The negotiated stream: its engine and the timing of the buffers in flight, input buffers
//! made frames and filtered frames made buffers (as downstream's ALLOCATION answer allows),
//! the pool proposed upstream, and the counters of the `stats` property.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use gst::prelude::*;

use convstream_core::BufferPool;
use convstream_core::Engine;
use convstream_core::{Frame, PixelFormat};

use super::frames::{self, BufferTiming};
use super::pool::FramePool;

/// How buffers came in and left, for the `stats` property.
#[derive(Default)]
pub struct Counters {
    /// Buffers of the pool this element proposed, lent to the engine as they are.
    pub lent_in: AtomicU64,
    /// Buffers copied into the engine's memory.
    pub copied_in: AtomicU64,
    /// Filtered frames that left in their own planes (downstream reads VideoMeta).
    pub planes_out: AtomicU64,
    /// Filtered frames copied into the default layout.
    pub copied_out: AtomicU64,
}

impl Counters {
    pub fn structure(&self) -> gst::Structure {
        gst::Structure::builder("convstreamfilter-stats")
            .field("buffers-lent-in", self.lent_in.load(Ordering::Relaxed))
            .field("buffers-copied-in", self.copied_in.load(Ordering::Relaxed))
            .field("buffers-planes-out", self.planes_out.load(Ordering::Relaxed))
            .field("buffers-copied-out", self.copied_out.load(Ordering::Relaxed))
            .build()
    }
}

/// How filtered frames leave, as downstream's ALLOCATION answer allows.
pub enum OutputTarget {
    /// Downstream reads VideoMeta: the frame's own planes, each a memory of the buffer.
    Planes,
    /// Downstream wants the default layout: a copy, in a buffer of the negotiated pool.
    Copy(Option<gst::BufferPool>),
}

/// The negotiated stream and its engine.
pub struct State {
    pub info: gst_video::VideoInfo,
    pub format: PixelFormat,
    pub engine: Box<dyn Engine>,
    /// The memory of the pool proposed upstream: the engine's pinned pool, or the heap for
    /// the CPU engine (which reads the planes where they are).
    pub upstream_memory: Arc<BufferPool>,
    /// The pool proposed upstream last; buffers from it are lent to the engine, not copied.
    pub upstream_pool: Option<FramePool>,
    /// The timing of each buffer in the engine, oldest first (frames come back in order).
    pub pending: VecDeque<BufferTiming>,
    pub next_index: u64,
}

impl State {
    /// The buffer's pixels as an engine frame: its own planes when it comes from the pool
    /// this element proposed, else a copy (in the engine's pinned pool when it has one, so
    /// the CUDA engine copies it to the GPU without staging).
    pub fn frame_of(&mut self, buffer: &gst::Buffer, counters: &Counters) -> Result<Frame, String> {
        let lent = self.upstream_pool.as_ref().and_then(|pool| pool.block_of(buffer));
        let mut frame = match lent {
            Some(page_locked) => {
                counters.lent_in.fetch_add(1, Ordering::Relaxed);
                frames::lent_frame(buffer, &self.info, self.format, page_locked)?
            }
            None => {
                counters.copied_in.fetch_add(1, Ordering::Relaxed);
                frames::copied_frame(buffer, &self.info, self.format, self.engine.frame_pool().as_ref())?
            }
        };
        frame.index = self.next_index;
        self.next_index += 1;
        Ok(frame)
    }

    /// A pool of frames for upstream to write into, described for the ALLOCATION query.
    pub fn propose_pool(&mut self) -> Result<(FramePool, u32, u32), String> {
        let (pool, size) = FramePool::new(self.upstream_memory.clone(), &self.info).map_err(|e| e.to_string())?;
        // The lanes hold that many buffers; upstream fills the next ones meanwhile.
        let min_buffers = self.engine.capacity() as u32 + 2;
        let mut config = pool.config();
        config.set_params(self.info.to_caps().ok().as_ref(), size as u32, min_buffers, 0);
        config.add_option("GstBufferPoolOptionVideoMeta");
        pool.set_config(config).map_err(|e| e.to_string())?;
        self.upstream_pool = Some(pool.clone());
        Ok((pool, size as u32, min_buffers))
    }

    /// The oldest frame in the engine, as an output buffer with its input's timing.
    pub fn next_output(&mut self, target: &OutputTarget, counters: &Counters) -> Result<Option<gst::Buffer>, String> {
        let Some(frame) = self.engine.receive().map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let timing = self
            .pending
            .pop_front()
            .ok_or("the engine gave back a frame it was not given")?;
        let mut buffer = match target {
            OutputTarget::Planes => {
                counters.planes_out.fetch_add(1, Ordering::Relaxed);
                frames::planes_as_buffer(frame, &self.info)?
            }
            OutputTarget::Copy(pool) => {
                counters.copied_out.fetch_add(1, Ordering::Relaxed);
                frames::copy_into_buffer(&frame, &self.info, pool.as_ref())?
            }
        };
        timing.apply(buffer.get_mut().ok_or("a fresh buffer is not writable")?);
        Ok(Some(buffer))
    }

    /// Every frame still in the engine, as output buffers, oldest first.
    pub fn drain(&mut self, target: &OutputTarget, counters: &Counters) -> Result<Vec<gst::Buffer>, String> {
        let mut buffers = Vec::new();
        while self.engine.in_flight() > 0 {
            match self.next_output(target, counters)? {
                Some(buffer) => buffers.push(buffer),
                None => break,
            }
        }
        Ok(buffers)
    }

    /// Frames the engine holds beyond the one being filtered: what the element adds to
    /// the pipeline's latency.
    pub fn latency(&self) -> gst::ClockTime {
        let fps = self.info.fps();
        if fps.numer() <= 0 || fps.denom() <= 0 {
            return gst::ClockTime::ZERO;
        }
        let held = self.engine.capacity().saturating_sub(1) as u64;
        gst::ClockTime::SECOND
            .mul_div_floor(held * fps.denom() as u64, fps.numer() as u64)
            .unwrap_or(gst::ClockTime::ZERO)
    }
}

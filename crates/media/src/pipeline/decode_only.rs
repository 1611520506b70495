//! The decoder alone: an input decoded to its end and its frames discarded, the baseline
//! that filtered runs are compared with.

use crossbeam_channel::bounded;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use super::capacity::FRAME_QUEUE;
use super::error::PipelineError;
use crate::ffmpeg::PassthroughPacket;
use crate::source::Source;
use crate::stats::Counters;
use convstream_config::SourceConfig;
use convstream_core::Frame;
use convstream_core::GpuContext;
use convstream_core::{BufferPool, HeapMemory};

/// Decodes `source` to the end and discards the frames: the decoder's own speed, the
/// baseline filtered runs are compared with. Frames are made in reused heap buffers, as a
/// filtered run makes them in reused pinned ones, so neither pays for fresh allocations.
/// Returns the frames and the seconds from the input being open to the last frame.
pub fn decode_only(source: &SourceConfig) -> Result<(u64, f64), PipelineError> {
    decode_only_on(source, None)
}

/// [`decode_only`] with NVDEC's pictures left on `gpu`, the context the process's pipelines
/// share, as a pipeline filtering on that GPU leaves them (without it, FFmpeg makes a
/// context of its own per decoder and copies each picture to host memory).
pub fn decode_only_on(source: &SourceConfig, gpu: Option<GpuContext>) -> Result<(u64, f64), PipelineError> {
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Source::open(source, stop.clone(), &convstream_core::nvdec_probe(), gpu).map_err(|error| {
        PipelineError::Source {
            pipeline: "decode-only".into(),
            error,
        }
    })?;
    let info = opened.info();
    let shapes = info.format.plane_shapes(info.width, info.height);
    let frame_bytes: usize = shapes.iter().map(|plane| plane.pooled_bytes()).sum();
    let pool = BufferPool::new(Box::new(HeapMemory), (FRAME_QUEUE + 4) * frame_bytes);
    let opened = opened.with_frame_pool(Some(pool));
    let counters = Counters::default();
    let (frames_tx, frames_rx) = bounded::<Frame>(FRAME_QUEUE);
    // No receiver for other streams: the source skips their packets.
    let (packets_tx, _) = bounded::<PassthroughPacket>(1);
    let started = Instant::now();
    let result = thread::scope(|scope| {
        let counted = scope.spawn(|| frames_rx.iter().count() as u64);
        let decoded = opened.run(&frames_tx, &packets_tx, &stop, &counters, None);
        drop(frames_tx);
        decoded.map(|()| counted.join().unwrap_or(0))
    });
    let frames = result.map_err(|error| PipelineError::Source {
        pipeline: "decode-only".into(),
        error,
    })?;
    Ok((frames, started.elapsed().as_secs_f64()))
}

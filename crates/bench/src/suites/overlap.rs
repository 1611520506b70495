//! The overlap suite: frames/s through the engine against the number of streams and frames
//! per stream, from pooled (page-locked) and heap frames, with each stage's time per frame.

use std::collections::HashMap;

use super::overlap_runs::{FramesIn, OverlapCase, StageTimes, OVERLAP_FRAMES};
use super::workload::{drive, plane_sizes, random_frame, E2E_MASK};
use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::OverlapRow;
use convstream_core::CpuEngine;
use convstream_core::Mask;
use convstream_core::{BorderMode, FilterSpec, PlaneSelection};
use convstream_core::{Frame, PixelFormat};

pub fn overlap(options: &BenchOptions, gpu: Option<usize>) -> Result<Vec<OverlapRow>, BenchError> {
    let frames: Vec<(usize, usize)> = if options.quick && gpu.is_none() {
        vec![(320, 180)]
    } else {
        plane_sizes(options.quick)
    };
    let filter = FilterSpec {
        mask: Mask::from_spec(E2E_MASK).expect("a valid preset"),
        border: BorderMode::Reflect,
        planes: PlaneSelection::All,
        plane_masks: Default::default(),
    };
    let mut rows = Vec::new();
    for (width, height) in frames {
        let count: u64 = match (options.quick, gpu.is_some(), width > 1920) {
            (true, _, _) => 30,
            (false, true, false) => 2000,
            (false, true, true) => 600,
            (false, false, _) => 20,
        };
        let mut pool: Vec<Frame> = (0..OVERLAP_FRAMES)
            .map(|i| random_frame(PixelFormat::YUV420P, width, height, i as u64))
            .collect();
        // Frames in the engine's pinned pool (as the source makes them) at every stream
        // count, with the default frames per stream. Baselines at 1 and 4 streams: one frame
        // per stream, and ordinary heap frames, which the lanes stage through pinned buffers.
        let depth = convstream_core::DEFAULT_FRAMES_PER_STREAM;
        let runs: Vec<(FramesIn, usize, usize)> = match gpu {
            Some(_) => [1, 2, 3, 4, 8]
                .map(|streams| (FramesIn::Pool, streams, depth))
                .into_iter()
                .chain([(FramesIn::Pool, 1, 1), (FramesIn::Pool, 4, 1)])
                .chain([(FramesIn::Heap, 1, depth), (FramesIn::Heap, 4, depth)])
                .collect(),
            None => vec![(FramesIn::Heap, 1, 1)],
        };
        let mut one_stream_fps = HashMap::new();
        for (frames_in, streams, frames_per_stream) in runs {
            let case = OverlapCase {
                frames_in,
                streams,
                frames_per_stream,
                width,
                height,
            };
            let row = match gpu {
                #[cfg(feature = "cuda")]
                Some(ordinal) => super::gpu::overlap(options, ordinal, &filter, case, &mut pool, count)?,
                _ => {
                    let mut engine = CpuEngine::new(filter.clone());
                    drive(&mut engine, &mut pool, 2)?;
                    let seconds = drive(&mut engine, &mut pool, count)?;
                    let per_frame_us = seconds * 1e6 / count as f64;
                    let stages = StageTimes {
                        host_copy_in_us: per_frame_us,
                        upload_us: None,
                        kernels_us: None,
                        download_us: None,
                        host_copy_out_us: 0.0,
                        busiest_us: per_frame_us,
                    };
                    case.row(count, seconds, stages, 0)
                }
            };
            let base = *one_stream_fps.entry((frames_in, frames_per_stream)).or_insert(row.fps);
            rows.push(OverlapRow {
                speedup_vs_one_stream: row.fps / base,
                ..row
            });
            tracing::info!(
                "overlap {width}x{height} {} frames, streams={streams}x{frames_per_stream}: {:.0} frames/s",
                frames_in.name(),
                rows.last().map_or(0.0, |r| r.fps)
            );
        }
    }
    Ok(rows)
}

//! The host's own decode capacity, the yardstick for the scale ramp, measured in the same
//! run: `parallel` decodes of the clip at once, unpaced, their frames discarded, as N
//! parallel `ffmpeg -threads 1 -i clip -f null -` runs measure it (FFmpeg's own decoders, so
//! this is what FFmpeg gets from the host, not what convstream does with it). Software
//! decodes get one thread each, one per core; NVDEC decodes run on every GPU of the ramp at
//! once, as many on each, their pictures left in the context the process's pipelines share
//! there, as a filtering pipeline leaves them: NVDEC's ceiling is one per host, shared by its
//! GPUs (BENCHMARKS.md, "NVDEC's host-wide ceiling"), so one GPU alone would overstate a full
//! host. Frames a second in all, over the clip's frame rate, is how many live streams the host
//! could decode.

use std::path::Path;
use std::time::Instant;

use crate::error::BenchError;
use crate::results::DecodeCapacityRow;
use convstream_config::SourceConfig;
use convstream_media::decode_only_on;

/// Media seconds each decode reads (the clip looped): long enough that opening the
/// decoders is a small part of the time.
pub const MEDIA_SECONDS: f64 = 40.0;
/// Parallel NVDEC decodes per GPU: enough to keep every NVDEC engine of a GPU busy (8-16
/// measured the same on an H100).
const NVDEC_PARALLEL: usize = 12;

/// Decodes `media_seconds` of the clip `parallel` times at once with `decoder` (one per
/// core for software, [`NVDEC_PARALLEL`] on each GPU for NVDEC when `parallel` is `None`);
/// NVDEC on each of `gpus` at once.
pub fn decode_capacity(
    clip: &Path,
    decoder: &str,
    parallel: Option<usize>,
    media_seconds: f64,
    frame_rate: f64,
    gpus: &[usize],
) -> Result<DecodeCapacityRow, BenchError> {
    let nvdec = decoder == "nvdec";
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_gpu = parallel.unwrap_or(if nvdec { NVDEC_PARALLEL } else { cores });
    let source = SourceConfig {
        decoder: decoder.into(),
        threads: if nvdec { 0 } else { 1 },
        looping: true,
        duration: Some(media_seconds),
        ..SourceConfig::from_url(&clip.display().to_string())
    };
    // One context per GPU, shared by its decodes; software decodes get none.
    let contexts: Vec<_> = if nvdec && !gpus.is_empty() {
        gpus.iter().map(|gpu| convstream_core::gpu_context(*gpu)).collect()
    } else {
        vec![None]
    };
    let decodes_at_once: Vec<_> = contexts
        .iter()
        .flat_map(|context| std::iter::repeat_n(context, per_gpu))
        .collect();
    let parallel = decodes_at_once.len();
    let started = Instant::now();
    let decoded: Vec<Result<(u64, f64), String>> = std::thread::scope(|scope| {
        let source = &source;
        let decodes: Vec<_> = decodes_at_once
            .iter()
            .map(|context| scope.spawn(move || decode_only_on(source, (*context).clone()).map_err(|e| e.to_string())))
            .collect();
        decodes
            .into_iter()
            .map(|decode| {
                decode
                    .join()
                    .unwrap_or_else(|_| Err("the decode thread panicked".into()))
            })
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut frames = 0;
    for result in decoded {
        frames += result
            .map_err(|e| BenchError::Other(format!("decode capacity with {decoder}: {e}")))?
            .0;
    }
    let frames_per_second = frames as f64 / seconds.max(1e-9);
    Ok(DecodeCapacityRow {
        decoder: decoder.to_string(),
        parallel,
        gpus: if nvdec { contexts.len() } else { 0 },
        frames_per_second,
        live_streams: frames_per_second / frame_rate,
    })
}

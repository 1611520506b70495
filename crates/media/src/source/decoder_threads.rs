//! How many frame threads a software decoder gets when it is left to choose (`threads = 0`):
//! FFmpeg's own choice (a thread per core, up to 16) while one pipeline runs, a share of the
//! host's cores once several run at once.
//!
//! Why share: a frame-threaded decoder holds a picture per thread on top of its reference
//! pictures (each in the pipeline's frame pool, page-locked on the GPU engine), and each
//! frame thread delays its output by a frame. Sixty-four pipelines with FFmpeg's 17 threads
//! each run 1,088 decoding threads on a 16-core host, which can only ever keep 16 busy: the
//! pictures those threads hold are memory and latency that buy no speed. The count is taken
//! when a decoder opens, from the pipelines alive then ([`PipelineShare`]).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Pipelines alive in this process now (see [`PipelineShare`]).
static PIPELINES_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// Frame threads per decoder at most when the host is shared: FFmpeg's own cap for
/// automatic threads.
const MOST_THREADS: usize = 16;

/// One pipeline counted among those that share the host's cores, for as long as it lives.
#[derive(Debug)]
pub struct PipelineShare(());

impl PipelineShare {
    /// Counts one more pipeline until the returned value is dropped.
    pub fn join() -> PipelineShare {
        PIPELINES_ALIVE.fetch_add(1, Ordering::SeqCst);
        PipelineShare(())
    }
}

impl Drop for PipelineShare {
    fn drop(&mut self) {
        PIPELINES_ALIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The frame threads to open a software decoder with: `configured` when the config names a
/// count, else FFmpeg's choice (0) for a pipeline alone, else this pipeline's share of the
/// cores (see [`shared_threads`]).
pub(super) fn decoder_threads(configured: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    shared_threads(configured, cores, PIPELINES_ALIVE.load(Ordering::SeqCst))
}

/// See [`decoder_threads`]: two threads' worth of the cores per pipeline (a decoder waits on
/// its input and its queue now and then, so a little more than an equal share keeps every
/// core busy), at least 1 and at most [`MOST_THREADS`].
pub(super) fn shared_threads(configured: usize, cores: usize, pipelines: usize) -> usize {
    if configured > 0 {
        return configured;
    }
    if pipelines <= 1 {
        return 0;
    }
    (2 * cores).div_ceil(pipelines).clamp(1, MOST_THREADS)
}

#[cfg(test)]
mod tests {
    use super::shared_threads;

    #[test]
    fn a_configured_count_is_kept_and_a_lone_pipeline_lets_ffmpeg_choose() {
        assert_eq!(shared_threads(3, 16, 64), 3);
        assert_eq!(shared_threads(0, 16, 1), 0);
        assert_eq!(shared_threads(0, 16, 0), 0);
    }

    #[test]
    fn many_pipelines_share_the_cores() {
        // 2 pipelines on 16 cores: FFmpeg's cap; 8: four each; 64 on 16 cores: one each.
        assert_eq!(shared_threads(0, 16, 2), 16);
        assert_eq!(shared_threads(0, 16, 8), 4);
        assert_eq!(shared_threads(0, 16, 64), 1);
        assert_eq!(shared_threads(0, 32, 128), 1);
        assert_eq!(shared_threads(0, 32, 24), 3);
        // Never none.
        assert_eq!(shared_threads(0, 2, 1000), 1);
    }
}

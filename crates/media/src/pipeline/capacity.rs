//! How many frames a pipeline holds at once: the queues between its stages, and the pinned
//! pool sized for everything they, the engine and the decoder can hold together.

use convstream_config::PipelineSettings;

/// Decoded frames waiting for the engine, and filtered frames waiting for the sink.
/// Small: enough to ride out jitter, bounded so a slow stage holds the others back.
pub(super) const FRAME_QUEUE: usize = 8;
/// Audio packets run ahead of video by the frames in flight; this holds several seconds.
pub(super) const PACKET_QUEUE: usize = 1024;

/// Pictures a decoder holds besides those it has output: its reference pictures (up to 16
/// in H.264 and HEVC) and one being decoded by each frame thread (up to 16).
const DECODER_PICTURES: usize = 32;

/// Frames the engine's pinned pool may hold: every frame the pipeline can hold at once (both
/// queues full, the lanes busy, one being encoded, one held by the filter stage, one being
/// dropped, and the decoder's own pictures, which it decodes into the pool), or fewer if the
/// config caps it. The pool grows only as far as it is used; past its limit, pictures and
/// frames go to ordinary memory and are staged through the lanes' own buffers.
pub fn pooled_frames(settings: &PipelineSettings) -> usize {
    let most_held = 2 * FRAME_QUEUE + settings.streams * settings.frames_per_stream + 3 + DECODER_PICTURES;
    settings.pinned_frames.map_or(most_held, |cap| cap.min(most_held))
}

#[cfg(test)]
mod tests {
    use crate::pipeline::test_config::one_pipeline;

    #[test]
    fn pinned_frames_cap_the_frame_pool() {
        let pool_for = |filter: &str| {
            super::pooled_frames(&one_pipeline(&format!(
                "[[pipeline]]\nname = \"cam1\"\n[pipeline.source]\nurl = \"in.mp4\"\n[pipeline.sink]\nurl = \"out.mp4\"\n[pipeline.filter]\n{filter}\n"
            )))
        };
        // Two queues of 8, 4 streams x 2 frames, 3 more, and the decoder's 32 pictures.
        assert_eq!(pool_for(""), 59);
        assert_eq!(pool_for("streams = 2\nframes_per_stream = 1"), 53);
        assert_eq!(pool_for("pinned_frames = 6"), 6);
        assert_eq!(pool_for("pinned_frames = 0"), 0, "no pool: every frame staged");
        assert_eq!(
            pool_for("pinned_frames = 500"),
            59,
            "never more than the pipeline can hold"
        );
    }
}

//! FFmpeg started once for the process, its log lines sent through tracing (see [`log`](super::log)).

use ffmpeg_next as ffmpeg;
use std::sync::Once;

/// Initialises FFmpeg once, with its log lines sent through tracing (see [`log`](super::log)).
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Cannot fail with the statically or dynamically linked libraries we build against.
        let _ = ffmpeg::init();
        ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Error);
        super::log::install();
    });
}

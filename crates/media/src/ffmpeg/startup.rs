//! FFmpeg started once for the process ([`init`]), its log lines sent through tracing (see
//! [`log`](super::log)).

use ffmpeg_next as ffmpeg;
use std::sync::Once;

/// Initialises FFmpeg once, with its log lines sent through tracing (see `log`), and makes
/// libavfilter the config's reader of filter graphs.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // Cannot fail with the statically or dynamically linked libraries we build against.
        let _ = ffmpeg::init();
        ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Error);
        super::log::install();
    });
    crate::graph::install_graph_reader();
}

#[cfg(test)]
mod tests {
    use super::super::log::{clear_last_error, take_last_error, with_ffmpeg_reason};
    use super::*;

    // Here rather than beside the log: it needs FFmpeg started, and `init` uses the log.
    #[test]
    fn the_last_error_of_this_thread_is_kept() {
        init();
        clear_last_error();
        // An invalid picture size makes libavutil log an error, as a y4m header with W0 does.
        // SAFETY: a plain FFmpeg call with a null log context.
        let status = unsafe { ffmpeg::ffi::av_image_check_size(0, 240, 0, std::ptr::null_mut()) };
        assert!(status < 0);
        assert_eq!(take_last_error().as_deref(), Some("Picture size 0x240 is invalid"));
        for (width, height) in [(0, 1), (0, 2), (0, 3), (0, 4)] {
            // SAFETY: as above.
            unsafe { ffmpeg::ffi::av_image_check_size(width, height, 0, std::ptr::null_mut()) };
        }
        assert_eq!(
            with_ffmpeg_reason("cannot open".into()),
            "cannot open (FFmpeg: Picture size 0x2 is invalid; Picture size 0x3 is invalid; Picture size 0x4 is invalid)"
        );
        assert_eq!(take_last_error(), None, "taken once");
        let other = std::thread::spawn(take_last_error).join().unwrap();
        assert_eq!(other, None, "per thread");
    }
}

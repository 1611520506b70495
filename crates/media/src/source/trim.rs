//! The part of an input a pipeline filters (`start`, `duration`, `frames`, as FFmpeg's
//! `-ss`, `-t` and `-frames:v`): where reading starts, which decoded frames and copied
//! packets are dropped, and when the input counts as ended. A looped input's `duration`
//! counts media time over every pass, as FFmpeg's `-stream_loop -1 -t` does.

use ffmpeg::Rational;
use ffmpeg_next as ffmpeg;

use convstream_config::SourceConfig;

/// The trimmed part of one input, on its own clock (the video stream's time base).
#[derive(Debug, Clone, Default)]
pub(super) struct Trim {
    /// Where the kept part starts, in microseconds on the container's clock (what a seek
    /// takes); `None` without `start`.
    pub(super) seek_to_us: Option<i64>,
    /// Frames earlier than this are dropped (video time base).
    first: Option<i64>,
    /// Frames at or after this end the pass (video time base), on the first pass's clock.
    end: Option<i64>,
    /// Where each pass starts (video time base): `start`, or the container's start.
    pass_start: i64,
    /// Media time the passes before this one sent (video time base): a looped pass ends
    /// this much earlier on its own clock, so that `duration` bounds the whole run.
    consumed: i64,
    /// One tick of the video time base, in seconds.
    tick_seconds: f64,
    /// The same bounds in seconds, for copied packets of other streams.
    first_seconds: Option<f64>,
    end_seconds: Option<f64>,
    /// Where output timestamps start (video time base): the kept part's start, as FFmpeg's
    /// CLI starts its output at 0; 0 with `copyts`, keeping the input's own timestamps.
    origin: i64,
    /// The most frames sent in all.
    max_frames: Option<u64>,
    /// Set once a frame past the end (or past `max_frames`) was decoded.
    ended: bool,
}

impl Trim {
    /// The bounds `config` asks for; `container_start_us` is the container's own start
    /// time (`-ss` counts from it, as in FFmpeg), `time_base` the video stream's.
    pub(super) fn new(config: &SourceConfig, container_start_us: Option<i64>, time_base: Rational) -> Trim {
        let start_us = container_start_us.unwrap_or(0);
        let offset_us = config.start.map_or(0, |s| (s * 1e6).round() as i64);
        let first_us = start_us + offset_us;
        let end_us = config.duration.map(|d| first_us + (d * 1e6).round() as i64);
        let to_stream = |us: i64| {
            // SAFETY: av_rescale_q only computes with its integer arguments; no memory is touched.
            unsafe { ffmpeg::ffi::av_rescale_q(us, ffmpeg::ffi::AV_TIME_BASE_Q, time_base.into()) }
        };
        let trims_start = config.start.is_some_and(|s| s > 0.0);
        Trim {
            seek_to_us: trims_start.then_some(first_us),
            first: trims_start.then(|| to_stream(first_us)),
            end: end_us.map(to_stream),
            pass_start: to_stream(first_us),
            consumed: 0,
            tick_seconds: f64::from(time_base),
            first_seconds: trims_start.then_some(first_us as f64 / 1e6),
            origin: if config.copyts { 0 } else { to_stream(first_us) },
            end_seconds: end_us.map(|us| us as f64 / 1e6),
            max_frames: config.frames,
            ended: false,
        }
    }

    /// Where output timestamps start: the container's start (MPEG-TS starts its clock at
    /// 1.4 s), moved by `-ss`, is 0 in the output, as FFmpeg's CLI makes it; with `copyts`
    /// timestamps stay the input's.
    pub(super) fn timestamp_origin(&self) -> i64 {
        self.origin
    }

    /// Whether a decoded frame with this timestamp (video time base, before any offset)
    /// and this index among frames sent is kept. A frame past the end ends the pass.
    pub(super) fn keeps_frame(&mut self, timestamp: Option<i64>, index: u64) -> bool {
        if self.ended {
            return false;
        }
        if self.max_frames.is_some_and(|max| index >= max) {
            self.ended = true;
            return false;
        }
        let Some(t) = timestamp else { return true };
        if self.end.is_some_and(|end| t >= end - self.consumed) {
            self.ended = true;
            return false;
        }
        self.first.is_none_or(|first| t >= first)
    }

    /// Whether a copied packet starting at `seconds` (on the container's clock) is kept.
    pub(super) fn keeps_packet(&self, seconds: Option<f64>) -> bool {
        let Some(t) = seconds else { return !self.ended };
        let consumed_seconds = self.consumed as f64 * self.tick_seconds;
        self.first_seconds.is_none_or(|first| t >= first)
            && self.end_seconds.is_none_or(|end| t < end - consumed_seconds)
    }

    /// Whether the pass has reached its end (`duration`) or the run its last frame.
    pub(super) fn ended(&self) -> bool {
        self.ended
    }

    /// Whether the kept part is bounded in time (`start` or `duration`).
    pub(super) fn bounds_time(&self) -> bool {
        self.first.is_some() || self.end.is_some()
    }

    /// Whether every frame the run may send was sent: looping cannot add more.
    pub(super) fn frames_exhausted(&self, sent: u64) -> bool {
        self.max_frames.is_some_and(|max| sent >= max)
    }

    /// A new pass of a looped input starts at `start` again, `consumed` (video time base)
    /// into the run: the output timestamp its first frame gets, less the first pass's.
    /// False when the run has nothing left to send (every frame or all its `duration`):
    /// looping then ends, as FFmpeg's `-stream_loop -1 -t` and `-frames:v` end it.
    pub(super) fn start_new_pass(&mut self, consumed: i64, sent: u64) -> bool {
        self.consumed = consumed.max(0);
        let duration_left = self.end.is_none_or(|end| end - self.consumed > self.pass_start);
        self.ended = self.frames_exhausted(sent) || !duration_left;
        !self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(start: Option<f64>, duration: Option<f64>, frames: Option<u64>) -> SourceConfig {
        SourceConfig {
            start,
            duration,
            frames,
            ..SourceConfig::from_url("in.mp4")
        }
    }

    #[test]
    fn start_and_duration_count_from_the_containers_start() {
        // 90 kHz clock, container starting at 1.4 s (as MPEG-TS files do).
        let mut trim = Trim::new(
            &config(Some(2.0), Some(1.0), None),
            Some(1_400_000),
            Rational::new(1, 90_000),
        );
        assert_eq!(trim.seek_to_us, Some(3_400_000));
        assert_eq!(trim.timestamp_origin(), 306_000);
        assert!(!trim.keeps_frame(Some(305_999), 0), "before start");
        assert!(trim.keeps_frame(Some(306_000), 0));
        assert!(trim.keeps_frame(Some(395_999), 1));
        assert!(!trim.ended());
        assert!(!trim.keeps_frame(Some(396_000), 2), "at the end");
        assert!(trim.ended());
        assert!(!trim.keeps_frame(Some(310_000), 2), "nothing after the end");
        assert!(!trim.keeps_packet(Some(3.39)));
        assert!(trim.keeps_packet(Some(3.4)));
        assert!(!trim.keeps_packet(Some(4.4)));
        // Looped after 0.4 s of media: the next pass keeps the 0.6 s the duration has left.
        assert!(trim.start_new_pass(36_000, 2), "a looped pass starts again");
        assert!(trim.keeps_frame(Some(306_000), 2));
        assert!(trim.keeps_frame(Some(359_999), 3));
        assert!(trim.keeps_packet(Some(3.99)) && !trim.keeps_packet(Some(4.0)));
        assert!(!trim.keeps_frame(Some(360_000), 4), "the duration is spent");
        assert!(!trim.start_new_pass(90_000, 5), "no pass after the whole duration");
        assert!(trim.ended());
    }

    #[test]
    fn frames_count_over_every_pass() {
        let mut trim = Trim::new(&config(None, None, Some(2)), None, Rational::new(1, 25));
        assert_eq!(trim.seek_to_us, None, "no start, no seek");
        assert_eq!(trim.timestamp_origin(), 0);
        assert!(trim.keeps_frame(Some(0), 0));
        assert!(trim.keeps_frame(None, 1));
        assert!(!trim.keeps_frame(Some(2), 2));
        assert!(trim.ended() && trim.frames_exhausted(2));
        assert!(!trim.start_new_pass(2, 2), "no pass after the last frame");
    }

    #[test]
    fn no_trim_keeps_everything_from_the_containers_start() {
        let mut trim = Trim::new(&config(None, None, None), Some(5_000_000), Rational::new(1, 1000));
        assert!(trim.keeps_frame(Some(-100), 0) && trim.keeps_frame(Some(i64::MAX), 1_000_000));
        assert!(trim.keeps_packet(Some(-1.0)) && trim.keeps_packet(None));
        assert_eq!(
            trim.timestamp_origin(),
            5_000,
            "the container's start is 0 in the output"
        );
    }

    #[test]
    fn copyts_keeps_the_inputs_timestamps() {
        let copyts = SourceConfig {
            copyts: true,
            ..config(Some(2.0), None, None)
        };
        let trim = Trim::new(&copyts, Some(1_400_000), Rational::new(1, 90_000));
        assert_eq!(trim.timestamp_origin(), 0);
        assert_eq!(
            trim.seek_to_us,
            Some(3_400_000),
            "the start still counts from the container's"
        );
    }
}

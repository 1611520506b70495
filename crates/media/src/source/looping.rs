//! A looped file (`loop = true`) starting its next pass. Two ways (`Source::restart` in
//! `read.rs` picks one):
//! - anew: the decoder gives up every picture it holds (drained at the end of the file),
//!   is flushed, and the next pass's timestamps are moved on past the last frame sent
//!   (`DecodeState::start_new_pass`);
//! - seamless, for NVDEC: the decoder is neither drained nor flushed, and the next pass's
//!   packets reach it with timestamps moved on by the pass's length, as if the file went on.
//!   FFmpeg's cuvid decoder flushes by destroying its NVDEC decoder, which is made again at
//!   the next keyframe: the driver then stalls every NVDEC pipeline on that GPU, for most of
//!   a second when a dozen pipelines loop the same clip at once. Kept, the decoder outputs
//!   the last pictures of a pass as the next pass's first packets push them out.
//!
//! Here: [`LoopState`], what the seamless way knows of the pass (its packets' span) and how
//! far the timestamps have moved. The seamless way needs the pass's length from its packets'
//! timestamps, and is not taken when they do not tell it (none, or a span longer than the
//! file), when the pass is cut by time (`start`, `duration`: their bounds are on the first
//! pass's clock) or the run has sent every frame it may.

use ffmpeg::packet::Ref;
use ffmpeg::{Packet, Rational};
use ffmpeg_next as ffmpeg;

/// How a source loops, and what the seamless way needs to know of the current pass.
#[derive(Debug)]
pub(super) struct LoopState {
    /// Whether a pass starts without flushing the decoder.
    seamless: bool,
    /// Added to every video packet's timestamps (the video stream's time base): the length
    /// of the passes before this one.
    shift: i64,
    /// The current pass's shown video packets, before the shift: the earliest start and the
    /// latest end.
    span: Option<(i64, i64)>,
    /// How long a packet without a duration lasts: one frame (the video stream's time base).
    frame_ticks: i64,
    /// How many times the input started over.
    pub(super) restarts: u64,
}

impl LoopState {
    /// Seamless for an NVDEC decoder (`hardware`), whose flush is costly; anew otherwise.
    /// `frame_rate` and `time_base` are the video stream's.
    pub(super) fn new(hardware: bool, frame_rate: Rational, time_base: Rational) -> LoopState {
        let frame_ticks = if frame_rate.numerator() > 0 && frame_rate.denominator() > 0 && time_base.numerator() > 0 {
            // SAFETY: av_rescale_q only computes with its integer arguments; no memory is touched.
            unsafe { ffmpeg::ffi::av_rescale_q(1, frame_rate.invert().into(), time_base.into()) }.max(1)
        } else {
            1
        };
        LoopState {
            seamless: hardware,
            shift: 0,
            span: None,
            frame_ticks,
            restarts: 0,
        }
    }

    /// Makes the passes seamless (or not) whatever the decoder: for tests that hold the
    /// seamless way to the one every decoder takes.
    #[cfg(test)]
    pub(super) fn set_seamless(&mut self, seamless: bool) {
        self.seamless = seamless;
    }

    /// The video's time moved on by looping, in the video stream's time base.
    pub(super) fn shift(&self) -> i64 {
        self.shift
    }

    /// Takes a video packet's place in the pass (one without a duration lasts a frame) and
    /// moves its timestamps on by the passes before it. Nothing when the loop is not seamless.
    pub(super) fn place(&mut self, packet: &mut Packet) {
        if !self.seamless {
            return;
        }
        // A packet the decoder is told to discard (the mp4 edit list's cut) is not shown.
        // (`Packet::flags` leaves that flag out.)
        // SAFETY: `packet` is a valid AVPacket; one plain field is read.
        let flags = i64::from(unsafe { (*packet.as_ptr()).flags });
        let shown = flags & i64::from(ffmpeg::ffi::AV_PKT_FLAG_DISCARD) == 0;
        if let Some(start) = packet.pts().filter(|_| shown) {
            let length = if packet.duration() > 0 {
                packet.duration()
            } else {
                self.frame_ticks
            };
            // Saturating: the timestamps are the file's, whatever they hold.
            let until = start.saturating_add(length);
            let (first, end) = self.span.unwrap_or((start, until));
            self.span = Some((first.min(start), end.max(until)));
        }
        if self.shift != 0 {
            packet.set_pts(packet.pts().map(|t| t.saturating_add(self.shift)));
            packet.set_dts(packet.dts().map(|t| t.saturating_add(self.shift)));
        }
    }

    /// Starts the next pass seamlessly if it may (`allowed`: not cut by time nor at the run's
    /// last frame) and the pass's span is its length: no longer than `file_seconds` (when
    /// known) by more than a second, `tick_seconds` being one tick of the video time base (an
    /// MPEG-TS clock that wraps within the file spans a day). Returns whether it did; the
    /// caller then only seeks back, else it drains and flushes the decoder.
    pub(super) fn next_pass_seamless(&mut self, allowed: bool, file_seconds: Option<f64>, tick_seconds: f64) -> bool {
        let Some((first, end)) = self.span.filter(|_| self.seamless && allowed) else {
            return false;
        };
        let length = end.saturating_sub(first);
        let span_seconds = length as f64 * tick_seconds;
        if file_seconds.is_some_and(|file| span_seconds > file + 1.0) {
            return false;
        }
        self.span = None;
        self.shift = self.shift.saturating_add(length);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pts: i64, duration: i64, discard: bool) -> Packet {
        let mut packet = Packet::empty();
        packet.set_pts(Some(pts));
        packet.set_dts(Some(pts));
        packet.set_duration(duration);
        if discard {
            // SAFETY: `packet` is a valid AVPacket; one plain field is written.
            unsafe { (*ffmpeg::packet::Mut::as_mut_ptr(&mut packet)).flags |= ffmpeg::ffi::AV_PKT_FLAG_DISCARD };
        }
        packet
    }

    #[test]
    fn a_seamless_pass_moves_on_by_the_span_of_its_shown_packets() {
        let mut looping = LoopState::new(true, Rational::new(25, 1), Rational::new(1, 12800));
        // Decode order, B-frames: presentation 0, 1024, 512; the last packet is cut.
        for (pts, discard) in [(0, false), (1024, false), (512, false), (1536, true)] {
            looping.place(&mut packet(pts, 512, discard));
        }
        assert!(looping.next_pass_seamless(true, Some(0.12), 1.0 / 12800.0));
        assert_eq!(looping.shift(), 1536, "three shown frames of 512");
        let mut next = packet(0, 512, false);
        looping.place(&mut next);
        assert_eq!((next.pts(), next.dts()), (Some(1536), Some(1536)));
        // A packet without a duration lasts a frame.
        looping.place(&mut packet(512, 0, false));
        assert!(looping.next_pass_seamless(true, None, 1.0 / 12800.0));
        assert_eq!(looping.shift(), 1536 + 1024);
    }

    #[test]
    fn a_pass_not_told_by_its_timestamps_or_not_allowed_is_made_anew() {
        let tick = 1.0 / 90000.0;
        let mut software = LoopState::new(false, Rational::new(25, 1), Rational::new(1, 90000));
        software.place(&mut packet(0, 3600, false));
        assert!(
            !software.next_pass_seamless(true, None, tick),
            "a software decoder is flushed"
        );
        let mut nvdec = LoopState::new(true, Rational::new(25, 1), Rational::new(1, 12800));
        assert!(!nvdec.next_pass_seamless(true, None, tick), "no timestamps seen");
        nvdec.place(&mut packet(0, 3600, false));
        assert!(!nvdec.next_pass_seamless(false, None, tick), "cut by time");
        // A clock that wrapped within a 10 s file spans a day.
        nvdec.place(&mut packet(8_589_000_000, 3600, false));
        assert!(!nvdec.next_pass_seamless(true, Some(10.0), tick));
        assert_eq!(nvdec.shift(), 0);
    }

    #[test]
    fn timestamps_at_the_edge_of_the_range_do_not_overflow() {
        let mut looping = LoopState::new(true, Rational::new(25, 1), Rational::new(1, 12800));
        looping.place(&mut packet(i64::MAX - 10, 512, false));
        looping.place(&mut packet(i64::MIN + 10, 512, false));
        assert!(looping.next_pass_seamless(true, None, 1.0 / 12800.0));
        let mut next = packet(i64::MAX - 10, 512, false);
        looping.place(&mut next);
        assert_eq!(next.pts(), Some(i64::MAX));
    }
}

//! A looped file (`loop = true`) starting its next pass. Two ways:
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
//! The seamless way needs the pass's length from its packets' timestamps, and is not taken
//! when the pass is cut by time (`start`, `duration`: their bounds are on the first pass's
//! clock) or the run has sent every frame it may.

use ffmpeg::packet::Ref;
use ffmpeg::Packet;
use ffmpeg_next as ffmpeg;

use super::decode_state::DecodeState;
use super::error::SourceError;
use super::input::Source;
use crate::stats::Counters;
use convstream_core::frame::Frame;
use crossbeam_channel::Sender;

/// How a source loops, and what the seamless way needs to know of the current pass.
#[derive(Debug, Default)]
pub(crate) struct LoopState {
    /// Whether a pass starts without flushing the decoder.
    seamless: bool,
    /// Added to every video packet's timestamps (the video stream's time base): the length
    /// of the passes before this one.
    shift: i64,
    /// The current pass's video packets, before the shift: the earliest start and the
    /// latest end.
    span: Option<(i64, i64)>,
}

impl LoopState {
    /// Seamless for an NVDEC decoder (`hardware`), whose flush is costly; anew otherwise.
    pub(super) fn new(hardware: bool) -> LoopState {
        LoopState {
            seamless: hardware,
            ..LoopState::default()
        }
    }

    /// The video's time moved on by looping, in the video stream's time base.
    pub(super) fn shift(&self) -> i64 {
        self.shift
    }
}

impl Source {
    /// Takes a video packet's place in the pass (a packet without a duration lasts one
    /// frame) and moves its timestamps on by the passes before it.
    pub(super) fn place_in_pass(&mut self, packet: &mut Packet) {
        if !self.looping.seamless || !self.config.looping {
            return;
        }
        let frame_ticks = self.frame_ticks();
        let looping = &mut self.looping;
        // A packet the decoder is told to discard (the mp4 edit list's cut) is not shown.
        // (`Packet::flags` leaves that flag out.)
        // SAFETY: `packet` is a valid AVPacket; one plain field is read.
        let flags = i64::from(unsafe { (*packet.as_ptr()).flags });
        let shown = flags & i64::from(ffmpeg::ffi::AV_PKT_FLAG_DISCARD) == 0;
        if let Some(start) = packet.pts().filter(|_| shown) {
            let length = if packet.duration() > 0 {
                packet.duration()
            } else {
                frame_ticks
            };
            let (first, end) = looping.span.unwrap_or((start, start + length));
            looping.span = Some((first.min(start), end.max(start + length)));
        }
        if looping.shift != 0 {
            packet.set_pts(packet.pts().map(|t| t + looping.shift));
            packet.set_dts(packet.dts().map(|t| t + looping.shift));
        }
    }

    /// One frame's duration in the video stream's time base (at least 1).
    fn frame_ticks(&self) -> i64 {
        let (rate, time_base) = (self.info.frame_rate, self.info.time_base);
        if rate.numerator() <= 0 || rate.denominator() <= 0 || time_base.numerator() <= 0 {
            return 1;
        }
        // SAFETY: av_rescale_q only computes with its integer arguments; no memory is touched.
        unsafe { ffmpeg::ffi::av_rescale_q(1, rate.invert().into(), time_base.into()) }.max(1)
    }

    /// Seeks back to the start for `loop = true`, the timestamps moved on past the last
    /// frame. False, with nothing sought, when the run has sent all it may (`frames`,
    /// `duration`).
    pub(super) fn restart(
        &mut self,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<bool, SourceError> {
        let seamless = self.looping.seamless
            && !state.trim.bounds_time()
            && !state.trim.frames_exhausted(state.next_index)
            && self.looping.span.is_some();
        if let (true, Some((first, end))) = (seamless, self.looping.span) {
            self.seek_to_start(state)?;
            self.looping.span = None;
            self.looping.shift += end - first;
            tracing::debug!(input = %self.info.url, "looped, the decoder kept; timestamps move on by {}", end - first);
            return Ok(true);
        }
        self.decoder.finish(state, frames, counters)?;
        if !state.start_new_pass() {
            return Ok(false);
        }
        self.seek_to_start(state)?;
        self.decoder.flush();
        Ok(true)
    }

    /// Seeks to where a pass starts: `start`, or the start of the file.
    fn seek_to_start(&mut self, state: &DecodeState) -> Result<(), SourceError> {
        match state.trim.seek_to_us {
            Some(to) => self.seek_to(to, state.next_index),
            None => self
                .input
                .seek(i64::MIN, ..)
                .or_else(|_| self.input.seek(0, ..))
                .map_err(|e| SourceError::Read {
                    url: self.info.url.clone(),
                    frames: state.next_index,
                    reason: format!("cannot seek to the start to loop: {e}"),
                }),
        }
    }

    /// Makes the next passes loop seamlessly (or not) whatever the decoder: for tests that
    /// hold the seamless way to the one every decoder takes.
    #[cfg(test)]
    pub(super) fn with_seamless_loop(mut self, seamless: bool) -> Source {
        self.looping.seamless = seamless;
        self
    }
}

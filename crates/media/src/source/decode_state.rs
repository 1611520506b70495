//! Decoding state that lasts across loops and reconnections: timestamps made continuous
//! and increasing, real-time pacing, the drop policy of a full frame queue, and conversion
//! to the format and size the pipeline was set up for.

use crossbeam_channel::{Receiver, Sender};
use ffmpeg::Rational;
use ffmpeg_next as ffmpeg;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::device_pictures::{for_host_filters, CudaDecoding, Picture};
use super::error::SourceError;
use super::pooled_pictures::PooledPictures;
use super::trim::Trim;
use super::watchdog::sleep_unless_stopped;
use crate::ffmpeg::{engine_format, ffmpeg_format, frame_from_ffmpeg, is_again, SourceInfo};
use crate::graph::host::HostGraph;
use crate::stats::Counters;
use convstream_core::BufferPool;
use convstream_core::{Frame, PixelFormat};

/// Consecutive decoding errors without a frame or a request for more data, after which a
/// decoder is taken as stuck (one that returns the same error for ever) rather than fed
/// damaged data.
const MAX_CONSECUTIVE_DECODE_ERRORS: u32 = 64;
/// How long decoded frames still wait for room in the queue after a stop, before they are
/// let go: the filter normally takes them at once, but a stop must end even if it is stuck.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// A realtime input whose timestamps jump by more than this (forward or back), or by more
/// than [`PACING_JUMP_FRAMES`] of its own frame intervals if that is longer, is taken as
/// discontinuous, and pacing starts again from the frame after the jump.
const MIN_PACING_JUMP: Duration = Duration::from_secs(3);
/// How many of a stream's frame intervals its timestamps may move at once and still be paced:
/// a 0.2 fps clip waits 5 s between frames, which is its pace, not a jump.
const PACING_JUMP_FRAMES: f64 = 4.0;
/// The longest wait pacing holds for one frame, whatever a stream's announced rate: a
/// timestamp hours ahead re-anchors pacing instead of stalling the input.
const MAX_PACING_JUMP: Duration = Duration::from_secs(600);

/// How far a realtime frame may be from its due time before pacing takes it as a jump in
/// the timestamps, for a stream whose frames are `frame_seconds` apart: several frame
/// intervals, at least [`MIN_PACING_JUMP`] and at most [`MAX_PACING_JUMP`].
fn pacing_jump(frame_seconds: f64) -> Duration {
    let frames = frame_seconds * PACING_JUMP_FRAMES;
    if !frames.is_finite() || frames <= MIN_PACING_JUMP.as_secs_f64() {
        return MIN_PACING_JUMP;
    }
    Duration::try_from_secs_f64(frames).map_or(MAX_PACING_JUMP, |jump| jump.min(MAX_PACING_JUMP))
}

/// How many of its own frame intervals a real-time input may run behind its pace before
/// it counts as behind (see [`behind_limit`]): half the frame queue, whose room the burst
/// of catching up would take.
const BEHIND_FRAMES: f64 = 4.0;

/// How late a real-time frame may come before the pipeline counts as behind its input's
/// pace, for a stream whose frames are `frame_seconds` apart: [`BEHIND_FRAMES`] intervals,
/// at least 0.1 s (a thread woken late on a busy host is not behind) and at most 1 s.
fn behind_limit(frame_seconds: f64) -> f64 {
    let frames = frame_seconds * BEHIND_FRAMES;
    if frames.is_finite() {
        frames.clamp(0.1, 1.0)
    } else {
        1.0
    }
}

/// How a decoder's frames were taken.
pub(super) enum DrainEnd {
    /// The decoder has nothing more until it is given data.
    Ready,
    /// The frame receiver is gone.
    DownstreamGone,
    /// The decoder returned an error it will not get over by itself (every NVDEC error, or
    /// a software decoder that keeps failing).
    DecoderFailed(ffmpeg::Error),
}

/// What a source with `drop = "oldest"` needs to make room in a full frame queue: the
/// queue's receiving end, to take the oldest frame out, and a flag its consumer sets when
/// it ends. Holding a receiver of its own queue, the source cannot see the consumer leave
/// by a closed channel.
pub struct DropOldest {
    /// The receiving end of the source's own frame queue.
    pub queue: Receiver<Frame>,
    /// Set when the queue's consumer (the filter stage) ends.
    pub consumer_ended: Arc<AtomicBool>,
}

/// Decoding state that lasts across loops and reconnections: geometry, timestamps,
/// pacing and the frame queue.
pub(super) struct DecodeState {
    target: (PixelFormat, usize, usize),
    scaler: Option<(ffmpeg::software::scaling::Context, (ffmpeg::format::Pixel, u32, u32))>,
    frame_duration: i64,
    pub(super) next_index: u64,
    last_pts: Option<i64>,
    first_pts_of_pass: Option<i64>,
    /// Added to input timestamps (already in `output_time_base`).
    pub(super) pts_offset: i64,
    /// The first connection's time base, which every frame's pts is given in.
    pub(super) output_time_base: Rational,
    /// The current connection's time base.
    input_time_base: Rational,
    /// A new connection's offset is set by its first frame.
    pub(super) rebase_pending: bool,
    /// Whether packets of copied streams go on (false when a reconnected input's streams differ).
    pub(super) copy_streams: bool,
    realtime: Option<(Instant, f64)>,
    /// How far a realtime frame may be from its due time before it counts as a jump in
    /// the timestamps (see [`pacing_jump`]).
    pacing_jump: Duration,
    /// How late a real-time frame may be before the pipeline counts as behind (seconds).
    behind_limit: f64,
    time_base: f64,
    pub(super) url: String,
    /// With `drop = "oldest"`: how to make room in a full frame queue.
    drop_oldest: Option<DropOldest>,
    /// Source busy time when the previous frame left, to time each frame's decoding.
    busy_at_last_frame: u64,
    /// See [`Source::with_frame_pool`].
    frame_pool: Option<Arc<BufferPool>>,
    /// The decoder's allocator in that pool, whose pictures become frames without a copy.
    pub(super) pictures: Option<Arc<PooledPictures>>,
    /// The GPU an NVDEC decoder leaves its pictures on, if any.
    pub(super) device: Option<Arc<CudaDecoding>>,
    /// The pipeline's stop: bounds every wait of the decode path.
    stop: Arc<AtomicBool>,
    /// The decoder's own timestamp of the last frame sent, before any offset: a replay
    /// after an NVDEC failure sends only frames later than it.
    last_raw_timestamp: Option<i64>,
    /// Set while frames come from a replay (see [`decoder`]).
    pub(super) replaying: bool,
    /// Frames a replay decoded, sent or not.
    pub(super) replayed_frames: u64,
    /// The part of the input kept (`start`, `duration`, `frames`).
    pub(super) trim: Trim,
    /// FFmpeg's filters each picture goes through before it becomes a frame.
    pub(super) before: Option<HostGraph>,
}

impl DecodeState {
    pub(super) fn new(
        info: &SourceInfo,
        realtime: bool,
        drop_oldest: Option<DropOldest>,
        frame_pool: Option<Arc<BufferPool>>,
        stop: Arc<AtomicBool>,
    ) -> DecodeState {
        let per_frame = f64::from(info.frame_rate.invert()) / f64::from(info.time_base);
        DecodeState {
            target: (info.format, info.width, info.height),
            scaler: None,
            frame_duration: (per_frame.round() as i64).max(1),
            next_index: 0,
            last_pts: None,
            first_pts_of_pass: None,
            pts_offset: 0,
            output_time_base: info.time_base,
            input_time_base: info.time_base,
            rebase_pending: false,
            copy_streams: true,
            realtime: realtime.then(|| (Instant::now(), 0.0)),
            pacing_jump: pacing_jump(per_frame * f64::from(info.time_base)),
            behind_limit: behind_limit(per_frame * f64::from(info.time_base)),
            time_base: f64::from(info.time_base),
            url: info.url.clone(),
            drop_oldest,
            busy_at_last_frame: 0,
            pictures: frame_pool.clone().map(PooledPictures::new),
            device: None,
            frame_pool,
            stop,
            last_raw_timestamp: None,
            replaying: false,
            replayed_frames: 0,
            trim: Trim::default(),
            before: None,
        }
    }

    /// Keeps only the part `trim` asks for; output timestamps start where it starts.
    pub(super) fn trimmed(mut self, trim: Trim) -> DecodeState {
        self.pts_offset = -trim.timestamp_origin();
        self.trim = trim;
        self
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Looping: the next pass starts one frame after the last frame sent. False when the
    /// run has sent all it may (`frames`, or `duration` counted over every pass).
    pub(super) fn start_new_pass(&mut self) -> bool {
        if let (Some(last), Some(first)) = (self.last_pts, self.first_pts_of_pass) {
            self.pts_offset = last
                .saturating_add(self.frame_duration)
                .saturating_sub(first.saturating_sub(self.pts_offset));
        }
        self.first_pts_of_pass = None;
        self.last_raw_timestamp = None;
        // The offset moves the pass's timestamps past what the run sent; less the first
        // pass's own shift (the origin), it is the media time sent so far.
        let consumed = self.pts_offset.saturating_add(self.trim.timestamp_origin());
        self.trim.start_new_pass(consumed, self.next_index)
    }

    /// Reconnected: the new input's clock is unrelated to the old one's, so its first frame
    /// decides the offset (see `timestamp`).
    pub(super) fn start_new_connection(&mut self, time_base: Rational) {
        self.input_time_base = time_base;
        self.first_pts_of_pass = None;
        self.rebase_pending = self.last_pts.is_some();
        self.last_raw_timestamp = None;
        // The new decoder may deliver another size or format: convert to the first again.
        self.scaler = None;
    }

    /// Queues a frame; with a drop policy, a full queue loses its oldest frame instead.
    /// False when the receiver is gone.
    fn deliver(&self, frame: Frame, frames: &Sender<Frame>, counters: &Counters) -> bool {
        let sent = match &self.drop_oldest {
            None => self.send_until_stopped(frame, frames),
            Some(DropOldest { queue, consumer_ended }) => {
                let mut frame = frame;
                loop {
                    match frames.try_send(frame) {
                        Ok(()) => break true,
                        Err(crossbeam_channel::TrySendError::Disconnected(_)) => break false,
                        Err(crossbeam_channel::TrySendError::Full(_)) if consumer_ended.load(Ordering::Relaxed) => {
                            break false
                        }
                        Err(crossbeam_channel::TrySendError::Full(back)) => {
                            if queue.try_recv().is_ok() {
                                counters.count_drop();
                            }
                            frame = back;
                        }
                    }
                }
            }
        };
        Counters::set(&counters.decoded_queue, frames.len() as u64);
        sent
    }

    /// Blocks until the frame is queued or the receiver is gone; after a stop, waits at
    /// most [`STOP_GRACE`] (the frame is then let go). False when it was not queued.
    fn send_until_stopped(&self, frame: Frame, frames: &Sender<Frame>) -> bool {
        let mut frame = frame;
        let mut stopped_at: Option<Instant> = None;
        loop {
            match frames.send_timeout(frame, Duration::from_millis(100)) {
                Ok(()) => return true,
                Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => return false,
                Err(crossbeam_channel::SendTimeoutError::Timeout(back)) => frame = back,
            }
            if self.stopped() {
                let since = *stopped_at.get_or_insert_with(Instant::now);
                if since.elapsed() >= STOP_GRACE {
                    tracing::warn!(input = %self.url, "stopping: a decoded frame was let go, the filter took none for {} s", STOP_GRACE.as_secs());
                    return false;
                }
            }
        }
    }

    /// Sends every frame the decoder has ready. `fail_fast` (NVDEC): the first decoding
    /// error ends the draining, for the caller to make the decoder anew.
    pub(super) fn drain(
        &mut self,
        decoder: &mut ffmpeg::decoder::Video,
        frames: &Sender<Frame>,
        counters: &Counters,
        fail_fast: bool,
    ) -> Result<DrainEnd, SourceError> {
        let mut decoded = ffmpeg::frame::Video::empty();
        let mut consecutive_errors = 0u32;
        loop {
            let started = Instant::now();
            match decoder.receive_frame(&mut decoded) {
                Ok(()) => consecutive_errors = 0,
                Err(ffmpeg::Error::Eof) => return Ok(DrainEnd::Ready),
                Err(e) if is_again(&e) => return Ok(DrainEnd::Ready),
                Err(e) if fail_fast => return Ok(DrainEnd::DecoderFailed(e)),
                Err(e) => {
                    // A decoder may return the same error for ever (nothing else to give):
                    // past a bound it is stuck, not fed damaged data.
                    consecutive_errors += 1;
                    if consecutive_errors >= MAX_CONSECUTIVE_DECODE_ERRORS || self.stopped() {
                        return Ok(DrainEnd::DecoderFailed(e));
                    }
                    Counters::add(&counters.corrupt_packets, 1);
                    tracing::warn!(input = %self.url, "decode error, frame skipped: {e}");
                    continue;
                }
            }
            if self.replaying {
                self.replayed_frames += 1;
            }
            if self.replaying && !self.is_new(&decoded) {
                // Sent before the decoder failed: the replay only recovers what it held.
                continue;
            }
            if !self.trim.keeps_frame(Self::raw_timestamp(&decoded), self.next_index) {
                continue;
            }
            // SAFETY: `decoded` wraps a valid AVFrame the decoder just filled; two integer fields
            // are read and no pointer is kept.
            let concealed = unsafe {
                let raw = &*decoded.as_ptr();
                raw.decode_error_flags != 0 || raw.flags & ffmpeg::ffi::AV_FRAME_FLAG_CORRUPT != 0
            };
            if concealed {
                Counters::add(&counters.damaged_frames, 1);
            }
            let filtered = match self.before.as_mut() {
                Some(graph) => {
                    // NVDEC's picture comes to host memory once, for FFmpeg's filters.
                    let host =
                        for_host_filters(self.device.as_deref(), &decoded).map_err(|reason| SourceError::Decoder {
                            url: self.url.clone(),
                            reason,
                        })?;
                    Some(one_picture(graph, host.as_ref().unwrap_or(&decoded), &self.url)?)
                }
                None => None,
            };
            let mut frame = self.convert(filtered.as_ref().unwrap_or(&decoded))?;
            frame.pts = Some(self.timestamp(&decoded));
            frame.index = self.next_index;
            self.next_index += 1;
            Counters::add_time(&counters.source_busy_ns, started.elapsed());
            Counters::add(&counters.frames_decoded, 1);
            let busy = Counters::get(&counters.source_busy_ns);
            let decode_time = busy.saturating_sub(self.busy_at_last_frame);
            self.busy_at_last_frame = busy;
            Counters::observe(&counters.stages.decode, Duration::from_nanos(decode_time));
            self.pace(frame.pts, counters);
            frame.timeline.decoded = Some(Instant::now());
            if !self.deliver(frame, frames, counters) {
                return Ok(DrainEnd::DownstreamGone);
            }
        }
    }

    /// The decoder's own timestamp of a frame, before any offset.
    fn raw_timestamp(decoded: &ffmpeg::frame::Video) -> Option<i64> {
        decoded.timestamp().or(decoded.pts())
    }

    /// Whether a replayed frame comes after the last frame sent (a frame without a
    /// timestamp cannot be placed, and is taken as sent when any frame was).
    fn is_new(&self, decoded: &ffmpeg::frame::Video) -> bool {
        match (Self::raw_timestamp(decoded), self.last_raw_timestamp) {
            (_, None) => true,
            (Some(raw), Some(last)) => raw > last,
            (None, Some(_)) => false,
        }
    }

    fn timestamp(&mut self, decoded: &ffmpeg::frame::Video) -> i64 {
        if let Some(raw) = Self::raw_timestamp(decoded) {
            self.last_raw_timestamp = Some(raw);
        }
        let raw = Self::raw_timestamp(decoded).map(|t| {
            if self.input_time_base == self.output_time_base {
                t
            } else {
                // SAFETY: av_rescale_q only computes with its integer arguments; no memory is touched.
                unsafe { ffmpeg::ffi::av_rescale_q(t, self.input_time_base.into(), self.output_time_base.into()) }
            }
        });
        if self.rebase_pending {
            if let (Some(raw), Some(last)) = (raw, self.last_pts) {
                self.pts_offset = last.saturating_add(self.frame_duration).saturating_sub(raw);
            }
            self.rebase_pending = false;
        }
        let mut pts = match (raw, self.last_pts) {
            (Some(raw), _) => raw.saturating_add(self.pts_offset),
            (None, Some(last)) => last.saturating_add(self.frame_duration),
            (None, None) => 0,
        };
        if let Some(last) = self.last_pts.filter(|&last| pts <= last) {
            // Encoders refuse a timestamp that does not move forward. A live sender that
            // restarts, or lost packets, can step back: go on from the last frame instead.
            tracing::debug!(input = %self.url, "timestamp stepped back from {last} to {pts}; moved on");
            self.pts_offset = self
                .pts_offset
                .saturating_add(last.saturating_add(self.frame_duration).saturating_sub(pts));
            pts = last.saturating_add(self.frame_duration);
        }
        if self.first_pts_of_pass.is_none() {
            self.first_pts_of_pass = Some(pts);
        }
        self.last_pts = Some(pts);
        pts
    }

    /// Sleeps until the frame's presentation time when pacing in real time; a frame later
    /// than that by more than [`behind_limit`] notes the pipeline behind its pace.
    fn pace(&mut self, pts: Option<i64>, counters: &Counters) {
        let Some((start, first)) = self.realtime.as_mut() else {
            return;
        };
        let Some(pts) = pts else { return };
        let seconds = pts as f64 * self.time_base;
        if self.next_index == 1 {
            *first = seconds;
            *start = Instant::now();
        }
        let due = seconds - *first;
        let now = start.elapsed().as_secs_f64();
        if !due.is_finite() || (due - now).abs() > self.pacing_jump.as_secs_f64() {
            // A jump in the timestamps (a splice, a wrap, a damaged packet): pace on from
            // this frame rather than sleep until its far-off time or rush to catch up.
            tracing::debug!(input = %self.url, "timestamps jumped by {:.1} s; pacing starts again here", due - now);
            *first = seconds;
            *start = Instant::now();
            return;
        }
        if due > now {
            sleep_unless_stopped(Duration::from_secs_f64(due - now), &self.stop);
        } else if now - due > self.behind_limit {
            counters.note_behind();
        }
    }

    /// Copies the decoded picture, converting format or size when it differs from what the
    /// pipeline was set up for (a mid-stream change is scaled to the first geometry).
    fn convert(&mut self, decoded: &ffmpeg::frame::Video) -> Result<Frame, SourceError> {
        let downloaded;
        let mut decoded = decoded;
        if let Some(device) = &self.device {
            let picture = device.picture(decoded, self.target).map_err(|e| SourceError::Decoder {
                url: self.url.clone(),
                reason: format!("cannot take the decoded picture from the GPU: {e}"),
            })?;
            match picture {
                Picture::OnDevice(frame) => return Ok(frame),
                Picture::Downloaded(host) => {
                    downloaded = host;
                    decoded = &downloaded;
                }
                Picture::Host => {}
            }
        }
        let (format, width, height) = self.target;
        let direct = engine_format(decoded.format()) == Some(format)
            && decoded.width() as usize == width
            && decoded.height() as usize == height;
        // A filtered picture may point anywhere in a decoder's buffer (`crop` moves its
        // planes' starts): it is copied, never lent.
        let lendable = self.before.is_none();
        if direct {
            if let Some(frame) = self
                .pictures
                .as_ref()
                .filter(|_| lendable)
                .and_then(|p| p.lend(decoded, format))
            {
                return Ok(frame);
            }
            return Ok(frame_from_ffmpeg(decoded, format, self.frame_pool.as_ref()));
        }
        let key = (decoded.format(), decoded.width(), decoded.height());
        if self.scaler.as_ref().map(|(_, k)| *k) != Some(key) {
            tracing::info!(input = %self.url, "converting {:?} {}x{} to {format} {width}x{height}", key.0, key.1, key.2);
            let scaler = ffmpeg::software::scaling::Context::get(
                key.0,
                key.1,
                key.2,
                ffmpeg_format(format),
                width as u32,
                height as u32,
                ffmpeg::software::scaling::Flags::BICUBIC,
            )
            .map_err(|e| SourceError::Decoder {
                url: self.url.clone(),
                reason: format!("cannot convert {:?}: {e}", key.0),
            })?;
            self.scaler = Some((scaler, key));
        }
        let mut converted = ffmpeg::frame::Video::empty();
        let (scaler, _) = self.scaler.as_mut().expect("scaler was just set");
        scaler.run(decoded, &mut converted).map_err(|e| SourceError::Decoder {
            url: self.url.clone(),
            reason: format!("conversion failed: {e}"),
        })?;
        Ok(frame_from_ffmpeg(&converted, format, self.frame_pool.as_ref()))
    }
}

/// The one picture FFmpeg's filters give for `decoded`.
fn one_picture(
    graph: &mut HostGraph,
    decoded: &ffmpeg::frame::Video,
    url: &str,
) -> Result<ffmpeg::frame::Video, SourceError> {
    let refused = |reason: String| SourceError::Decoder {
        url: url.to_string(),
        reason,
    };
    let mut pictures = graph.run(decoded).map_err(refused)?;
    match (pictures.pop(), pictures.is_empty()) {
        (Some(picture), true) => Ok(picture),
        (_, _) => Err(refused(format!(
            "FFmpeg's `{}` did not give one picture for each decoded picture; filters that add, drop or hold back frames go after the convolution filters",
            convstream_core::quoted(graph.chain())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behind_is_judged_by_a_few_frame_intervals_within_bounds() {
        assert!((behind_limit(1.0 / 25.0) - 0.16).abs() < 1e-9, "25 fps: 4 frames");
        assert_eq!(
            behind_limit(1.0 / 60.0),
            0.1,
            "60 fps: a busy host's late wake-up is not behind"
        );
        assert_eq!(behind_limit(5.0), 1.0, "0.2 fps: at most 1 s");
        assert_eq!(behind_limit(f64::NAN), 1.0);
    }

    fn state_for_25_fps() -> DecodeState {
        let info = SourceInfo {
            url: "test".into(),
            width: 2,
            height: 2,
            format: PixelFormat::NV12,
            stream_bits: 8,
            time_base: Rational::new(1, 25),
            frame_rate: Rational::new(25, 1),
            aspect_ratio: Rational::new(1, 1),
            color: crate::ffmpeg::ColorInfo {
                range: ffmpeg::color::Range::Unspecified,
                space: ffmpeg::color::Space::Unspecified,
                primaries: ffmpeg::color::Primaries::Unspecified,
                transfer: ffmpeg::color::TransferCharacteristic::Unspecified,
            },
            expected_frames: None,
            decoder: "test".into(),
            passthrough: Vec::new(),
            hdr: Default::default(),
            real_time: false,
        };
        DecodeState::new(&info, false, None, None, Arc::new(AtomicBool::new(false)))
    }

    fn frame_at(pts: i64) -> ffmpeg::frame::Video {
        let mut frame = ffmpeg::frame::Video::empty();
        frame.set_pts(Some(pts));
        frame
    }

    #[test]
    fn timestamps_at_the_edge_of_the_range_stay_in_order_without_overflow() {
        let mut state = state_for_25_fps();
        assert_eq!(state.timestamp(&frame_at(i64::MAX - 1)), i64::MAX - 1);
        // The next frame steps back and is moved on past the last, at the range's end.
        assert_eq!(state.timestamp(&frame_at(0)), i64::MAX);
        assert_eq!(state.timestamp(&frame_at(1)), i64::MAX, "saturates, no overflow");
        // A new pass from the edge, and a reconnection whose clock starts far below.
        assert!(state.start_new_pass());
        assert_eq!(state.timestamp(&frame_at(i64::MIN + 1)), i64::MAX);
        state.start_new_connection(Rational::new(1, 25));
        assert_eq!(state.timestamp(&frame_at(i64::MIN)), i64::MAX);
    }

    #[test]
    fn a_pacing_jump_is_judged_by_the_streams_own_frame_interval() {
        assert_eq!(pacing_jump(1.0 / 25.0), MIN_PACING_JUMP, "25 fps: 3 s");
        assert_eq!(pacing_jump(5.0), Duration::from_secs(20), "0.2 fps: 4 frames");
        assert_eq!(pacing_jump(1e9), MAX_PACING_JUMP, "bounded");
        assert_eq!(pacing_jump(f64::NAN), MIN_PACING_JUMP);
        assert_eq!(pacing_jump(f64::INFINITY), MIN_PACING_JUMP);
    }
}

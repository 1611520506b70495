//! Reading an opened input to its end: packets to the decoder or, for copied streams, to
//! the sink; damaged packets skipped; a file looped; a live input that ends or fails opened
//! again, its timestamps moved on to follow the frames already sent.

use crossbeam_channel::Sender;
use ffmpeg::{Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::decode_state::{DecodeState, DropOldest};
use super::error::SourceError;
use super::input::Source;
use super::trim::Trim;
use crate::ffmpeg::{is_again, PassthroughPacket};
use crate::stats::{Counters, EndedEarly};
use convstream_core::Frame;

/// Consecutive unreadable packets after which the input is taken as broken rather than damaged.
const MAX_CONSECUTIVE_READ_ERRORS: u32 = 64;

impl Source {
    /// Reads and decodes until the input ends, `stop` is set or the frame receiver is gone.
    /// Damaged packets are counted and skipped; frames keep their timestamps. A live input
    /// that ends or fails is opened again (see [`Source::connect`]), its timestamps moved on
    /// to follow the frames already sent. With `drop_oldest`, a full queue loses its oldest
    /// frame instead of blocking the input.
    pub fn run(
        self,
        frames: &Sender<Frame>,
        packets: &Sender<PassthroughPacket>,
        stop: &Arc<AtomicBool>,
        counters: &Counters,
        drop_oldest: Option<DropOldest>,
    ) -> Result<(), SourceError> {
        let config = self.config.clone();
        let mut state = DecodeState::new(
            &self.info,
            config.realtime,
            drop_oldest,
            self.frame_pool.clone(),
            stop.clone(),
        );
        // SAFETY: `self.input` owns a valid, open AVFormatContext; one plain field is read.
        let container_start = unsafe { (*self.input.as_ptr()).start_time };
        let container_start = (container_start != ffmpeg::ffi::AV_NOPTS_VALUE).then_some(container_start);
        let trim = Trim::new(&config, container_start, self.info.time_base);
        let mut source = self;
        if let Some(to) = trim.seek_to_us {
            source.seek_to(to, 0)?;
        }
        state = state.trimmed(trim);
        state.before = source.before.take();
        let first_streams = source.info.stream_signature();
        let source_probe = source.nvdec_probe.clone();
        let protected = source.protected.clone();
        let device = source.device.clone();
        source.decoder.allocate_in(state.pictures.clone());
        source.decoder.decode_on(device.clone(), &config.url)?;
        state.device = device;
        loop {
            let outcome = source.read_all(&mut state, frames, packets, stop, counters);
            let lost = match outcome {
                // The part asked for was read: the end, live or not.
                Ok(ReadEnd::Trimmed) => return Ok(()),
                Ok(ReadEnd::EndOfInput) if config.is_live() => "the input ended".to_string(),
                Err(e) if config.is_live() && !stop.load(Ordering::Relaxed) => e.to_string(),
                other => return other.map(|_| ()),
            };
            tracing::warn!(input = %config.url, "{lost}; reconnecting");
            drop(source);
            counters.reconnecting.store(true, Ordering::Relaxed);
            let reopened = Source::connect_guarded(&config, stop, counters, true, &source_probe, None, &protected);
            counters.reconnecting.store(false, Ordering::Relaxed);
            source = match reopened {
                Ok(source) => source,
                Err(_) if stop.load(Ordering::Relaxed) => return Ok(()),
                Err(e) => return Err(e),
            };
            source.decoder.allocate_in(state.pictures.clone());
            source.decoder.decode_on(state.device.clone(), &config.url)?;
            Counters::add(&counters.reconnects, 1);
            tracing::info!(input = %config.url, "reconnected");
            // Copied streams go on only if the new connection has the same ones.
            state.copy_streams = source.info.stream_signature() == first_streams;
            state.start_new_connection(source.info.time_base);
        }
    }

    /// One connection's (or file's) reading, to its end.
    fn read_all(
        &mut self,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        packets: &Sender<PassthroughPacket>,
        stop: &AtomicBool,
        counters: &Counters,
    ) -> Result<ReadEnd, SourceError> {
        let mut consecutive_errors = 0u32;
        // Latest end time of any packet read, to tell a truncated input by.
        let mut last_end: Option<f64> = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let started = Instant::now();
            // A fresh packet each time: av_read_frame does not release what a packet already
            // holds, so reusing one would leak every packet's data.
            let mut packet = Packet::empty();
            self.watchdog.arm();
            match packet.read(&mut self.input) {
                Ok(()) => consecutive_errors = 0,
                Err(ffmpeg::Error::Eof) => {
                    if self.config.looping && state.next_index > 0 {
                        if self.restart(state, frames, counters)? {
                            continue;
                        }
                        return Ok(ReadEnd::Trimmed);
                    }
                    self.finish_decoding(state, frames, counters)?;
                    self.check_length(last_end, counters);
                    return Ok(ReadEnd::EndOfInput);
                }
                Err(ffmpeg::Error::Exit) if !self.watchdog.stopped() => {
                    self.finish_decoding(state, frames, counters)?;
                    return Err(SourceError::Read {
                        url: self.info.url.clone(),
                        frames: state.next_index,
                        reason: self.watchdog.idle_reason(),
                    });
                }
                Err(ffmpeg::Error::Exit) => break,
                Err(e) if is_again(&e) => {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                Err(e) => {
                    Counters::add(&counters.read_errors, 1);
                    consecutive_errors += 1;
                    tracing::warn!(input = %self.info.url, "read error, skipped: {e}");
                    if consecutive_errors >= MAX_CONSECUTIVE_READ_ERRORS {
                        self.finish_decoding(state, frames, counters)?;
                        return Err(SourceError::Read {
                            url: self.info.url.clone(),
                            frames: state.next_index,
                            reason: e.to_string(),
                        });
                    }
                    continue;
                }
            }
            // A stop during the read may have cut it short (the interrupt callback ends
            // FFmpeg's read mid-packet, and the demuxer returns what it had): such a packet is
            // not decoded, nor counted as damaged. What was decoded before is drained below.
            if stop.load(Ordering::Relaxed) {
                break;
            }
            // A live input's reads mostly wait for the sender: not work of this stage.
            if self.watchdog.idle_timeout.is_none() {
                Counters::add_time(&counters.source_busy_ns, started.elapsed());
            }
            Counters::add(&counters.bytes_in, packet.size() as u64);
            if let Some(end) = self.packet_end(&packet) {
                last_end = Some(last_end.map_or(end, |last| last.max(end)));
            }
            if packet.stream() == self.video_index {
                if self.config.looping {
                    self.looping.place(&mut packet);
                }
                if packet.is_corrupt() {
                    Counters::add(&counters.corrupt_packets, 1);
                }
                if !self.decoder.decode(&packet, state, frames, counters)? {
                    return Ok(ReadEnd::DownstreamGone);
                }
                if state.trim.ended() {
                    if self.config.looping {
                        if self.restart(state, frames, counters)? {
                            continue;
                        }
                        return Ok(ReadEnd::Trimmed);
                    }
                    self.finish_decoding(state, frames, counters)?;
                    return Ok(ReadEnd::Trimmed);
                }
            } else if let Some(copied) = self.info.passthrough.iter().find(|s| s.index == packet.stream()) {
                let time_base = copied.time_base;
                self.pass_packet(packet, time_base, state, packets, stop);
            }
        }
        // Stopped: drain what the decoder still holds; those frames were read.
        self.finish_decoding(state, frames, counters)?;
        Ok(ReadEnd::Stopped)
    }

    /// Hands a packet of a copied stream (read from a stream of `time_base`) to the sink,
    /// moved on by the time looping or reconnecting added to the video's.
    fn pass_packet(
        &self,
        packet: Packet,
        time_base: Rational,
        state: &DecodeState,
        packets: &Sender<PassthroughPacket>,
        stop: &AtomicBool,
    ) {
        // After a reconnection, copied packets wait for the first video frame, which
        // fixes how far the new connection's timestamps move.
        if !state.copy_streams || state.rebase_pending {
            return;
        }
        if !state.trim.keeps_packet(self.packet_start(&packet)) {
            return;
        }
        let mut outgoing = packet;
        if state.pts_offset != 0 || self.looping.shift() != 0 {
            // Looping or reconnected: copied streams move on by the same time as the video.
            // SAFETY: av_rescale_q only computes with its integer arguments; no memory is touched.
            let shift = unsafe {
                ffmpeg::ffi::av_rescale_q(state.pts_offset, state.output_time_base.into(), time_base.into())
                    .saturating_add(ffmpeg::ffi::av_rescale_q(
                        self.looping.shift(),
                        self.info.time_base.into(),
                        time_base.into(),
                    ))
            };
            outgoing.set_pts(outgoing.pts().map(|t| t.saturating_add(shift)));
            outgoing.set_dts(outgoing.dts().map(|t| t.saturating_add(shift)));
        }
        // A closed receiver means the sink does not copy this stream; not an error.
        let _ = packets
            .try_send(PassthroughPacket {
                stream: outgoing.stream(),
                packet: outgoing,
            })
            .or_else(|e| match e {
                crossbeam_channel::TrySendError::Full(p) => send_unless_stopped(packets, p, stop),
                crossbeam_channel::TrySendError::Disconnected(_) => Err(()),
            });
    }

    /// Sends the frames the decoder still holds.
    fn finish_decoding(
        &mut self,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<(), SourceError> {
        self.decoder.finish(state, frames, counters).map(|_| ())
    }

    /// Where a packet starts, in seconds on its stream's clock.
    fn packet_start(&self, packet: &Packet) -> Option<f64> {
        let start = packet.pts().or(packet.dts())?;
        let time_base = self.input.stream(packet.stream())?.time_base();
        Some(start as f64 * f64::from(time_base))
    }

    /// Where a packet ends, in seconds on its stream's clock.
    fn packet_end(&self, packet: &Packet) -> Option<f64> {
        let start = packet.pts().or(packet.dts())?;
        let time_base = self.input.stream(packet.stream())?.time_base();
        Some((start + packet.duration().max(0)) as f64 * f64::from(time_base))
    }

    /// Records damage when every stream stopped well short of the duration the container
    /// announces (a truncated file: the demuxer reports it as a plain end of file).
    fn check_length(&self, last_end: Option<f64>, counters: &Counters) {
        use ffmpeg::ffi::{AVDurationEstimationMethod, AV_NOPTS_VALUE, AV_TIME_BASE};
        // SAFETY: `self.input` owns a valid, open AVFormatContext for as long as `self` lives;
        // three plain fields are read and no pointer is kept.
        let (duration, start, method) = unsafe {
            let context = &*self.input.as_ptr();
            (context.duration, context.start_time, context.duration_estimation_method)
        };
        // A duration guessed from the bitrate is too rough to judge by.
        if duration <= 0 || method == AVDurationEstimationMethod::AVFMT_DURATION_FROM_BITRATE {
            return;
        }
        let start = if start == AV_NOPTS_VALUE {
            0.0
        } else {
            start as f64 / f64::from(AV_TIME_BASE)
        };
        let announced = duration as f64 / f64::from(AV_TIME_BASE);
        let ended_at = last_end.map_or(0.0, |end| end - start);
        let tolerance = (2.0 / f64::from(self.info.frame_rate)).max(0.1);
        if ended_at + tolerance < announced {
            tracing::warn!(
                input = %self.info.url,
                "the input ended at {ended_at:.2} s but its container announces {announced:.2} s; it looks truncated"
            );
            counters.set_ended_early(EndedEarly {
                ended_at_seconds: ended_at,
                announced_seconds: announced,
            });
        }
    }
}

impl Source {
    /// Seeks back to the start for `loop = true` (see `looping.rs`): seamlessly when it may,
    /// else with the decoder drained and flushed and the timestamps moved on past the last
    /// frame. False, with nothing sought, when the run has sent all it may (`frames`,
    /// `duration`).
    fn restart(
        &mut self,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<bool, SourceError> {
        // `loop_count`: the input starts over that many times, then ends.
        let more = self.config.loop_count.is_none_or(|count| self.looping.restarts < count);
        let allowed = more && !state.trim.bounds_time() && !state.trim.frames_exhausted(state.next_index);
        let file_seconds = (self.input.duration() > 0).then(|| self.input.duration() as f64 / 1e6);
        if self
            .looping
            .next_pass_seamless(allowed, file_seconds, f64::from(self.info.time_base))
        {
            tracing::debug!(input = %self.info.url, "looped with the decoder kept");
            self.seek_to_start(state)?;
            self.looping.restarts += 1;
            return Ok(true);
        }
        self.decoder.finish(state, frames, counters)?;
        if !more || !state.start_new_pass() {
            return Ok(false);
        }
        self.looping.restarts += 1;
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

    /// Makes the next passes loop seamlessly (or not) whatever the decoder (see `looping.rs`).
    #[cfg(test)]
    pub(super) fn with_seamless_loop(mut self, seamless: bool) -> Source {
        self.looping.set_seamless(seamless);
        self
    }

    /// Seeks to the keyframe at or before `to_us` (microseconds on the container's clock),
    /// for `start`; frames before it are dropped as they are decoded.
    fn seek_to(&mut self, to_us: i64, frames: u64) -> Result<(), SourceError> {
        self.input.seek(to_us, ..to_us).map_err(|e| SourceError::Read {
            url: self.info.url.clone(),
            frames,
            reason: format!(
                "cannot seek to {:.3} s for source.start (--ss): {e}",
                to_us as f64 / 1e6
            ),
        })
    }
}

/// How one connection's reading ended.
enum ReadEnd {
    EndOfInput,
    /// The part of the input asked for (`duration`, `frames`) was read.
    Trimmed,
    Stopped,
    /// The frame receiver is gone (the pipeline is stopping after a downstream failure).
    DownstreamGone,
}

/// Blocks until `item` is queued, the receiver is gone or `stop` is set (so a signal is
/// never stuck behind a full queue).
fn send_unless_stopped<T>(queue: &Sender<T>, mut item: T, stop: &AtomicBool) -> Result<(), ()> {
    loop {
        match queue.send_timeout(item, Duration::from_millis(100)) {
            Ok(()) => return Ok(()),
            Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => return Err(()),
            Err(crossbeam_channel::SendTimeoutError::Timeout(back)) if !stop.load(Ordering::Relaxed) => item = back,
            Err(crossbeam_channel::SendTimeoutError::Timeout(_)) => return Err(()),
        }
    }
}

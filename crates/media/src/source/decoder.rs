//! The video decoder of a source: the decoder a `decoder` setting means (chosen in
//! `decoder_choice`) opened for the stream, and NVDEC that never hangs or loses a frame.
//!
//! - NVDEC is refused, with the reason, before a decoder is made when the driver says it
//!   cannot decode the stream ([`super::nvdec`]), at the start and when the stream changes.
//! - A new sequence (size, chroma format, bit depth) is seen at its keyframe
//!   ([`super::sequence`]): the old decoder is finished and a fresh one starts there.
//! - Any other failure (damaged data, a change the watch cannot see) makes the decoder anew
//!   too: the packets since the last keyframes are kept, decoded again through fresh decoders
//!   to recover the frames the failed one still held, and decoding goes on.
//! - A decoder that keeps failing, or cannot decode what follows, ends the pipeline with the
//!   reason; frames already decoded are written.
//!
//! Keeping NVDEC alive is one state machine around one `AVCodecContext`, kept in one file.

use ffmpeg::{codec, Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::decode_state::{DecodeState, DrainEnd};
use super::decoder_choice::choose_decoder;
use super::device_pictures::CudaDecoding;
use super::error::SourceError;
use super::nvdec::{self, NvdecProbe, StreamTraits};
use super::pooled_pictures::PooledPictures;
use super::replay::ReplayBuffer;
use super::sequence::{Sequence, SequenceWatch};
use crate::ffmpeg::is_again;
use crate::stats::Counters;
use convstream_config::SourceConfig;
use convstream_core::Frame;
use convstream_core::GpuContext;

/// Fresh NVDEC decoders that failed again before giving a frame, after which the stream is
/// taken as one NVDEC cannot decode.
const MAX_FRUITLESS_RESTARTS: u32 = 2;

/// An opened FFmpeg video decoder and what is needed to open it again.
pub(super) struct VideoDecoder {
    /// Declared first so that it is dropped before `pictures`, which it points to.
    inner: ffmpeg::decoder::Video,
    /// Where the decoder's pictures are allocated (the engine's frame pool), if anywhere.
    pictures: Option<Arc<PooledPictures>>,
    /// The GPU an NVDEC decoder leaves its pictures on, if any (see `device_pictures`).
    device: Option<Arc<CudaDecoding>>,
    codec: ffmpeg::Codec,
    parameters: codec::Parameters,
    time_base: Rational,
    threads: usize,
    /// NVDEC (FFmpeg's `*_cuvid` decoders): failures are recovered by a fresh decoder.
    hardware: bool,
    /// Recent packets, from the keyframe before last (NVDEC only).
    replay: ReplayBuffer,
    /// Fresh decoders made in a row without a frame coming out in between.
    fruitless_restarts: u32,
    /// Frames sent when the decoder was last made anew.
    frames_at_restart: u64,
    /// Sees a new sequence coming (NVDEC on H.264 and HEVC).
    sequence: Option<SequenceWatch>,
    /// Asked again when the stream changes.
    nvdec_probe: Arc<dyn NvdecProbe>,
}

impl VideoDecoder {
    /// Opens the decoder `config.decoder` names for a stream. NVDEC is first asked whether
    /// it decodes the stream; when it does not, the error says why. An NVDEC decoder given
    /// `gpu` leaves its pictures there from the start (opened once, not once on its own
    /// context and again on the engine's).
    pub(super) fn open(
        config: &SourceConfig,
        parameters: codec::Parameters,
        time_base: Rational,
        nvdec_probe: &Arc<dyn NvdecProbe>,
        gpu: Option<GpuContext>,
    ) -> Result<VideoDecoder, SourceError> {
        let url = &config.url;
        let decoder_error = |reason: String| SourceError::Decoder {
            url: url.clone(),
            reason,
        };
        let (codec, hardware) = choose_decoder(config, &parameters, nvdec_probe)?;
        let device = match gpu.filter(|_| hardware).map(CudaDecoding::new) {
            Some(Ok(device)) => Some(device),
            Some(Err(reason)) => {
                tracing::warn!(input = %url, "{reason}; decoded pictures go through host memory");
                None
            }
            None => None,
        };
        // Fixed when the decoder opens: a fresh decoder later (NVDEC's recovery, a new
        // sequence) keeps it.
        let threads = super::decoder_threads::decoder_threads(config.threads);
        crate::ffmpeg::log::clear_last_error();
        let inner =
            open_codec(codec, &parameters, time_base, threads, hardware, None, device.as_ref()).map_err(|e| {
                decoder_error(crate::ffmpeg::log::with_ffmpeg_reason(format!(
                    "cannot open the {} decoder: {e}",
                    codec.name()
                )))
            })?;
        Ok(VideoDecoder {
            inner,
            pictures: None,
            device,
            codec,
            time_base,
            threads,
            hardware,
            replay: ReplayBuffer::default(),
            fruitless_restarts: 0,
            frames_at_restart: 0,
            sequence: if hardware {
                SequenceWatch::new(&parameters)
            } else {
                None
            },
            nvdec_probe: nvdec_probe.clone(),
            parameters,
        })
    }

    /// Makes the decoder (and every decoder opened again in its place) allocate its
    /// pictures in `pictures`. Call before the first packet: pictures decoded earlier stay
    /// where FFmpeg put them (and are copied).
    pub(super) fn allocate_in(&mut self, pictures: Option<Arc<PooledPictures>>) {
        if let Some(pictures) = &pictures {
            // SAFETY: `inner` owns a valid context used by no other thread now (frame threads
            // take the callback from it with the next packet); `pictures` is kept in `self`,
            // and `inner` is dropped first.
            unsafe { PooledPictures::install(pictures, self.inner.as_mut_ptr()) };
        }
        self.pictures = pictures;
    }

    /// Makes an NVDEC decoder leave its pictures on `device`'s GPU from now on: it is
    /// opened again there (call before the first packet). Other decoders are left as they are.
    pub(super) fn decode_on(&mut self, device: Option<Arc<CudaDecoding>>, url: &str) -> Result<(), SourceError> {
        if !self.hardware || device.is_none() {
            return Ok(());
        }
        if let (Some(current), Some(wanted)) = (&self.device, &device) {
            if Arc::ptr_eq(current, wanted) {
                return Ok(()); // opened there already
            }
        }
        self.device = device;
        crate::ffmpeg::log::clear_last_error();
        let (pictures, device) = (self.pictures.as_ref(), self.device.as_ref());
        self.inner = open_codec(
            self.codec,
            &self.parameters,
            self.time_base,
            self.threads,
            true,
            pictures,
            device,
        )
        .map_err(|e| SourceError::Decoder {
            url: url.to_string(),
            reason: crate::ffmpeg::log::with_ffmpeg_reason(format!(
                "cannot open the {} decoder on the GPU: {e}",
                self.codec.name()
            )),
        })?;
        Ok(())
    }

    /// The GPU an NVDEC decoder leaves its pictures on, if any.
    pub(super) fn device(&self) -> Option<&Arc<CudaDecoding>> {
        self.device.as_ref()
    }

    pub(super) fn codec(&self) -> ffmpeg::Codec {
        self.codec
    }

    pub(super) fn is_hardware(&self) -> bool {
        self.hardware
    }

    pub(super) fn video(&self) -> &ffmpeg::decoder::Video {
        &self.inner
    }

    /// Decodes one packet and sends the frames that are ready. Damaged packets are counted
    /// and skipped; a failed NVDEC decoder is made anew (see the module's doc). False when
    /// downstream is gone.
    pub(super) fn decode(
        &mut self,
        packet: &Packet,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<bool, SourceError> {
        if self.hardware {
            if let Some(change) = self.sequence.as_mut().and_then(|watch| watch.change_at(packet)) {
                if !self.switch_sequence(change, state, frames, counters)? {
                    return Ok(false);
                }
            }
            self.replay.push(packet);
        }
        let started = std::time::Instant::now();
        let sent = self.inner.send_packet(packet);
        Counters::add_time(&counters.source_busy_ns, started.elapsed());
        let failure = match sent {
            Err(e) if is_again(&e) => None,
            Err(e) if self.hardware => Some(e),
            Err(e) => {
                Counters::add(&counters.corrupt_packets, 1);
                tracing::warn!(input = %state.url, "undecodable packet skipped: {e}");
                None
            }
            Ok(()) => None,
        };
        let failure = match failure {
            Some(e) => e,
            None => match state.drain(&mut self.inner, frames, counters, self.hardware)? {
                DrainEnd::Ready => return Ok(true),
                DrainEnd::DownstreamGone => return Ok(false),
                DrainEnd::DecoderFailed(e) => e,
            },
        };
        self.recover(failure, false, state, frames, counters)
    }

    /// Sends the frames the decoder still holds (end of input, or a stop).
    pub(super) fn finish(
        &mut self,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<bool, SourceError> {
        let _ = self.inner.send_eof();
        match state.drain(&mut self.inner, frames, counters, self.hardware)? {
            DrainEnd::Ready => Ok(true),
            DrainEnd::DownstreamGone => Ok(false),
            DrainEnd::DecoderFailed(e) => self.recover(e, true, state, frames, counters),
        }
    }

    /// The stream starts a new sequence at the next packet: every frame of the old one is
    /// taken from the decoder, and a fresh decoder starts at the new sequence's keyframe,
    /// after NVDEC was asked whether it decodes it. False when downstream is gone.
    fn switch_sequence(
        &mut self,
        to: Sequence,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<bool, SourceError> {
        let traits = StreamTraits::from_format(self.parameters.id(), to.format, to.width, to.height);
        let decodable = nvdec::check(&traits, self.nvdec_probe.as_ref());
        if !self.finish(state, frames, counters)? {
            return Ok(false);
        }
        if decodable.is_ok() {
            tracing::info!(
                input = %state.url,
                "the stream changes to {} at frame {}: the NVDEC decoder was finished and is made anew",
                traits.describe(),
                state.next_index
            );
        }
        if let Err(reason) = decodable {
            return Err(SourceError::Decoder {
                url: state.url.clone(),
                reason: format!(
                    "the stream changes at frame {} and {reason}; the frames before it were written. \
                     Use decoder = \"software\" (or \"auto\") for this input",
                    state.next_index
                ),
            });
        }
        self.inner = self.reopen(state)?;
        self.replay.clear();
        self.frames_at_restart = state.next_index;
        Counters::add(&counters.decoder_restarts, 1);
        Ok(true)
    }

    /// Forgets the decoder's state, for a seek back to the start.
    pub(super) fn flush(&mut self) {
        self.inner.flush();
        self.replay.clear();
    }

    /// NVDEC failed. The kept packets are split at the last keyframe: those before it are
    /// replayed through a fresh decoder, flushed, which gives the frames the failed decoder
    /// still held; those from it on (the start of a new sequence, or of the damaged group)
    /// go to another fresh decoder, which decoding then goes on with. Frames already sent
    /// are skipped by timestamp. The failure can show a packet or two after the keyframe
    /// that caused it (NVIDIA's parser reports a new sequence when the next picture
    /// starts), which is why the split is at the keyframe and not at the failing packet.
    /// `at_end`: the failure came while flushing at the end of the input.
    fn recover(
        &mut self,
        error: ffmpeg::Error,
        at_end: bool,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<bool, SourceError> {
        let frame = state.next_index;
        if !self.hardware {
            return Err(SourceError::Decoder {
                url: state.url.clone(),
                reason: format!(
                    "the {} decoder kept failing after {frame} frames: {error}",
                    self.codec.name()
                ),
            });
        }
        if frame > self.frames_at_restart {
            self.fruitless_restarts = 0;
        }
        self.fruitless_restarts += 1;
        if self.fruitless_restarts > MAX_FRUITLESS_RESTARTS {
            return Err(self.gave_up(frame, &error, state));
        }
        // FFmpeg's cuvid wrapper logs why it failed ("AVHWFramesContext is already initialized
        // with incompatible parameters"); say it with the failure.
        let error = crate::ffmpeg::log::with_ffmpeg_reason(error.to_string());
        let mut earlier = self.replay.take();
        let last_keyframe = earlier.iter().rposition(Packet::is_key).unwrap_or(0);
        let latest = earlier.split_off(last_keyframe);
        tracing::warn!(
            input = %state.url,
            "the {} decoder failed after {frame} frames ({error}): making it anew, and decoding the last {} \
             packets again so no frame is lost",
            self.codec.name(),
            earlier.len() + latest.len()
        );
        Counters::add(&counters.decoder_restarts, 1);
        if latest.is_empty() {
            // Nothing kept since a keyframe: decoding starts again at the next one.
            Counters::add(&counters.corrupt_packets, 1);
        }
        if !earlier.is_empty() {
            let mut fresh = self.reopen(state)?;
            match Self::catch_up(&mut fresh, &earlier, true, state, frames, counters)? {
                CatchUp::Done => {}
                CatchUp::DownstreamGone => return Ok(false),
                CatchUp::Failed(e, unused) => {
                    Counters::add(&counters.corrupt_packets, unused as u64);
                    tracing::warn!(input = %state.url, "decoding them again failed too ({e}); {unused} packets skipped");
                }
            }
        }
        self.inner = self.reopen(state)?;
        self.frames_at_restart = state.next_index;
        for packet in &latest {
            self.replay.push(packet);
        }
        match Self::catch_up(&mut self.inner, &latest, at_end, state, frames, counters)? {
            CatchUp::Done => Ok(true),
            CatchUp::DownstreamGone => Ok(false),
            // A fresh decoder that fails on the group it starts with, before giving a
            // single frame, cannot decode this sequence.
            CatchUp::Failed(e, _) if state.replayed_frames == 0 => Err(self.gave_up(frame, &e, state)),
            CatchUp::Failed(e, unused) => {
                // It decoded part of the group: the sequence is fine, a packet is damaged.
                // Go on with a fresh decoder from the next keyframe.
                Counters::add(&counters.corrupt_packets, unused as u64);
                tracing::warn!(input = %state.url, "a damaged packet stopped the decoder again ({e}); going on from the next keyframe");
                self.inner = self.reopen(state)?;
                self.replay.clear();
                Ok(true)
            }
        }
    }

    /// Decodes `packets` with `decoder`, sending only frames later than the last one sent,
    /// and flushes it when `flush` is set.
    fn catch_up(
        decoder: &mut ffmpeg::decoder::Video,
        packets: &[Packet],
        flush: bool,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<CatchUp, SourceError> {
        state.replaying = true;
        state.replayed_frames = 0;
        let outcome = (|| {
            for (index, packet) in packets.iter().enumerate() {
                if state.stopped() {
                    return Ok(CatchUp::Done);
                }
                let drained = match decoder.send_packet(packet) {
                    Err(e) if !is_again(&e) => DrainEnd::DecoderFailed(e),
                    _ => state.drain(decoder, frames, counters, true)?,
                };
                match drained {
                    DrainEnd::Ready => {}
                    DrainEnd::DownstreamGone => return Ok(CatchUp::DownstreamGone),
                    DrainEnd::DecoderFailed(e) => return Ok(CatchUp::Failed(e, packets.len() - index)),
                }
            }
            if flush && !state.stopped() {
                let _ = decoder.send_eof();
                return Ok(match state.drain(decoder, frames, counters, true)? {
                    DrainEnd::Ready => CatchUp::Done,
                    DrainEnd::DownstreamGone => CatchUp::DownstreamGone,
                    DrainEnd::DecoderFailed(e) => CatchUp::Failed(e, 0),
                });
            }
            Ok(CatchUp::Done)
        })();
        state.replaying = false;
        outcome
    }

    /// A fresh decoder of the same kind. An Annex B stream (MPEG-TS, raw H.264/HEVC)
    /// carries its parameter sets in band, at every keyframe, and the container's copy
    /// (extradata) describes the stream's first sequence only: a fresh cuvid decoder given
    /// it would size itself for that sequence and fail again on a larger one. So it gets
    /// none, and sizes itself from the keyframe it starts at. Streams whose extradata is a
    /// configuration record (MP4, Matroska) need it to be parsed at all, and keep it.
    fn reopen(&self, state: &DecodeState) -> Result<ffmpeg::decoder::Video, SourceError> {
        let mut parameters = self.parameters.clone();
        if self.hardware && has_annex_b_extradata(&parameters) {
            // SAFETY: the copy's extradata was allocated by FFmpeg (avcodec_parameters_copy);
            // av_freep frees it and nulls the pointer, and the size is set to match.
            unsafe {
                let raw = &mut *parameters.as_mut_ptr();
                ffmpeg::ffi::av_freep(std::ptr::addr_of_mut!(raw.extradata).cast());
                raw.extradata_size = 0;
            }
        }
        crate::ffmpeg::log::clear_last_error();
        let (pictures, device) = (self.pictures.as_ref(), self.device.as_ref());
        open_codec(
            self.codec,
            &parameters,
            self.time_base,
            self.threads,
            self.hardware,
            pictures,
            device,
        )
        .map_err(|e| SourceError::Decoder {
            url: state.url.clone(),
            reason: crate::ffmpeg::log::with_ffmpeg_reason(format!(
                "cannot open the {} decoder again: {e}",
                self.codec.name()
            )),
        })
    }

    fn gave_up(&self, frame: u64, error: &dyn std::fmt::Display, state: &DecodeState) -> SourceError {
        let error = crate::ffmpeg::log::with_ffmpeg_reason(error.to_string());
        SourceError::Decoder {
            url: state.url.clone(),
            reason: format!(
                "NVDEC ({}) cannot decode this stream from frame {frame} on ({error}; a profile, chroma format \
                 or bit depth this GPU's NVDEC lacks?); the frames before it were written. \
                 Use decoder = \"software\" (or \"auto\") for this input",
                self.codec.name()
            ),
        }
    }
}

/// Whether the stream's extradata holds Annex B parameter sets (a start code first) rather
/// than an `avcC`/`hvcC` configuration record (whose first byte is its version, 1).
fn has_annex_b_extradata(parameters: &codec::Parameters) -> bool {
    // SAFETY: reading the extradata pointer and size FFmpeg keeps consistent.
    let extradata = unsafe {
        let raw = &*parameters.as_ptr();
        if raw.extradata.is_null() || raw.extradata_size < 4 {
            return false;
        }
        std::slice::from_raw_parts(raw.extradata, raw.extradata_size as usize)
    };
    extradata.starts_with(&[0, 0, 1]) || extradata.starts_with(&[0, 0, 0, 1])
}

/// How decoding kept packets again went.
enum CatchUp {
    Done,
    DownstreamGone,
    /// The decoder failed, with this many of the packets not decoded.
    Failed(ffmpeg::Error, usize),
}

/// Opens `codec` for a stream; software decoders get frame threads. With `pictures`, the
/// decoder allocates its pictures there; the caller keeps `pictures` alive longer than the
/// decoder. With `device`, an NVDEC decoder outputs CUDA frames on that GPU.
fn open_codec(
    codec: ffmpeg::Codec,
    parameters: &codec::Parameters,
    time_base: Rational,
    threads: usize,
    hardware: bool,
    pictures: Option<&Arc<PooledPictures>>,
    device: Option<&Arc<CudaDecoding>>,
) -> Result<ffmpeg::decoder::Video, ffmpeg::Error> {
    let mut context = codec::Context::from_parameters(parameters.clone())?;
    if !hardware {
        context.set_threading(codec::threading::Config {
            kind: codec::threading::Type::Frame,
            count: threads,
            ..Default::default()
        });
    }
    // SAFETY: `context` owns a valid AVCodecContext that is not open yet, so no other code
    // reads it; pkt_timebase (a plain field) lets the decoder compute best-effort timestamps.
    unsafe {
        (*context.as_mut_ptr()).pkt_timebase = time_base.into();
        if let Some(pictures) = pictures {
            PooledPictures::install(pictures, context.as_mut_ptr());
        }
        if let (Some(device), true) = (device, hardware) {
            device.install(context.as_mut_ptr());
        }
    }
    context.decoder().open_as(codec).and_then(|opened| opened.video())
}

//! FFmpeg input: opens a file, pipe or URL, decodes its best video stream into engine
//! frames (converting only formats the engines cannot take) and hands the packets of
//! other streams (audio, subtitles) to the sink untouched. Which decoder, and how NVDEC
//! failures are survived, is in [`decoder`].

mod decoder;
mod sequence;

use crossbeam_channel::{Receiver, Sender};
use ffmpeg::{codec, media, Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::SourceConfig;
use crate::frame::{Frame, PixelFormat};
use crate::host_buffers::BufferPool;
use crate::media::{self as glue, engine_format, ffmpeg_format, nearest_engine_format};
use crate::nvdec::NvdecProbe;
use crate::stats::{Counters, EndedEarly};
use decoder::VideoDecoder;

/// Consecutive unreadable packets after which the input is taken as broken rather than damaged.
const MAX_CONSECUTIVE_READ_ERRORS: u32 = 64;
/// Consecutive decoding errors without a frame or a request for more data, after which a
/// decoder is taken as stuck (one that returns the same error for ever) rather than fed
/// damaged data.
const MAX_CONSECUTIVE_DECODE_ERRORS: u32 = 64;
/// How long decoded frames still wait for room in the queue after a stop, before they are
/// let go: the filter normally takes them at once, but a stop must end even if it is stuck.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// A realtime input whose timestamps jump by more than this (forward or back) is taken as
/// discontinuous, and pacing starts again from the frame after the jump.
const MAX_PACING_JUMP: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot open input {url}: {reason}")]
    Open { url: String, reason: String },
    /// An input that can never be read as asked (an unknown protocol, a stream the chosen
    /// decoder cannot take): not retried, and a usage error for `run`.
    #[error("cannot use input {url}: {reason}")]
    Unusable { url: String, reason: String },
    /// An input that opened but is no video (a text file): not retried either.
    #[error("cannot open input {url}: {reason}")]
    NotVideo { url: String, reason: String },
    #[error("input {url} has no video stream")]
    NoVideo { url: String },
    #[error("unknown input format `{format}` for {url}")]
    UnknownFormat { url: String, format: String },
    #[error("input {url}: {reason}")]
    Decoder { url: String, reason: String },
    #[error("input {url}: read failed after {frames} frames: {reason}")]
    Read { url: String, frames: u64, reason: String },
}

impl SourceError {
    /// Whether opening again could not help: the input is unusable as configured.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            SourceError::Unusable { .. }
                | SourceError::NotVideo { .. }
                | SourceError::UnknownFormat { .. }
                | SourceError::NoVideo { .. }
        )
    }

    /// Whether the input could never be used as configured, whatever it holds (an unknown
    /// protocol, a stream the chosen decoder cannot take): a usage error, exit code 2 for
    /// `run`. An input whose content is wrong (no video in it) is a runtime failure.
    pub fn is_usage(&self) -> bool {
        matches!(self, SourceError::Unusable { .. })
    }
}

/// Colour description carried from input to output.
#[derive(Debug, Clone, Copy)]
pub struct ColorInfo {
    pub range: ffmpeg::color::Range,
    pub space: ffmpeg::color::Space,
    pub primaries: ffmpeg::color::Primaries,
    pub transfer: ffmpeg::color::TransferCharacteristic,
}

/// A non-video input stream the sink may copy.
#[derive(Clone)]
pub struct PassthroughStream {
    pub index: usize,
    pub medium: media::Type,
    pub parameters: codec::Parameters,
    pub time_base: Rational,
}

/// What the sink and engine need to know about the video before the first frame.
#[derive(Clone)]
pub struct SourceInfo {
    pub url: String,
    pub width: usize,
    pub height: usize,
    /// The format frames leave the source in.
    pub format: PixelFormat,
    pub time_base: Rational,
    pub frame_rate: Rational,
    pub aspect_ratio: Rational,
    pub color: ColorInfo,
    /// Frame count when the container says or the duration implies it.
    pub expected_frames: Option<u64>,
    pub decoder: String,
    pub passthrough: Vec<PassthroughStream>,
}

impl SourceInfo {
    /// The copied streams' indices and codecs: what a reconnected input must match for
    /// its packets to go on to the same output streams.
    fn stream_signature(&self) -> Vec<(usize, codec::Id)> {
        self.passthrough.iter().map(|s| (s.index, s.parameters.id())).collect()
    }
}

/// A non-video packet on its way to the sink, tagged with its input stream.
pub struct PassthroughPacket {
    pub stream: usize,
    pub packet: Packet,
}

/// An opened input with its video decoder.
pub struct Source {
    decoder: VideoDecoder,
    input: ffmpeg::format::context::Input,
    /// What the interrupt callback reads; kept alive as long as `input`.
    watchdog: Arc<Watchdog>,
    video_index: usize,
    info: SourceInfo,
    config: SourceConfig,
    /// Where decoded frames are made (the engine's pinned buffers), if anywhere special.
    frame_pool: Option<Arc<BufferPool>>,
    /// Asked before NVDEC is chosen; kept for reconnections.
    nvdec_probe: Arc<dyn NvdecProbe>,
}

/// Decides when FFmpeg must give up a blocking open or read: on a stop, or (live inputs)
/// when no data came for `idle_timeout`.
struct Watchdog {
    stop: Arc<AtomicBool>,
    started: Instant,
    /// Microseconds after `started` past which a blocked call is interrupted; `u64::MAX`: never.
    deadline_us: AtomicU64,
    idle_timeout: Option<Duration>,
}

impl Watchdog {
    fn new(stop: Arc<AtomicBool>, config: &SourceConfig) -> Watchdog {
        Watchdog {
            stop,
            started: Instant::now(),
            deadline_us: AtomicU64::new(u64::MAX),
            idle_timeout: config.is_live().then(|| Duration::from_secs_f64(config.idle_timeout)),
        }
    }

    /// Starts the idle clock for the next blocking call.
    fn arm(&self) {
        if let Some(timeout) = self.idle_timeout {
            let deadline = (self.started.elapsed() + timeout).as_micros() as u64;
            self.deadline_us.store(deadline, Ordering::Relaxed);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn expired(&self) -> bool {
        self.started.elapsed().as_micros() as u64 > self.deadline_us.load(Ordering::Relaxed)
    }

    /// Why a call was interrupted when it was not a stop: the input went quiet.
    fn idle_reason(&self) -> String {
        let seconds = self.idle_timeout.map_or(0.0, |t| t.as_secs_f64());
        format!("no data for {seconds} s (source.idle_timeout)")
    }
}

extern "C" fn interrupt_requested(opaque: *mut c_void) -> c_int {
    // SAFETY: opaque is the Watchdog inside the Arc that Source keeps alive while the
    // input (and so this callback) exists.
    let watchdog = unsafe { &*(opaque as *const Watchdog) };
    (watchdog.stopped() || watchdog.expired()) as c_int
}

fn ffmpeg_url(url: &str) -> &str {
    if url == "-" {
        "pipe:0"
    } else {
        url
    }
}

/// Opens the input with an interrupt callback, so that a blocked network read ends on stop.
fn open_input(config: &SourceConfig, watchdog: &Arc<Watchdog>) -> Result<ffmpeg::format::context::Input, SourceError> {
    let url = &config.url;
    let open_error = |reason: String| SourceError::Open {
        url: url.clone(),
        reason,
    };
    let c_url = CString::new(ffmpeg_url(url)).map_err(|_| SourceError::Unusable {
        url: url.clone(),
        reason: "the URL contains a NUL byte".into(),
    })?;
    let c_format = match &config.format {
        Some(name) => Some(CString::new(name.as_str()).map_err(|_| open_error("format contains a NUL byte".into()))?),
        None => None,
    };
    // SAFETY: plain FFmpeg C calls; every pointer is checked, and on failure
    // avformat_open_input frees the context itself.
    unsafe {
        use ffmpeg::ffi::*;
        let format = match &c_format {
            Some(name) => {
                let found = av_find_input_format(name.as_ptr());
                if found.is_null() {
                    return Err(SourceError::UnknownFormat {
                        url: url.clone(),
                        format: config.format.clone().unwrap_or_default(),
                    });
                }
                found
            }
            None => std::ptr::null(),
        };
        let mut context = avformat_alloc_context();
        if context.is_null() {
            return Err(open_error("out of memory".into()));
        }
        (*context).interrupt_callback = AVIOInterruptCB {
            callback: Some(interrupt_requested),
            opaque: Arc::as_ptr(watchdog) as *mut c_void,
        };
        let interrupted = |status: c_int| {
            if status == AVERROR_EXIT && !watchdog.stopped() && watchdog.expired() {
                watchdog.idle_reason()
            } else {
                crate::ffmpeg_log::with_ffmpeg_reason(describe(status))
            }
        };
        watchdog.arm();
        crate::ffmpeg_log::clear_last_error();
        let status = avformat_open_input(&mut context, c_url.as_ptr(), format as _, std::ptr::null_mut());
        if status == AVERROR_PROTOCOL_NOT_FOUND {
            // A scheme this FFmpeg build does not have will not appear on a second try.
            let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
            return Err(SourceError::Unusable {
                url: url.clone(),
                reason: format!("this FFmpeg build has no `{scheme}` protocol (`convstream doctor` lists what it has)"),
            });
        }
        if status < 0 {
            return Err(open_error(interrupted(status)));
        }
        watchdog.arm();
        crate::ffmpeg_log::clear_last_error();
        let status = avformat_find_stream_info(context, std::ptr::null_mut());
        if status < 0 {
            avformat_close_input(&mut context);
            return Err(open_error(format!(
                "cannot read stream information: {}",
                interrupted(status)
            )));
        }
        Ok(ffmpeg::format::context::Input::wrap(context))
    }
}

fn describe(status: c_int) -> String {
    let error = ffmpeg::Error::from(status);
    match error {
        ffmpeg::Error::InvalidData => {
            "not a media file FFmpeg can read (invalid data found when processing input)".into()
        }
        other => other.to_string(),
    }
}

impl Source {
    /// Opens the input and its video decoder. `stop` interrupts blocking reads once set;
    /// `nvdec_probe` says whether NVDEC decodes the stream, when NVDEC is asked for.
    pub fn open(
        config: &SourceConfig,
        stop: Arc<AtomicBool>,
        nvdec_probe: &Arc<dyn NvdecProbe>,
    ) -> Result<Source, SourceError> {
        glue::init();
        let watchdog = Arc::new(Watchdog::new(stop, config));
        let input = open_input(config, &watchdog)?;
        let url = config.url.clone();
        // FFmpeg takes any text file (by its extension: .txt, .nfo, ...) for ANSI art and
        // "plays" it; for a video filter that is always a mistake, unless asked for by name.
        if config.format.is_none() && input.format().name() == "tty" {
            return Err(SourceError::NotVideo {
                url,
                reason: "this is a text file, not a video (FFmpeg would only render the text as ANSI art; \
                         pass --input-format tty if that is really wanted)"
                    .into(),
            });
        }
        let stream = input
            .streams()
            .best(media::Type::Video)
            .ok_or_else(|| SourceError::NoVideo { url: url.clone() })?;
        let video_index = stream.index();
        let time_base = stream.time_base();
        let decoder_error = |reason: String| SourceError::Decoder {
            url: url.clone(),
            reason,
        };
        let decoder = VideoDecoder::open(config, stream.parameters(), time_base, nvdec_probe)?;
        let hardware = decoder.is_hardware();
        let codec = decoder.codec();
        let decoded = decoder.video().format();
        let format = if hardware {
            PixelFormat::Nv12
        } else {
            engine_format(decoded).unwrap_or_else(|| nearest_engine_format(decoded))
        };
        if !hardware && engine_format(decoded).is_none() {
            tracing::info!(input = %url, "decoded format {decoded:?} is converted to {format} for filtering");
        }
        let frame_rate = match stream.avg_frame_rate() {
            r if r.numerator() > 0 && r.denominator() > 0 => r,
            _ => match stream.rate() {
                r if r.numerator() > 0 && r.denominator() > 0 => r,
                _ => Rational::new(25, 1),
            },
        };
        let expected_frames = if stream.frames() > 0 {
            Some(stream.frames() as u64)
        } else if stream.duration() > 0 {
            Some((stream.duration() as f64 * f64::from(time_base) * f64::from(frame_rate)).round() as u64)
        } else if input.duration() > 0 {
            Some(
                (input.duration() as f64 / f64::from(ffmpeg::ffi::AV_TIME_BASE) * f64::from(frame_rate)).round() as u64,
            )
        } else {
            None
        };
        // The container's value wins over the codec's, as in ffmpeg and ffprobe (Matroska,
        // for one, keeps it only in the container).
        // SAFETY: the format context and the stream are valid; a null frame is allowed.
        let aspect_ratio = unsafe {
            Rational::from(ffmpeg::ffi::av_guess_sample_aspect_ratio(
                input.as_ptr() as *mut _,
                stream.as_ptr() as *mut _,
                std::ptr::null_mut(),
            ))
        };
        let passthrough = input
            .streams()
            .filter(|s| s.index() != video_index)
            .filter(|s| matches!(s.parameters().medium(), media::Type::Audio | media::Type::Subtitle))
            .map(|s| PassthroughStream {
                index: s.index(),
                medium: s.parameters().medium(),
                parameters: s.parameters(),
                time_base: s.time_base(),
            })
            .collect();
        let video = decoder.video();
        let info = SourceInfo {
            url: url.clone(),
            width: video.width() as usize,
            height: video.height() as usize,
            format,
            time_base,
            frame_rate,
            aspect_ratio,
            color: ColorInfo {
                range: video.color_range(),
                space: video.color_space(),
                primaries: video.color_primaries(),
                transfer: video.color_transfer_characteristic(),
            },
            expected_frames,
            decoder: codec.name().to_string(),
            passthrough,
        };
        if info.width == 0 || info.height == 0 {
            return Err(decoder_error("the video stream has no frame size".into()));
        }
        Ok(Source {
            decoder,
            input,
            watchdog,
            video_index,
            info,
            config: config.clone(),
            frame_pool: None,
            nvdec_probe: nvdec_probe.clone(),
        })
    }

    pub fn info(&self) -> &SourceInfo {
        &self.info
    }

    /// Makes decoded frames in `pool`'s buffers (the engine's page-locked memory, so the
    /// engine copies nothing on the way to the GPU).
    pub fn with_frame_pool(mut self, pool: Option<Arc<BufferPool>>) -> Source {
        self.frame_pool = pool;
        self
    }

    /// Opens the input. A live one is tried until it opens or `stop` is set, waiting
    /// `reconnect.initial` seconds after the first failure and doubling up to `reconnect.max`;
    /// `wait_first` waits before the first attempt too (after a lost connection).
    pub fn connect(
        config: &SourceConfig,
        stop: &Arc<AtomicBool>,
        counters: &Counters,
        wait_first: bool,
        nvdec_probe: &Arc<dyn NvdecProbe>,
    ) -> Result<Source, SourceError> {
        if !config.is_live() {
            return Source::open(config, stop.clone(), nvdec_probe);
        }
        let max = Duration::from_secs_f64(config.reconnect.max);
        let mut delay = Duration::from_secs_f64(config.reconnect.initial);
        if wait_first && !sleep_unless_stopped(delay, stop) {
            return Err(SourceError::Open {
                url: config.url.clone(),
                reason: "stopped while waiting to reconnect".into(),
            });
        }
        loop {
            match Source::open(config, stop.clone(), nvdec_probe) {
                Ok(source) => return Ok(source),
                // An unknown protocol or demuxer, a stream the decoder cannot take: a
                // second try would fail the same way.
                Err(e) if e.is_permanent() => return Err(e),
                Err(e) if stop.load(Ordering::Relaxed) => return Err(e),
                Err(e) => {
                    tracing::warn!(input = %config.url, "{e}; trying again in {:.1} s", delay.as_secs_f64());
                    counters.reconnecting.store(true, Ordering::Relaxed);
                    if !sleep_unless_stopped(delay, stop) {
                        return Err(e);
                    }
                    delay = (delay * 2).min(max);
                }
            }
        }
    }

    /// Reads and decodes until the input ends, `stop` is set or the frame receiver is gone.
    /// Damaged packets are counted and skipped; frames keep their timestamps. A live input
    /// that ends or fails is opened again (see [`Source::connect`]), its timestamps moved on
    /// to follow the frames already sent. With `drop_from` (the frame queue's receiving
    /// end), a full queue loses its oldest frame instead of blocking the input.
    pub fn run(
        self,
        frames: &Sender<Frame>,
        packets: &Sender<PassthroughPacket>,
        stop: &Arc<AtomicBool>,
        counters: &Counters,
        drop_from: Option<Receiver<Frame>>,
    ) -> Result<(), SourceError> {
        let config = self.config.clone();
        let mut state = DecodeState::new(
            &self.info,
            config.realtime,
            drop_from,
            self.frame_pool.clone(),
            stop.clone(),
        );
        let first_streams = self.info.stream_signature();
        let source_probe = self.nvdec_probe.clone();
        let mut source = self;
        loop {
            let outcome = source.read_all(&mut state, frames, packets, stop, counters);
            let lost = match outcome {
                Ok(ReadEnd::EndOfInput) if config.is_live() => "the input ended".to_string(),
                Err(e) if config.is_live() && !stop.load(Ordering::Relaxed) => e.to_string(),
                other => return other.map(|_| ()),
            };
            tracing::warn!(input = %config.url, "{lost}; reconnecting");
            drop(source);
            counters.reconnecting.store(true, Ordering::Relaxed);
            let reopened = Source::connect(&config, stop, counters, true, &source_probe);
            counters.reconnecting.store(false, Ordering::Relaxed);
            source = match reopened {
                Ok(source) => source,
                Err(_) if stop.load(Ordering::Relaxed) => return Ok(()),
                Err(e) => return Err(e),
            };
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
                        self.restart(state, frames, counters)?;
                        continue;
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
                Err(e) if glue::is_again(&e) => {
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
            // A live input's reads mostly wait for the sender: not work of this stage.
            if self.watchdog.idle_timeout.is_none() {
                Counters::add_time(&counters.source_busy_ns, started.elapsed());
            }
            Counters::add(&counters.bytes_in, packet.size() as u64);
            if let Some(end) = self.packet_end(&packet) {
                last_end = Some(last_end.map_or(end, |last| last.max(end)));
            }
            if packet.stream() == self.video_index {
                if packet.is_corrupt() {
                    Counters::add(&counters.corrupt_packets, 1);
                }
                if !self.decoder.decode(&packet, state, frames, counters)? {
                    return Ok(ReadEnd::DownstreamGone);
                }
            } else if let Some(copied) = self.info.passthrough.iter().find(|s| s.index == packet.stream()) {
                // After a reconnection, copied packets wait for the first video frame, which
                // fixes how far the new connection's timestamps move.
                if !state.copy_streams || state.rebase_pending {
                    continue;
                }
                let mut outgoing = std::mem::replace(&mut packet, Packet::empty());
                if state.pts_offset != 0 {
                    // Looping or reconnected: copied streams move on by the same time as the video.
                    // SAFETY: pure arithmetic.
                    let shift = unsafe {
                        ffmpeg::ffi::av_rescale_q(
                            state.pts_offset,
                            state.output_time_base.into(),
                            copied.time_base.into(),
                        )
                    };
                    outgoing.set_pts(outgoing.pts().map(|t| t + shift));
                    outgoing.set_dts(outgoing.dts().map(|t| t + shift));
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
        }
        // Stopped: drain what the decoder still holds; those frames were read.
        self.finish_decoding(state, frames, counters)?;
        Ok(ReadEnd::Stopped)
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
        // SAFETY: reading plain fields of the open format context.
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

    /// Seeks back to the start for `loop = true`, shifting timestamps past the last frame.
    fn restart(
        &mut self,
        state: &mut DecodeState,
        frames: &Sender<Frame>,
        counters: &Counters,
    ) -> Result<(), SourceError> {
        self.decoder.finish(state, frames, counters)?;
        self.input
            .seek(i64::MIN, ..)
            .or_else(|_| self.input.seek(0, ..))
            .map_err(|e| SourceError::Read {
                url: self.info.url.clone(),
                frames: state.next_index,
                reason: format!("cannot seek to the start to loop: {e}"),
            })?;
        self.decoder.flush();
        state.start_new_pass();
        Ok(())
    }
}

/// How a decoder's frames were taken.
enum DrainEnd {
    /// The decoder has nothing more until it is given data.
    Ready,
    /// The frame receiver is gone.
    DownstreamGone,
    /// The decoder returned an error it will not get over by itself (every NVDEC error, or
    /// a software decoder that keeps failing).
    DecoderFailed(ffmpeg::Error),
}

/// How one connection's reading ended.
enum ReadEnd {
    EndOfInput,
    Stopped,
    /// The frame receiver is gone (the pipeline is stopping after a downstream failure).
    DownstreamGone,
}

/// Sleeps for `time` unless `stop` is set first; false when stopped.
fn sleep_unless_stopped(time: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + time;
    while !stop.load(Ordering::Relaxed) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    false
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

/// Decoding state that lasts across loops and reconnections: geometry, timestamps,
/// pacing and the frame queue.
struct DecodeState {
    target: (PixelFormat, usize, usize),
    scaler: Option<(ffmpeg::software::scaling::Context, (ffmpeg::format::Pixel, u32, u32))>,
    frame_duration: i64,
    next_index: u64,
    last_pts: Option<i64>,
    first_pts_of_pass: Option<i64>,
    /// Added to input timestamps (already in `output_time_base`).
    pts_offset: i64,
    /// The first connection's time base, which every frame's pts is given in.
    output_time_base: Rational,
    /// The current connection's time base.
    input_time_base: Rational,
    /// A new connection's offset is set by its first frame.
    rebase_pending: bool,
    /// Whether packets of copied streams go on (false when a reconnected input's streams differ).
    copy_streams: bool,
    realtime: Option<(Instant, f64)>,
    time_base: f64,
    url: String,
    /// The frame queue's receiving end, to drop the oldest frame from when it is full.
    drop_from: Option<Receiver<Frame>>,
    /// Source busy time when the previous frame left, to time each frame's decoding.
    busy_at_last_frame: u64,
    /// See [`Source::with_frame_pool`].
    frame_pool: Option<Arc<BufferPool>>,
    /// The pipeline's stop: bounds every wait of the decode path.
    stop: Arc<AtomicBool>,
    /// The decoder's own timestamp of the last frame sent, before any offset: a replay
    /// after an NVDEC failure sends only frames later than it.
    last_raw_timestamp: Option<i64>,
    /// Set while frames come from a replay (see [`decoder`]).
    replaying: bool,
    /// Frames a replay decoded, sent or not.
    replayed_frames: u64,
}

impl DecodeState {
    fn new(
        info: &SourceInfo,
        realtime: bool,
        drop_from: Option<Receiver<Frame>>,
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
            time_base: f64::from(info.time_base),
            url: info.url.clone(),
            drop_from,
            busy_at_last_frame: 0,
            frame_pool,
            stop,
            last_raw_timestamp: None,
            replaying: false,
            replayed_frames: 0,
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Looping: the next pass starts one frame after the last frame sent.
    fn start_new_pass(&mut self) {
        if let (Some(last), Some(first)) = (self.last_pts, self.first_pts_of_pass) {
            self.pts_offset = last + self.frame_duration - (first - self.pts_offset);
        }
        self.first_pts_of_pass = None;
        self.last_raw_timestamp = None;
    }

    /// Reconnected: the new input's clock is unrelated to the old one's, so its first frame
    /// decides the offset (see `timestamp`).
    fn start_new_connection(&mut self, time_base: Rational) {
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
        let sent = match &self.drop_from {
            None => self.send_until_stopped(frame, frames),
            Some(queue) => {
                let mut frame = frame;
                loop {
                    match frames.try_send(frame) {
                        Ok(()) => break true,
                        Err(crossbeam_channel::TrySendError::Disconnected(_)) => break false,
                        Err(crossbeam_channel::TrySendError::Full(_))
                            if counters.filter_ended.load(Ordering::Relaxed) =>
                        {
                            break false
                        }
                        Err(crossbeam_channel::TrySendError::Full(back)) => {
                            if queue.try_recv().is_ok() {
                                Counters::add(&counters.frames_dropped, 1);
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
    fn drain(
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
                Err(e) if glue::is_again(&e) => return Ok(DrainEnd::Ready),
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
            // SAFETY: reading plain fields of the frame the decoder just returned.
            let concealed = unsafe {
                let raw = &*decoded.as_ptr();
                raw.decode_error_flags != 0 || raw.flags & ffmpeg::ffi::AV_FRAME_FLAG_CORRUPT != 0
            };
            if concealed {
                Counters::add(&counters.damaged_frames, 1);
            }
            let mut frame = self.convert(&decoded)?;
            frame.pts = Some(self.timestamp(&decoded));
            frame.index = self.next_index;
            self.next_index += 1;
            Counters::add_time(&counters.source_busy_ns, started.elapsed());
            Counters::add(&counters.frames_decoded, 1);
            let busy = Counters::get(&counters.source_busy_ns);
            let decode_time = busy.saturating_sub(self.busy_at_last_frame);
            self.busy_at_last_frame = busy;
            Counters::observe(&counters.stages.decode, Duration::from_nanos(decode_time));
            self.pace(frame.pts);
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
                // SAFETY: pure arithmetic.
                unsafe { ffmpeg::ffi::av_rescale_q(t, self.input_time_base.into(), self.output_time_base.into()) }
            }
        });
        if self.rebase_pending {
            if let (Some(raw), Some(last)) = (raw, self.last_pts) {
                self.pts_offset = last + self.frame_duration - raw;
            }
            self.rebase_pending = false;
        }
        let mut pts = match (raw, self.last_pts) {
            (Some(raw), _) => raw + self.pts_offset,
            (None, Some(last)) => last + self.frame_duration,
            (None, None) => 0,
        };
        if let Some(last) = self.last_pts.filter(|&last| pts <= last) {
            // Encoders refuse a timestamp that does not move forward. A live sender that
            // restarts, or lost packets, can step back: go on from the last frame instead.
            tracing::debug!(input = %self.url, "timestamp stepped back from {last} to {pts}; moved on");
            self.pts_offset += last + self.frame_duration - pts;
            pts = last + self.frame_duration;
        }
        if self.first_pts_of_pass.is_none() {
            self.first_pts_of_pass = Some(pts);
        }
        self.last_pts = Some(pts);
        pts
    }

    /// Sleeps until the frame's presentation time when pacing in real time.
    fn pace(&mut self, pts: Option<i64>) {
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
        if !due.is_finite() || (due - now).abs() > MAX_PACING_JUMP.as_secs_f64() {
            // A jump in the timestamps (a splice, a wrap, a damaged packet): pace on from
            // this frame rather than sleep until its far-off time or rush to catch up.
            tracing::debug!(input = %self.url, "timestamps jumped by {:.1} s; pacing starts again here", due - now);
            *first = seconds;
            *start = Instant::now();
            return;
        }
        if due > now {
            sleep_unless_stopped(Duration::from_secs_f64(due - now), &self.stop);
        }
    }

    /// Copies the decoded picture, converting format or size when it differs from what the
    /// pipeline was set up for (a mid-stream change is scaled to the first geometry).
    fn convert(&mut self, decoded: &ffmpeg::frame::Video) -> Result<Frame, SourceError> {
        let (format, width, height) = self.target;
        let direct = engine_format(decoded.format()) == Some(format)
            && decoded.width() as usize == width
            && decoded.height() as usize == height;
        if direct {
            return Ok(glue::frame_from_ffmpeg(decoded, format, self.frame_pool.as_ref()));
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
        Ok(glue::frame_from_ffmpeg(&converted, format, self.frame_pool.as_ref()))
    }
}

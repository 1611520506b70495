//! Opening an input: FFmpeg's open and stream probing (`demuxer`), the decoder chosen for
//! the best video stream, what the pipeline and the sink are told about the streams, and
//! retrying a live input until it opens.

use convstream_core::GpuContext;
use ffmpeg::{media, Rational};
use ffmpeg_next as ffmpeg;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::decoder::VideoDecoder;
use super::demuxer::{frame_size_problem, open_input};
use super::error::SourceError;
use super::input::Source;
use super::nvdec::NvdecProbe;
use super::watchdog::sleep_unless_stopped;
use super::watchdog::Watchdog;
use crate::ffmpeg::{
    engine_format, init, nearest_engine_format, ColorInfo, HdrMetadata, PassthroughStream, SourceInfo,
};
use crate::sink::FileId;
use crate::stats::Counters;
use convstream_config::SourceConfig;
use convstream_core::PixelFormat;

impl Source {
    /// Opens the input and its video decoder. `stop` interrupts blocking reads once set;
    /// `nvdec_probe` says whether NVDEC decodes the stream, when NVDEC is asked for; an NVDEC
    /// decoder leaves its pictures on `gpu`, when given, from its first opening.
    pub fn open(
        config: &SourceConfig,
        stop: Arc<AtomicBool>,
        nvdec_probe: &Arc<dyn NvdecProbe>,
        gpu: Option<GpuContext>,
    ) -> Result<Source, SourceError> {
        Source::open_guarded(config, stop, nvdec_probe, gpu, &[])
    }

    /// [`Source::open`] for an input that may never be one of the `protected` files (the
    /// service's config file): a local input is then opened and checked by its descriptor,
    /// and FFmpeg reads that descriptor, so no swap of the name can slip the file in.
    pub fn open_guarded(
        config: &SourceConfig,
        stop: Arc<AtomicBool>,
        nvdec_probe: &Arc<dyn NvdecProbe>,
        gpu: Option<GpuContext>,
        protected: &[FileId],
    ) -> Result<Source, SourceError> {
        init();
        let watchdog = Arc::new(Watchdog::new(stop, config));
        let (input, pipe) = open_input(config, &watchdog, protected)?;
        refuse_text(config, &input)?;
        let stream = input
            .streams()
            .best(media::Type::Video)
            .ok_or_else(|| SourceError::NoVideo {
                url: config.url.clone(),
            })?;
        let video_index = stream.index();
        let bit_depth = super::nvdec::StreamTraits::of(&stream.parameters()).bit_depth;
        let decoder = VideoDecoder::open(config, stream.parameters(), stream.time_base(), nvdec_probe, gpu)?;
        let device = decoder.device().cloned();
        let info = describe_input(config, &input, &stream, &decoder, bit_depth)?;
        let looping = super::looping::LoopState::new(decoder.is_hardware(), info.frame_rate, info.time_base);
        Ok(Source {
            decoder,
            input,
            pipe,
            watchdog,
            video_index,
            info,
            config: config.clone(),
            frame_pool: None,
            nvdec_probe: nvdec_probe.clone(),
            device,
            looping,
            protected: protected.to_vec(),
            before: None,
        })
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
        gpu: Option<GpuContext>,
    ) -> Result<Source, SourceError> {
        Source::connect_guarded(config, stop, counters, wait_first, nvdec_probe, gpu, &[])
    }

    /// [`Source::connect`] for an input that may never be one of the `protected` files (see
    /// [`Source::open_guarded`]).
    pub fn connect_guarded(
        config: &SourceConfig,
        stop: &Arc<AtomicBool>,
        counters: &Counters,
        wait_first: bool,
        nvdec_probe: &Arc<dyn NvdecProbe>,
        gpu: Option<GpuContext>,
        protected: &[FileId],
    ) -> Result<Source, SourceError> {
        if !config.is_live() {
            return Source::open_guarded(config, stop.clone(), nvdec_probe, gpu, protected);
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
            match Source::open_guarded(config, stop.clone(), nvdec_probe, gpu.clone(), protected) {
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
}

/// FFmpeg takes any text file (by its extension: .txt, .nfo, ...) for ANSI art and "plays"
/// it; for a video filter that is always a mistake, unless asked for by name.
fn refuse_text(config: &SourceConfig, input: &ffmpeg::format::context::Input) -> Result<(), SourceError> {
    if config.format.is_none() && input.format().name() == "tty" {
        return Err(SourceError::NotVideo {
            url: config.url.clone(),
            reason: "this is a text file, not a video (FFmpeg would only render the text as ANSI art; \
                     pass --input-format tty if that is really wanted)"
                .into(),
        });
    }
    Ok(())
}

/// What the source tells the pipeline and the sink about the input: its video as the
/// decoder gives it (size, the engine format frames get, colour, timing, length) and the
/// streams copied beside it. A size of zero or one no pipeline filters is refused.
fn describe_input(
    config: &SourceConfig,
    input: &ffmpeg::format::context::Input,
    stream: &ffmpeg::format::stream::Stream,
    decoder: &VideoDecoder,
    bit_depth: u32,
) -> Result<SourceInfo, SourceError> {
    let url = config.url.clone();
    let time_base = stream.time_base();
    let hardware = decoder.is_hardware();
    let format = frame_format(decoder, bit_depth, &url);
    let frame_rate = frame_rate_of(stream);
    let expected_frames = expected_frames(input, stream, frame_rate);
    let aspect_ratio = aspect_ratio_of(input, stream);
    let passthrough = passthrough_streams(input, stream.index());
    let video = decoder.video();
    let transfer = video.color_transfer_characteristic();
    let hdr = hdr_metadata(config, stream, transfer);
    let info = SourceInfo {
        url: url.clone(),
        width: video.width() as usize,
        height: video.height() as usize,
        format,
        stream_bits: if hardware {
            (bit_depth.clamp(8, 16) as u8).min(format.bits())
        } else {
            format.bits()
        },
        time_base,
        frame_rate,
        aspect_ratio,
        color: ColorInfo {
            range: video.color_range(),
            space: video.color_space(),
            primaries: video.color_primaries(),
            transfer,
        },
        hdr,
        expected_frames,
        decoder: decoder.codec().name().to_string(),
        passthrough,
        real_time: config.is_live() || config.realtime,
    };
    if info.width == 0 || info.height == 0 {
        return Err(SourceError::Decoder {
            url,
            reason: "the video stream has no frame size".into(),
        });
    }
    // The decoder's size (a stream whose header did not say it).
    frame_size_problem(info.width as c_int, info.height as c_int).map_err(|reason| SourceError::Unusable {
        url: url.clone(),
        reason,
    })?;
    Ok(info)
}

/// The engine format frames are made in: NVDEC's surfaces as they are, a software
/// decoder's pictures in the same format when the engines take it, else the nearest.
fn frame_format(decoder: &VideoDecoder, bit_depth: u32, url: &str) -> PixelFormat {
    let hardware = decoder.is_hardware();
    let decoded = decoder.video().format();
    let format = if hardware {
        // NVDEC's surfaces: NV12, P010 for 10-bit streams, P016 above.
        PixelFormat::NV12.at_depth(bit_depth.clamp(8, 16) as u8)
    } else {
        engine_format(decoded).unwrap_or_else(|| nearest_engine_format(decoded))
    };
    if !hardware && engine_format(decoded).is_none() {
        tracing::info!(input = %url, "decoded format {decoded:?} is converted to {format} for filtering");
    }
    format
}

/// The stream's frame rate: its average, else its nominal rate, else 25.
fn frame_rate_of(stream: &ffmpeg::format::stream::Stream) -> Rational {
    match stream.avg_frame_rate() {
        r if r.numerator() > 0 && r.denominator() > 0 => r,
        _ => match stream.rate() {
            r if r.numerator() > 0 && r.denominator() > 0 => r,
            _ => Rational::new(25, 1),
        },
    }
}

/// How many frames the input holds, as far as its stream or container says.
fn expected_frames(
    input: &ffmpeg::format::context::Input,
    stream: &ffmpeg::format::stream::Stream,
    frame_rate: Rational,
) -> Option<u64> {
    let time_base = stream.time_base();
    if stream.frames() > 0 {
        Some(stream.frames() as u64)
    } else if stream.duration() > 0 {
        Some((stream.duration() as f64 * f64::from(time_base) * f64::from(frame_rate)).round() as u64)
    } else if input.duration() > 0 {
        Some((input.duration() as f64 / f64::from(ffmpeg::ffi::AV_TIME_BASE) * f64::from(frame_rate)).round() as u64)
    } else {
        None
    }
}

/// The pictures' sample aspect ratio. The container's value wins over the codec's, as in
/// ffmpeg and ffprobe (Matroska, for one, keeps it only in the container).
fn aspect_ratio_of(input: &ffmpeg::format::context::Input, stream: &ffmpeg::format::stream::Stream) -> Rational {
    // SAFETY: the format context and the stream are valid; a null frame is allowed.
    unsafe {
        Rational::from(ffmpeg::ffi::av_guess_sample_aspect_ratio(
            input.as_ptr() as *mut _,
            stream.as_ptr() as *mut _,
            std::ptr::null_mut(),
        ))
    }
}

/// The audio and subtitle streams the sink may copy as they are.
fn passthrough_streams(input: &ffmpeg::format::context::Input, video_index: usize) -> Vec<PassthroughStream> {
    input
        .streams()
        .filter(|s| s.index() != video_index)
        .filter(|s| matches!(s.parameters().medium(), media::Type::Audio | media::Type::Subtitle))
        .map(|s| PassthroughStream {
            index: s.index(),
            medium: s.parameters().medium(),
            parameters: s.parameters(),
            time_base: s.time_base(),
        })
        .collect()
}

/// The stream's HDR metadata; for an HDR transfer (PQ, HLG) whose stream lacks it, what the
/// first picture carries, when the input is a local file that can be opened a second time.
fn hdr_metadata(
    config: &SourceConfig,
    stream: &ffmpeg::format::stream::Stream,
    transfer: ffmpeg::color::TransferCharacteristic,
) -> HdrMetadata {
    use ffmpeg::color::TransferCharacteristic as Transfer;
    let from_stream = HdrMetadata::of_stream(stream);
    let hdr_transfer = matches!(transfer, Transfer::SMPTE2084 | Transfer::ARIB_STD_B67);
    let complete = from_stream.mastering.is_some() && from_stream.light.is_some();
    let path = std::path::Path::new(&config.url);
    if !hdr_transfer || complete || config.is_live() || config.format.is_some() || !path.is_file() {
        return from_stream;
    }
    from_stream.or(HdrMetadata::of_first_picture(path, stream.index()))
}

//! Opening an input: FFmpeg's open and stream probing under an interrupt watchdog (a stop,
//! or a live input gone quiet, ends a blocked call), the decoder chosen for the best video
//! stream, what the sink is told about the streams, and retrying a live input until it opens.

use convstream_core::engine::GpuContext;
use ffmpeg::{media, Rational};
use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::decoder::VideoDecoder;
use super::error::SourceError;
use super::nvdec::NvdecProbe;
use super::pipe_input::PipeInput;
use super::watchdog::sleep_unless_stopped;
use super::watchdog::Watchdog;
use super::Source;
use crate::config::SourceConfig;
use crate::ffmpeg::{
    engine_format, init, nearest_engine_format, ColorInfo, HdrMetadata, PassthroughStream, SourceInfo,
};
use crate::stats::Counters;
use convstream_core::frame::PixelFormat;

extern "C" fn interrupt_requested(opaque: *mut c_void) -> c_int {
    // SAFETY: opaque is the Watchdog inside the Arc that Source keeps alive while the
    // input (and so this callback) exists.
    let watchdog = unsafe { &*(opaque as *const Watchdog) };
    watchdog.interrupted() as c_int
}

fn ffmpeg_url(url: &str) -> &str {
    if url == "-" {
        "pipe:0"
    } else {
        url
    }
}

/// Opens the input with an interrupt callback, so that a blocked network read ends on stop.
/// A FIFO (or stdin as a pipe) is read through our own [`PipeInput`], returned with the
/// input: it must outlive it.
fn open_input(
    config: &SourceConfig,
    watchdog: &Arc<Watchdog>,
) -> Result<(ffmpeg::format::context::Input, Option<PipeInput>), SourceError> {
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
    // SAFETY: plain FFmpeg C calls on valid C strings; every pointer FFmpeg returns is
    // checked before use. The interrupt callback's opaque pointer is the Watchdog in an Arc
    // that the caller keeps as long as the context (Source holds both). On failure
    // avformat_open_input frees the context itself, and after it opened the context is
    // either closed here or wrapped (and so freed) exactly once.
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
        let pipe = PipeInput::open_for(url, watchdog).map_err(|e| open_error(format!("cannot open the pipe: {e}")))?;
        let mut context = avformat_alloc_context();
        if context.is_null() {
            return Err(open_error("out of memory".into()));
        }
        if let Some(pipe) = &pipe {
            // Our reader, not FFmpeg's protocol: it is freed after the context (see PipeInput).
            (*context).pb = pipe.context;
            (*context).flags |= AVFMT_FLAG_CUSTOM_IO as c_int;
        }
        (*context).interrupt_callback = AVIOInterruptCB {
            callback: Some(interrupt_requested),
            opaque: Arc::as_ptr(watchdog) as *mut c_void,
        };
        let interrupted = |status: c_int| {
            if status == AVERROR_EXIT && !watchdog.stopped() && watchdog.expired() {
                watchdog.idle_reason()
            } else {
                crate::ffmpeg::log::ffmpeg_reason_first(describe(status))
            }
        };
        watchdog.arm();
        crate::ffmpeg::log::clear_last_error();
        // Options are handed over as FFmpeg's dictionary; what is left in it afterwards is
        // what neither the demuxer nor the protocol took.
        let mut options = ffmpeg::Dictionary::new();
        for (key, value) in &config.options {
            options.set(key, value);
        }
        let mut options = options.disown();
        let status = avformat_open_input(&mut context, c_url.as_ptr(), format as _, &mut options);
        let unknown: Vec<String> = ffmpeg::Dictionary::own(options)
            .iter()
            .map(|(key, _)| format!("`{}`", convstream_core::text::quoted(key)))
            .collect();
        if status >= 0 && !unknown.is_empty() {
            avformat_close_input(&mut context);
            return Err(SourceError::Unusable {
                url: url.clone(),
                reason: format!(
                    "source.options {}: neither the demuxer nor the protocol takes {}",
                    unknown.join(", "),
                    if unknown.len() == 1 { "it" } else { "them" }
                ),
            });
        }
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
        // Sizes from the header (raw video's video_size, a y4m or container header): an
        // absurd one is refused before a frame is read or a pool is sized for it.
        for index in 0..(*context).nb_streams as usize {
            let parameters = (**(*context).streams.add(index)).codecpar;
            if parameters.is_null() || (*parameters).codec_type != AVMediaType::AVMEDIA_TYPE_VIDEO {
                continue;
            }
            if let Err(reason) = frame_size_problem((*parameters).width, (*parameters).height) {
                avformat_close_input(&mut context);
                return Err(SourceError::Unusable {
                    url: url.clone(),
                    reason,
                });
            }
        }
        watchdog.arm();
        crate::ffmpeg::log::clear_last_error();
        let status = avformat_find_stream_info(context, std::ptr::null_mut());
        if status < 0 {
            avformat_close_input(&mut context);
            return Err(open_error(format!(
                "cannot read stream information: {}",
                interrupted(status)
            )));
        }
        Ok((ffmpeg::format::context::Input::wrap(context), pipe))
    }
}

/// The largest frame a pipeline filters, in pixels (8192x8192: above 8K UHD). Every frame
/// in flight, in the pool and in each lane is this big, so a 16000x16000 input would hold
/// gigabytes before its first frame is filtered.
pub const MAX_FRAME_PIXELS: u64 = 8192 * 8192;
/// The longest side a frame may have (FFmpeg's own limit for most codecs).
pub const MAX_FRAME_SIDE: u64 = 16384;

/// Why a `width` x `height` video cannot be filtered, if it cannot.
pub(crate) fn frame_size_problem(width: c_int, height: c_int) -> Result<(), String> {
    let (w, h) = (width.max(0) as u64, height.max(0) as u64);
    if w > MAX_FRAME_SIDE || h > MAX_FRAME_SIDE || w * h > MAX_FRAME_PIXELS {
        return Err(format!(
            "the video is {w}x{h} ({:.1} megapixels); frames of at most {:.1} megapixels (8192x8192) with sides up to {MAX_FRAME_SIDE} are filtered",
            (w * h) as f64 / 1e6,
            MAX_FRAME_PIXELS as f64 / 1e6
        ));
    }
    Ok(())
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
    /// `nvdec_probe` says whether NVDEC decodes the stream, when NVDEC is asked for; an NVDEC
    /// decoder leaves its pictures on `gpu`, when given, from its first opening.
    pub fn open(
        config: &SourceConfig,
        stop: Arc<AtomicBool>,
        nvdec_probe: &Arc<dyn NvdecProbe>,
        gpu: Option<GpuContext>,
    ) -> Result<Source, SourceError> {
        init();
        let watchdog = Arc::new(Watchdog::new(stop, config));
        let (input, pipe) = open_input(config, &watchdog)?;
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
        let bit_depth = super::nvdec::StreamTraits::of(&stream.parameters()).bit_depth;
        let decoder = VideoDecoder::open(config, stream.parameters(), time_base, nvdec_probe, gpu)?;
        let device = decoder.device().cloned();
        let hardware = decoder.is_hardware();
        let codec = decoder.codec();
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
        let transfer = video.color_transfer_characteristic();
        let hdr = hdr_metadata(config, &stream, transfer);
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
            decoder: codec.name().to_string(),
            passthrough,
            real_time: config.is_live() || config.realtime,
        };
        if info.width == 0 || info.height == 0 {
            return Err(decoder_error("the video stream has no frame size".into()));
        }
        // The decoder's size (a stream whose header did not say it).
        frame_size_problem(info.width as c_int, info.height as c_int).map_err(|reason| SourceError::Unusable {
            url: url.clone(),
            reason,
        })?;
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
        if !config.is_live() {
            return Source::open(config, stop.clone(), nvdec_probe, gpu);
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
            match Source::open(config, stop.clone(), nvdec_probe, gpu.clone()) {
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

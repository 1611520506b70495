//! FFmpeg's side of opening an input: the demuxer and protocol opened with the config's
//! options, and the streams probed, every blocking call under the interrupt watchdog (a
//! stop, or a live input gone quiet, ends it); sizes no pipeline filters are refused here.

use ffmpeg::ffi::{
    av_find_input_format, avformat_alloc_context, avformat_close_input, avformat_find_stream_info, avformat_open_input,
    AVFormatContext, AVIOInterruptCB, AVInputFormat, AVMediaType, AVERROR_EXIT, AVERROR_PROTOCOL_NOT_FOUND,
    AVFMT_FLAG_CUSTOM_IO,
};
use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;

use super::error::SourceError;
use super::pipe_input::PipeInput;
use super::watchdog::Watchdog;
use crate::sink::FileId;
use convstream_config::{OutputTarget, SourceConfig};

extern "C" fn interrupt_requested(opaque: *mut c_void) -> c_int {
    // SAFETY: opaque is the Watchdog inside the Arc that Source keeps alive while the
    // input (and so this callback) exists.
    let watchdog = unsafe { &*(opaque as *const Watchdog) };
    if watchdog.stopped() {
        // FFmpeg asks on the thread that reads: what it logs about the read it now ends is
        // not the input's fault.
        crate::ffmpeg::log::quiet_from_now();
    }
    watchdog.interrupted() as c_int
}

/// The protocol FFmpeg looks for to open `url`, by its own rule (libavformat's
/// `url_find_protocol`): the letters, digits, `+`, `-` and `.` it begins with, when a `:`
/// follows them (`udp://host`, and `lavfi:testsrc` too); none for a plain path.
fn ffmpeg_protocol(url: &str) -> Option<&str> {
    let end = url.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))?;
    (end > 0 && url[end..].starts_with(':')).then(|| &url[..end])
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
pub(super) fn open_input(
    config: &SourceConfig,
    watchdog: &Arc<Watchdog>,
    protected: &[FileId],
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
    let format = input_format(config)?;
    let pipe = match guarded_file(url, protected)? {
        Some(Guarded::Regular(file)) => {
            Some(PipeInput::over_file(file, watchdog).map_err(|e| open_error(e.to_string()))?)
        }
        Some(Guarded::Fifo(file)) => Some(PipeInput::over_fifo(file, watchdog).map_err(|e| open_error(e.to_string()))?),
        None => PipeInput::open_for(url, watchdog).map_err(|e| open_error(format!("cannot open the pipe: {e}")))?,
    };
    let context = allocate_context(pipe.as_ref(), watchdog).ok_or_else(|| open_error("out of memory".into()))?;
    let context = open_context(context, &c_url, format, config, watchdog)?;
    let context = find_stream_info(context, url, watchdog)?;
    // SAFETY: `context` is an opened format context that nothing else owns: wrapped (and
    // so freed) exactly once.
    Ok((unsafe { ffmpeg::format::context::Input::wrap(context) }, pipe))
}

/// A local input opened and checked here, to be read through its descriptor.
enum Guarded {
    Regular(std::fs::File),
    Fifo(std::fs::File),
}

/// With files no input may be (`protected`: the service's config file), a local input is
/// opened here (without blocking, so a FIFO waits for no writer) and checked by its
/// descriptor, then read through that descriptor ([`PipeInput`]): what is checked is what is
/// read, whatever happens to the name meanwhile. `None` when nothing is protected, for
/// URLs, for names no file has (a pattern) and for devices (a camera), which FFmpeg's own
/// protocol opens.
fn guarded_file(url: &str, protected: &[FileId]) -> Result<Option<Guarded>, SourceError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    if protected.is_empty() {
        return Ok(None);
    }
    let OutputTarget::File(path) = OutputTarget::of(url) else {
        return Ok(None);
    };
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path);
    // No file of that name (an image sequence's `img%03d.png`, a name not there yet): FFmpeg
    // opens what it means and says why not, as without protected files.
    let Ok(file) = opened else {
        return Ok(None);
    };
    let meta = file.metadata().map_err(|e| SourceError::Open {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    if protected.contains(&FileId::of(&meta)) {
        return Err(SourceError::Unusable {
            url: url.to_string(),
            reason: "it is the service's own config file; a pipeline never reads it".into(),
        });
    }
    Ok(match meta.file_type() {
        kind if kind.is_file() => Some(Guarded::Regular(file)),
        kind if kind.is_fifo() => Some(Guarded::Fifo(file)),
        _ => None,
    })
}

/// The demuxer the config names (`source.format`), or null to let FFmpeg probe.
fn input_format(config: &SourceConfig) -> Result<*const AVInputFormat, SourceError> {
    let Some(name) = &config.format else {
        return Ok(std::ptr::null());
    };
    let c_format = CString::new(name.as_str()).map_err(|_| SourceError::Open {
        url: config.url.clone(),
        reason: "format contains a NUL byte".into(),
    })?;
    // SAFETY: a valid C string; the answer is a static demuxer description or null.
    let found = unsafe { av_find_input_format(c_format.as_ptr()) };
    if found.is_null() {
        return Err(SourceError::UnknownFormat {
            url: config.url.clone(),
            format: name.clone(),
        });
    }
    Ok(found)
}

/// A new format context reading through `pipe` when given, whose blocking calls ask
/// `watchdog` whether to give up; `None` when out of memory.
fn allocate_context(pipe: Option<&PipeInput>, watchdog: &Arc<Watchdog>) -> Option<*mut AVFormatContext> {
    // SAFETY: a fresh context is checked for null before use. The interrupt callback's
    // opaque pointer is the Watchdog in an Arc that the caller keeps as long as the context
    // (Source holds both); the pipe's AVIO context outlives the format context too.
    unsafe {
        let context = avformat_alloc_context();
        if context.is_null() {
            return None;
        }
        if let Some(pipe) = pipe {
            // Our reader, not FFmpeg's protocol: it is freed after the context (see PipeInput).
            (*context).pb = pipe.context;
            (*context).flags |= AVFMT_FLAG_CUSTOM_IO as c_int;
        }
        (*context).interrupt_callback = AVIOInterruptCB {
            callback: Some(interrupt_requested),
            opaque: Arc::as_ptr(watchdog) as *mut c_void,
        };
        Some(context)
    }
}

/// Why a call that returned `status` failed: the watchdog's reason when a live input went
/// quiet, else FFmpeg's.
fn failure_reason(status: c_int, watchdog: &Watchdog) -> String {
    if status == AVERROR_EXIT && !watchdog.stopped() && watchdog.expired() {
        watchdog.idle_reason()
    } else {
        crate::ffmpeg::log::ffmpeg_reason_first(describe(status))
    }
}

/// Opens `context` on the input with the config's options. An option neither the demuxer
/// nor the protocol takes, a protocol this build lacks and a frame size no pipeline filters
/// make the input unusable. On an error the context is freed (by FFmpeg, or here).
fn open_context(
    mut context: *mut AVFormatContext,
    c_url: &CString,
    format: *const AVInputFormat,
    config: &SourceConfig,
    watchdog: &Watchdog,
) -> Result<*mut AVFormatContext, SourceError> {
    let url = &config.url;
    watchdog.arm();
    crate::ffmpeg::log::clear_last_error();
    // Options are handed over as FFmpeg's dictionary; what is left in it afterwards is
    // what neither the demuxer nor the protocol took.
    let mut options = ffmpeg::Dictionary::new();
    for (key, value) in &config.options {
        options.set(key, value);
    }
    // SAFETY: `context` is a fresh context, `c_url` a valid C string, `format` a static
    // demuxer description or null. The dictionary's ownership passes to `options` and back
    // to a Dictionary (which frees it) right after the call. On failure
    // avformat_open_input frees the context itself; after it opened, the context is closed
    // here on every error.
    unsafe {
        let mut options = options.disown();
        let status = avformat_open_input(&mut context, c_url.as_ptr(), format as _, &mut options);
        let unknown: Vec<String> = ffmpeg::Dictionary::own(options)
            .iter()
            .map(|(key, _)| format!("`{}`", convstream_core::quoted(key)))
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
            let scheme = ffmpeg_protocol(url).unwrap_or("file");
            return Err(SourceError::Unusable {
                url: url.clone(),
                reason: format!(
                    "this FFmpeg build has no `{}` protocol (`convstream doctor` lists what it has)",
                    convstream_core::quoted(scheme)
                ),
            });
        }
        if status < 0 {
            return Err(SourceError::Open {
                url: url.clone(),
                reason: failure_reason(status, watchdog),
            });
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
    }
    Ok(context)
}

/// Reads the streams' information from the opened `context`; on an error it is closed.
fn find_stream_info(
    mut context: *mut AVFormatContext,
    url: &str,
    watchdog: &Watchdog,
) -> Result<*mut AVFormatContext, SourceError> {
    watchdog.arm();
    crate::ffmpeg::log::clear_last_error();
    // SAFETY: `context` is an opened format context owned here; it is closed (and freed)
    // once on failure and returned untouched otherwise.
    let status = unsafe { avformat_find_stream_info(context, std::ptr::null_mut()) };
    if status < 0 {
        // SAFETY: as above.
        unsafe { avformat_close_input(&mut context) };
        return Err(SourceError::Open {
            url: url.to_string(),
            reason: format!("cannot read stream information: {}", failure_reason(status, watchdog)),
        });
    }
    Ok(context)
}

/// The largest frame a pipeline filters, in pixels (8192x8192: above 8K UHD). Every frame
/// in flight, in the pool and in each lane is this big, so a 16000x16000 input would hold
/// gigabytes before its first frame is filtered.
pub const MAX_FRAME_PIXELS: u64 = 8192 * 8192;
/// The longest side a frame may have (FFmpeg's own limit for most codecs).
pub const MAX_FRAME_SIDE: u64 = 16384;

/// Why a `width` x `height` video cannot be filtered, if it cannot.
pub(super) fn frame_size_problem(width: c_int, height: c_int) -> Result<(), String> {
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

//! The video encoder of a sink: picks a codec and pixel format the container takes,
//! converts frames when it must, and keeps timestamps.
//!
//! One job at some length (about 600 lines): codec choice, pixel-format negotiation, option
//! checks and frame lending all act on one encoder context while it is opened.

use ffmpeg::format::Pixel;
use ffmpeg::{codec, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::ffi::c_void;
use std::sync::Arc;

use crate::config::SinkConfig;
use crate::media::encoders::{default_bit_rate, encoder_usable, first_usable, DEFAULT_ENCODERS};
use crate::media::{
    encoder_named, ffmpeg_format, ffv1_unavailable, is_again, lossless_options, lossless_unavailable, muxer_takes,
    ColorInfo, SourceInfo,
};
use convstream_core::frame::{Frame, PixelFormat, PixelLayout};

/// Pixel formats the YUV4MPEG2 muxer writes: planar YUV at 8 to 16 bits (`C420p10` and
/// the like above 8) and grey at 8, 9, 10, 12 and 16.
fn y4m_formats() -> Vec<Pixel> {
    PixelFormat::all()
        .filter(|f| match f.layout() {
            PixelLayout::Yuv420 | PixelLayout::Yuv422 | PixelLayout::Yuv444 => true,
            PixelLayout::Gray => f.bits() != 14,
            _ => false,
        })
        .map(ffmpeg_format)
        .collect()
}

/// A swscale context moved to the sink thread.
struct Converter(ffmpeg::software::scaling::Context);

// SAFETY: an SwsContext has no thread affinity; the sink uses it from one thread at a time.
unsafe impl Send for Converter {}

pub struct VideoEncoder {
    /// The encoder, its settings and format, for the summary.
    description: String,
    encoder: ffmpeg::encoder::Video,
    codec: ffmpeg::Codec,
    format: Pixel,
    time_base: Rational,
    in_time_base: Rational,
    last_pts: Option<i64>,
    converter: Option<Converter>,
    color: ColorInfo,
}

/// Whether the output's container can hold `id` (see [`muxer_takes`]).
pub(crate) fn container_accepts(output: &ffmpeg::format::context::Output, id: codec::Id) -> bool {
    muxer_takes(&output.format(), id)
}

fn choose_codec(config: &SinkConfig, output: &ffmpeg::format::context::Output) -> Result<ffmpeg::Codec, String> {
    let container = output.format().name().to_string();
    let by_name = |name: &str| encoder_named(name).filter(|c| c.is_video());
    if container == "yuv4mpegpipe" {
        return by_name("wrapped_avframe")
            .ok_or_else(|| "this FFmpeg build lacks the wrapped_avframe encoder YUV4MPEG2 needs".into());
    }
    if container == "rawvideo" {
        return by_name("rawvideo").ok_or_else(|| "this FFmpeg build lacks the rawvideo encoder".into());
    }
    if let Some(name) = &config.codec {
        let codec = by_name(name).ok_or_else(|| format!("this FFmpeg build has no video encoder named `{name}`"))?;
        if !container_accepts(output, codec.id()) {
            return Err(format!("the {container} container cannot hold {name} video"));
        }
        if config.lossless && lossless_options(name).is_none() {
            return Err(lossless_unavailable(name));
        }
        return Ok(codec);
    }
    if config.lossless {
        let codec = by_name("ffv1").ok_or("lossless output needs the ffv1 encoder, which this FFmpeg build lacks")?;
        if !container_accepts(output, codec.id()) {
            return Err(ffv1_unavailable(&container));
        }
        return Ok(codec);
    }
    let (chosen, passed_over) = first_usable(DEFAULT_ENCODERS, |name| {
        encoder_usable(name)?;
        match by_name(name) {
            Some(codec) if container_accepts(output, codec.id()) => Ok(()),
            _ => Err(format!("the {container} container cannot hold it")),
        }
    });
    let codec = chosen.and_then(by_name).ok_or_else(|| {
        format!(
            "no default video encoder ({}) fits the {container} container; set sink.codec",
            DEFAULT_ENCODERS.join(", ")
        )
    })?;
    if passed_over.is_empty() {
        tracing::info!(output = %config.url, "video encoder: {} (the default)", codec.name());
    } else {
        tracing::info!(output = %config.url, "video encoder: {} (passed over: {})", codec.name(), passed_over.join("; "));
    }
    Ok(codec)
}

/// The pixel format to encode in: the frames' own when the encoder takes it, else the
/// nearest one it takes: the stream's depth first (`stream_bits`; then deeper, then
/// shallower), and at each depth the frames' own kind of layout before 4:2:0.
fn choose_format(codec: &ffmpeg::Codec, container: &str, frames: PixelFormat, stream_bits: u8) -> Pixel {
    let wanted = ffmpeg_format(frames);
    let supported: Vec<Pixel> = if container == "yuv4mpegpipe" {
        y4m_formats()
    } else {
        codec
            .video()
            .ok()
            .and_then(|v| v.formats().map(|f| f.collect()))
            .unwrap_or_default()
    };
    if supported.is_empty() || supported.contains(&wanted) {
        return wanted;
    }
    let layouts: &[PixelLayout] = match frames.layout() {
        PixelLayout::Rgb | PixelLayout::Bgr | PixelLayout::Gbr => &[
            PixelLayout::Gbr,
            PixelLayout::Rgb,
            PixelLayout::Bgr,
            PixelLayout::Yuv444,
        ],
        PixelLayout::Yuv444 => &[PixelLayout::Yuv444],
        PixelLayout::Yuv422 => &[PixelLayout::Yuv422],
        PixelLayout::Gray => &[PixelLayout::Gray],
        PixelLayout::Yuv420 | PixelLayout::SemiPlanar420 => &[PixelLayout::SemiPlanar420],
    };
    let bits = stream_bits.clamp(8, frames.bits());
    let mut depths: Vec<u8> = (bits..=16).collect();
    depths.extend((8..bits).rev());
    depths
        .into_iter()
        .flat_map(|depth| {
            layouts
                .iter()
                .chain(&[PixelLayout::Yuv420])
                .filter_map(move |&layout| PixelFormat::new(layout, depth))
        })
        .map(ffmpeg_format)
        .find(|p| supported.contains(p))
        .unwrap_or(supported[0])
}

/// Significant bits per sample of an FFmpeg pixel format (8 if it cannot be told).
fn bits_of(pixel: Pixel) -> u8 {
    // SAFETY: a descriptor from av_pix_fmt_desc_get is static; reading its first component.
    pixel
        .descriptor()
        .map_or(8, |desc| unsafe { (*desc.as_ptr()).comp[0].depth } as u8)
}

impl VideoEncoder {
    pub fn new(
        config: &SinkConfig,
        source: &SourceInfo,
        output: &ffmpeg::format::context::Output,
    ) -> Result<VideoEncoder, EncoderSetupError> {
        let codec = choose_codec(config, output)?;
        let container = output.format().name().to_string();
        let format = choose_format(&codec, &container, source.format, source.stream_bits);
        if bits_of(format) < source.stream_bits {
            tracing::warn!(
                output = %config.url,
                "the {} encoder cannot take {}-bit {}: frames are converted to {} (choose an encoder that keeps the depth, such as ffv1 or libx265, or set --depth to filter at the lower depth)",
                codec.name(),
                source.stream_bits,
                source.format,
                pixel_name(format)
            );
        } else if format != ffmpeg_format(source.format) {
            tracing::info!(output = %config.url, "frames are converted from {} to {} for the {} encoder", source.format, pixel_name(format), codec.name());
        }
        let frame_time_base = source.frame_rate.invert();
        // Keep the input's time base so timestamps survive exactly, except where the codec or
        // container needs a frame-rate time base.
        let time_base = match (codec.name(), container.as_str()) {
            (_, "yuv4mpegpipe" | "rawvideo") => frame_time_base,
            ("mpeg1video" | "mpeg2video", _) => frame_time_base,
            ("mpeg4", _) if source.time_base.denominator() > 65535 => frame_time_base,
            _ => source.time_base,
        };
        let mut encoder = codec::Context::new_with_codec(codec)
            .encoder()
            .video()
            .map_err(|e| format!("cannot set up the {} encoder: {e}", codec.name()))?;
        encoder.set_width(source.width as u32);
        encoder.set_height(source.height as u32);
        encoder.set_format(format);
        encoder.set_time_base(time_base);
        encoder.set_frame_rate(Some(source.frame_rate));
        if source.aspect_ratio.numerator() > 0 {
            encoder.set_aspect_ratio(source.aspect_ratio);
        }
        encoder.set_colorspace(source.color.space);
        encoder.set_color_range(source.color.range);
        // SAFETY: `encoder` owns a valid AVCodecContext that is not open yet, so nothing else
        // reads it; plain fields are written before avcodec_open2 takes them.
        unsafe {
            let raw = encoder.as_mut_ptr();
            (*raw).color_primaries = source.color.primaries.into();
            (*raw).color_trc = source.color.transfer.into();
            (*raw).thread_count = 0;
        }
        if output.format().flags().contains(ffmpeg::format::Flags::GLOBAL_HEADER) {
            encoder.set_flags(codec::Flags::GLOBAL_HEADER);
        }
        let mut options = Dictionary::new();
        for (key, value) in &config.options {
            if let "q" | "qscale" = key.as_str() {
                // The CLI's `-q:v` / `-qscale:v`: a fixed quantiser, which FFmpeg's library
                // takes as a flag and a quality, not as an option.
                let quality: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|q: &f64| q.is_finite() && (0.0..=1024.0).contains(q))
                    .ok_or_else(|| format!("sink.options.{key} = {value:?} is not a quantiser (a number such as 2)"))?;
                let flags = encoder_flags(&encoder);
                encoder.set_flags(flags | codec::Flags::QSCALE);
                encoder.set_global_quality((quality * f64::from(ffmpeg::ffi::FF_QP2LAMBDA)).round() as i32);
                continue;
            }
            options.set(key, value);
        }
        match codec.name() {
            // mpeg4's default 200 kb/s ruins filtered detail; a fixed quantiser keeps it.
            "mpeg4" | "mpeg2video" if !sets_rate_control(config) => {
                let flags = encoder_flags(&encoder);
                encoder.set_flags(flags | codec::Flags::QSCALE);
                encoder.set_global_quality(2 * ffmpeg::ffi::FF_QP2LAMBDA);
            }
            // FFmpeg's own libx264 defaults (preset medium, crf 23) for files. A real-time
            // input gets what live encoders use: a look-ahead of 40 frames and B-frames would
            // hold back nearly two seconds of video at 25 fps.
            "libx264"
                if source.real_time
                    && !config.options.contains_key("preset")
                    && !config.options.contains_key("tune") =>
            {
                options.set("preset", "veryfast");
                options.set("tune", "zerolatency");
            }
            // Rate-controlled encoders whose own default (2 Mb/s) starves large pictures.
            "libopenh264" | "h264_nvenc" | "hevc_nvenc" if !config.options.contains_key("b") => {
                let fps = f64::from(source.frame_rate);
                encoder.set_bit_rate(default_bit_rate(source.width, source.height, fps));
            }
            _ => {}
        }
        if config.lossless {
            // The encoder's lossless mode, unless the config sets those options itself.
            for (key, value) in lossless_options(codec.name()).unwrap_or(&[]) {
                if !config.options.contains_key(*key) {
                    options.set(key, value);
                }
            }
        }
        if codec.name() == "libx265" {
            // HDR metadata into the bitstream too (SEI), where the user's x265-params do not
            // already set it: what an MPEG-TS output has no other place for.
            let mut params: Vec<String> = options
                .get("x265-params")
                .map(|p| p.split(':').filter(|p| !p.is_empty()).map(String::from).collect())
                .unwrap_or_default();
            for param in source.hdr.x265_params() {
                let key = param.split('=').next().unwrap_or_default();
                if !params.iter().any(|p| p.split('=').next() == Some(key)) {
                    params.push(param);
                }
            }
            if !params.is_empty() {
                options.set("x265-params", &params.join(":"));
            }
        }
        let settings = settings_text(&options);
        let (encoder, unused) = open_reporting_unused(encoder, codec, options);
        if !unused.is_empty() {
            return Err(EncoderSetupError {
                reason: format!(
                    "the {} encoder has no option {} (`ffmpeg -h encoder={}` lists what it takes)",
                    codec.name(),
                    unused.join(", "),
                    codec.name()
                ),
                unsuitable_input: true,
            });
        }
        let encoder = encoder.map_err(|e| {
            let hint = odd_size_hint(format, source.width, source.height);
            EncoderSetupError {
                reason: format!(
                    "cannot open the {} encoder for {}x{} {format:?}: {e}{}",
                    codec.name(),
                    source.width,
                    source.height,
                    hint.as_deref().map(|hint| format!("; {hint}")).unwrap_or_default()
                ),
                unsuitable_input: hint.is_some(),
            }
        })?;
        // FFV1 and its kind are lossless whatever they are given; others when asked to be.
        let always_lossless = lossless_options(codec.name()).is_some_and(|options| options.is_empty());
        let description = describe_encoder(&encoder, codec, &settings, format, config.lossless || always_lossless);
        tracing::info!(output = %config.url, "encoding {description}");
        Ok(VideoEncoder {
            description,
            encoder,
            codec,
            format,
            time_base,
            in_time_base: source.time_base,
            last_pts: None,
            converter: None,
            color: source.color,
        })
    }

    /// The encoder, the settings it was given and the pixel format, e.g.
    /// `libx264 (crf=18, preset=slow), yuv420p`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether packets are compressed video (not YUV4MPEG2's or rawvideo's frames as they
    /// are): only then does a bitrate mean anything.
    pub fn compresses(&self) -> bool {
        !is_uncompressed(self.codec.name())
    }

    pub fn codec(&self) -> ffmpeg::Codec {
        self.codec
    }

    pub fn time_base(&self) -> Rational {
        self.time_base
    }

    pub fn parameters(&self) -> codec::Parameters {
        codec::Parameters::from(&self.encoder)
    }

    /// Encodes one frame; its timestamp is carried over (made strictly increasing if a
    /// coarser time base merges two).
    pub fn send(&mut self, frame: Frame) -> Result<(), ffmpeg::Error> {
        let pts = frame
            .pts
            .map(|p| p.rescale_ts_between(self.in_time_base, self.time_base));
        let mut picture = self.picture_of(frame)?;
        let pts = match (pts, self.last_pts) {
            (Some(p), Some(last)) if p <= last => last + 1,
            (Some(p), _) => p,
            (None, Some(last)) => last + 1,
            (None, None) => 0,
        };
        self.last_pts = Some(pts);
        picture.set_pts(Some(pts));
        picture.set_color_range(self.color.range);
        picture.set_color_space(self.color.space);
        picture.set_color_primaries(self.color.primaries);
        picture.set_color_transfer_characteristic(self.color.transfer);
        self.encoder.send_frame(&picture)
    }

    pub fn send_eof(&mut self) -> Result<(), ffmpeg::Error> {
        self.encoder.send_eof()
    }

    /// The next encoded packet, if the encoder has one ready.
    pub fn receive(&mut self) -> Result<Option<Packet>, ffmpeg::Error> {
        let mut packet = Packet::empty();
        match self.encoder.receive_packet(&mut packet) {
            Ok(()) => Ok(Some(packet)),
            Err(ffmpeg::Error::Eof) => Ok(None),
            Err(e) if is_again(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The frame as the encoder takes it: its own planes, lent to FFmpeg without a copy
    /// (see [`lend_to_ffmpeg`]), or converted when the encoder needs another format.
    fn picture_of(&mut self, frame: Frame) -> Result<ffmpeg::frame::Video, ffmpeg::Error> {
        let source_format = ffmpeg_format(frame.format);
        let (width, height) = (frame.width as u32, frame.height as u32);
        let picture = lend_to_ffmpeg(frame)?;
        if source_format == self.format {
            return Ok(picture);
        }
        if self.converter.is_none() {
            let context = ffmpeg::software::scaling::Context::get(
                source_format,
                width,
                height,
                self.format,
                width,
                height,
                ffmpeg::software::scaling::Flags::BICUBIC,
            )?;
            self.converter = Some(Converter(context));
        }
        let mut converted = ffmpeg::frame::Video::empty();
        if let Some(Converter(context)) = self.converter.as_mut() {
            context.run(&picture, &mut converted)?;
        }
        Ok(converted)
    }
}

/// A frame as an FFmpeg picture that points at the frame's own planes: each plane becomes
/// a read-only reference-counted buffer holding the frame, which is dropped (its pooled
/// planes going back to their pool) when the encoder lets go of the last one. An encoder
/// that wants to write to its input copies it first, as FFmpeg's read-only flag tells it.
fn lend_to_ffmpeg(frame: Frame) -> Result<ffmpeg::frame::Video, ffmpeg::Error> {
    use ffmpeg::ffi;
    let format = ffmpeg_format(frame.format);
    let (width, height) = (frame.width as i32, frame.height as i32);
    let planes: Vec<(*const u8, usize, usize)> = frame
        .planes
        .iter()
        .map(|plane| (plane.data.as_ptr(), plane.stride, plane.data.len()))
        .collect();
    let owner = Arc::new(LentFrame { _frame: frame });
    let mut picture = ffmpeg::frame::Video::empty();
    // SAFETY: `picture` owns a freshly allocated AVFrame that nothing else references. Each
    // buffer points at a plane of the frame held by `owner`; its free callback drops one
    // count of that Arc (made by `into_raw` here), so the planes outlive every buffer, and
    // the buffers are read-only so no encoder writes to them. A buffer that cannot be made
    // gives its count back at once; the ones already attached are freed with `picture`.
    unsafe {
        let raw = picture.as_mut_ptr();
        (*raw).width = width;
        (*raw).height = height;
        (*raw).format = ffi::AVPixelFormat::from(format) as i32;
        for (index, (bytes, stride, len)) in planes.into_iter().enumerate() {
            let opaque = Arc::into_raw(owner.clone()) as *mut c_void;
            let buffer = ffi::av_buffer_create(
                bytes as *mut u8,
                len,
                Some(release_lent_frame),
                opaque,
                ffi::AV_BUFFER_FLAG_READONLY,
            );
            if buffer.is_null() {
                drop(Arc::from_raw(opaque as *const LentFrame));
                return Err(ffmpeg::Error::Other {
                    errno: ffmpeg::util::error::ENOMEM,
                });
            }
            (*raw).buf[index] = buffer;
            (*raw).data[index] = bytes as *mut u8;
            (*raw).linesize[index] = stride as i32;
        }
    }
    Ok(picture)
}

/// A frame whose planes FFmpeg buffers point at (see [`lend_to_ffmpeg`]).
struct LentFrame {
    /// Held, never read: its planes are what the buffers point at.
    _frame: Frame,
}

/// FFmpeg's free callback of a lent plane: one count of its frame goes.
unsafe extern "C" fn release_lent_frame(opaque: *mut c_void, _data: *mut u8) {
    // SAFETY: `opaque` is a count made by `Arc::into_raw` in `lend_to_ffmpeg`, given back
    // exactly once, here, when FFmpeg frees the buffer.
    drop(unsafe { Arc::from_raw(opaque as *const LentFrame) });
}

/// Why the video encoder could not be set up.
#[derive(Debug)]
pub struct EncoderSetupError {
    pub reason: String,
    /// The input does not suit the encoder as asked (an odd size for subsampled chroma):
    /// the user's choice of encoder or size must change, a usage error.
    pub unsuitable_input: bool,
}

impl From<String> for EncoderSetupError {
    fn from(reason: String) -> Self {
        EncoderSetupError {
            reason,
            unsuitable_input: false,
        }
    }
}

/// Why a subsampled format at an odd size may be refused, and what to do about it.
fn odd_size_hint(format: Pixel, width: usize, height: usize) -> Option<String> {
    let descriptor = format.descriptor()?;
    let odd_width = descriptor.log2_chroma_w() > 0 && width % 2 == 1;
    let odd_height = descriptor.log2_chroma_h() > 0 && height % 2 == 1;
    (odd_width || odd_height).then(|| {
        format!(
            "most encoders need an even width{} for {format:?} (its chroma is subsampled): crop or scale the input to an even size first (ffmpeg -vf crop=trunc(iw/2)*2:trunc(ih/2)*2), or write it with --codec ffv1 (.mkv, .nut) or mpeg4, which take odd sizes",
            if descriptor.log2_chroma_h() > 0 { " and height" } else { "" }
        )
    })
}

/// The "encoders" that pass pictures through as they are.
fn is_uncompressed(name: &str) -> bool {
    matches!(name, "wrapped_avframe" | "rawvideo")
}

/// Whether the sink's options choose a rate control of their own (a bitrate or a quantiser).
fn sets_rate_control(config: &SinkConfig) -> bool {
    const RATE_CONTROL: &[&str] = &[
        "b",
        "q",
        "qscale",
        "global_quality",
        "maxrate",
        "minrate",
        "bufsize",
        "crf",
        "qp",
    ];
    config.options.keys().any(|key| RATE_CONTROL.contains(&key.as_str()))
}

/// Opens the encoder with `options`, as `open_as_with` does, and returns the options the
/// encoder did not take (a misspelt or foreign option would otherwise be ignored).
fn open_reporting_unused(
    mut encoder: ffmpeg::encoder::video::Video,
    codec: ffmpeg::Codec,
    options: Dictionary,
) -> (Result<ffmpeg::encoder::Video, ffmpeg::Error>, Vec<String>) {
    // SAFETY: the dictionary's ownership passes to `raw_options`, which is given back to a
    // Dictionary (and so freed) below.
    let mut raw_options = unsafe { options.disown() };
    // SAFETY: `encoder` owns a valid, unopened AVCodecContext; `codec` is an encoder FFmpeg
    // returned; avcodec_open2 replaces `raw_options` with the entries it did not use, which
    // are owned (and freed) by the Dictionary made from them right after.
    let status = unsafe { ffmpeg::ffi::avcodec_open2(encoder.as_mut_ptr(), codec.as_ptr(), &mut raw_options) };
    // SAFETY: as above: `raw_options` is a dictionary FFmpeg allocated (or null).
    let unused = unsafe { Dictionary::own(raw_options) };
    let unused: Vec<String> = unused
        .iter()
        .map(|(key, _)| format!("`{}`", convstream_core::text::quoted(key)))
        .collect();
    let opened = match status {
        0 => Ok(ffmpeg::encoder::video::Encoder(encoder)),
        e => Err(ffmpeg::Error::from(e)),
    };
    (opened, unused)
}

/// The options given to an encoder, as `key=value, ...`.
fn settings_text(options: &Dictionary) -> Vec<String> {
    options.iter().map(|(key, value)| format!("{key}={value}")).collect()
}

/// `libx264 (crf=18, preset=slow), yuv420p` or `ffv1 (lossless), yuv420p`, as far as known.
fn describe_encoder(
    encoder: &ffmpeg::encoder::Video,
    codec: ffmpeg::Codec,
    settings: &[String],
    format: Pixel,
    lossless: bool,
) -> String {
    if is_uncompressed(codec.name()) {
        return format!("uncompressed {}", pixel_name(format));
    }
    if lossless {
        // A lossless encoder has no rate to report: the context's bit_rate is FFmpeg's
        // default (200 kb/s), which FFV1 never reads.
        let settings: Vec<String> = std::iter::once("lossless".to_string())
            .chain(settings.iter().cloned())
            .collect();
        return format!("{} ({}), {}", codec.name(), settings.join(", "), pixel_name(format));
    }
    let mut settings = settings.to_vec();
    // SAFETY: reading plain fields of an open codec context.
    let (bit_rate, global_quality, flags) = unsafe {
        let raw = &*encoder.as_ptr();
        (raw.bit_rate, raw.global_quality, raw.flags)
    };
    if flags & ffmpeg::ffi::AV_CODEC_FLAG_QSCALE as i32 != 0 {
        settings.push(format!("q={}", global_quality / ffmpeg::ffi::FF_QP2LAMBDA));
    } else if bit_rate > 0 && !settings.iter().any(|s| s.starts_with("b=")) {
        settings.push(format!("b={}k", bit_rate / 1000));
    }
    let name = pixel_name(format);
    if settings.is_empty() {
        format!("{}, {name}", codec.name())
    } else {
        format!("{} ({}), {name}", codec.name(), settings.join(", "))
    }
}

fn encoder_flags(encoder: &ffmpeg::encoder::video::Video) -> codec::Flags {
    // SAFETY: reading a plain field of a valid codec context.
    codec::Flags::from_bits_truncate(unsafe { (*encoder.as_ptr()).flags } as _)
}

/// `av_rescale_q` on a timestamp.
trait RescaleBetween {
    fn rescale_ts_between(self, from: Rational, to: Rational) -> i64;
}

impl RescaleBetween for i64 {
    fn rescale_ts_between(self, from: Rational, to: Rational) -> i64 {
        // SAFETY: av_rescale_q only computes with its integer arguments; no memory is touched.
        unsafe { ffmpeg::ffi::av_rescale_q(self, from.into(), to.into()) }
    }
}

/// FFmpeg's name of a pixel format (`yuv420p10le`).
fn pixel_name(pixel: Pixel) -> &'static str {
    pixel.descriptor().map_or("unknown", |desc| desc.name())
}

//! Setting an encoder up for the source's frames before it opens: the time base, the
//! context (size, format, colour, threads), the user's options (a fixed quantiser among
//! them), each encoder's own defaults where the user set none, lossless and HDR options.

use ffmpeg::format::Pixel;
use ffmpeg::{codec, Dictionary, Rational};
use ffmpeg_next as ffmpeg;

use super::choice::{bits_of, pixel_name};
use super::opening::{encoder_flags, sets_rate_control};
use crate::ffmpeg::encoders::default_bit_rate;
use crate::ffmpeg::{ffmpeg_format, lossless_options, SourceInfo};
use convstream_config::SinkConfig;

/// Says when frames are converted for the encoder: a warning when depth is lost.
pub(super) fn log_conversion(config: &SinkConfig, source: &SourceInfo, codec: &ffmpeg::Codec, format: Pixel) {
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
}

/// The encoder's time base: the input's, so timestamps survive exactly, except where the
/// codec or container needs a frame-rate time base.
pub(super) fn time_base_for(codec: &ffmpeg::Codec, container: &str, source: &SourceInfo) -> Rational {
    let frame_time_base = source.frame_rate.invert();
    match (codec.name(), container) {
        (_, "yuv4mpegpipe" | "rawvideo") => frame_time_base,
        ("mpeg1video" | "mpeg2video", _) => frame_time_base,
        ("mpeg4", _) if source.time_base.denominator() > 65535 => frame_time_base,
        _ => source.time_base,
    }
}

/// The encoder's context, not yet open: the source's size, aspect and colour, `format`,
/// `time_base`, FFmpeg's choice of threads, and a global header where the container wants one.
pub(super) fn context(
    codec: ffmpeg::Codec,
    source: &SourceInfo,
    format: Pixel,
    time_base: Rational,
    output: &ffmpeg::format::context::Output,
) -> Result<ffmpeg::encoder::video::Video, String> {
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
    Ok(encoder)
}

/// The user's encoder options. `q` and `qscale` (the CLI's `-q:v` / `-qscale:v`) are a fixed
/// quantiser, which FFmpeg's library takes as a flag and a quality on `encoder`, not as an
/// option.
pub(super) fn user_options(
    config: &SinkConfig,
    encoder: &mut ffmpeg::encoder::video::Video,
) -> Result<Dictionary<'static>, String> {
    let mut options = Dictionary::new();
    for (key, value) in &config.options {
        if let "q" | "qscale" = key.as_str() {
            let quality: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|q: &f64| q.is_finite() && (0.0..=1024.0).contains(q))
                .ok_or_else(|| {
                    format!("--encoder-opt {key}={value} (sink.options.{key}) is not a quantiser (a number such as 2)")
                })?;
            let flags = encoder_flags(encoder);
            encoder.set_flags(flags | codec::Flags::QSCALE);
            encoder.set_global_quality((quality * f64::from(ffmpeg::ffi::FF_QP2LAMBDA)).round() as i32);
            continue;
        }
        options.set(key, value);
    }
    Ok(options)
}

/// Each encoder's own defaults where they serve filtered video badly and the user set
/// nothing in their place.
pub(super) fn codec_defaults(
    codec: &ffmpeg::Codec,
    config: &SinkConfig,
    source: &SourceInfo,
    encoder: &mut ffmpeg::encoder::video::Video,
    options: &mut Dictionary,
) {
    match codec.name() {
        // mpeg4's default 200 kb/s ruins filtered detail; a fixed quantiser keeps it.
        "mpeg4" | "mpeg2video" if !sets_rate_control(config) => {
            let flags = encoder_flags(encoder);
            encoder.set_flags(flags | codec::Flags::QSCALE);
            encoder.set_global_quality(2 * ffmpeg::ffi::FF_QP2LAMBDA);
        }
        // FFmpeg's own libx264 defaults (preset medium, crf 23) for files. A real-time
        // input gets what live encoders use: a look-ahead of 40 frames and B-frames would
        // hold back nearly two seconds of video at 25 fps.
        "libx264"
            if source.real_time && !config.options.contains_key("preset") && !config.options.contains_key("tune") =>
        {
            options.set("preset", "veryfast");
            options.set("tune", "zerolatency");
        }
        // libvpx's own default speed (cpu-used 1) encodes a 1080p picture in about a second;
        // 4 (row-threaded) is several times faster at a small cost, and a live input gets
        // its real-time mode.
        "libvpx-vp9" if !config.options.contains_key("deadline") && !config.options.contains_key("cpu-used") => {
            let (deadline, speed) = if source.real_time {
                ("realtime", "8")
            } else {
                ("good", "4")
            };
            options.set("deadline", deadline);
            options.set("cpu-used", speed);
            if !config.options.contains_key("row-mt") {
                options.set("row-mt", "1");
            }
        }
        // Rate-controlled encoders whose own default (2 Mb/s) starves large pictures.
        "libopenh264" | "h264_nvenc" | "hevc_nvenc" if !config.options.contains_key("b") => {
            let fps = f64::from(source.frame_rate);
            encoder.set_bit_rate(default_bit_rate(source.width, source.height, fps));
        }
        _ => {}
    }
}

/// The encoder's lossless mode when asked for, unless the config sets those options itself.
pub(super) fn lossless_mode(codec: &ffmpeg::Codec, config: &SinkConfig, options: &mut Dictionary) {
    if config.lossless {
        for (key, value) in lossless_options(codec.name()).unwrap_or(&[]) {
            if !config.options.contains_key(*key) {
                options.set(key, value);
            }
        }
    }
}

/// libx265: HDR metadata into the bitstream too (SEI), where the user's x265-params do not
/// already set it: what an MPEG-TS output has no other place for.
pub(super) fn hdr_params(codec: &ffmpeg::Codec, source: &SourceInfo, options: &mut Dictionary) {
    if codec.name() == "libx265" {
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
}

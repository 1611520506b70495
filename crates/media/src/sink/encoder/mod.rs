//! The video encoder of a sink: set up for the source's frames ([`choice`] picks the codec
//! and pixel format, [`opening`] opens it with its options), converting frames when it must
//! and keeping timestamps; frames reach FFmpeg without a copy ([`lending`]).

mod choice;
mod lending;
mod opening;

use ffmpeg::format::Pixel;
use ffmpeg::{codec, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;

use crate::config::SinkConfig;
use crate::ffmpeg::encoders::default_bit_rate;
use crate::ffmpeg::{ffmpeg_format, is_again, lossless_options, ColorInfo, SourceInfo};
use choice::{bits_of, choose_codec, choose_format, pixel_name};
use convstream_core::frame::Frame;
use lending::lend_to_ffmpeg;
use opening::{
    crf_problem, describe_encoder, encoder_flags, is_uncompressed, odd_size_hint, open_reporting_unused,
    opens_without_options, sets_rate_control, settings_text,
};

pub(crate) use choice::container_accepts;
pub use opening::EncoderSetupError;

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
        if let Some(problem) = config.options.get("crf").and_then(|crf| crf_problem(codec.name(), crf)) {
            return Err(EncoderSetupError {
                reason: problem,
                unsuitable_input: true,
            });
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
                    .ok_or_else(|| {
                        format!(
                            "--encoder-opt {key}={value} (sink.options.{key}) is not a quantiser (a number such as 2)"
                        )
                    })?;
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
            let user_options: Vec<String> = config.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
            // Options of the right name with a value the encoder refuses (`preset=turbo`) fail
            // the opening itself: the user's to change when the encoder opens without them.
            if hint.is_none()
                && !user_options.is_empty()
                && opens_without_options(codec, source.width, source.height, format, time_base)
            {
                return EncoderSetupError {
                    reason: format!(
                        "the {} encoder refused its options ({}): {e}; FFmpeg's line above says which (`ffmpeg -h encoder={}` lists the values it takes)",
                        codec.name(),
                        user_options.join(", "),
                        codec.name()
                    ),
                    unsuitable_input: true,
                };
            }
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

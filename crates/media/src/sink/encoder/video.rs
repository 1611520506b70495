//! [`VideoEncoder`]: the sink's video encoder, opened for the source's frames; it converts
//! frames when the encoder needs another pixel format and keeps timestamps increasing.

use ffmpeg::format::Pixel;
use ffmpeg::{codec, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::choice::{choose_codec, choose_format};
use super::opening::{
    crf_problem, describe_encoder, encoder_flags, is_uncompressed, open_encoder, settings_text, EncoderSetupError,
};
use super::setup::{codec_defaults, context, hdr_params, log_conversion, lossless_mode, time_base_for, user_options};
use crate::ffmpeg::{ffmpeg_format, is_again, lend_to_ffmpeg, lossless_options, ColorInfo, SourceInfo};
use convstream_config::SinkConfig;
use convstream_core::Frame;

/// A swscale context moved to the sink thread.
struct Converter(ffmpeg::software::scaling::Context);

// SAFETY: an SwsContext has no thread affinity; the sink uses it from one thread at a time.
unsafe impl Send for Converter {}

/// A sink's video encoder, opened for the source's frames.
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
    /// The fixed quantiser's lambda (`-q:v`), 0 without one: FFmpeg's command line gives
    /// it to every picture too, which the MPEG encoders read.
    quality: i32,
}

impl VideoEncoder {
    /// Chooses and opens the encoder for the source's frames in `output`'s container (see
    /// the module's steps); the error says whether the input or the choice is at fault.
    /// `gpu`: whether the run may use a GPU (NVENC among the defaults).
    pub fn new(
        config: &SinkConfig,
        source: &SourceInfo,
        output: &ffmpeg::format::context::Output,
        gpu: bool,
    ) -> Result<VideoEncoder, EncoderSetupError> {
        let codec = choose_codec(config, output, gpu)?;
        let container = output.format().name().to_string();
        let format = choose_format(&codec, &container, source.format, source.stream_bits);
        log_conversion(config, source, &codec, format);
        let time_base = time_base_for(&codec, &container, source);
        let mut encoder = context(codec, source, format, time_base, output)?;
        if let Some(problem) = config.options.get("crf").and_then(|crf| crf_problem(codec.name(), crf)) {
            return Err(EncoderSetupError {
                reason: format!("sink.options.crf: {problem}"),
                unsuitable_input: true,
            });
        }
        let mut options = user_options(config, &mut encoder)?;
        codec_defaults(&codec, config, source, &mut encoder, &mut options);
        lossless_mode(&codec, config, &mut options);
        hdr_params(&codec, source, &mut options);
        let settings = settings_text(&options);
        let encoder = open_encoder(encoder, codec, options, config, source, format, time_base)?;
        let quality = match encoder_flags(&encoder).contains(codec::Flags::QSCALE) {
            // SAFETY: the open encoder's context is valid; one integer field is read.
            true => unsafe { (*encoder.as_ptr()).global_quality },
            false => 0,
        };
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
            quality,
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

    /// The encoder's codec.
    pub fn codec(&self) -> ffmpeg::Codec {
        self.codec
    }

    /// The time base of the packets it makes.
    pub fn time_base(&self) -> Rational {
        self.time_base
    }

    /// Its codec parameters, for the output stream.
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
        if self.quality > 0 {
            // SAFETY: `picture` owns a valid AVFrame; one integer field is written.
            unsafe { (*picture.as_mut_ptr()).quality = self.quality };
        }
        self.encoder.send_frame(&picture)
    }

    /// Tells the encoder no frame follows, so it gives up what it holds.
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

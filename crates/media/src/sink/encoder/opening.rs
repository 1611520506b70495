//! Opening an encoder: options it does not take are reported, not dropped; what a failure
//! to open means for the user; how the opened encoder is described in the summary.

use ffmpeg::format::Pixel;
use ffmpeg::{codec, Dictionary, Rational};
use ffmpeg_next as ffmpeg;

use super::choice::pixel_name;
use super::option_table::unused_option;
use crate::ffmpeg::SourceInfo;
use convstream_config::SinkConfig;
use convstream_core::quoted;

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
pub(super) fn odd_size_hint(format: Pixel, width: usize, height: usize) -> Option<String> {
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

/// The constant rate factors an encoder takes. FFmpeg's own option ranges are wider than the
/// encoders' (libx264's `crf` takes any float and x264 then clamps it to 51 without a word).
fn crf_range(codec: &str) -> Option<(f64, f64)> {
    match codec {
        "libx264" | "libx264rgb" | "libx265" => Some((0.0, 51.0)),
        "libvpx" | "libvpx-vp9" | "libaom-av1" | "libsvtav1" => Some((0.0, 63.0)),
        _ => None,
    }
}

/// Why `crf` is not a constant rate factor this encoder takes, if it is not (`70 is out of
/// range for libx264; allowed 0..=51`): said of `sink.options.crf` when the options are tried
/// at validation, and again when the output opens. Encoders not known here are left to
/// FFmpeg (one without the option is reported as such).
pub(super) fn crf_problem(codec: &str, value: &str) -> Option<String> {
    let (min, max) = crf_range(codec)?;
    match value.trim().parse::<f64>().ok().filter(|crf| crf.is_finite()) {
        Some(crf) if (min..=max).contains(&crf) => None,
        Some(_) => Some(format!(
            "{} is out of range for {codec}; allowed {min}..={max} (lower is better quality)",
            convstream_core::quoted(value)
        )),
        None => Some(format!(
            "`{}` is not a number; {codec} takes {min}..={max}",
            convstream_core::quoted(value)
        )),
    }
}

/// Whether `codec` opens at this size, format and time base without any options: when it
/// does, a failure to open with the user's options is the options' fault.
pub(super) fn opens_without_options(
    codec: ffmpeg::Codec,
    width: usize,
    height: usize,
    format: Pixel,
    time_base: ffmpeg::Rational,
) -> bool {
    let Ok(mut encoder) = codec::Context::new_with_codec(codec).encoder().video() else {
        return false;
    };
    encoder.set_width(width as u32);
    encoder.set_height(height as u32);
    encoder.set_format(format);
    encoder.set_time_base(time_base);
    encoder.open_as_with(codec, Dictionary::new()).is_ok()
}

/// The "encoders" that pass pictures through as they are.
pub(super) fn is_uncompressed(name: &str) -> bool {
    matches!(name, "wrapped_avframe" | "rawvideo")
}

/// Whether the sink's options choose a rate control of their own (a bitrate or a quantiser).
pub(super) fn sets_rate_control(config: &SinkConfig) -> bool {
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

/// Opens the encoder with `options`, as `open_as_with` does, and returns the keys of the
/// options the encoder did not take (a misspelt or foreign option, a value out of range,
/// would otherwise be ignored).
pub(super) fn open_reporting_unused(
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
    let unused: Vec<String> = unused.iter().map(|(key, _)| key.to_string()).collect();
    let opened = match status {
        0 => Ok(ffmpeg::encoder::video::Encoder(encoder)),
        e => Err(ffmpeg::Error::from(e)),
    };
    (opened, unused)
}

/// Opens `encoder` with `options`. An option it does not take, or options whose values it
/// refuses (it opens without them), is the user's to change; an odd size for subsampled
/// chroma is the input's.
pub(super) fn open_encoder(
    encoder: ffmpeg::encoder::video::Video,
    codec: ffmpeg::Codec,
    options: Dictionary,
    config: &SinkConfig,
    source: &SourceInfo,
    format: Pixel,
    time_base: Rational,
) -> Result<ffmpeg::encoder::Video, EncoderSetupError> {
    let values = settings_text(&options);
    let (encoder, unused) = open_reporting_unused(encoder, codec, options);
    if !unused.is_empty() {
        let value_of = |key: &str| {
            values
                .iter()
                .find_map(|setting| setting.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
                .unwrap_or("")
        };
        let reasons: Vec<String> = unused
            .iter()
            .map(|key| {
                format!(
                    "sink.options.{}: {}",
                    quoted(key),
                    unused_option(codec, key, value_of(key))
                )
            })
            .collect();
        return Err(EncoderSetupError {
            reason: reasons.join("; "),
            unsuitable_input: true,
        });
    }
    encoder.map_err(|e| {
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
    })
}

/// The options given to an encoder, as `key=value, ...`.
pub(super) fn settings_text(options: &Dictionary) -> Vec<String> {
    options.iter().map(|(key, value)| format!("{key}={value}")).collect()
}

/// `libx264 (crf=18, preset=slow), yuv420p` or `ffv1 (lossless), yuv420p`, as far as known.
pub(super) fn describe_encoder(
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

pub(super) fn encoder_flags(encoder: &ffmpeg::encoder::video::Video) -> codec::Flags {
    // SAFETY: reading a plain field of a valid codec context.
    codec::Flags::from_bits_truncate(unsafe { (*encoder.as_ptr()).flags } as _)
}

#[cfg(test)]
mod tests {
    use super::crf_problem;

    #[test]
    fn crf_is_checked_against_the_encoders_range() {
        assert_eq!(crf_problem("libx264", "23"), None);
        assert_eq!(crf_problem("libx264", "0"), None);
        let out = crf_problem("libx264", "70").expect("out of range");
        assert!(out.contains("70 is out of range") && out.contains("0..=51"), "{out}");
        assert_eq!(crf_problem("libvpx-vp9", "60"), None, "VP9 goes to 63");
        assert!(crf_problem("libaom-av1", "64").is_some());
        assert!(crf_problem("libx265", "high")
            .expect("not a number")
            .contains("not a number"));
        assert_eq!(crf_problem("some_other_encoder", "99"), None, "left to FFmpeg");
    }
}

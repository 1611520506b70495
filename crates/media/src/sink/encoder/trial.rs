//! The encoder's options tried before anything runs: a small encoder of the output's codec is
//! opened with the user's options, so that `check`, `run` and the API refuse an option the
//! encoder does not have, a value out of its range (`-b:v 1e30`, `-bf -5`, `crf = 70`) or a
//! value it refuses (`preset = "turbo"`) at validation, each by its setting, in one pass,
//! instead of when the output opens.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ffmpeg::{codec, Dictionary, Rational};
use ffmpeg_next as ffmpeg;

use super::opening::{crf_problem, open_reporting_unused, opens_without_options};
use super::option_table::unused_option;
use super::setup::user_options;
use crate::ffmpeg::log;
use convstream_config::{Problem, SinkConfig};
use convstream_core::quoted;

/// The size of the picture the trial's encoder is opened for: small, even, and accepted by
/// every software encoder's minimum.
const TRIAL_SIZE: (u32, u32) = (256, 144);

/// Why the encoder `codec` (a software encoder; a device's encoder is left to its opening)
/// would refuse the sink's options, each problem placed at `sink.options.KEY`. Answers are
/// kept by encoder and options, so a config of many like pipelines tries once.
pub(crate) fn encoder_option_problems(sink: &SinkConfig, codec: ffmpeg::Codec) -> Vec<Problem> {
    // A device's encoder opens only on its device (and would take it at validation).
    if sink.options.is_empty() || crate::ffmpeg::encoders::is_hardware(codec) {
        return Vec::new();
    }
    static TRIED: OnceLock<Mutex<HashMap<String, Vec<Problem>>>> = OnceLock::new();
    let key = format!("{}\0{:?}", codec.name(), sink.options);
    let tried = TRIED.get_or_init(Default::default);
    if let Some(problems) = tried.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return problems.clone();
    }
    let problems = log::quietly(|| try_options(sink, codec));
    tried
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, problems.clone());
    problems
}

/// Opens a small encoder with the options. When it leaves one unused or does not open
/// (FFmpeg then gives every option back, taken or not), each option is tried alone: one the
/// encoder lacks or whose value is out of range, and one that alone stops it opening in
/// every pixel format it takes (`profile=high10` opens at 10 bits only, which the output may
/// have), is a problem of its own; options that fail only together, in every format, are one
/// problem of them all.
fn try_options(sink: &SinkConfig, codec: ffmpeg::Codec) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(value) = sink.options.get("crf") {
        if let Some(why) = crf_problem(codec.name(), value) {
            problems.push(Problem::value("sink.options.crf", why));
        }
    }
    let formats = pixel_formats(codec);
    let (width, height) = TRIAL_SIZE;
    if !opens_without_options(codec, width as usize, height as usize, formats[0], time_base()) {
        return problems; // not at this size: the output's own opening will say why
    }
    let (opened, unused, values) = match open_as_configured(sink, codec, formats[0]) {
        Some(Ok(tried)) => tried,
        Some(Err(why)) => {
            problems.push(Problem::general(why));
            return problems;
        }
        None => return problems,
    };
    if opened && unused.is_empty() {
        return problems;
    }
    let before = problems.len();
    for (key, value) in &values {
        let field = format!("sink.options.{key}");
        if problems.iter().any(|p| p.field() == Some(&field)) {
            continue; // said above, in the encoder's own range
        }
        match alone(codec, key, value, &formats) {
            Alone::Opens => {}
            Alone::Unused => problems.push(Problem::value(field, unused_option(codec, key, value))),
            Alone::Refused => problems.push(Problem::value(
                field,
                format!(
                    "`{}` is a value the {name} encoder refuses (`ffmpeg -h encoder={name}` lists the values it takes)",
                    quoted(value),
                    name = codec.name()
                ),
            )),
        }
    }
    let opens_in_some_format = || {
        formats[1..]
            .iter()
            .any(|&format| matches!(open_as_configured(sink, codec, format), Some(Ok((true, _, _)))))
    };
    if problems.len() == before && !opened && !opens_in_some_format() {
        let all: Vec<String> = values.iter().map(|(k, v)| format!("{k}={}", quoted(v))).collect();
        problems.push(Problem::value(
            "sink.options",
            format!(
                "the {} encoder does not open with these options together: {}",
                codec.name(),
                all.join(", ")
            ),
        ));
    }
    log::clear_last_error();
    problems
}

/// Whether the encoder opened (at `format`) with the sink's options as the output gives them,
/// the options it left unused and the options given; `Err` when they cannot be given
/// (`q` that is no quantiser), `None` when no encoder could be made.
#[allow(clippy::type_complexity)]
fn open_as_configured(
    sink: &SinkConfig,
    codec: ffmpeg::Codec,
    format: ffmpeg::format::Pixel,
) -> Option<Result<(bool, Vec<String>, Vec<(String, String)>), String>> {
    let mut encoder = trial_context(codec, format)?;
    let options = match user_options(sink, &mut encoder) {
        Ok(options) => options,
        Err(why) => return Some(Err(why)),
    };
    let values = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let (opened, unused) = open_reporting_unused(encoder, codec, options);
    Some(Ok((opened.is_ok(), unused, values)))
}

/// What one option alone does to the encoder's opening.
enum Alone {
    /// It opens, in one of its pixel formats at least.
    Opens,
    /// Left unused: no such option, or a value out of its range.
    Unused,
    /// Taken, and the encoder then opens in none of its pixel formats.
    Refused,
}

/// Opens the encoder with the one option `key=value`, in each of `formats` until one opens.
fn alone(codec: ffmpeg::Codec, key: &str, value: &str, formats: &[ffmpeg::format::Pixel]) -> Alone {
    for &format in formats {
        let Some(encoder) = trial_context(codec, format) else {
            return Alone::Opens;
        };
        let mut options = Dictionary::new();
        options.set(key, value);
        match open_reporting_unused(encoder, codec, options) {
            (_, unused) if !unused.is_empty() => return Alone::Unused,
            (Ok(_), _) => return Alone::Opens,
            (Err(_), _) => {}
        }
    }
    Alone::Refused
}

/// An unopened encoder of `codec` for the trial's picture in `format`.
fn trial_context(codec: ffmpeg::Codec, format: ffmpeg::format::Pixel) -> Option<ffmpeg::encoder::video::Video> {
    let mut encoder = codec::Context::new_with_codec(codec).encoder().video().ok()?;
    let (width, height) = TRIAL_SIZE;
    encoder.set_width(width);
    encoder.set_height(height);
    encoder.set_format(format);
    encoder.set_time_base(time_base());
    encoder.set_frame_rate(Some(Rational::new(25, 1)));
    Some(encoder)
}

/// The pixel formats the encoder takes, its first (its preferred) first; yuv420p when it
/// does not say.
fn pixel_formats(codec: ffmpeg::Codec) -> Vec<ffmpeg::format::Pixel> {
    let formats: Vec<_> = codec
        .video()
        .ok()
        .and_then(|video| video.formats().map(|formats| formats.collect()))
        .unwrap_or_default();
    match formats.is_empty() {
        true => vec![ffmpeg::format::Pixel::YUV420P],
        false => formats,
    }
}

fn time_base() -> Rational {
    Rational::new(1, 25)
}

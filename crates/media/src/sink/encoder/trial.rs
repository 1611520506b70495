//! The encoder's options tried before anything runs: a small encoder of the output's codec is
//! opened with the user's options, so that `check`, `run` and the API refuse an option the
//! encoder does not have, a value out of its range (`-b:v 1e30`, `-bf -5`, `crf = 70`) or a
//! value it refuses (`preset = "turbo"`) at validation, each by its setting, in one pass,
//! instead of when the output opens.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ffmpeg::{codec, Dictionary, Rational};
use ffmpeg_next as ffmpeg;

use super::opening::{crf_range, open_reporting_unused, opens_without_options};
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
/// encoder lacks or whose value is out of range, and one that alone stops it opening, is a
/// problem of its own; options that fail only together are one problem of them all.
fn try_options(sink: &SinkConfig, codec: ffmpeg::Codec) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(value) = sink.options.get("crf") {
        if let Some(why) = crf_out_of_range(codec.name(), value) {
            problems.push(Problem::value("sink.options.crf", why));
        }
    }
    let Some(mut encoder) = trial_context(codec) else {
        return problems;
    };
    let options = match user_options(sink, &mut encoder) {
        Ok(options) => options,
        Err(why) => {
            problems.push(Problem::general(why));
            return problems;
        }
    };
    let values: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let (opened, unused) = open_reporting_unused(encoder, codec, options);
    if opened.is_ok() && unused.is_empty() {
        return problems;
    }
    let (width, height) = TRIAL_SIZE;
    if !opens_without_options(codec, width as usize, height as usize, trial_format(codec), time_base()) {
        return problems; // not at this size: the output's own opening will say why
    }
    let before = problems.len();
    for (key, value) in &values {
        if problems
            .iter()
            .any(|p| p.field() == Some(&format!("sink.options.{key}")))
        {
            continue; // said above, in the encoder's own range
        }
        let field = format!("sink.options.{key}");
        match open_with(codec, key, value) {
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
    if problems.len() == before && opened.is_err() {
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

/// What one option alone does to the encoder's opening.
enum Alone {
    Opens,
    /// Left unused: no such option, or a value out of its range.
    Unused,
    /// Taken, and the encoder then does not open.
    Refused,
}

/// Opens the encoder with the one option `key=value`.
fn open_with(codec: ffmpeg::Codec, key: &str, value: &str) -> Alone {
    let Some(encoder) = trial_context(codec) else {
        return Alone::Opens;
    };
    let mut options = Dictionary::new();
    options.set(key, value);
    match open_reporting_unused(encoder, codec, options) {
        (_, unused) if !unused.is_empty() => Alone::Unused,
        (Ok(_), _) => Alone::Opens,
        (Err(_), _) => Alone::Refused,
    }
}

/// `crf`'s value when the encoder's own range does not hold it.
fn crf_out_of_range(codec: &str, value: &str) -> Option<String> {
    let (min, max) = crf_range(codec)?;
    match value.trim().parse::<f64>().ok().filter(|crf| crf.is_finite()) {
        Some(crf) if (min..=max).contains(&crf) => None,
        Some(_) => Some(format!(
            "{} is out of range for {codec}; allowed {min}..={max} (lower is better quality)",
            quoted(value)
        )),
        None => Some(format!(
            "`{}` is not a number; {codec} takes {min}..={max}",
            quoted(value)
        )),
    }
}

/// An unopened encoder of `codec` for the trial's picture.
fn trial_context(codec: ffmpeg::Codec) -> Option<ffmpeg::encoder::video::Video> {
    let mut encoder = codec::Context::new_with_codec(codec).encoder().video().ok()?;
    let (width, height) = TRIAL_SIZE;
    encoder.set_width(width);
    encoder.set_height(height);
    encoder.set_format(trial_format(codec));
    encoder.set_time_base(time_base());
    encoder.set_frame_rate(Some(Rational::new(25, 1)));
    Some(encoder)
}

/// The first pixel format the encoder takes (yuv420p when it does not say).
fn trial_format(codec: ffmpeg::Codec) -> ffmpeg::format::Pixel {
    codec
        .video()
        .ok()
        .and_then(|video| video.formats().and_then(|mut formats| formats.next()))
        .unwrap_or(ffmpeg::format::Pixel::YUV420P)
}

fn time_base() -> Rational {
    Rational::new(1, 25)
}

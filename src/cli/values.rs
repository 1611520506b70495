//! Values of flags as clap reads them: `KEY=VALUE`, times, sizes, the filter's choices.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use convstream_core::{BorderMode, PlaneSelection};

/// `--border`: a mode's name or an alias (hidden from the help, as the other tools'
/// spellings), each name listed in the help with what it takes beyond the edges.
pub(crate) fn border_parser() -> impl TypedValueParser<Value = BorderMode> {
    let modes = BorderMode::ALL.map(|mode| {
        PossibleValue::new(mode.name())
            .help(mode.meaning())
            .aliases(mode.aliases().iter().copied())
    });
    // Every name the list above lets through is one `FromStr` reads.
    PossibleValuesParser::new(modes).try_map(|name| name.parse::<BorderMode>())
}

/// `--planes`: `all`, `luma` or `chroma`, listed in the help.
pub(crate) fn planes_parser() -> impl TypedValueParser<Value = PlaneSelection> {
    PossibleValuesParser::new(PlaneSelection::NAMES).try_map(|name| name.parse::<PlaneSelection>())
}

/// `KEY=VALUE`, for options passed on to FFmpeg.
pub(crate) fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// A time in FFmpeg's duration syntax: `[-][HH:]MM:SS[.frac]` or `[-]S+[.frac][s|ms|us]`
/// (`90`, `1.5`, `1s`, `500ms`, `-1.5`, `1:30`, `00:01:02.5`), in seconds.
pub(crate) fn parse_duration(text: &str) -> Result<f64, String> {
    let bad = || {
        format!(
            "`{}` is not a time; use seconds (90, 1.5, 1s, 500ms, 250us) or [HH:]MM:SS[.frac] (1:30, 00:01:02.5)",
            convstream_core::quoted(text)
        )
    };
    let trimmed = text.trim();
    let (sign, body) = match trimmed.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, trimmed),
    };
    let decimal = |part: &str| -> Option<f64> {
        let digits_and_dot = !part.is_empty() && part.chars().all(|c| c.is_ascii_digit() || c == '.');
        let one_dot = part.matches('.').count() <= 1 && part != ".";
        (digits_and_dot && one_dot).then(|| part.parse::<f64>().ok()).flatten()
    };
    let seconds = if body.contains(':') {
        let parts: Vec<&str> = body.split(':').collect();
        let (seconds, whole) = match parts.as_slice() {
            [minutes, seconds] => (*seconds, vec![("minutes", *minutes)]),
            [hours, minutes, seconds] => (*seconds, vec![("hours", *hours), ("minutes", *minutes)]),
            _ => return Err(bad()),
        };
        let seconds = decimal(seconds).filter(|s| *s < 60.0).ok_or_else(bad)?;
        let mut total = 0.0;
        for (index, (unit, part)) in whole.iter().enumerate() {
            let value = part
                .parse::<u64>()
                .ok()
                .filter(|_| part.chars().all(|c| c.is_ascii_digit()))
                .ok_or_else(bad)?;
            // Minutes after hours are a clock's, below 60; leading minutes may be any number.
            if *unit == "minutes" && index > 0 && value >= 60 {
                return Err(bad());
            }
            total = total * 60.0 + value as f64;
        }
        total * 60.0 + seconds
    } else {
        let (number, scale) = if let Some(n) = body.strip_suffix("ms") {
            (n, 1e-3)
        } else if let Some(n) = body.strip_suffix("us") {
            (n, 1e-6)
        } else if let Some(n) = body.strip_suffix('s') {
            (n, 1.0)
        } else {
            (body, 1.0)
        };
        decimal(number).ok_or_else(bad)? * scale
    };
    if !seconds.is_finite() {
        return Err(bad());
    }
    Ok(sign * seconds)
}

/// A time that counts from the input's start (`--ss`, `-t`): FFmpeg's syntax, 0 or more.
pub(crate) fn parse_time(text: &str) -> Result<f64, String> {
    let seconds = parse_duration(text)?;
    if seconds < 0.0 {
        return Err(format!(
            "`{}` is before the input's start; give a time of 0 or more",
            convstream_core::quoted(text)
        ));
    }
    Ok(seconds)
}

/// `pretty` or `json`, as `[log] format`.
pub(crate) fn parse_log_format(text: &str) -> Result<convstream_config::LogFormat, String> {
    match text {
        "pretty" => Ok(convstream_config::LogFormat::Pretty),
        "json" => Ok(convstream_config::LogFormat::Json),
        _ => Err(format!(
            "`{}` is not a log format; use pretty or json",
            convstream_core::quoted(text)
        )),
    }
}

pub(crate) fn parse_mask_size(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(size) if size % 2 == 1 && size <= 63 => Ok(size),
        _ => Err(format!("{text} is not an odd mask size in 1..=63")),
    }
}

pub(crate) fn parse_spin_us(text: &str) -> Result<u64, String> {
    let max = convstream_core::MAX_SPIN_US;
    match text.parse::<u64>() {
        Ok(micros) if micros <= max => Ok(micros),
        _ => Err(format!("{text} is not a number of microseconds in 0..={max}")),
    }
}

pub(crate) fn parse_plane_size(text: &str) -> Result<(usize, usize), String> {
    let parsed = text
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<usize>().ok()?, h.parse::<usize>().ok()?)));
    match parsed {
        Some((w, h)) if w > 0 && h > 0 && w <= 16384 && h <= 16384 => Ok((w, h)),
        _ => Err(format!("{text} is not a plane size such as 3840x2160")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ffmpeg_duration_syntax() {
        for (text, seconds) in [
            ("90", 90.0),
            ("1.5", 1.5),
            ("1s", 1.0),
            ("500ms", 0.5),
            ("250us", 0.00025),
            ("-1.5", -1.5),
            ("1:30", 90.0),
            ("00:01:02.5", 62.5),
            ("-00:00:01", -1.0),
            ("90:00", 5400.0),
            (".5", 0.5),
        ] {
            let parsed = parse_duration(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!((parsed - seconds).abs() < 1e-9, "{text}: {parsed}");
        }
        for text in [
            "", "-", "1:2:3:4", "1:60", "1:60:00", "s", "1x", "1.2.3", "1e3", "nan", "inf", "1 s", "--1",
        ] {
            assert!(parse_duration(text).is_err(), "{text:?} was taken");
        }
    }

    #[test]
    fn a_start_or_length_is_not_negative() {
        assert_eq!(parse_time("1s"), Ok(1.0));
        let error = parse_time("-1.5").unwrap_err();
        assert!(error.contains("before the input's start"), "{error}");
    }
}

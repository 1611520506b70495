//! Values of flags as clap reads them: `KEY=VALUE`, times, sizes.

/// `KEY=VALUE`, for options passed on to FFmpeg.
pub(crate) fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// A time as FFmpeg writes durations: seconds (`90`, `1.5`) or `[HH:]MM:SS[.frac]`.
pub(crate) fn parse_time(text: &str) -> Result<f64, String> {
    let bad = || format!("`{text}` is not a time; use seconds (90, 1.5) or [HH:]MM:SS[.frac] (1:30, 00:01:30.5)");
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(bad());
    }
    let (last, whole) = parts.split_last().ok_or_else(bad)?;
    let seconds: f64 = last.parse().map_err(|_| bad())?;
    let mut total = 0u64;
    for part in whole {
        total = total * 60 + part.parse::<u64>().map_err(|_| bad())?;
    }
    let value = total as f64 * 60.0 + seconds;
    if !value.is_finite() || value < 0.0 || (!whole.is_empty() && !(0.0..60.0).contains(&seconds)) {
        return Err(bad());
    }
    Ok(value)
}

pub(crate) fn parse_mask_size(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(size) if size % 2 == 1 && size <= 63 => Ok(size),
        _ => Err(format!("{text} is not an odd mask size in 1..=63")),
    }
}

pub(crate) fn parse_spin_us(text: &str) -> Result<u64, String> {
    let max = convstream::engine::MAX_SPIN_US;
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

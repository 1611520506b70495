//! How `--stats-json` writes numbers: times to the microsecond (seconds to 6 decimals,
//! milliseconds to 3), rates to 3 decimals, so that the file shows what was measured and
//! not float noise such as 0.30000000000000004.

use serde::Serializer;

fn rounded(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let rounded = (value * scale).round() / scale;
    if rounded.is_finite() {
        rounded
    } else {
        value
    }
}

pub fn seconds<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(rounded(*value, 6))
}

pub fn milliseconds<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(rounded(*value, 3))
}

pub fn thousandths<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(rounded(*value, 3))
}

pub fn optional_milliseconds<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(ms) => milliseconds(ms, serializer),
        None => serializer.serialize_none(),
    }
}

pub fn optional_seconds<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(s) => seconds(s, serializer),
        None => serializer.serialize_none(),
    }
}

pub fn optional_thousandths<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => thousandths(v, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::rounded;

    #[test]
    fn times_keep_microseconds() {
        assert_eq!(rounded(0.1 + 0.2, 6), 0.3);
        assert_eq!(rounded(1.234_567_89, 6), 1.234_568);
        assert_eq!(rounded(12.345_678_9, 3), 12.346);
        assert_eq!(rounded(f64::MAX, 6), f64::MAX, "too large to scale: kept");
    }
}

//! What a snapshot request asks for: `stage`, `format` and `width` from its query string,
//! percent-decoded strictly.

use super::error::SnapshotError;
use super::limits::MAX_WIDTH;
use super::picture::ImageFormat;
use convstream_core::quoted;
use convstream_media::SnapshotStage;

/// What a snapshot request asks for, from its query string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotQuery {
    pub stage: SnapshotStage,
    pub format: ImageFormat,
    pub width: Option<usize>,
}

/// Parses `stage=input|output`, `format=jpeg|png`, `width=N`; anything else is refused.
pub fn parse_query(query: Option<&str>) -> Result<SnapshotQuery, SnapshotError> {
    let mut parsed = SnapshotQuery {
        stage: SnapshotStage::Output,
        format: ImageFormat::Jpeg,
        width: None,
    };
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        // As browsers and URL libraries write them: `inp%75t` is `input`.
        let (key, value) = (percent_decoded(key)?, percent_decoded(value)?);
        let (key, value) = (key.as_str(), value.as_str());
        match key {
            "stage" => {
                parsed.stage = match value {
                    "input" => SnapshotStage::Input,
                    "output" => SnapshotStage::Output,
                    other => {
                        return Err(SnapshotError::BadQuery(format!(
                            "stage `{}` is not input or output",
                            quoted(other)
                        )))
                    }
                }
            }
            "format" => {
                parsed.format = ImageFormat::parse(value)
                    .ok_or_else(|| SnapshotError::BadQuery(format!("format `{}` is not jpeg or png", quoted(value))))?
            }
            "width" => match value.parse::<usize>() {
                Ok(width) if (1..=MAX_WIDTH).contains(&width) => parsed.width = Some(width),
                _ => {
                    return Err(SnapshotError::BadQuery(format!(
                        "width `{}` is not a number of pixels from 1 to {MAX_WIDTH}",
                        quoted(value)
                    )))
                }
            },
            other => {
                return Err(SnapshotError::BadQuery(format!(
                    "unknown parameter `{}`; a snapshot takes stage, format and width",
                    quoted(other)
                )))
            }
        }
    }
    Ok(parsed)
}

/// `text` with its `%XX` escapes decoded; a `%` not followed by two hex digits, or bytes
/// that are not UTF-8, are a bad query (400), never taken as written.
fn percent_decoded(text: &str) -> Result<String, SnapshotError> {
    let bad = || SnapshotError::BadQuery(format!("`{}` is not a well-formed query value", quoted(text)));
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = bytes.get(at + 1..at + 3).ok_or_else(bad)?;
            let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad());
            }
            decoded.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_parsed_and_anything_else_refused() {
        let q = parse_query(Some("stage=input&format=png&width=320")).unwrap();
        assert_eq!(q.stage, SnapshotStage::Input);
        assert_eq!(q.format, ImageFormat::Png);
        assert_eq!(q.width, Some(320));
        let escaped = parse_query(Some("stage=inp%75t&%66ormat=p%6Eg")).unwrap();
        assert_eq!(
            (escaped.stage, escaped.format),
            (SnapshotStage::Input, ImageFormat::Png)
        );
        let default = parse_query(None).unwrap();
        assert_eq!(
            (default.stage, default.format, default.width),
            (SnapshotStage::Output, ImageFormat::Jpeg, None)
        );
        for bad in [
            "stage=middle",
            "format=gif",
            "width=0",
            "width=99999",
            "width=-1",
            "colour=red",
            "stage=inp%7",
            "stage=inp%zzt",
            "stage=%ff",
            "stage=input%00",
        ] {
            assert!(
                matches!(parse_query(Some(bad)), Err(SnapshotError::BadQuery(_))),
                "{bad}"
            );
        }
    }
}

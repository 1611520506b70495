//! The options an output's header is written with: the user's muxer options, and fragmented
//! MP4 where the output cannot seek back to write an index (or is to survive a crash).

use ffmpeg::Dictionary;
use ffmpeg_next as ffmpeg;

/// MP4-family muxers: their classic index is written at the end, by seeking back.
pub(super) const MP4_FAMILY: &[&str] = &["mp4", "mov", "ipod", "ismv"];

/// The `movflags` that make an MP4 playable as it is written, without seeking back.
const FRAGMENTED: &str = "+frag_keyframe+empty_moov+default_base_moof";

/// `movflags` values that fragment the file (or need no index at the end) already.
const FRAGMENTING_FLAGS: &[&str] = &["frag_keyframe", "frag_every_frame", "frag_custom", "empty_moov"];

/// Why a header's options cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderOptionsError {
    /// `movflags` asks for an index moved to the front, which needs seeking back.
    #[error("movflags {flags:?} needs an output that can seek back (a file): a pipe or a network output cannot; leave faststart out there and the MP4 is fragmented (frag_keyframe+empty_moov), which plays as it comes")]
    NeedsSeeking {
        /// The `movflags` asked for.
        flags: String,
    },
}

/// The options a header is written with: the user's muxer options, and for an MP4 that
/// cannot be finished by seeking back (a pipe, a URL) or is asked to survive a crash
/// (`fragment`), the `movflags` of a fragmented MP4 added to the user's own.
pub(super) fn header_options(
    container: &str,
    user: &std::collections::BTreeMap<String, String>,
    seekable: bool,
    fragment: bool,
) -> Result<Dictionary<'static>, HeaderOptionsError> {
    let mut options = Dictionary::new();
    for (key, value) in user {
        options.set(key, value);
    }
    if !MP4_FAMILY.contains(&container) {
        return Ok(options);
    }
    let flags = user.get("movflags").map(String::as_str).unwrap_or("");
    let named: Vec<&str> = flags.split(['+', '-']).filter(|flag| !flag.is_empty()).collect();
    if !seekable && named.contains(&"faststart") {
        return Err(HeaderOptionsError::NeedsSeeking {
            flags: flags.to_string(),
        });
    }
    let fragmented = named.iter().any(|flag| FRAGMENTING_FLAGS.contains(flag));
    if (!seekable || fragment) && !fragmented {
        options.set("movflags", &format!("{flags}{FRAGMENTED}"));
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn movflags(options: &Dictionary) -> Option<String> {
        options.get("movflags").map(str::to_string)
    }

    #[test]
    fn an_mp4_that_cannot_seek_is_fragmented_and_keeps_the_users_flags() {
        let none = BTreeMap::new();
        let to_pipe = header_options("mp4", &none, false, false).unwrap();
        assert_eq!(movflags(&to_pipe).as_deref(), Some(FRAGMENTED));
        let to_file = header_options("mp4", &none, true, false).unwrap();
        assert_eq!(movflags(&to_file), None, "a file gets the classic index");
        let user = BTreeMap::from([("movflags".to_string(), "+write_colr".to_string())]);
        let merged = header_options("mov", &user, false, false).unwrap();
        assert_eq!(movflags(&merged), Some(format!("+write_colr{FRAGMENTED}")));
        let own = BTreeMap::from([("movflags".to_string(), "frag_every_frame+empty_moov".to_string())]);
        let kept = header_options("mp4", &own, false, true).unwrap();
        assert_eq!(movflags(&kept).as_deref(), Some("frag_every_frame+empty_moov"));
        let mkv = header_options("matroska", &none, false, true).unwrap();
        assert_eq!(movflags(&mkv), None);
    }

    #[test]
    fn faststart_needs_a_seekable_output() {
        let user = BTreeMap::from([("movflags".to_string(), "+faststart".to_string())]);
        assert!(header_options("mp4", &user, true, false).is_ok());
        assert!(matches!(
            header_options("mp4", &user, false, false),
            Err(HeaderOptionsError::NeedsSeeking { .. })
        ));
    }
}

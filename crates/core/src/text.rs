//! How user strings (names, URLs, paths, tokens of a file) appear in messages and logs:
//! control characters escaped, so that a value cannot start a fake log line or drive a
//! terminal, and long values cut, so that a message never carries a file's contents.

use std::borrow::Cow;

/// How many characters of a user's value a message quotes.
pub const QUOTED_CHARS: usize = 48;

/// `value` with control characters escaped (`\n`, `\u{1b}`).
pub fn escape_control(value: &str) -> Cow<'_, str> {
    if !value.chars().any(char::is_control) {
        return Cow::Borrowed(value);
    }
    let mut escaped = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// `value` escaped and cut to [`QUOTED_CHARS`] characters, for quoting in a message.
pub fn quoted(value: &str) -> String {
    quoted_up_to(value, QUOTED_CHARS)
}

/// `value` escaped and cut to `max` characters: for text that is ours to show whole in
/// practice (a panic's message), still bounded.
pub fn quoted_up_to(value: &str, max: usize) -> String {
    let escaped = escape_control(value);
    let mut chars = escaped.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head}... ({} characters)", value.chars().count())
    } else {
        head
    }
}

/// `text` with the credentials of every URL in it hidden: `rtsp://user:pass@cam/x` becomes
/// `rtsp://***@cam/x`. Applied where text leaves the process (log lines, API answers, the
/// error `run` prints), so a password in a source or sink URL is shown nowhere, whichever
/// message (ours or FFmpeg's) quotes the URL.
pub fn redact_credentials(text: &str) -> Cow<'_, str> {
    const SEPARATOR: &str = "://";
    if !text.contains(SEPARATOR) || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(SEPARATOR) {
        let authority_start = at + SEPARATOR.len();
        shown.push_str(&rest[..authority_start]);
        let after = &rest[authority_start..];
        // The authority ends where the path, query or fragment starts, or the URL ends.
        let end = after
            .find(|c: char| matches!(c, '/' | '?' | '#' | '`' | '"' | '\'' | '<' | '>') || c.is_whitespace())
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                shown.push_str("***");
                shown.push_str(&authority[userinfo_end..]);
            }
            None => shown.push_str(authority),
        }
        rest = &after[end..];
    }
    shown.push_str(rest);
    Cow::Owned(shown)
}

/// A writer that hides URL credentials in what passes through it (see
/// [`redact_credentials`]). The log formatter writes each event with one call, so no URL is
/// split between two writes.
pub struct RedactingWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => {
                self.0.write_all(redact_credentials(text).as_bytes())?;
                Ok(buf.len())
            }
            Err(_) => self.0.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_hidden_wherever_they_are_quoted() {
        assert_eq!(
            redact_credentials("rtsp://admin:hunter2@cam.local:554/stream"),
            "rtsp://***@cam.local:554/stream"
        );
        assert_eq!(
            redact_credentials("cannot open rtsp://u:p@h/x and `srt://k@host?passphrase=1`: refused"),
            "cannot open rtsp://***@h/x and `srt://***@host?passphrase=1`: refused"
        );
        assert_eq!(redact_credentials("udp://0.0.0.0:5000"), "udp://0.0.0.0:5000");
        assert_eq!(redact_credentials("mail me@example.org"), "mail me@example.org");
        assert_eq!(redact_credentials("http://a:b@c"), "http://***@c");
        // A password holding '@' is hidden whole: the last '@' of the authority ends it.
        assert_eq!(redact_credentials("rtsp://u:p@ss@h/x"), "rtsp://***@h/x");
    }

    #[test]
    fn control_characters_are_escaped_and_long_values_cut() {
        assert_eq!(escape_control("cam\nERROR x\u{1b}[2J"), "cam\\nERROR x\\u{1b}[2J");
        assert_eq!(escape_control("plain"), "plain");
        let long = "x".repeat(100_000);
        let shown = quoted(&long);
        assert!(shown.len() < 100, "{shown}");
        assert!(shown.ends_with("(100000 characters)"), "{shown}");
        assert_eq!(quoted("a\tb"), "a\\tb");
    }
}

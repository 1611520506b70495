//! How user strings (names, URLs, paths, tokens of a file) appear in messages and logs:
//! control characters escaped, so that a value cannot start a fake log line or drive a
//! terminal, and long values cut, so that a message never carries a file's contents.

use std::borrow::Cow;

/// How many characters of a user's value a message quotes.
pub const QUOTED_CHARS: usize = 48;

/// `value` with control characters escaped (`\n`, `\u{1b}`).
pub fn escape_control(value: &str) -> Cow<'_, str> {
    escape_control_but(value, |_| false)
}

/// `value` with control characters escaped, except those `keep` keeps.
fn escape_control_but(value: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let escapes = |c: char| c.is_control() && !keep(c);
    if !value.chars().any(escapes) {
        return Cow::Borrowed(value);
    }
    let mut escaped = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        if escapes(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// `value` escaped and cut to `QUOTED_CHARS` characters, for quoting in a message.
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

/// Query keys whose values are credentials: a key is one when it is, or ends with, one of
/// these (case aside), so `access_token`, `stream_key` and `X-Amz-Signature` are too.
const SECRET_QUERY_KEYS: [&str; 13] = [
    "passphrase",
    "streamid",
    "token",
    "key",
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "auth",
    "sig",
    "signature",
    "credential",
];

/// URL schemes whose path after the application is a stream key (`rtmp://host/app/KEY`).
const STREAM_KEY_SCHEMES: [&str; 6] = ["rtmp", "rtmps", "rtmpe", "rtmpt", "rtmpte", "rtmpts"];

/// What a hidden credential is shown as.
const HIDDEN: &str = "***";

/// `text` with the credentials of every URL in it hidden: the userinfo
/// (`rtsp://user:pass@cam/x` becomes `rtsp://***@cam/x`), the values of query keys that
/// hold secrets (`srt://h:9000?passphrase=***&streamid=***`, `?token=***`, see
/// `SECRET_QUERY_KEYS`) and an RTMP stream key (`rtmp://host/app/***`). Applied where
/// text leaves the process (log lines, API answers, what the CLI prints), so a secret in a
/// source or sink URL is shown nowhere, whichever message (ours or FFmpeg's) quotes it.
pub fn redact_credentials(text: &str) -> Cow<'_, str> {
    const SEPARATOR: &str = "://";
    if !text.contains(SEPARATOR) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(SEPARATOR) {
        let before = &rest[..at];
        let scheme_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
        let scheme = &before[scheme_start..];
        let after = &rest[at + SEPARATOR.len()..];
        // The URL ends where the text quoting it goes on.
        let end = after
            .find(|c: char| matches!(c, '`' | '"' | '\'' | '<' | '>') || c.is_whitespace() || c.is_control())
            .unwrap_or(after.len());
        shown.push_str(&rest[..at + SEPARATOR.len()]);
        redact_url(scheme, &after[..end], &mut shown);
        rest = &after[end..];
    }
    shown.push_str(rest);
    if shown == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(shown)
    }
}

/// Appends `url` (what follows `SCHEME://`) to `shown` with its credentials hidden.
fn redact_url(scheme: &str, url: &str, shown: &mut String) {
    let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
    let authority = &url[..authority_end];
    match authority.rfind('@') {
        // A password holding '@' is hidden whole: the last '@' of the authority ends it.
        Some(userinfo_end) => {
            shown.push_str(HIDDEN);
            shown.push_str(&authority[userinfo_end..]);
        }
        None => shown.push_str(authority),
    }
    let rest = &url[authority_end..];
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    let path = &rest[..path_end];
    let stream_key = STREAM_KEY_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(scheme));
    // `/app/KEY`: the application is kept, all after it is the key.
    match path.get(1..).and_then(|p| p.find('/')).map(|i| i + 1) {
        Some(app_end) if stream_key && app_end + 1 < path.len() => {
            shown.push_str(&path[..=app_end]);
            shown.push_str(HIDDEN);
        }
        _ => shown.push_str(path),
    }
    let rest = &rest[path_end..];
    // A query runs to the URL's end: an SRT `streamid` holds `#` (`#!::r=live`), so a
    // fragment after a secret value is hidden with it.
    match rest.strip_prefix('?') {
        None => shown.push_str(rest),
        Some(query) => {
            shown.push('?');
            for (index, pair) in query.split('&').enumerate() {
                if index > 0 {
                    shown.push('&');
                }
                match pair.split_once('=') {
                    Some((key, value)) if is_secret_key(key) && !value.is_empty() => {
                        shown.push_str(key);
                        shown.push('=');
                        shown.push_str(HIDDEN);
                    }
                    _ => shown.push_str(pair),
                }
            }
        }
    }
}

/// Whether a query key names a credential (see [`SECRET_QUERY_KEYS`]).
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_QUERY_KEYS.iter().any(|secret| key.ends_with(secret))
}

/// `text` as a terminal shows it: URL credentials hidden ([`redact_credentials`]) and every
/// control character escaped but the line breaks of a message of several lines (a config
/// error's quoted line, a list of problems), so that no value (a hostname, a config's bytes)
/// can clear the screen, drive the terminal or hide part of a message.
pub fn for_terminal(text: &str) -> String {
    escape_control_but(&redact_credentials(text), |c| c == '\n').into_owned()
}

/// One log event as written: URL credentials hidden and every control character escaped but
/// the event's own final line break, so that no value in it can start a forged log line.
/// With `keep_colours`, the colour codes the formatter writes for a terminal
/// (`ESC[...m`) are kept.
pub fn for_log(event: &str, keep_colours: bool) -> Cow<'_, str> {
    let body = event.strip_suffix('\n').unwrap_or(event);
    let redacted = redact_credentials(body);
    let needs_escape = redacted.chars().any(char::is_control);
    if !needs_escape && matches!(redacted, Cow::Borrowed(_)) {
        return Cow::Borrowed(event);
    }
    let mut shown = if keep_colours {
        escape_keeping_colours(&redacted)
    } else {
        escape_control(&redacted).into_owned()
    };
    if body.len() < event.len() {
        shown.push('\n');
    }
    Cow::Owned(shown)
}

/// [`escape_control`], keeping Select Graphic Rendition sequences (`ESC[1;31m`): colours
/// and weights, which move nothing and erase nothing.
fn escape_keeping_colours(text: &str) -> String {
    let mut shown = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| c.is_control()) {
        shown.push_str(&rest[..at]);
        let tail = &rest[at..];
        let sgr_len = tail.strip_prefix("\u{1b}[").and_then(|params| {
            let digits = params.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
            (params[digits..].starts_with('m')).then_some(2 + digits + 1)
        });
        match sgr_len {
            Some(len) => {
                shown.push_str(&tail[..len]);
                rest = &tail[len..];
            }
            None => {
                let c = tail.chars().next().unwrap_or_default();
                shown.extend(c.escape_default());
                rest = &tail[c.len_utf8()..];
            }
        }
    }
    shown.push_str(rest);
    shown
}

/// A writer of log events that shows each as `for_log` does: URL credentials hidden and
/// control characters escaped. The log formatter writes each event with one call, so no URL
/// is split between two writes.
pub struct RedactingWriter<W: std::io::Write> {
    inner: W,
    keep_colours: bool,
}

impl<W: std::io::Write> RedactingWriter<W> {
    /// Writes to `inner`; `keep_colours` when the formatter writes colour codes (a terminal).
    pub fn new(inner: W, keep_colours: bool) -> RedactingWriter<W> {
        RedactingWriter { inner, keep_colours }
    }
}

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => {
                self.inner.write_all(for_log(text, self.keep_colours).as_bytes())?;
                Ok(buf.len())
            }
            Err(_) => self.inner.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
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
            "cannot open rtsp://***@h/x and `srt://***@host?passphrase=***`: refused"
        );
        assert_eq!(redact_credentials("udp://0.0.0.0:5000"), "udp://0.0.0.0:5000");
        assert_eq!(redact_credentials("mail me@example.org"), "mail me@example.org");
        assert_eq!(redact_credentials("http://a:b@c"), "http://***@c");
        // A password holding '@' is hidden whole: the last '@' of the authority ends it.
        assert_eq!(redact_credentials("rtsp://u:p@ss@h/x"), "rtsp://***@h/x");
    }

    #[test]
    fn secret_query_values_and_stream_keys_are_hidden_by_one_rule() {
        assert_eq!(
            redact_credentials("srt://h:9000?mode=caller&passphrase=0123456789&streamid=#!::r=live/cam,m=publish"),
            "srt://h:9000?mode=caller&passphrase=***&streamid=***"
        );
        assert_eq!(
            redact_credentials("input rtmp://ingest.example/live/sk-live-123?token=abc: refused"),
            "input rtmp://ingest.example/live/***?token=*** refused"
        );
        assert_eq!(redact_credentials("RTMPS://h/app/KEY"), "RTMPS://h/app/***");
        assert_eq!(redact_credentials("rtmp://h/app"), "rtmp://h/app", "no key to hide");
        assert_eq!(
            redact_credentials("https://h/v.m3u8?X-Amz-Signature=f00&Access_Token=t&x=1"),
            "https://h/v.m3u8?X-Amz-Signature=***&Access_Token=***&x=1"
        );
        // Not secrets: other keys, other schemes' paths, text that is no URL.
        assert_eq!(
            redact_credentials("udp://h:5000?pkt_size=1316"),
            "udp://h:5000?pkt_size=1316"
        );
        assert_eq!(redact_credentials("http://h/app/file.ts"), "http://h/app/file.ts");
        assert!(matches!(redact_credentials("no url ?key=1"), Cow::Borrowed(_)));
        // In JSON, the URL ends at its closing quote.
        assert_eq!(
            redact_credentials(r#"{"url":"srt://h?pwd=p","x":1}"#),
            r#"{"url":"srt://h?pwd=***","x":1}"#
        );
    }

    #[test]
    fn logs_and_terminals_get_control_characters_escaped() {
        assert_eq!(
            for_log("host x\nFAKE ERROR\u{0} at rtsp://u:p@h/x\n", false),
            "host x\\nFAKE ERROR\\u{0} at rtsp://***@h/x\n"
        );
        assert_eq!(for_log("plain\n", false), "plain\n");
        assert_eq!(
            for_log("\u{1b}[31mERROR\u{1b}[0m a\u{1b}[2Jb\n", true),
            "\u{1b}[31mERROR\u{1b}[0m a\\u{1b}[2Jb\n",
            "colours kept, other sequences escaped"
        );
        assert_eq!(
            for_terminal("bad TOML\n2 | name = \"a\u{1b}[2J\u{0}\r\"\n"),
            "bad TOML\n2 | name = \"a\\u{1b}[2J\\u{0}\\r\"\n"
        );
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

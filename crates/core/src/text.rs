//! How user strings (names, URLs, paths, tokens of a file) appear in messages and logs:
//! control characters escaped, so that a value cannot start a fake log line or drive a
//! terminal, and long values cut, so that a message never carries a file's contents.

use std::borrow::Cow;

/// How many characters of a user's value a message quotes.
pub const QUOTED_CHARS: usize = 48;

/// Whether `c` must not reach a terminal, a log or a console raw: a control character (C0,
/// DEL, C1), a bidirectional control that reorders what follows it on screen (U+202A..U+202E,
/// U+2066..U+2069, the marks U+200E, U+200F, U+061C), or a line or paragraph separator
/// (U+2028, U+2029) that some viewers break lines at. Every escaping function here uses this
/// one rule, so a value cannot start a fake log line, drive a terminal or show text backwards.
pub fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{2028}' | '\u{2029}'
        )
}

/// `value` with the characters [`must_escape`] names escaped (`\n`, `\u{1b}`, `\u{202e}`).
pub fn escape_control(value: &str) -> Cow<'_, str> {
    escape_control_but(value, |_| false)
}

/// `value` with the characters [`must_escape`] names escaped, except those `keep` keeps.
fn escape_control_but(value: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let escapes = |c: char| must_escape(c) && !keep(c);
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

/// Keys whose values are credentials, wherever a URL gives `KEY=VALUE` (query, fragment,
/// `;` parameters, a path segment): a key is one when it is, or ends with, one of these (case
/// aside, after percent-decoding), so `access_token`, `stream_key`, `X-Amz-Signature` and
/// `to%6Ben` are too. `policy` and `key-pair-id` complete a signed URL's `Signature`.
const SECRET_KEYS: [&str; 15] = [
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
    "policy",
    "key-pair-id",
];

/// URL schemes whose path after the application is a stream key (`rtmp://host/app/KEY`).
const STREAM_KEY_SCHEMES: [&str; 6] = ["rtmp", "rtmps", "rtmpe", "rtmpt", "rtmpte", "rtmpts"];

/// What a hidden credential is shown as.
const HIDDEN: &str = "***";

/// `text` with the credentials of every URL in it hidden: the userinfo
/// (`rtsp://user:pass@cam/x` becomes `rtsp://***@cam/x`), the value of every `KEY=VALUE` whose
/// key names a secret, wherever the URL gives one: query, fragment, `;` parameters, a path
/// segment (`srt://h:9000?passphrase=***&streamid=***`, `#token=***`, `/pass=***/`, keys
/// percent-decoded before matching, see `SECRET_KEYS`), a value that is itself an encoded URL
/// with credentials, and an RTMP stream key (`rtmp://host/app/***`). Applied where text leaves
/// the process (log lines, API answers, what the CLI prints), so a secret in a source or sink
/// URL is shown nowhere, whichever message (ours or FFmpeg's) quotes it.
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
        // The URL ends where the text quoting it goes on (a bidi control inside it does not
        // end it: what follows is still redacted, and the control escaped after).
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
    let host = match authority.rfind('@') {
        // A password holding '@' (or ';') is hidden whole: the last '@' of the authority ends it.
        Some(userinfo_end) => {
            shown.push_str(HIDDEN);
            &authority[userinfo_end..]
        }
        None => authority,
    };
    // `srt://h:9000;passphrase=...`: parameters after the host, as in a path.
    let params_start = host.find(';').unwrap_or(host.len());
    shown.push_str(&host[..params_start]);
    redact_pairs(&host[params_start..], PATH_SEPARATORS, PATH_SEPARATORS, shown);

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
        _ => redact_pairs(path, PATH_SEPARATORS, PATH_SEPARATORS, shown),
    }
    // The query and the fragment: a secret value runs to the next `&` or `;`, past a `#`, since
    // an SRT `streamid` holds one (`#!::r=live`); other pairs end at a `#` too, so a
    // fragment's `#token=...` is a pair of its own.
    redact_pairs(&rest[path_end..], QUERY_SEPARATORS, SECRET_VALUE_ENDS, shown);
}

/// What separates `KEY=VALUE` pairs in a URL's path (`/pass=X/`, `;passphrase=X`).
const PATH_SEPARATORS: &[char] = &['/', ';'];
/// What separates pairs in a URL's query and fragment.
const QUERY_SEPARATORS: &[char] = &['?', '&', ';', '#'];
/// What ends a secret value in a query or fragment.
const SECRET_VALUE_ENDS: &[char] = &['&', ';'];

/// Appends `text` to `shown`, each `KEY=VALUE` between `separators` with its value hidden when
/// the key names a secret (the value then running to one of `secret_ends`), or when the value,
/// percent-decoded, is a URL holding credentials (`?url=rtsp%3A%2F%2Fu%3Ap%40h`).
fn redact_pairs(text: &str, separators: &[char], secret_ends: &[char], shown: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let segment_end = rest.find(separators).unwrap_or(rest.len());
        let segment = &rest[..segment_end];
        let Some((key, value)) = segment.split_once('=') else {
            // A separator, or a segment that is no pair: shown, and the separator after it.
            let taken = segment_end + rest[segment_end..].chars().next().map_or(0, char::len_utf8);
            shown.push_str(&rest[..taken]);
            rest = &rest[taken..];
            continue;
        };
        if is_secret_key(key) {
            let value_start = key.len() + 1;
            let value_end = rest[value_start..]
                .find(secret_ends)
                .map_or(rest.len(), |i| value_start + i);
            shown.push_str(&rest[..value_start]);
            if value_end > value_start {
                shown.push_str(HIDDEN);
            }
            rest = &rest[value_end..];
        } else {
            shown.push_str(key);
            shown.push('=');
            if holds_credentials(value) {
                shown.push_str(HIDDEN);
            } else {
                shown.push_str(value);
            }
            rest = &rest[segment_end..];
        }
    }
}

/// Whether a key names a credential (see [`SECRET_KEYS`]), percent-decoded and case aside.
fn is_secret_key(key: &str) -> bool {
    let key = percent_encoding::percent_decode_str(key)
        .decode_utf8_lossy()
        .to_ascii_lowercase();
    let key = key.trim();
    SECRET_KEYS.iter().any(|secret| key.ends_with(secret))
}

/// Whether a value, percent-decoded, is or holds a URL with credentials in it.
fn holds_credentials(value: &str) -> bool {
    if !value.contains('%') {
        return false;
    }
    let decoded = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
    if !decoded.contains("://") {
        return false;
    }
    // A URL encoded twice is not looked into further (that would recurse): it is hidden.
    decoded.contains('%') || matches!(redact_credentials(&decoded), Cow::Owned(_))
}

/// `text` as an API answer or the console shows a user's string (a URL, an error quoting
/// one): URL credentials hidden and every character [`must_escape`] names escaped, line
/// breaks too (JSON would carry them, and a bidi control, raw to whoever renders it).
pub fn for_display(text: &str) -> String {
    escape_control(&redact_credentials(text)).into_owned()
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
    let needs_escape = redacted.chars().any(must_escape);
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
    while let Some(at) = rest.find(must_escape) {
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
    fn secrets_are_found_in_fragments_parameters_paths_and_encoded_keys() {
        let cases = [
            ("https://h/v.m3u8#token=SECRET1", "https://h/v.m3u8#token=***"),
            (
                "https://h/v.m3u8?a=1#access_token=SECRET1&b=2",
                "https://h/v.m3u8?a=1#access_token=***&b=2",
            ),
            (
                "https://h/v.m3u8?to%6Ben=SECRET1&x=1",
                "https://h/v.m3u8?to%6Ben=***&x=1",
            ),
            ("https://h/v.m3u8?%70%61ss=SECRET1", "https://h/v.m3u8?%70%61ss=***"),
            (
                "https://d.cloudfront.net/v.m3u8?Policy=SECRET1&Signature=SECRET2&Key-Pair-Id=SECRET3",
                "https://d.cloudfront.net/v.m3u8?Policy=***&Signature=***&Key-Pair-Id=***",
            ),
            ("srt://h:9000;passphrase=SECRET1", "srt://h:9000;passphrase=***"),
            ("rtsp://h/live;auth=SECRET1;x=1/s", "rtsp://h/live;auth=***;x=1/s"),
            ("http://h/pass=SECRET1/v.ts", "http://h/pass=***/v.ts"),
            (
                "http://h/a/b?url=rtsp%3A%2F%2Fu%3ASECRET1%40cam%2Fx&n=1",
                "http://h/a/b?url=***&n=1",
            ),
            ("rtsp://u:p;SECRET1@h/x", "rtsp://***@h/x"),
        ];
        for (url, wanted) in cases {
            let shown = redact_credentials(url);
            assert_eq!(shown, wanted, "{url}");
            assert!(!shown.contains("SECRET"), "{shown}");
        }
        // What names no secret is kept as it was.
        for url in [
            "https://h/v.m3u8?a=1#t=10",
            "http://h/a=b/c;d=e?f=g#h",
            "http://h/x?u=http%3A%2F%2Fh%2Fy",
        ] {
            assert_eq!(redact_credentials(url), url);
        }
    }

    #[test]
    fn bidirectional_controls_and_line_separators_are_escaped_as_control_characters_are() {
        let url = "rtsp://cam/\u{202e}4pm.exe\u{2066}x\u{2069}\u{2028}y\u{200f}";
        let wanted = "rtsp://cam/\\u{202e}4pm.exe\\u{2066}x\\u{2069}\\u{2028}y\\u{200f}";
        assert_eq!(escape_control(url), wanted);
        assert_eq!(for_log(&format!("{url}\n"), false), format!("{wanted}\n"));
        assert_eq!(for_log(&format!("{url}\n"), true), format!("{wanted}\n"));
        assert_eq!(for_terminal(url), wanted);
        assert_eq!(quoted("a\u{202e}b"), "a\\u{202e}b");
        // A control inside a URL ends nothing: the secret after it is hidden still.
        assert_eq!(
            for_log("rtsp://h/\u{202e}x?token=SECRET\n", false),
            "rtsp://h/\\u{202e}x?token=***\n"
        );
        // Letters of right-to-left scripts are text, not controls.
        assert_eq!(escape_control("שלום مرحبا"), "שלום مرحبا");
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

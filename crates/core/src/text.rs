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
    let escaped = escape_control(value);
    let mut chars = escaped.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}... ({} characters)", value.chars().count())
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

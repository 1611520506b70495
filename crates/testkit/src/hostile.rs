//! Inputs a careless user or an attacker would hand convstream to parse, as proptest
//! strategies, with the limits every answer to them keeps: the mask properties (core) and the
//! config and API properties (the binary) share them.

use proptest::prelude::*;
use proptest::sample::select;
use std::time::Duration;

/// Far more than any of these inputs needs: a case over it is a hang.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);
/// The longest single problem message (a quoted value is cut to 48 characters).
pub const MESSAGE_LIMIT: usize = 600;

/// How many cases a property runs: 256, or `PROPTEST_CASES`.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        // PROPTEST_CASES runs more (a longer search before a release).
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Values a careless user or an attacker would type for a number or a name.
pub fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "0",
            "1",
            "3",
            "4",
            "13",
            "63",
            "64",
            "65",
            "-1",
            "1e20",
            "-1e20",
            "1e-300",
            "nan",
            "inf",
            "-inf",
            "0.5",
            "2.5",
            "true",
            "x",
            "",
            "99999999999999999999",
            "4294967297",
            "/dev/zero",
            "../../etc/shadow",
        ])
        .prop_map(str::to_string),
        any::<f64>().prop_map(|v| v.to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        text(12),
    ]
}

/// Any text of up to `max` characters (control characters and all).
pub fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..=max).prop_map(|chars| chars.into_iter().collect())
}

/// SPECs of every preset and key, misspelt ones too, with hostile values; or any text.
pub fn mask_spec() -> impl Strategy<Value = String> {
    let presets = select(vec![
        "identity",
        "box",
        "gaussian",
        "sharpen",
        "unsharp",
        "laplacian",
        "sobel-x",
        "emboss",
        "motion-blur",
        "edge",
        "custom",
        "gausian",
        "",
        "soft",
    ]);
    let keys = select(vec![
        "size",
        "width",
        "height",
        "sigma",
        "amount",
        "angle",
        "neighbours",
        "divisor",
        "normalize",
        "bias",
        "sise",
        "",
        "file",
    ]);
    let pairs = proptest::collection::vec((keys, value_text()), 0..5);
    prop_oneof![
        (presets, pairs).prop_map(|(preset, pairs)| {
            let pairs: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if pairs.is_empty() {
                preset.to_string()
            } else {
                format!("{preset}:{}", pairs.join(","))
            }
        }),
        text(40),
    ]
}

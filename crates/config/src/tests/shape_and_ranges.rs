//! Type-level mistakes found in one pass, numeric ranges, names and control characters.

use super::*;

#[test]
fn type_mistakes_are_all_reported_in_one_pass_with_their_places() {
    let text = r#"
colour = 1

[server]
shutdown_timeout = "soon"

[masks.soft]
preset = "gaussian"
sise = 3

[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
realtme = true
threads = 100000
[pipeline.filter]
planes = "y"
border = "reflct"
mask = "soft"
[pipeline.sink]
url = "out.mp4"

[[pipeline]]
name = "cam2"
[pipeline.source]
format = "mpegts"
[pipeline.filter]
streams = 99
[pipeline.sink]
url = "out2.mp4"

[[pipeline]]
name = "cam3"
source = { url = "in3.mp4" }
filter = { streams = 99, border = "wrap" }
sink = { url = "out3.mp4" }
"#;
    let found = type_problems(text);
    let expected = [
        "unknown field `colour`",
        "server.shutdown_timeout: invalid type: string \"soon\"",
        "masks.soft.sise: unknown field `sise`",
        "pipeline \"cam1\": source.realtme: unknown field `realtme`",
        "pipeline \"cam1\": filter.planes: unknown variant `y`",
        "pipeline \"cam1\": filter.border: unknown variant `reflct`",
        "pipeline \"cam2\": source.url is missing",
        // Range problems of what is well-formed come in the same pass.
        "pipeline \"cam1\": source.threads: 100000 is out of range; allowed 0..=64",
        "pipeline \"cam3\": filter.streams: 99 is out of range",
        // A pipeline without its url is still checked, a stand-in in the url's place.
        "pipeline \"cam2\": filter.streams: 99 is out of range",
    ];
    for wanted in expected {
        assert!(
            found.iter().any(|p| p.starts_with(wanted)),
            "missing {wanted:?} in:\n{}",
            found.join("\n")
        );
    }
    // cam2's stand-in url brings no problem of its own, and the broken mask `soft` is not reported
    // again as unknown where cam1 selects it.
    assert!(
        !found.iter().any(|p| p.contains("unknown mask `soft`")),
        "{}",
        found.join("\n")
    );
    assert!(
        !found.iter().any(|p| p.contains("no [[pipeline]]")),
        "{}",
        found.join("\n")
    );
    assert_eq!(found.len(), expected.len(), "{}", found.join("\n"));
}

#[test]
fn a_missing_section_or_name_and_a_wrong_shape_are_reported() {
    let found =
        type_problems("[[pipeline]]\nsource = { url = \"a\" }\n\n[[pipeline]]\nname = \"b\"\nsink = 5\nsorce = 1\n");
    let text = found.join("\n");
    for wanted in [
        "pipeline #1: name is missing",
        "pipeline #1: sink is missing",
        "pipeline \"b\": source is missing",
        "pipeline \"b\": sink: must be a table, not integer",
        "pipeline \"b\": unknown field `sorce` (did you mean `source`?)",
    ] {
        assert!(
            found.iter().any(|p| p.starts_with(wanted)),
            "missing {wanted:?} in:\n{text}"
        );
    }
    let found = type_problems("pipeline = 3\n");
    assert!(
        found[0].starts_with("pipeline: must be an array of tables"),
        "{found:?}"
    );
}

#[test]
fn toml_syntax_errors_stay_one_parse_error() {
    let message = parse_error("[[pipeline]\nname = \"x\"\n");
    assert!(message.starts_with("test.toml"), "{message}");
}

// ---- numeric ranges, names, control characters ----

#[test]
fn every_numeric_setting_outside_its_range_is_rejected_with_the_range() {
    let text = r#"
[server]
shutdown_timeout = 1e20

[[pipeline]]
name = "cam1"
[pipeline.source]
url = "udp://127.0.0.1:5000"
threads = 100000
idle_timeout = 1e20
reconnect = { initial = 1e20, max = 1e20 }
[pipeline.filter]
pinned_frames = 1000000
[pipeline.sink]
url = "out.mp4"
"#;
    let found = problems(text);
    let expected = [
        "server.shutdown_timeout: 100000000000000000000 is out of range; allowed 0.001..=3600 seconds",
        "pipeline \"cam1\": source.threads: 100000 is out of range; allowed 0..=64",
        "pipeline \"cam1\": source.idle_timeout: 100000000000000000000 is out of range; allowed 0.001..=3600 seconds",
        "pipeline \"cam1\": source.reconnect.initial: 100000000000000000000 is out of range",
        "pipeline \"cam1\": source.reconnect.max: 100000000000000000000 is out of range",
        "pipeline \"cam1\": filter.pinned_frames: 1000000 is out of range; allowed 0..=1024",
    ];
    for wanted in expected {
        assert!(
            found.iter().any(|p| p.starts_with(wanted)),
            "missing {wanted:?} in:\n{}",
            found.join("\n")
        );
    }
    assert_eq!(found.len(), expected.len(), "{}", found.join("\n"));
    for (value, ok) in [
        ("0.0", false),
        ("-1.0", false),
        ("nan", false),
        ("inf", false),
        ("0.001", true),
        ("3600.0", true),
    ] {
        let text = MINIMAL.replace("url = \"in.mp4\"", &format!("url = \"in.mp4\"\nidle_timeout = {value}"));
        assert_eq!(
            parse(&text).validate(None, NO_OUTPUT_CHECK).is_ok(),
            ok,
            "idle_timeout = {value}"
        );
    }
}

#[test]
fn validated_timeouts_always_convert_to_durations() {
    use crate::limits::{MAX_SECONDS, MIN_SECONDS};
    for seconds in [MIN_SECONDS, 1.0, MAX_SECONDS] {
        assert!(std::time::Duration::try_from_secs_f64(seconds).is_ok());
    }
    // The doubling backoff stays far from overflow even after many doublings.
    assert!(std::time::Duration::from_secs_f64(MAX_SECONDS)
        .checked_mul(1 << 20)
        .is_some());
}

#[test]
fn pipeline_names_are_letters_digits_dots_underscores_and_dashes() {
    for good in ["cam1", "a", "Cam-2.main_x", &"n".repeat(64)] {
        let text = MINIMAL.replace("name = \"cam1\"", &format!("name = \"{good}\""));
        assert!(parse(&text).validate(None, NO_OUTPUT_CHECK).is_ok(), "{good:?}");
    }
    for bad in ["a b", "a/b", "ERROR\\nfake", "caf\u{e9}", "x;y", &"n".repeat(65)] {
        let text = MINIMAL.replace("name = \"cam1\"", &format!("name = \"{bad}\""));
        let found = problems(&text);
        assert!(
            found[0].starts_with("pipeline #1: name `") && found[0].contains("1 to 64 letters, digits"),
            "{bad:?}: {found:?}"
        );
        assert!(!found[0].contains('\n'), "control characters are escaped: {found:?}");
    }
    let long = MINIMAL.replace("name = \"cam1\"", &format!("name = \"{}\"", "n".repeat(100_000)));
    let found = problems(&long);
    assert!(
        found[0].len() < 300,
        "a long name is not repeated in full: {}",
        found[0].len()
    );
}

#[test]
fn strings_with_control_characters_are_rejected() {
    let text = MINIMAL
        .replace("url = \"in.mp4\"", "url = \"in.mp4\\nERROR fake\"")
        .replace("url = \"out.mp4\"", "url = \"out.mp4\"\ncodec = \"x\\u001b[2J\"");
    let found = problems(&text);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("pipeline \"cam1\": source.url: `in.mp4\\nERROR fake` contains control characters")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.starts_with("pipeline \"cam1\": sink.codec:")),
        "{found:?}"
    );
}

#[test]
fn server_folders_must_exist() {
    let text = format!("[server]\nmask_dir = \"/no/such/folder\"\nallow_paths = [\"/no/such/media\"]\n{MINIMAL}");
    let found = problems(&text);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("server.mask_dir: `/no/such/folder` is not a folder")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("server.allow_paths: `/no/such/media` is not a folder")),
        "{found:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("masks")).unwrap();
    let text = format!("[server]\nmask_dir = \"masks\"\n{MINIMAL}");
    assert!(
        parse(&text).validate(Some(dir.path()), NO_OUTPUT_CHECK).is_ok(),
        "relative to the config's folder"
    );
}

#[test]
fn parser_messages_quoting_a_value_stay_on_one_short_line() {
    // Found by tests/it/properties.rs: serde quotes an unknown variant as written.
    let text = MINIMAL.replace("url = \"out.mp4\"", "url = \"out.mp4\"\ncodec = 5")
        + "[pipeline.filter]\nplanes = \"\\nERROR forged\"\nborder = \""
        + &"x".repeat(5000)
        + "\"\n";
    let found = type_problems(&text);
    assert!(
        found.iter().any(|p| p.contains("unknown variant `\\nERROR forged`")),
        "{found:?}"
    );
    assert!(found.iter().all(|p| !p.contains('\n') && p.len() < 400), "{found:?}");
}

/// `n` NVDEC pipelines writing to the null sink, without a `[server]` table.
fn nvdec_pipelines(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[[pipeline]]\nname = \"cam{i}\"\n[pipeline.source]\nurl = \"in.mp4\"\ndecoder = \"nvdec\"\n\
                 [pipeline.sink]\nurl = \"null\"\n"
            )
        })
        .collect()
}

#[test]
fn the_default_max_pipelines_holds_what_a_two_gpu_host_runs() {
    // 2 x 56 NVDEC pipelines and 64 software ones.
    let settings = parse(&nvdec_pipelines(2 * 56 + 64))
        .validate(None, NO_OUTPUT_CHECK)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(settings.pipelines.len(), 176);
}

#[test]
fn an_explicit_max_pipelines_still_refuses_more_and_says_how_far_it_goes() {
    let found = problems(&format!("[server]\nmax_pipelines = 2\n{}", nvdec_pipelines(3)));
    assert!(
        found
            .iter()
            .any(|p| p.contains("3 pipelines, more than server.max_pipelines (2); raise it (up to 4096")),
        "{found:?}"
    );
}

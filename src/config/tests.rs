//! Unit tests of the configuration: parsing, validation that reports every problem with
//! its location, named and inline masks, and command-line overrides.

use super::*;
use crate::engine::DeviceChoice;
use crate::filter::{BorderMode, PlaneSelection};
use crate::mask::Mask;

const MINIMAL: &str = r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
[pipeline.sink]
url = "out.mp4"
"#;

fn parse(text: &str) -> ConfigFile {
    ConfigFile::parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn problems(text: &str) -> Vec<String> {
    match parse(text).validate(None) {
        Ok(_) => panic!("config should be invalid:\n{text}"),
        Err(ConfigError::Invalid(problems)) => problems,
        Err(other) => panic!("expected Invalid, got {other}"),
    }
}

/// The message of a config that does not parse: a TOML syntax error, or every
/// type-level problem found in one pass.
fn parse_error(text: &str) -> String {
    match ConfigFile::parse(text, "test.toml") {
        Ok(config) => panic!("should not parse: {config:?}"),
        Err(e) => e.to_string(),
    }
}

/// The problems of a config that is TOML but not of the schema.
fn type_problems(text: &str) -> Vec<String> {
    match ConfigFile::parse(text, "test.toml") {
        Ok(config) => panic!("should not parse: {config:?}"),
        Err(ConfigError::InvalidFile { origin, problems }) => {
            assert_eq!(origin, "test.toml");
            problems
        }
        Err(other) => panic!("expected every problem at once, got {other}"),
    }
}

fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/examples")
}

#[test]
fn default_config_parses_and_validates() {
    let config = ConfigFile::builtin_default();
    let settings = config.validate(None).unwrap();
    assert_eq!(settings.pipelines.len(), 1);
    let demo = &settings.pipelines[0];
    assert_eq!(demo.name, "demo");
    assert_eq!(demo.filter.mask, Mask::from_spec("gaussian:size=13,sigma=3").unwrap());
    assert_eq!(demo.filter.border, BorderMode::Reflect);
    assert_eq!(demo.device, DeviceChoice::Auto);
    assert_eq!(settings.log.format, LogFormat::Pretty);
}

#[test]
fn every_example_validates() {
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let config = ConfigFile::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let settings = config
                .validate(path.parent())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!settings.pipelines.is_empty());
            seen.push(path.file_name().unwrap().to_string_lossy().to_string());
        }
    }
    seen.sort();
    for required in [
        "blur-file.toml",
        "custom-matrix.toml",
        "edge-udp.toml",
        "sharpen-y4m-pipe.toml",
    ] {
        assert!(
            seen.iter().any(|s| s == required),
            "config/examples lacks {required}: {seen:?}"
        );
    }
}

#[test]
fn examples_mean_what_they_say() {
    let load = |name: &str| {
        let path = examples_dir().join(name);
        ConfigFile::load(&path).unwrap().validate(path.parent()).unwrap()
    };
    let udp = load("edge-udp.toml");
    assert_eq!(udp.pipelines[0].sink.format.as_deref(), Some("mpegts"));
    assert_eq!(udp.pipelines[0].sink.url, "udp://127.0.0.1:5000?pkt_size=1316");
    let pipe = load("sharpen-y4m-pipe.toml");
    assert_eq!(pipe.pipelines[0].sink.url, "-");
    let custom = load("custom-matrix.toml");
    let emboss = custom.pipelines.iter().find(|p| p.name == "emboss").unwrap();
    assert_eq!((emboss.filter.mask.width(), emboss.filter.mask.height()), (5, 5));
    let sum: f32 = emboss.filter.mask.coefficients().iter().sum();
    assert_eq!(sum, 1.0);
}

#[test]
fn minimal_config_takes_the_defaults() {
    let settings = parse(MINIMAL).validate(None).unwrap();
    let p = &settings.pipelines[0];
    assert_eq!(p.filter.mask, Mask::from_spec("identity").unwrap());
    assert_eq!(p.filter.planes, PlaneSelection::All);
    assert_eq!(p.filter.border, BorderMode::Reflect);
    assert_eq!(p.device, DeviceChoice::Auto);
    assert_eq!(p.streams, 4);
    assert_eq!(p.frames_per_stream, 2);
    assert_eq!(p.source.decoder, "auto");
    assert!(p.sink.audio);
    assert!(!p.sink.lossless);
}

#[test]
fn unknown_fields_are_rejected_by_name() {
    for (text, field) in [
        (format!("{MINIMAL}\n[pipeline.filter]\nmaks = \"box\"\n"), "maks"),
        (
            MINIMAL.replace("name = \"cam1\"", "name = \"cam1\"\ncolour = \"red\""),
            "colour",
        ),
        (format!("[log]\nlevle = \"info\"\n{MINIMAL}"), "levle"),
        (format!("bogus = 1\n{MINIMAL}"), "bogus"),
        (
            MINIMAL.replace("url = \"in.mp4\"", "url = \"in.mp4\"\nrealtme = true"),
            "realtme",
        ),
        (
            MINIMAL.replace("url = \"out.mp4\"", "url = \"out.mp4\"\ncodex = \"x\""),
            "codex",
        ),
        (format!("[masks.soft]\npreset = \"box\"\nsise = 3\n{MINIMAL}"), "sise"),
        (
            format!("{MINIMAL}\n[pipeline.filter]\nmask = {{ preset = \"gaussian\", sigmaa = 2 }}\n"),
            "sigmaa",
        ),
    ] {
        let message = parse_error(&text);
        assert!(
            message.contains(&format!("unknown field `{field}`")),
            "{field}: {message}"
        );
        assert!(
            message.starts_with("test.toml: 1 problem in the configuration"),
            "{field}: {message}"
        );
    }
}

#[test]
fn wrong_types_are_parse_errors() {
    let message = parse_error(&format!("{MINIMAL}\n[pipeline.filter]\nmask = 5\n"));
    assert!(message.contains("mask must be a string"), "{message}");
    let message = parse_error(&format!("{MINIMAL}\n[pipeline.filter]\nborder = \"reflected\"\n"));
    assert!(message.contains("reflected"), "{message}");
}

#[test]
fn every_problem_is_reported_with_its_location() {
    let text = r#"
[log]
level = "[nonsense"

[masks.broken]
preset = "box"
size = 4

[masks.box]
preset = "gaussian"

[[pipeline]]
name = "cam1"
[pipeline.source]
url = ""
[pipeline.filter]
mask = "gaussian:size=14"
device = "tpu"
streams = 0
frames_per_stream = 5
[pipeline.sink]
url = "out.mp4"

[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
[pipeline.filter]
mask = { matrix = [[1, 2], [3, 4]] }
[pipeline.sink]
url = ""

[[pipeline]]
name = ""
[pipeline.source]
url = "in.mp4"
[pipeline.filter]
mask = "gausian"
[pipeline.sink]
url = "x.mp4"
"#;
    let found = problems(text);
    let expected = [
        "masks.broken: size: 4 is even; mask sizes must be odd, 1..=63",
        "masks.box: the name hides the preset `box`",
        "log.level: `[nonsense` is not a log filter",
        "pipeline \"cam1\": source.url is empty",
        "pipeline \"cam1\": filter.device: `tpu` is not a device",
        "pipeline \"cam1\": filter.streams: 0 is out of range; allowed 1..=16",
        "pipeline \"cam1\": filter.frames_per_stream: 5 is out of range; allowed 1..=4",
        "pipeline \"cam1\": filter.mask: size: 14 is even; mask sizes must be odd, 1..=63",
        "pipeline \"cam1\": the name is used by another pipeline",
        "pipeline \"cam1\": sink.url is empty",
        "pipeline \"cam1\": filter.mask: matrix is 2x2 (height x width)",
        "pipeline #3: name is empty",
        "pipeline #3: filter.mask: unknown mask `gausian` (did you mean `gaussian`?)",
    ];
    for wanted in expected {
        assert!(
            found.iter().any(|p| p.starts_with(wanted)),
            "missing {wanted:?} in:\n{}",
            found.join("\n")
        );
    }
    assert_eq!(found.len(), expected.len(), "{}", found.join("\n"));
    // The message lists them all, one per line.
    let message = ConfigError::Invalid(found).to_string();
    assert!(
        message.starts_with("13 problems in the configuration:\n  - "),
        "{message}"
    );
}

#[test]
fn no_pipeline_is_a_problem() {
    let found = problems("[log]\nlevel = \"info\"\n");
    assert_eq!(
        found,
        vec!["no [[pipeline]] defined; a config needs at least one".to_string()]
    );
}

#[test]
fn named_masks_are_selected_by_name() {
    let text = format!(
        r#"
[masks.soft]
preset = "gaussian"
size = 7
sigma = 1.5

[masks.ridge]
matrix = [[-1, -1, -1], [2, 2, 2], [-1, -1, -1]]
bias = 128
{MINIMAL}
[pipeline.filter]
mask = "soft"

[[pipeline]]
name = "cam2"
[pipeline.source]
url = "in.mp4"
[pipeline.filter]
mask = "ridge"
[pipeline.sink]
url = "out2.mp4"

[[pipeline]]
name = "cam3"
[pipeline.source]
url = "in.mp4"
[pipeline.filter]
mask = "gaussian:size=7,sigma=1.5"
[pipeline.sink]
url = "out3.mp4"
"#
    );
    let settings = parse(&text).validate(None).unwrap();
    let [soft, ridge, spec] = &settings.pipelines[..] else {
        panic!("three pipelines expected")
    };
    assert_eq!(soft.filter.mask.coefficients(), spec.filter.mask.coefficients());
    assert!(
        soft.filter.mask.description().starts_with("soft"),
        "{}",
        soft.filter.mask.description()
    );
    assert_eq!(ridge.filter.mask.bias(), 128.0);
    assert_eq!(
        ridge.filter.mask.coefficients(),
        &[-1.0, -1.0, -1.0, 2.0, 2.0, 2.0, -1.0, -1.0, -1.0]
    );
    assert!(ridge.filter.mask.is_separable());
}

#[test]
fn inline_mask_tables() {
    let text = format!(
        "{MINIMAL}\n[pipeline.filter]\nmask = {{ preset = \"box\", width = 15, height = 1 }}\nplanes = \"luma\"\nborder = \"wrap\"\ndevice = \"cpu\"\n"
    );
    let settings = parse(&text).validate(None).unwrap();
    let p = &settings.pipelines[0];
    assert_eq!((p.filter.mask.width(), p.filter.mask.height()), (15, 1));
    assert_eq!(p.filter.planes, PlaneSelection::Luma);
    assert_eq!(p.filter.border, BorderMode::Wrap);
    assert_eq!(p.device, DeviceChoice::Cpu);

    let text =
        format!("{MINIMAL}\n[pipeline.filter.mask]\nmatrix = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]\nnormalize = true\n");
    let settings = parse(&text).validate(None).unwrap();
    let mask = &settings.pipelines[0].filter.mask;
    assert_eq!(mask.coefficients()[4], 0.25);
    assert!(mask.is_separable());
}

#[test]
fn inline_mask_problems_are_reported() {
    let text = format!("{MINIMAL}\n[pipeline.filter.mask]\nmatrix = [[1, nan, 1], [1, 1], [1, 1, inf]]\n");
    let found = problems(&text);
    let all = found.join("\n");
    assert!(
        all.contains("pipeline \"cam1\": filter.mask: matrix row 2 has 2 values but row 1 has 3"),
        "{all}"
    );
    assert!(all.contains("row 1, column 2 is NaN"), "{all}");
    assert!(all.contains("row 3, column 3 is inf"), "{all}");

    let text = format!("{MINIMAL}\n[pipeline.filter.mask]\npreset = \"laplacian\"\nnormalize = true\n");
    let all = problems(&text).join("\n");
    assert!(
        all.contains("filter.mask: normalize = true but the coefficients sum to 0"),
        "{all}"
    );
}

#[test]
fn relative_mask_files_resolve_from_the_config_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("masks")).unwrap();
    std::fs::write(dir.path().join("masks/line.txt"), "1, 2, 1 # a row\n").unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        format!("[masks.line]\nfile = \"masks/line.txt\"\nnormalize = true\n{MINIMAL}\n[pipeline.filter]\nmask = \"line\"\n"),
    )
    .unwrap();
    let config = ConfigFile::load(&path).unwrap();
    let settings = config.validate(path.parent()).unwrap();
    assert_eq!(settings.pipelines[0].filter.mask.coefficients(), &[0.25, 0.5, 0.25]);
    // Without the folder the file is not found, and the problem names it.
    let all = match config.validate(Some(std::path::Path::new("/nonexistent"))) {
        Err(ConfigError::Invalid(p)) => p.join("\n"),
        other => panic!("{other:?}"),
    };
    assert!(
        all.contains("masks.line: cannot read mask file /nonexistent/masks/line.txt"),
        "{all}"
    );
}

#[test]
fn unreadable_config_names_the_path() {
    let e = ConfigFile::load(std::path::Path::new("/nonexistent/c.toml")).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(
        e.to_string().starts_with("cannot read config /nonexistent/c.toml"),
        "{e}"
    );
}

// ---- overrides ----

#[test]
fn standalone_needs_input_and_output() {
    let e = Overrides::default().standalone().unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("--input is required") && text.contains("--output is required"),
        "{text}"
    );
    let e = Overrides {
        input: Some("in.mp4".into()),
        ..Overrides::default()
    }
    .standalone()
    .unwrap_err();
    assert!(!e.to_string().contains("--input"), "{e}");
}

#[test]
fn standalone_builds_one_pipeline_from_flags() {
    let overrides = Overrides {
        input: Some("in.mp4".into()),
        output: Some("out.mkv".into()),
        mask: Some("box:size=5".into()),
        planes: Some(PlaneSelection::Chroma),
        border: Some(BorderMode::Mirror),
        device: Some("cpu".into()),
        lossless: true,
        ..Overrides::default()
    };
    let settings = overrides.standalone().unwrap().validate(None).unwrap();
    let p = &settings.pipelines[0];
    assert_eq!(p.name, "main");
    assert_eq!(p.source.url, "in.mp4");
    assert_eq!(p.sink.url, "out.mkv");
    assert_eq!(p.filter.mask, Mask::from_spec("box:size=5").unwrap());
    assert_eq!(p.filter.planes, PlaneSelection::Chroma);
    assert_eq!(p.filter.border, BorderMode::Mirror);
    assert_eq!(p.device, DeviceChoice::Cpu);
    assert!(p.sink.lossless);
    assert!(p.sink.audio);
}

#[test]
fn flags_override_the_config() {
    let mut config = parse(&format!(
        "{MINIMAL}\n[pipeline.filter]\nmask = \"sharpen\"\nborder = \"wrap\"\nplanes = \"luma\"\n"
    ));
    Overrides {
        output: Some("other.mkv".into()),
        mask: Some("gaussian:size=3".into()),
        codec: Some("ffv1".into()),
        streams: Some(2),
        frames_per_stream: Some(1),
        ..Overrides::default()
    }
    .apply(&mut config, None)
    .unwrap();
    let p = &config.pipelines[0];
    assert_eq!(p.source.url, "in.mp4", "untouched");
    assert_eq!(p.sink.url, "other.mkv");
    assert_eq!(p.sink.codec.as_deref(), Some("ffv1"));
    assert_eq!(p.filter.mask, MaskSelection::Named("gaussian:size=3".into()));
    assert_eq!(p.filter.border, BorderMode::Wrap, "untouched");
    assert_eq!(p.filter.planes, PlaneSelection::Luma, "untouched");
    assert_eq!(p.filter.streams, 2);
    assert_eq!(p.filter.frames_per_stream, 1);
}

#[test]
fn flags_need_a_single_pipeline() {
    let two = format!("{MINIMAL}\n{}", MINIMAL.replace("cam1", "cam2"));
    let mut config = parse(&two);
    // No flags: every pipeline runs.
    Overrides::default().apply(&mut config, None).unwrap();
    assert_eq!(config.pipelines.len(), 2);
    let flags = Overrides {
        mask: Some("box".into()),
        ..Overrides::default()
    };
    let e = flags.apply(&mut config.clone(), None).unwrap_err().to_string();
    assert!(e.contains("2 pipelines") && e.contains("--pipeline NAME"), "{e}");
    flags.apply(&mut config, Some("cam2")).unwrap();
    assert_eq!(config.pipelines.len(), 1);
    assert_eq!(config.pipelines[0].name, "cam2");
    assert_eq!(config.pipelines[0].filter.mask, MaskSelection::Named("box".into()));
}

#[test]
fn unknown_pipeline_name_lists_the_names() {
    let mut config = parse(MINIMAL);
    let e = Overrides::default()
        .apply(&mut config, Some("cam9"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--pipeline \"cam9\": no such pipeline; the config has cam1"),
        "{e}"
    );
}

#[test]
fn flag_mask_can_name_a_config_mask() {
    let mut config = parse(&format!("[masks.soft]\npreset = \"box\"\nsize = 5\n{MINIMAL}"));
    Overrides {
        mask: Some("soft".into()),
        ..Overrides::default()
    }
    .apply(&mut config, None)
    .unwrap();
    let settings = config.validate(None).unwrap();
    assert_eq!(settings.pipelines[0].filter.mask.width(), 5);
}

#[test]
fn a_broken_named_mask_is_reported_once() {
    let found = problems(&format!(
        "[masks.lumpy]\nmatrix = [[1, 2, 1], [2, 4]]\n{MINIMAL}\n[pipeline.filter]\nmask = \"lumpy\"\n"
    ));
    assert_eq!(
        found,
        vec!["masks.lumpy: matrix row 2 has 2 values but row 1 has 3; rows must all be the same length".to_string()]
    );
}

#[test]
fn a_typo_of_a_named_mask_suggests_it() {
    let found = problems(&format!(
        "[masks.ridges]\nmatrix = [[-1, 2, -1]]\n{MINIMAL}\n[pipeline.filter]\nmask = \"ridgse\"\n"
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("pipeline \"cam1\": filter.mask: unknown mask `ridgse` (did you mean `ridges`?)"),
        "{}",
        found[0]
    );
    assert!(
        found[0].ends_with("the config's [masks] tables are ridges"),
        "{}",
        found[0]
    );
}

#[test]
fn pinned_frames_cap_the_frame_pool() {
    let pool_for = |filter: &str| {
        let settings = parse(&format!("{MINIMAL}\n[pipeline.filter]\n{filter}\n"))
            .validate(None)
            .unwrap();
        crate::pipeline::pooled_frames(&settings.pipelines[0])
    };
    // Two queues of 8, 4 streams x 2 frames, 4 more.
    assert_eq!(pool_for(""), 28);
    assert_eq!(pool_for("streams = 2\nframes_per_stream = 1"), 22);
    assert_eq!(pool_for("pinned_frames = 6"), 6);
    assert_eq!(pool_for("pinned_frames = 0"), 0, "no pool: every frame staged");
    assert_eq!(
        pool_for("pinned_frames = 500"),
        28,
        "never more than the pipeline can hold"
    );
}

// ---- one pass over type-level mistakes ----

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
    ];
    for wanted in expected {
        assert!(
            found.iter().any(|p| p.starts_with(wanted)),
            "missing {wanted:?} in:\n{}",
            found.join("\n")
        );
    }
    // cam2 is left out of validation (no url), and the broken mask `soft` is not reported
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
        assert_eq!(parse(&text).validate(None).is_ok(), ok, "idle_timeout = {value}");
    }
}

#[test]
fn validated_timeouts_always_convert_to_durations() {
    use crate::config::limits::{MAX_SECONDS, MIN_SECONDS};
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
        assert!(parse(&text).validate(None).is_ok(), "{good:?}");
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
        parse(&text).validate(Some(dir.path())).is_ok(),
        "relative to the config's folder"
    );
}

#[test]
fn parser_messages_quoting_a_value_stay_on_one_short_line() {
    // Found by tests/properties.rs: serde quotes an unknown variant as written.
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

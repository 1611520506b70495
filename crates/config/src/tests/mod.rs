//! Unit tests of the configuration: parsing, the examples, validation that reports every
//! problem with its location, named and inline masks. The helpers here serve the modules
//! beside it too: command-line overrides, type-level mistakes and ranges, GPU tuning.

use super::*;
use convstream_core::DeviceChoice;
use convstream_core::Mask;
use convstream_core::{BorderMode, PlaneSelection};

mod graph;
mod overrides;
mod shape_and_ranges;
mod tuning;

const MINIMAL: &str = r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
[pipeline.sink]
url = "out.mp4"
"#;

/// The problems as the config words them.
fn texts(problems: &[Problem]) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

fn parse(text: &str) -> ConfigFile {
    ConfigFile::parse(text, "test.toml", NO_OUTPUT_CHECK).unwrap_or_else(|e| panic!("{e}"))
}

fn problems(text: &str) -> Vec<String> {
    match parse(text).validate(None, NO_OUTPUT_CHECK) {
        Ok(_) => panic!("config should be invalid:\n{text}"),
        Err(ConfigError::Invalid(problems)) => texts(&problems),
        Err(other) => panic!("expected Invalid, got {other}"),
    }
}

/// The message of a config that does not parse: a TOML syntax error, or every
/// type-level problem found in one pass.
fn parse_error(text: &str) -> String {
    match ConfigFile::parse(text, "test.toml", NO_OUTPUT_CHECK) {
        Ok(config) => panic!("should not parse: {config:?}"),
        Err(e) => e.to_string(),
    }
}

/// The problems of a config that is TOML but not of the schema.
fn type_problems(text: &str) -> Vec<String> {
    match ConfigFile::parse(text, "test.toml", NO_OUTPUT_CHECK) {
        Ok(config) => panic!("should not parse: {config:?}"),
        Err(ConfigError::InvalidFile { origin, problems }) => {
            assert_eq!(origin, "test.toml");
            texts(&problems)
        }
        Err(other) => panic!("expected every problem at once, got {other}"),
    }
}

fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/examples")
}

#[test]
fn default_config_parses_and_validates() {
    let config = ConfigFile::builtin_default();
    let settings = config.validate(None, NO_OUTPUT_CHECK).unwrap();
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
            let config = ConfigFile::load(&path, NO_OUTPUT_CHECK).unwrap_or_else(|e| panic!("{e}"));
            let settings = config
                .validate(path.parent(), NO_OUTPUT_CHECK)
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
        ConfigFile::load(&path, NO_OUTPUT_CHECK)
            .unwrap()
            .validate(path.parent(), NO_OUTPUT_CHECK)
            .unwrap()
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
    let settings = parse(MINIMAL).validate(None, NO_OUTPUT_CHECK).unwrap();
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
    let typed = match parse(text).validate(None, NO_OUTPUT_CHECK) {
        Err(ConfigError::Invalid(problems)) => problems,
        other => panic!("expected every problem, got {other:?}"),
    };
    let found = texts(&typed);
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
    let message = ConfigError::Invalid(typed).to_string();
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
    let settings = parse(&text).validate(None, NO_OUTPUT_CHECK).unwrap();
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
    let settings = parse(&text).validate(None, NO_OUTPUT_CHECK).unwrap();
    let p = &settings.pipelines[0];
    assert_eq!((p.filter.mask.width(), p.filter.mask.height()), (15, 1));
    assert_eq!(p.filter.planes, PlaneSelection::Luma);
    assert_eq!(p.filter.border, BorderMode::Wrap);
    assert_eq!(p.device, DeviceChoice::Cpu);

    let text =
        format!("{MINIMAL}\n[pipeline.filter.mask]\nmatrix = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]\nnormalize = true\n");
    let settings = parse(&text).validate(None, NO_OUTPUT_CHECK).unwrap();
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
    let config = ConfigFile::load(&path, NO_OUTPUT_CHECK).unwrap();
    let settings = config.validate(path.parent(), NO_OUTPUT_CHECK).unwrap();
    assert_eq!(settings.pipelines[0].filter.mask.coefficients(), &[0.25, 0.5, 0.25]);
    // Without the folder the file is not found, and the problem names it.
    let all = match config.validate(Some(std::path::Path::new("/nonexistent")), NO_OUTPUT_CHECK) {
        Err(ConfigError::Invalid(p)) => texts(&p).join("\n"),
        other => panic!("{other:?}"),
    };
    assert!(
        all.contains("masks.line: cannot read mask file /nonexistent/masks/line.txt"),
        "{all}"
    );
}

#[test]
fn unreadable_config_names_the_path() {
    let e = ConfigFile::load(std::path::Path::new("/nonexistent/c.toml"), NO_OUTPUT_CHECK).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }));
    assert!(
        e.to_string().starts_with("cannot read config /nonexistent/c.toml"),
        "{e}"
    );
}

#[test]
fn a_filter_alone_gets_the_problems_a_pipeline_with_it_gets_placed_outside_any_pipeline() {
    let config = parse("[masks.ridge]\nmatrix = [[0, -1, 0], [-1, 4, -1], [0, -1, 0]]\n");
    let filter = FilterConfig {
        mask: MaskSelection::Named("gaussian:size=4".into()),
        streams: 0,
        ..FilterConfig::default()
    };
    let alone = match config.validate_filter(&filter, None) {
        Err(ConfigError::Invalid(problems)) => problems,
        other => panic!("expected every problem, got {other:?}"),
    };
    let in_pipeline = problems(&format!(
        "{MINIMAL}\n[pipeline.filter]\nmask = \"gaussian:size=4\"\nstreams = 0\n"
    ));
    assert_eq!(alone.len(), 2, "{alone:?}");
    for problem in &alone {
        assert_eq!(problem.place(), &Place::Config);
        let placed = format!("pipeline \"cam1\": {problem}");
        assert!(in_pipeline.contains(&placed), "{placed} not in {in_pipeline:?}");
    }
    assert_eq!(alone[0].field(), Some("filter.streams"));
    // The config's named masks are there to name, built as validation builds them.
    let named = FilterConfig {
        mask: MaskSelection::Named("ridge".into()),
        ..FilterConfig::default()
    };
    let settings = config.validate_filter(&named, None).unwrap();
    assert!(settings.filter.mask.description().starts_with("ridge"));
}

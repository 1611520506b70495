//! Command-line flags over the config: standalone runs, overrides, pipeline selection.

use super::*;

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
    let settings = overrides.standalone().unwrap().validate(None, NO_OUTPUT_CHECK).unwrap();
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
    let settings = config.validate(None, NO_OUTPUT_CHECK).unwrap();
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

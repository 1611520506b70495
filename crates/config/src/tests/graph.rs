//! `filter.graph`: its parts in the settings, its convolution stage from the graph or from
//! `mask` at `null@mask`, and every one of its problems listed with the rest. libavfilter is
//! the media crate's: a reader of the same shape stands in for it here (the media crate's
//! tests read real graphs).

use super::*;

/// Splits at commas: `sobel` is the convolution stage (a `y` mask), `null@mask` the
/// placeholder, `nosuch` a filter FFmpeg lacks (refused in FFmpeg's words).
fn stand_in(option: &str, text: &str) -> Result<GraphStages, String> {
    let filters: Vec<&str> = text.split(',').collect();
    if let Some(bad) = filters.iter().find(|f| f.starts_with("nosuch")) {
        return Err(format!(
            "{option}: FFmpeg refuses the filter graph: No such filter: '{bad}'"
        ));
    }
    let at = filters.iter().position(|f| *f == "sobel" || *f == MASK_PLACEHOLDER);
    let Some(at) = at else {
        return Ok(GraphStages {
            before: Some(text.to_string()),
            engine: EngineStage::Absent,
            after: None,
            warnings: Vec::new(),
        });
    };
    let part = |p: &[&str]| (!p.is_empty()).then(|| p.join(","));
    Ok(GraphStages {
        before: part(&filters[..at]),
        engine: match filters[at] {
            "sobel" => EngineStage::Filters {
                plane_masks: vec![("y", "sobel".to_string())],
                border: Some("ffmpeg"),
            },
            _ => EngineStage::Mask,
        },
        after: part(&filters[at + 1..]),
        warnings: Vec::new(),
    })
}

fn with_filter(filter: &str) -> String {
    install_graph_reader(stand_in);
    format!("{MINIMAL}[pipeline.filter]\n{filter}\n")
}

#[test]
fn the_graphs_parts_run_before_and_after_its_convolution_filters() {
    let text = with_filter(r#"graph = "scale=64:-2,sobel,format=gray""#);
    let settings = parse(&text).validate(None, NO_OUTPUT_CHECK).unwrap();
    let pipeline = &settings.pipelines[0];
    assert_eq!(pipeline.ffmpeg_before.as_deref(), Some("scale=64:-2"));
    assert_eq!(pipeline.ffmpeg_after.as_deref(), Some("format=gray"));
    assert_eq!(pipeline.filter.border, BorderMode::Ffmpeg);
    let masks = format!("{:?}", pipeline.filter.plane_masks);
    assert!(masks.contains("sobel"), "{masks}");
    // The config as written keeps the graph, for the API and reloads.
    assert_eq!(pipeline.config.filter.ffmpeg_before, None);
    let line = pipeline.describe();
    assert!(
        line.contains("in.mp4 ffmpeg[scale=64:-2] [") && line.contains("] ffmpeg[format=gray] -> out.mp4"),
        "{line}"
    );
}

#[test]
fn at_the_placeholder_the_mask_runs() {
    let text =
        with_filter("graph = \"scale=64:-2,null@mask,format=gray\"\nmask = \"gaussian:size=13\"\nborder = \"nearest\"");
    let settings = parse(&text).validate(None, NO_OUTPUT_CHECK).unwrap();
    let pipeline = &settings.pipelines[0];
    assert_eq!(pipeline.ffmpeg_before.as_deref(), Some("scale=64:-2"));
    assert_eq!(pipeline.ffmpeg_after.as_deref(), Some("format=gray"));
    assert_eq!(pipeline.filter.border, BorderMode::Nearest);
    assert!(
        pipeline.filter.mask.description().contains("gaussian"),
        "{}",
        pipeline.filter.mask.description()
    );
}

#[test]
fn without_a_graph_the_chains_are_the_fields() {
    let text = with_filter("ffmpeg_before = \"scale=64:-2\"\nffmpeg_after = \"format=gray\"");
    let settings = parse(&text).validate(None, NO_OUTPUT_CHECK).unwrap();
    assert_eq!(settings.pipelines[0].ffmpeg_before.as_deref(), Some("scale=64:-2"));
    assert_eq!(settings.pipelines[0].ffmpeg_after.as_deref(), Some("format=gray"));
}

#[test]
fn every_graph_problem_is_listed_at_once() {
    install_graph_reader(stand_in);
    let text = r#"
[[pipeline]]
name = "a"
source.url = "in.mp4"
sink.url = "null"
filter = { graph = "scale=64:-2,nosuchfilter", streams = 0 }
[[pipeline]]
name = "b"
source.url = "in.mp4"
sink.url = "null"
filter = { graph = "sobel", ffmpeg_after = "format=gray", mask = "gaussian", border = "wrap" }
[[pipeline]]
name = "c"
source.url = "in.mp4"
sink.url = "null"
filter = { graph = "scale=64:-2" }
"#;
    let found = problems(text);
    let expected = [
        "pipeline \"a\": filter.graph: FFmpeg refuses the filter graph: No such filter: 'nosuchfilter'",
        "pipeline \"a\": filter.streams: 0 is out of range",
        "pipeline \"b\": filter.ffmpeg_after: cannot be given with filter.graph",
        "pipeline \"b\": filter.mask: the graph's convolution filters say the masks",
        "pipeline \"b\": filter.border: the graph's convolution filters say the masks",
        "pipeline \"c\": filter.graph: `scale=64:-2` has no convolution stage",
    ];
    for start in expected {
        assert!(found.iter().any(|p| p.starts_with(start)), "{start}\nin {found:#?}");
    }
    assert_eq!(found.len(), expected.len(), "{found:#?}");
}

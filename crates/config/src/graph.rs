//! `filter.graph`: one FFmpeg filter chain for a pipeline, split into FFmpeg's own filters
//! before the engine, the engine's convolution stage and FFmpeg's filters after it
//! ([`GraphStages`]). Reading the chain takes libavfilter, which this crate does not link: the
//! media crate installs its reader ([`install_graph_reader`]), the one the command line's
//! `-vf` goes through too, so a graph means the same everywhere.
//!
//! The convolution stage is either the graph's own run of `convolution`, `sobel`, `prewitt`
//! and `roberts` filters (their masks and FFmpeg's border), or the placeholder
//! [`MASK_PLACEHOLDER`] (`null@mask`), where `filter.mask`, `plane_masks`, `planes` and
//! `border` run as they do without a graph. A graph with neither is refused: it would leave
//! the engine nothing to do, or leave the reader to guess where `mask` goes.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::limits;
use crate::problem::Problem;
use crate::schema::{FilterConfig, MaskSelection};
use convstream_core::{BorderMode, PlaneSelection};

/// The filter that marks where `filter.mask` runs in a graph: FFmpeg's `null` (which passes
/// pictures unchanged), named `mask`, so libavfilter reads the graph as it is written.
pub const MASK_PLACEHOLDER: &str = "null@mask";

/// The longest graph a config may hold, in bytes.
pub const MAX_GRAPH_CHARS: usize = 4096;

/// A graph's three parts.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphStages {
    /// FFmpeg's filters before the convolution stage, as a chain (`scale=1280:-2`).
    pub before: Option<String>,
    /// The convolution stage.
    pub engine: EngineStage,
    /// FFmpeg's filters after it, as a chain (`format=gray`).
    pub after: Option<String>,
    /// What is taken differently from how it reads, as FFmpeg takes it.
    pub warnings: Vec<String>,
}

/// What the engine runs in a graph.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineStage {
    /// The graph's convolution filters: a mask SPEC for each plane they filter (`y`, `u`,
    /// `v`) and the border they take.
    Filters {
        /// `(plane, SPEC)`, each plane once.
        plane_masks: Vec<(&'static str, String)>,
        /// The border mode's name (`ffmpeg`), if the filters need one.
        border: Option<&'static str>,
    },
    /// [`MASK_PLACEHOLDER`]: the filter's `mask`, `plane_masks`, `planes` and `border`.
    Mask,
    /// Neither: the graph is FFmpeg's filters alone.
    Absent,
}

impl EngineStage {
    /// The graph's convolution filters' masks as a filter's `plane_masks` (each SPEC named);
    /// empty for the other stages.
    pub fn plane_mask_selections(&self) -> BTreeMap<String, MaskSelection> {
        match self {
            EngineStage::Filters { plane_masks, .. } => plane_masks
                .iter()
                .map(|(plane, spec)| (plane.to_string(), MaskSelection::Named(spec.clone())))
                .collect(),
            _ => BTreeMap::new(),
        }
    }
}

impl GraphStages {
    /// The graph with its convolution stage as [`MASK_PLACEHOLDER`]: what a live switch
    /// leaves of a graph whose convolution filters it replaces with a mask.
    pub fn with_mask_placeholder(&self) -> String {
        [self.before.as_deref(), Some(MASK_PLACEHOLDER), self.after.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Reads a graph: `(option, text)`, `option` naming where the text came from for messages.
/// `Err` is the reason, in libavfilter's words where it refused the text.
pub type GraphReader = fn(&str, &str) -> Result<GraphStages, String>;

static READER: OnceLock<GraphReader> = OnceLock::new();

/// Installs the reader of FFmpeg graphs (the media crate's); the first one installed stays.
pub fn install_graph_reader(reader: GraphReader) {
    let _ = READER.set(reader);
}

/// Reads `text` with the installed reader.
pub fn read_graph(option: &str, text: &str) -> Result<GraphStages, String> {
    match READER.get() {
        Some(reader) => reader(option, text),
        None => Err(format!(
            "{option}: this program reads no FFmpeg filter graphs; give the masks with mask and plane_masks"
        )),
    }
}

/// What a pipeline's filter resolves to: FFmpeg's chains before and after the engine, and
/// the `[filter]` the engine's masks are built from (the graph's convolution filters made
/// masks, or the filter as written).
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) before: Option<String>,
    pub(crate) after: Option<String>,
    pub(crate) filter: FilterConfig,
    /// What the graph's reading takes differently from how it reads ([`GraphStages::warnings`]).
    pub(crate) warnings: Vec<String>,
}

/// Resolves `filter.graph` (or `ffmpeg_before`/`ffmpeg_after` without one); `None` when the
/// graph has problems, which go to `problems`, every one of them.
pub(crate) fn resolve(filter: &FilterConfig, problems: &mut Vec<Problem>) -> Option<Resolved> {
    let Some(graph) = &filter.graph else {
        return Some(Resolved {
            before: filter.ffmpeg_before.clone(),
            after: filter.ffmpeg_after.clone(),
            filter: filter.clone(),
            warnings: Vec::new(),
        });
    };
    let before = problems.len();
    for (field, set) in [
        ("filter.ffmpeg_before", filter.ffmpeg_before.is_some()),
        ("filter.ffmpeg_after", filter.ffmpeg_after.is_some()),
    ] {
        if set {
            problems.push(Problem::value(
                field,
                "cannot be given with filter.graph, which holds FFmpeg's filters before and after the convolution; write them in the graph",
            ));
        }
    }
    if graph.len() > MAX_GRAPH_CHARS {
        problems.push(Problem::value(
            "filter.graph",
            format!("{} bytes, more than {MAX_GRAPH_CHARS}", graph.len()),
        ));
        return None;
    }
    let stages = match read_graph("filter.graph", graph) {
        Ok(stages) => stages,
        Err(reason) => {
            let reason = reason.strip_prefix("filter.graph: ").unwrap_or(&reason).to_string();
            problems.push(Problem::value("filter.graph", reason));
            return None;
        }
    };
    let mut resolved = filter.clone();
    match &stages.engine {
        EngineStage::Filters { border, .. } => {
            let written = [
                ("filter.mask", filter.mask != MaskSelection::default()),
                ("filter.plane_masks", !filter.plane_masks.is_empty()),
                ("filter.planes", filter.planes != PlaneSelection::default()),
                ("filter.border", filter.border != BorderMode::default()),
            ];
            for (field, _) in written.iter().filter(|(_, set)| *set) {
                problems.push(Problem::value(
                    *field,
                    format!(
                        "the graph's convolution filters say the masks, planes and border; leave {field} out, or write `{MASK_PLACEHOLDER}` in the graph where it runs"
                    ),
                ));
            }
            resolved.plane_masks = stages.engine.plane_mask_selections();
            if let Some(border) = border {
                match border.parse::<BorderMode>() {
                    Ok(mode) => resolved.border = mode,
                    Err(e) => problems.push(Problem::value("filter.graph", e.to_string())),
                }
            }
        }
        EngineStage::Mask => {}
        EngineStage::Absent => problems.push(Problem::value(
            "filter.graph",
            format!(
                "`{}` has no convolution stage: write convolution, sobel, prewitt or roberts in it, or `{MASK_PLACEHOLDER}` where filter.mask runs",
                limits::quoted(graph)
            ),
        )),
    }
    (problems.len() == before).then_some(Resolved {
        before: stages.before,
        after: stages.after,
        filter: resolved,
        warnings: stages.warnings,
    })
}

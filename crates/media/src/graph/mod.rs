//! FFmpeg filter graphs: the user's text read by libavfilter ([`chain`]), chains of FFmpeg's
//! own filters run in-process on host frames ([`host`]), the filters FFmpeg's output
//! options add after a graph ([`tail`]), and a chain split into the engine's convolution
//! stage and FFmpeg's filters around it ([`stages`]).

pub mod chain;
pub mod host;
pub mod stages;
pub mod tail;

/// Makes [`stages::split_graph`] the config's reader of `filter.graph`: every front end that
/// runs FFmpeg calls it (through FFmpeg's start-up or on its own) before it validates.
pub fn install_graph_reader() {
    convstream_config::install_graph_reader(stages::split_graph);
}

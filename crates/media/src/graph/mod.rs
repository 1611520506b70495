//! FFmpeg filter graphs: the user's text read by libavfilter ([`chain`]), chains of FFmpeg's
//! own filters run in-process on host frames ([`host`]), and the filters FFmpeg's output
//! options add after a graph ([`tail`]).

pub mod chain;
pub mod host;
pub mod tail;

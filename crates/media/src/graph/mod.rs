//! FFmpeg filter graphs: the user's text read by libavfilter ([`chain`]), and chains of
//! FFmpeg's own filters run in-process on host frames ([`host`]).

pub mod chain;
pub mod host;

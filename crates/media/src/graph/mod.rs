//! FFmpeg filter graphs: the user's text read by libavfilter ([`chain`]).

pub mod chain;

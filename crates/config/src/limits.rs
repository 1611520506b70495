//! The allowed range of every numeric setting and what names and other strings may contain,
//! so that no value in a config or an API request can exhaust, hang or confuse the process
//! or its log. How user strings are shown in messages (`escape_control`, `quoted`) is
//! `convstream_core::text`, re-exported here.

pub use convstream_core::{escape_control, quoted};

use crate::problem::{Place, Problem};
use crate::schema::MaskSelection;
use crate::schema::{FilterConfig, PipelineConfig, ServerConfig, SourceConfig};

/// Timeouts and backoff delays, in seconds: from a millisecond (shorter would spin) to an
/// hour (longer is a mistake, and would overflow a clock long before 1e20).
pub const MIN_SECONDS: f64 = 0.001;
/// The longest timeout or backoff delay, in seconds (see [`MIN_SECONDS`]).
pub const MAX_SECONDS: f64 = 3600.0;
/// Positions and lengths within an input (`start`, `duration`): up to a year.
pub const MAX_MEDIA_SECONDS: f64 = 366.0 * 86400.0;
/// Decoder threads per pipeline (0: FFmpeg's choice). Each one holds frames of its own.
pub const MAX_DECODER_THREADS: usize = 64;
/// Encoder threads per pipeline (`sink.options.threads`; 0: FFmpeg's choice): each one
/// holds frames and a stack of its own.
pub const MAX_ENCODER_THREADS: u64 = 64;
/// `[server] max_pipelines`: each pipeline holds threads, frames and an encoder.
pub const MAX_PIPELINES: usize = 4096;
/// `[server] pinned_memory_mb`: 16 TiB, past any host's memory.
pub const MAX_PINNED_MB: usize = 16 << 20;
/// The largest `pinned_frames` cap (a pipeline never holds more than a few dozen frames).
pub const MAX_PINNED_FRAMES: usize = 1024;
/// Pipeline names: letters, digits, `.`, `_`, `-`, at most this many characters.
pub const MAX_NAME_CHARS: usize = 64;
/// URLs, paths and every other string setting.
pub const MAX_TEXT_CHARS: usize = 4096;
/// Bits per sample FFmpeg has planar pictures at (`source.depth`).
pub const DEPTHS: [u8; 6] = [8, 9, 10, 12, 14, 16];

/// Whether `name` is a valid pipeline name.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The problem with a pipeline name, if any.
pub fn name_problem(name: &str) -> Option<Problem> {
    if name.trim().is_empty() {
        return Some(Problem::setting(
            "name",
            format!("is empty; use 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_` or `-`"),
        ));
    }
    (!is_valid_name(name)).then(|| {
        Problem::setting(
            "name",
            format!(
                "`{}` is not allowed; use 1 to {MAX_NAME_CHARS} letters, digits, `.`, `_` or `-`",
                quoted(name)
            ),
        )
    })
}

/// Where a pipeline is, for messages: its name when that is valid, else its position, so
/// that a hostile name is never repeated in full.
pub fn pipeline_place(index: usize, name: &str) -> Place {
    if is_valid_name(name) {
        Place::Pipeline(name.to_string())
    } else {
        Place::PipelineNumber(index + 1)
    }
}

/// A string setting that holds control characters or is too long.
fn text_problem(field: &str, value: &str, problems: &mut Vec<Problem>) {
    text_problem_up_to(field, value, MAX_TEXT_CHARS, problems);
}

/// The most characters a mask spec given as text may have: a custom matrix of the largest
/// size written out (63 x 63 values, as a `-vf unsharp=23:23` or a user writes them) is
/// longer than other settings; as long as a mask file may be.
pub const MAX_MASK_SPEC_CHARS: usize = 256 * 1024;

/// [`text_problem`] with a limit of `max` characters.
fn text_problem_up_to(field: &str, value: &str, max: usize, problems: &mut Vec<Problem>) {
    if value.chars().any(char::is_control) {
        problems.push(Problem::value(
            field,
            format!("`{}` contains control characters, which are not allowed", quoted(value)),
        ));
    } else if value.chars().count() > max {
        problems.push(Problem::value(
            field,
            format!("`{}` is too long; at most {max} characters", quoted(value)),
        ));
    }
}

/// A number of seconds within [`MIN_SECONDS`]..=[`MAX_SECONDS`].
pub fn seconds_problem(field: &str, value: f64, problems: &mut Vec<Problem>) {
    if !(value.is_finite() && (MIN_SECONDS..=MAX_SECONDS).contains(&value)) {
        problems.push(Problem::value(
            field,
            format!("{value} is out of range; allowed {MIN_SECONDS}..={MAX_SECONDS} seconds"),
        ));
    }
}

/// The numeric ranges and string limits of one pipeline's settings (streams and
/// frames_per_stream are checked beside the device).
pub fn pipeline_limits(pipeline: &PipelineConfig, problems: &mut Vec<Problem>) {
    source_limits(&pipeline.source, problems);
    if let Some(threads) = pipeline.sink.options.get("threads") {
        // FFmpeg takes "auto" too; any number must be in range, whatever the encoder.
        let in_range = threads == "auto" || threads.trim().parse::<u64>().is_ok_and(|n| n <= MAX_ENCODER_THREADS);
        if !in_range {
            problems.push(Problem::value(
                "sink.options.threads",
                format!(
                    "`{}` is out of range; allowed 0..={MAX_ENCODER_THREADS} or \"auto\" (0: FFmpeg's choice)",
                    quoted(threads)
                ),
            ));
        }
    }
    filter_limits(&pipeline.filter, problems);
    let sink = &pipeline.sink;
    text_problem("sink.url", &sink.url, problems);
    if let Some(format) = &sink.format {
        text_problem("sink.format", format, problems);
    }
    if let Some(codec) = &sink.codec {
        text_problem("sink.codec", codec, problems);
    }
    for (key, value) in &sink.options {
        text_problem("sink.options", key, problems);
        text_problem(&format!("sink.options.{}", quoted(key)), value, problems);
    }
}

/// The numeric ranges and string limits of a `[filter]` (streams and frames_per_stream are
/// checked beside the device).
pub fn filter_limits(filter: &FilterConfig, problems: &mut Vec<Problem>) {
    if let Some(cap) = filter.pinned_frames {
        if cap > MAX_PINNED_FRAMES {
            problems.push(Problem::value(
                "filter.pinned_frames",
                format!("{cap} is out of range; allowed 0..={MAX_PINNED_FRAMES}"),
            ));
        }
    }
    text_problem("filter.device", &filter.device, problems);
    let selections = std::iter::once(("filter.mask".to_string(), &filter.mask)).chain(
        filter
            .plane_masks
            .iter()
            .map(|(key, selection)| (format!("filter.plane_masks.{}", quoted(key)), selection)),
    );
    for (place, selection) in selections {
        match selection {
            MaskSelection::Named(spec) => text_problem_up_to(&place, spec, MAX_MASK_SPEC_CHARS, problems),
            MaskSelection::Inline(params) => {
                if let Some(file) = &params.file {
                    text_problem(&format!("{place}.file"), &file.to_string_lossy(), problems);
                }
            }
        }
    }
}

fn source_limits(source: &SourceConfig, problems: &mut Vec<Problem>) {
    text_problem("source.url", &source.url, problems);
    if let Some(format) = &source.format {
        text_problem("source.format", format, problems);
    }
    text_problem("source.decoder", &source.decoder, problems);
    for (key, value) in &source.options {
        text_problem("source.options", key, problems);
        text_problem(&format!("source.options.{}", quoted(key)), value, problems);
    }
    if let Some(start) = source.start {
        if !(start.is_finite() && (0.0..=MAX_MEDIA_SECONDS).contains(&start)) {
            problems.push(Problem::value(
                "source.start",
                format!("{start} is out of range; allowed 0..={MAX_MEDIA_SECONDS} seconds"),
            ));
        }
    }
    if let Some(duration) = source.duration {
        if !(duration.is_finite() && duration > 0.0 && duration <= MAX_MEDIA_SECONDS) {
            problems.push(Problem::value(
                "source.duration",
                format!("{duration} is out of range; allowed more than 0, up to {MAX_MEDIA_SECONDS} seconds"),
            ));
        }
    }
    if let Some(depth) = source.depth.filter(|d| !DEPTHS.contains(d)) {
        problems.push(Problem::value(
            "source.depth",
            format!("{depth} bits is not a depth FFmpeg has pictures at; allowed 8, 9, 10, 12, 14, 16"),
        ));
    }
    if source.frames == Some(0) {
        problems.push(Problem::value(
            "source.frames",
            "0 would filter nothing; give 1 or more, or leave it out",
        ));
    }
    if source.start.is_some_and(|start| start > 0.0) && source.is_live() {
        problems.push(Problem::value(
            "source.start",
            "a live input cannot be sought; leave start out, or set live = false for a file served over the network",
        ));
    }
    if source.threads > MAX_DECODER_THREADS {
        problems.push(Problem::value(
            "source.threads",
            format!(
                "{} is out of range; allowed 0..={MAX_DECODER_THREADS} (0: FFmpeg's choice)",
                source.threads
            ),
        ));
    }
}

/// The string limits of `[server]` (its timeout is checked beside the listen address).
pub fn server_limits(server: &ServerConfig, problems: &mut Vec<Problem>) {
    text_problem("server.listen", &server.listen, problems);
    if let Some(dir) = &server.mask_dir {
        text_problem("server.mask_dir", &dir.to_string_lossy(), problems);
    }
    for path in &server.allow_paths {
        text_problem("server.allow_paths", &path.to_string_lossy(), problems);
    }
    if let Some(file) = &server.nvdec_seats_file {
        text_problem("server.nvdec_seats_file", &file.to_string_lossy(), problems);
    }
    for origin in &server.allowed_origins {
        text_problem("server.allowed_origins", origin, problems);
    }
    for host in &server.allowed_hosts {
        text_problem("server.allowed_hosts", host, problems);
    }
}

//! Per-frame stage timings and their export as a Chrome trace (opens in Perfetto or
//! chrome://tracing): one row per CUDA stream, one box per stage of each frame; the CPU
//! engine's frames on a row of their own, one box each.

use serde::Serialize;
use std::path::Path;

/// The CPU engine's one stage: filtering a frame (on its worker threads, as one box).
pub const CPU_STAGE: &str = "cpu_filter";

/// One stage of one frame on one CUDA stream (or the CPU engine, stream 0), in microseconds
/// from the engine's start.
#[derive(Debug, Clone, Serialize)]
pub struct TraceSpan {
    /// The CUDA stream it ran on (0 for the CPU engine).
    pub stream: usize,
    /// The frame's index.
    pub frame: u64,
    /// The stage: `upload`, `kernels`, `download` or `cpu_filter`.
    pub stage: &'static str,
    /// When it began, in microseconds from the engine's start.
    pub start_us: f64,
    /// How long it took, in microseconds.
    pub duration_us: f64,
}

/// Writes spans as Chrome trace JSON ("X" complete events, streams as threads).
pub fn write_chrome_trace(path: &Path, pipeline: &str, spans: &[TraceSpan]) -> std::io::Result<()> {
    let mut events: Vec<serde_json::Value> = spans
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.stage, "cat": category(s), "ph": "X", "pid": 1, "tid": s.stream,
                "ts": s.start_us, "dur": s.duration_us, "args": { "frame": s.frame }
            })
        })
        .collect();
    let rows: std::collections::BTreeMap<usize, &str> = spans.iter().map(|s| (s.stream, category(s))).collect();
    for (stream, category) in rows {
        let name = match category {
            "cpu" => "CPU engine".to_string(),
            _ => format!("stream {stream}"),
        };
        events.push(
            serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": stream, "args": {"name": name}}),
        );
    }
    events.push(serde_json::json!({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": format!("convstream {pipeline}")}}));
    let text = serde_json::to_string(&serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }))?;
    // Whole or not at all: a full disk leaves an older trace as it was.
    crate::side_file::write_whole(path, text.as_bytes())
}

/// Where a span ran: `cpu` for the CPU engine's filtering, else `gpu`.
fn category(span: &TraceSpan) -> &'static str {
    if span.stage == CPU_STAGE {
        "cpu"
    } else {
        "gpu"
    }
}

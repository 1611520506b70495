//! The last log lines of each pipeline, for the console beside a failed pipeline's reason:
//! a tracing layer ([`PipelineLogLayer`]) files every INFO, WARN and ERROR event under the
//! pipeline it belongs to (its `pipeline_id` field, or that of the `pipeline` span its thread
//! runs in), and [`PipelineLogs`] keeps the last [`LINES_KEPT`] of each, cut to
//! [`LINE_CHARS`], for at most [`NAMES_KEPT`] pipelines. Pipelines no longer listed are
//! forgotten by the history keeper, so memory follows the pipelines that exist.
//!
//! Lines are filed by [`PipelineId`], not by name: a pipeline deleted and added again under
//! its name shows none of the old one's lines, even before the keeper forgets them. Events
//! of no pipeline of `serve` (no id: a plain `run`) are not kept.

use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::supervisor::PipelineId;

/// Lines kept per pipeline.
pub const LINES_KEPT: usize = 20;
/// Characters kept of a line.
pub const LINE_CHARS: usize = 500;
/// Pipelines whose lines are kept at once (beyond, the one quiet longest is dropped).
pub const NAMES_KEPT: usize = 1024;

/// One log line of a pipeline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LogLine {
    /// Seconds since the Unix epoch.
    pub at: f64,
    /// `ERROR`, `WARN` or `INFO`.
    pub level: &'static str,
    /// The message and its other fields, control characters escaped, URL credentials hidden.
    pub text: String,
}

/// Every pipeline's last lines.
#[derive(Default)]
pub struct PipelineLogs {
    lines: Mutex<HashMap<PipelineId, VecDeque<LogLine>>>,
}

impl PipelineLogs {
    /// The process's store, which [`PipelineLogLayer`] fills.
    pub fn global() -> &'static PipelineLogs {
        static LOGS: OnceLock<PipelineLogs> = OnceLock::new();
        LOGS.get_or_init(PipelineLogs::default)
    }

    /// Files `text` under `pipeline`.
    pub fn push(&self, pipeline: PipelineId, level: Level, text: &str) {
        // Hidden and escaped first, then cut: a cut URL could hide its secret from the redaction.
        let text = convstream_core::redact_credentials(text);
        let text = convstream_core::escape_control(&text);
        let text: String = text.chars().take(LINE_CHARS).collect();
        let line = LogLine {
            at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            level: match level {
                Level::ERROR => "ERROR",
                Level::WARN => "WARN",
                _ => "INFO",
            },
            text,
        };
        let mut lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !lines.contains_key(&pipeline) && lines.len() >= NAMES_KEPT {
            let quietest = lines
                .iter()
                .min_by(|a, b| last_at(a.1).total_cmp(&last_at(b.1)))
                .map(|(id, _)| *id);
            if let Some(id) = quietest {
                lines.remove(&id);
            }
        }
        let kept = lines.entry(pipeline).or_default();
        if kept.len() == LINES_KEPT {
            kept.pop_front();
        }
        kept.push_back(line);
    }

    /// The last lines of `pipeline`, oldest first.
    pub fn lines(&self, pipeline: PipelineId) -> Vec<LogLine> {
        let lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        lines
            .get(&pipeline)
            .map(|kept| kept.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets every pipeline `listed` says is gone.
    pub fn retain(&self, listed: impl Fn(PipelineId) -> bool) {
        let mut lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        lines.retain(|id, _| listed(*id));
    }
}

fn last_at(lines: &VecDeque<LogLine>) -> f64 {
    lines.back().map_or(0.0, |line| line.at)
}

/// The layer that fills [`PipelineLogs::global`] (added beside the log's formatter).
pub struct PipelineLogLayer;

/// The pipeline a span is about, kept in the span's extensions.
struct PipelineOfSpan(PipelineId);

/// The field that names the pipeline an event or span belongs to.
const ID_FIELD: &str = "pipeline_id";
/// The field of the pipeline's name: beside the id, not part of the line.
const NAME_FIELD: &str = "pipeline";

/// Collects an event's message and fields as one line, and its `pipeline_id` field.
#[derive(Default)]
struct LineVisitor {
    message: String,
    fields: String,
    pipeline: Option<PipelineId>,
}

impl Visit for LineVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            ID_FIELD => self.pipeline = Some(PipelineId(value)),
            _ => self.record_debug(field, &value),
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message.push_str(value),
            NAME_FIELD => {}
            name => {
                let _ = write!(self.fields, " {name}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => {
                let _ = write!(self.message, "{value:?}");
            }
            NAME_FIELD | ID_FIELD => {}
            name => {
                let _ = write!(self.fields, " {name}={value:?}");
            }
        }
    }
}

impl<S> Layer<S> for PipelineLogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "pipeline" {
            return;
        }
        let mut visitor = LineVisitor::default();
        attrs.record(&mut visitor);
        if let (Some(pipeline), Some(span)) = (visitor.pipeline, ctx.span(id)) {
            span.extensions_mut().insert(PipelineOfSpan(pipeline));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let level = *event.metadata().level();
        if level > Level::INFO {
            return; // DEBUG and TRACE: not for the page
        }
        let mut visitor = LineVisitor::default();
        event.record(&mut visitor);
        let pipeline = visitor.pipeline.take().or_else(|| {
            ctx.event_scope(event)?
                .from_root()
                .find_map(|span| span.extensions().get::<PipelineOfSpan>().map(|p| p.0))
        });
        if let Some(pipeline) = pipeline {
            PipelineLogs::global().push(pipeline, level, &format!("{}{}", visitor.message, visitor.fields));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn events_are_filed_under_their_pipeline_bounded_and_escaped() {
        let logs = PipelineLogs::default();
        let cam = PipelineId(1);
        for n in 0..30 {
            logs.push(cam, Level::INFO, &format!("line {n}"));
        }
        logs.push(cam, Level::ERROR, "cannot open rtsp://user:secret@host/x\n\u{1b}[31m");
        let lines = logs.lines(cam);
        assert_eq!(lines.len(), LINES_KEPT);
        assert_eq!(lines[0].text, "line 11");
        let last = lines.last().unwrap();
        assert_eq!(last.level, "ERROR");
        assert!(
            !last.text.contains("secret") && !last.text.contains('\u{1b}'),
            "{last:?}"
        );
        logs.push(cam, Level::WARN, &"x".repeat(10_000));
        assert_eq!(logs.lines(cam).last().unwrap().text.chars().count(), LINE_CHARS);
        logs.retain(|id| id != cam);
        assert!(logs.lines(cam).is_empty());
    }

    /// Ids no pipeline of a test's supervisor gets (they count from 1): the store is the
    /// process's.
    const A: PipelineId = PipelineId(u64::MAX - 1);
    const B: PipelineId = PipelineId(u64::MAX - 2);

    #[test]
    fn the_layer_files_events_by_the_span_their_thread_runs_in_or_their_field() {
        let subscriber = tracing_subscriber::registry().with(PipelineLogLayer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("pipeline", pipeline = %"layer-test", pipeline_id = A.0);
            let _entered = span.enter();
            tracing::error!("the input is gone");
            tracing::debug!("not for the page");
            tracing::warn!(pipeline = %"layer-test-b", pipeline_id = B.0, "filed by its field");
            tracing::warn!(pipeline = %"no-id", "of no pipeline of serve: in the span's");
        });
        let a = PipelineLogs::global().lines(A);
        let texts: Vec<&str> = a.iter().map(|line| line.text.as_str()).collect();
        assert_eq!(texts, ["the input is gone", "of no pipeline of serve: in the span's"]);
        assert_eq!(a[0].level, "ERROR");
        let b = PipelineLogs::global().lines(B);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(b[0].text, "filed by its field");
    }
}

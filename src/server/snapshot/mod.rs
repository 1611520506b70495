//! `GET /pipelines/{name}/snapshot`: the latest input or output frame of a pipeline as a
//! JPEG or PNG picture, for previews. The pipeline copies a frame only when asked (see
//! [`crate::pipeline::snapshot`]); converting and encoding run here, on the blocking
//! pool. Requests are limited per pipeline (429 with `Retry-After` beyond), a copy a
//! moment old answers several requests, and a wait for a frame is bounded and ends when
//! the pipeline stops.

pub mod picture;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::state::ApiState;
use crate::config::limits::is_valid_name;
use crate::pipeline::snapshot::{Snapshot, SnapshotStage};
use crate::pipeline::{PipelineMonitor, PipelineState};
use crate::text::quoted;
use picture::ImageFormat;

/// Snapshots one pipeline serves per second, in bursts of as many.
pub const SNAPSHOTS_PER_SECOND: f64 = 10.0;
/// A copy younger than this answers without asking the pipeline for another.
const FRESH_FOR: Duration = Duration::from_millis(100);
/// The longest a request waits for the pipeline's next frame.
const WAIT_AT_MOST: Duration = Duration::from_secs(2);
const POLL_EVERY: Duration = Duration::from_millis(10);
/// The width a picture has when none is asked for (at most the frame's), and the most.
const DEFAULT_WIDTH: usize = 640;
const MAX_WIDTH: usize = 4096;
/// Pipelines whose request budget is remembered; beyond, the idlest are forgotten.
const REMEMBERED_PIPELINES: usize = 1024;

/// What a snapshot request asks for, from its query string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotQuery {
    pub stage: SnapshotStage,
    pub format: ImageFormat,
    pub width: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("no pipeline named `{0}`")]
    NotFound(String),
    #[error("{0}")]
    BadQuery(String),
    #[error("too many snapshots of pipeline `{0}`: at most {SNAPSHOTS_PER_SECOND} a second")]
    TooMany(String),
    #[error("pipeline `{name}` has no frame to show yet (it is {state})")]
    NoFrame { name: String, state: &'static str },
    #[error("pipeline `{0}` passed no frame within {WAIT_AT_MOST:?}")]
    NoFrameInTime(String),
    #[error(transparent)]
    Picture(#[from] picture::PictureError),
    #[error("making the picture failed: {0}")]
    Internal(String),
}

impl IntoResponse for SnapshotError {
    fn into_response(self) -> Response {
        let (status, retry_after) = match &self {
            SnapshotError::NotFound(_) => (StatusCode::NOT_FOUND, None),
            SnapshotError::BadQuery(_) => (StatusCode::BAD_REQUEST, None),
            SnapshotError::TooMany(_) => (StatusCode::TOO_MANY_REQUESTS, Some("1")),
            SnapshotError::NoFrame { .. } | SnapshotError::NoFrameInTime(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, Some("1"))
            }
            SnapshotError::Picture(_) | SnapshotError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, None),
        };
        let mut response = (status, Json(json!({ "error": self.to_string() }))).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        response
    }
}

/// Parses `stage=input|output`, `format=jpeg|png`, `width=N`; anything else is refused.
pub fn parse_query(query: Option<&str>) -> Result<SnapshotQuery, SnapshotError> {
    let mut parsed = SnapshotQuery {
        stage: SnapshotStage::Output,
        format: ImageFormat::Jpeg,
        width: None,
    };
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "stage" => {
                parsed.stage = match value {
                    "input" => SnapshotStage::Input,
                    "output" => SnapshotStage::Output,
                    other => {
                        return Err(SnapshotError::BadQuery(format!(
                            "stage `{}` is not input or output",
                            quoted(other)
                        )))
                    }
                }
            }
            "format" => {
                parsed.format = ImageFormat::parse(value)
                    .ok_or_else(|| SnapshotError::BadQuery(format!("format `{}` is not jpeg or png", quoted(value))))?
            }
            "width" => match value.parse::<usize>() {
                Ok(width) if (1..=MAX_WIDTH).contains(&width) => parsed.width = Some(width),
                _ => {
                    return Err(SnapshotError::BadQuery(format!(
                        "width `{}` is not a number of pixels from 1 to {MAX_WIDTH}",
                        quoted(value)
                    )))
                }
            },
            other => {
                return Err(SnapshotError::BadQuery(format!(
                    "unknown parameter `{}`; a snapshot takes stage, format and width",
                    quoted(other)
                )))
            }
        }
    }
    Ok(parsed)
}

/// A token bucket per pipeline name.
#[derive(Debug, Default)]
pub struct SnapshotLimiter {
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl SnapshotLimiter {
    /// Whether one more snapshot of `name` may be served now.
    pub fn admit(&self, name: &str) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        if buckets.len() >= REMEMBERED_PIPELINES && !buckets.contains_key(name) {
            // A bucket idle for a second is full again: as good as forgotten.
            buckets.retain(|_, (_, at)| now.duration_since(*at) < Duration::from_secs(1));
        }
        let (tokens, at) = buckets.entry(name.to_string()).or_insert((SNAPSHOTS_PER_SECOND, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * SNAPSHOTS_PER_SECOND).min(SNAPSHOTS_PER_SECOND);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The snapshot route, with the budget its pipelines share.
pub fn routes() -> axum::Router<ApiState> {
    axum::Router::new()
        .route("/pipelines/{name}/snapshot", axum::routing::get(snapshot))
        .layer(Extension(Arc::new(SnapshotLimiter::default())))
}

fn monitor_of(state: &ApiState, name: &str) -> Option<Arc<PipelineMonitor>> {
    state.supervisor.monitors().into_iter().find(|m| m.name == name)
}

fn state_name(state: PipelineState) -> &'static str {
    match state {
        PipelineState::Starting => "starting",
        PipelineState::Running => "running",
        PipelineState::Stopping => "stopping",
        PipelineState::Finished => "finished",
        PipelineState::Stopped => "stopped",
        PipelineState::Failed => "failed",
    }
}

/// A fresh copy of the stage's next frame, or the last one when the pipeline is not
/// running or passes no frame in time.
async fn take(monitor: &PipelineMonitor, stage: SnapshotStage) -> Result<Arc<Snapshot>, SnapshotError> {
    let slot = monitor.snapshots.slot(stage);
    let previous = slot.latest();
    if let Some(copy) = previous.as_ref().filter(|c| c.taken_at.elapsed() < FRESH_FOR) {
        return Ok(copy.clone());
    }
    let asked_at = Instant::now();
    if monitor.state() == PipelineState::Running {
        slot.request();
        // Bounded, and over as soon as the pipeline stops (a stop, a DELETE, its end).
        while asked_at.elapsed() < WAIT_AT_MOST && monitor.state() == PipelineState::Running {
            if let Some(copy) = slot.latest().filter(|c| c.taken_at >= asked_at) {
                return Ok(copy);
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        if let Some(copy) = slot.latest().filter(|c| c.taken_at >= asked_at) {
            return Ok(copy);
        }
    }
    match slot.latest() {
        Some(copy) => Ok(copy),
        None if monitor.state() == PipelineState::Running => Err(SnapshotError::NoFrameInTime(monitor.name.clone())),
        None => Err(SnapshotError::NoFrame {
            name: monitor.name.clone(),
            state: state_name(monitor.state()),
        }),
    }
}

pub async fn snapshot(
    State(state): State<ApiState>,
    Extension(limiter): Extension<Arc<SnapshotLimiter>>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, SnapshotError> {
    if !is_valid_name(&name) {
        return Err(SnapshotError::NotFound(quoted(&name)));
    }
    let asked = parse_query(query.as_deref())?;
    let monitor = monitor_of(&state, &name).ok_or_else(|| SnapshotError::NotFound(name.clone()))?;
    if !limiter.admit(&name) {
        return Err(SnapshotError::TooMany(name));
    }
    let copy = take(&monitor, asked.stage).await?;
    drop(monitor);
    let width = asked.width.unwrap_or(DEFAULT_WIDTH);
    let (index, taken_at) = (copy.index, copy.taken_at);
    let bytes = tokio::task::spawn_blocking(move || {
        let rgb = picture::to_rgb(&copy, width)?;
        picture::encode(&rgb, asked.format)
    })
    .await
    .map_err(|e| SnapshotError::Internal(e.to_string()))??;
    let age_ms = taken_at.elapsed().as_millis().to_string();
    Ok((
        [
            (header::CONTENT_TYPE, asked.format.content_type().to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
            (header::HeaderName::from_static("x-frame-index"), index.to_string()),
            (
                header::HeaderName::from_static("x-frame-stage"),
                asked.stage.name().to_string(),
            ),
            (header::HeaderName::from_static("x-frame-age-ms"), age_ms),
        ],
        bytes,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_parsed_and_anything_else_refused() {
        let q = parse_query(Some("stage=input&format=png&width=320")).unwrap();
        assert_eq!(q.stage, SnapshotStage::Input);
        assert_eq!(q.format, ImageFormat::Png);
        assert_eq!(q.width, Some(320));
        let default = parse_query(None).unwrap();
        assert_eq!(
            (default.stage, default.format, default.width),
            (SnapshotStage::Output, ImageFormat::Jpeg, None)
        );
        for bad in [
            "stage=middle",
            "format=gif",
            "width=0",
            "width=99999",
            "width=-1",
            "colour=red",
        ] {
            assert!(
                matches!(parse_query(Some(bad)), Err(SnapshotError::BadQuery(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_burst_beyond_the_limit_is_refused_per_pipeline() {
        let limiter = SnapshotLimiter::default();
        let served = (0..100).filter(|_| limiter.admit("cam")).count();
        assert_eq!(served, SNAPSHOTS_PER_SECOND as usize);
        assert!(limiter.admit("other"), "each pipeline has its own budget");
    }
}

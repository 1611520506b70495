//! The snapshot route: the pipeline looked up and its budget taken, a fresh copy of its frame
//! waited for (bounded, over when the pipeline stops), then converted and encoded on the
//! blocking pool.

use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;
use std::time::Instant;

use super::error::SnapshotError;
use super::limiter::SnapshotLimiter;
use super::limits::{DEFAULT_WIDTH, FRESH_FOR, POLL_EVERY, WAIT_AT_MOST};
use super::picture;
use super::query::parse_query;
use crate::state::ApiState;
use convstream_config::limits::is_valid_name;
use convstream_core::quoted;
use convstream_media::{PipelineMonitor, PipelineState};
use convstream_media::{Snapshot, SnapshotStage};

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

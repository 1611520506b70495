//! `GET /pipelines/{name}/history` (token required): the points of the pipeline listed under
//! the name as the server keeps them (see `store.rs`), oldest first, with its id, the interval
//! and the ring's capacity.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::store::{HISTORY_INTERVAL, HISTORY_POINTS};
use crate::state::{ApiError, ApiState};
use convstream_config::limits::is_valid_name;
use convstream_core::quoted;

/// `GET /pipelines/{name}/history` (token required).
pub fn routes() -> Router<ApiState> {
    Router::new().route("/pipelines/{name}/history", get(history))
}

async fn history(State(state): State<ApiState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    let listed = is_valid_name(&name)
        .then(|| state.supervisor.listed())
        .and_then(|listed| listed.into_iter().find(|pipeline| pipeline.monitor.name == name));
    let Some(pipeline) = listed else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no pipeline named `{}`", quoted(&name)),
        ));
    };
    // The points of the pipeline listed under the name now, none of an earlier one's.
    let points = state.history.points(pipeline.id);
    Ok(Json(json!({
        "pipeline": name,
        "id": pipeline.id,
        "interval_seconds": HISTORY_INTERVAL.as_secs_f64(),
        "capacity": HISTORY_POINTS,
        "points": points,
    }))
    .into_response())
}

//! `POST /console/mask-preview`: the matrix a mask would apply, before it is applied, as
//! `convstream masks show` prints it (the same text, from `convstream_core::show_mask`)
//! and as numbers for the page to lay out. The mask is read and checked as a filter switch
//! reads it (a file only from `[server] mask_dir`, the config's named masks resolved);
//! nothing runs.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use crate::state::{ApiError, ApiState};
use convstream_config::MaskSelection;
use convstream_core::{show_mask, MaskParams};

/// The body: the mask, as `PUT /pipelines/{name}/filter` takes `mask`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PreviewRequest {
    mask: MaskSelection,
}

pub(super) async fn preview(State(state): State<ApiState>, body: Bytes) -> Result<Response, ApiError> {
    let mut request: PreviewRequest = serde_json::from_slice(&body).map_err(|e| {
        let mut error = ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("invalid mask preview (field: mask): {e}"),
        );
        error.problems.push(e.to_string());
        error
    })?;
    state.policy.check_mask(&mut request.mask).map_err(|problem| {
        let mut error = ApiError::new(StatusCode::BAD_REQUEST, format!("mask: {problem}"));
        error.problems.push(problem);
        error
    })?;
    let mode = match &request.mask {
        MaskSelection::Inline(params) => params.mode,
        MaskSelection::Named(spec) => MaskParams::parse_spec(spec).ok().and_then(|p| p.mode),
    };
    // Building a large mask file is the blocking pool's work, not the runtime's.
    let supervisor = state.supervisor.clone();
    let selection = request.mask;
    let mask = tokio::task::spawn_blocking(move || supervisor.build_mask(&selection))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("the preview failed: {e}")))?
        .map_err(|problems| ApiError {
            status: StatusCode::BAD_REQUEST,
            message: format!("mask: {}", problems.join("; ")),
            problems,
        })?;
    let rows: Vec<&[f32]> = mask.coefficients().chunks(mask.width()).collect();
    let sum: f64 = mask.coefficients().iter().map(|v| f64::from(*v)).sum();
    Ok(Json(json!({
        "mask": mask.description(),
        "width": mask.width(),
        "height": mask.height(),
        "rows": rows,
        "bias": mask.bias(),
        "sum": sum,
        "separable": mask.is_separable(),
        "magnitude": mask.is_magnitude(),
        "mode": mode.unwrap_or_default().name(),
        "warnings": mask.warnings(),
        "text": show_mask(&mask, mode),
    }))
    .into_response())
}

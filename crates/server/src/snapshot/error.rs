//! Why a snapshot request is refused, and the status (and `Retry-After`) each answer has.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::limits::{SNAPSHOTS_PER_SECOND, WAIT_AT_MOST};
use super::picture;

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

//! The console's routes and handlers: the page and its assets, served with a strict
//! Content-Security-Policy and no token, and its data endpoints (`GET /console/status`,
//! `POST /console/reload`), which need the token.

use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::server::state::ApiState;
use convstream_core::mask::PRESETS;

/// Nothing but this server's own script, style and pictures (previews are blobs made from
/// fetched snapshots); no frames, forms, plugins or base rewriting.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");
const ICON_SVG: &str = include_str!("assets/icon.svg");

/// The page and its assets (no token needed: they hold no data).
pub fn page_routes() -> Router<ApiState> {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route(
            "/console/console.js",
            get(|| async { asset("text/javascript; charset=utf-8", CONSOLE_JS) }),
        )
        .route(
            "/console/console.css",
            get(|| async { asset("text/css; charset=utf-8", CONSOLE_CSS) }),
        )
        .route("/console/icon.svg", get(|| async { asset("image/svg+xml", ICON_SVG) }))
}

/// The console's data (token required, like the rest of the API).
pub fn data_routes() -> Router<ApiState> {
    Router::new()
        .route("/console/status", get(status))
        .route("/console/reload", axum::routing::post(reload))
}

/// Reloads the config file exactly as SIGHUP does: `serve` takes the request on the path
/// its SIGHUP handler runs, whose outcome is logged and counted in
/// `convstream_config_reloads_total`.
async fn reload(State(state): State<ApiState>) -> Response {
    state.reload.request();
    let answer = json!({ "reload": "requested", "outcome": "in the log and convstream_config_reloads_total" });
    (axum::http::StatusCode::ACCEPTED, Json(answer)).into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    (headers, body).into_response()
}

/// Every pipeline's view with its p99 latency, and the mask presets with their keys. The
/// quantile sorts up to a run's recorded latencies, so it is taken on the blocking pool.
async fn status(State(state): State<ApiState>) -> Response {
    let supervisor = state.supervisor.clone();
    let pipelines = tokio::task::spawn_blocking(move || {
        let monitors = supervisor.monitors();
        supervisor
            .views()
            .into_iter()
            .map(|view| {
                let p99 = monitors
                    .iter()
                    .find(|m| m.name == view.name)
                    .and_then(|m| m.counters.latency_quantile_ms(0.99));
                let mut value = serde_json::to_value(&view).unwrap_or_default();
                value["latency_p99_ms"] = json!(p99);
                value
            })
            .collect::<Vec<serde_json::Value>>()
    })
    .await
    .unwrap_or_default();
    let presets: Vec<serde_json::Value> = PRESETS
        .iter()
        .map(|p| json!({ "name": p.name, "keys": p.keys, "summary": p.summary }))
        .collect();
    Json(json!({ "pipelines": pipelines, "presets": presets })).into_response()
}

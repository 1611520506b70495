//! The console's routes and handlers: the page and its assets, served with a strict
//! Content-Security-Policy and no token, and its data endpoints (`GET /console/status`,
//! `POST /console/reload`, `POST /console/mask-preview`), which need the token.

use axum::extract::State;
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::pipeline_logs::PipelineLogs;
use crate::state::ApiState;
use convstream_core::{BorderMode, PlaneName, PlaneSelection};
use convstream_core::{MaskMode, PRESETS};

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
        .route(
            "/console/mask-preview",
            axum::routing::post(super::mask_preview::preview),
        )
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

/// Every pipeline's view with its p99 latency (read from its latency histogram: no sort)
/// its filter as the mask picker edits it and its last log lines, and the mask presets with
/// their keys.
async fn status(State(state): State<ApiState>) -> Response {
    let supervisor = &state.supervisor;
    let listed = supervisor.listed();
    let pipelines: Vec<serde_json::Value> = supervisor
        .views()
        .into_iter()
        .map(|view| {
            // By id: a pipeline listed anew under the name between the two looks is not this one.
            let p99 = listed
                .iter()
                .find(|pipeline| pipeline.id == view.id)
                .and_then(|pipeline| pipeline.monitor.counters.filter_latency.quantile_ms(0.99));
            let filter = supervisor.filter_choice(&view.name);
            let mut value = serde_json::to_value(&view).unwrap_or_default();
            value["latency_p99_ms"] = json!(p99);
            value["filter"] = json!(filter);
            value["log"] = json!(PipelineLogs::global().lines(view.id));
            // The table's sparkline: the server's own points, so a reloaded page has them.
            let fps: Vec<f64> = state.history.points(view.id).iter().map(|p| p.fps).collect();
            value["fps_history"] = json!(fps);
            value
        })
        .collect();
    let presets: Vec<serde_json::Value> = PRESETS
        .iter()
        .map(|p| json!({ "name": p.name, "keys": p.keys, "summary": p.summary }))
        .collect();
    // The picker's other choices, from the types the API reads them with.
    let borders: Vec<serde_json::Value> = BorderMode::ALL
        .iter()
        .map(|b| json!({ "name": b.name(), "meaning": b.meaning() }))
        .collect();
    let planes: Vec<&str> = PlaneSelection::ALL.iter().map(|p| p.name()).collect();
    let plane_keys: Vec<&str> = PlaneName::KEYS.iter().map(|(key, _)| *key).collect();
    let modes = [MaskMode::Convolve.name(), MaskMode::Correlate.name()];
    Json(json!({
        "pipelines": pipelines,
        "presets": presets,
        "borders": borders,
        "planes": planes,
        "plane_keys": plane_keys,
        "modes": modes,
    }))
    .into_response()
}

//! The HTTP API (axum, [`router`]): health, readiness, metrics, and the pipelines — list,
//! inspect, add, delete, start, stop, switch filter — behind the bearer token, with the
//! snapshot, history, console and shard routes merged in. Handlers never block the runtime:
//! supervisor calls that wait on pipelines run on the blocking pool. Bodies are parsed by
//! hand so that every malformed request gets a 400 with the parser's own words.

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::json;
use std::net::SocketAddr;

use super::guard::{self, log_refusal};
use super::state::{ApiError, ApiState};
use super::supervisor::{FilterUpdate, SupervisorError};
use convstream_config::limits::is_valid_name;
use convstream_config::{ConfigError, PipelineConfig, Problem};
use convstream_core::quoted;

pub fn router(state: ApiState) -> Router {
    let protected = Router::new()
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/pipelines", get(list_pipelines).post(add_pipeline))
        .route("/pipelines/{name}", get(get_pipeline).delete(delete_pipeline))
        .route("/pipelines/{name}/filter", put(switch_filter))
        .route("/pipelines/{name}/stop", post(stop_pipeline))
        .route("/pipelines/{name}/start", post(start_pipeline))
        .merge(super::snapshot::routes())
        .merge(super::history::routes());
    let (protected, pages) = if state.guard.console {
        (
            protected.merge(super::console::data_routes()),
            super::console::page_routes(),
        )
    } else {
        (protected, Router::new())
    };
    // The token first, then the shard that owns a named pipeline (421 naming it elsewhere).
    let protected = protected
        .route_layer(middleware::from_fn_with_state(
            state.shard.clone(),
            super::shard::route_to_owner,
        ))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/healthz", get(healthz))
        .merge(protected)
        .merge(pages)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.guard.clone(),
            guard::check_request,
        ))
        .with_state(state)
}

/// Runs a supervisor call that may wait on pipelines on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SupervisorError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("the request failed: {e}")))?
        .map_err(ApiError::from)
}

/// Parses a JSON body; any problem is a 400 that says where.
fn parse_body<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let mut error = ApiError::new(StatusCode::BAD_REQUEST, format!("invalid {what}: {e}"));
        error.problems.push(e.to_string());
        error
    })
}

/// Every problem of a pipeline body that is JSON but not of the pipeline's shape, found in
/// one pass as `check` finds them in a config file (the parser stops at the first).
fn every_shape_problem(body: &Bytes) -> Option<Vec<String>> {
    fn without_nulls(value: serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => map
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
            serde_json::Value::Array(items) => items.into_iter().map(without_nulls).collect(),
            other => other,
        }
    }
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let value = toml::Value::try_from(without_nulls(json)).ok()?;
    let problems = convstream_config::pipeline_problems(&value);
    (!problems.is_empty()).then(|| problems.iter().map(ToString::to_string).collect())
}

/// The body as a pipeline with every part that is not of the pipeline's shape taken out (an
/// unknown key, a value of the wrong type), so that the rest can be checked as well; `None`
/// when no such pipeline is left (a required part missing, say).
fn pipeline_without_misshapen_parts(body: &Bytes) -> Option<PipelineConfig> {
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    // Each pass takes one part out; a body has few, and a bound keeps a hostile one cheap.
    for _ in 0..64 {
        let error = match serde_path_to_error::deserialize::<_, PipelineConfig>(&value) {
            Ok(pipeline) => return Some(pipeline),
            Err(error) => error,
        };
        let mut path: Vec<String> = error
            .path()
            .iter()
            .filter_map(|segment| match segment {
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                _ => None,
            })
            .collect();
        // An unknown key is named by the error, not by the path (which ends at its map).
        let text = error.inner().to_string();
        if let Some(key) = text
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
        {
            if path.last().map(String::as_str) != Some(key) {
                path.push(key.to_string());
            }
        }
        if !remove_at(&mut value, &path) {
            return None;
        }
    }
    None
}

/// Removes the part of `value` at `path` (keys and array indices); false when there is none.
fn remove_at(value: &mut serde_json::Value, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut node = value;
    for key in parents {
        node = match node {
            serde_json::Value::Object(map) => match map.get_mut(key) {
                Some(child) => child,
                None => return false,
            },
            serde_json::Value::Array(items) => match key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                Some(child) => child,
                None => return false,
            },
            _ => return false,
        };
    }
    match node {
        serde_json::Value::Object(map) => map.remove(last).is_some(),
        serde_json::Value::Array(items) => match last.parse::<usize>() {
            Ok(i) if i < items.len() => {
                items.remove(i);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

async fn require_token(
    State(state): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = &state.token else {
        return next.run(request).await;
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    if presented.is_some_and(|p| constant_time_eq(p.as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    state.counters.unauthorized.inc();
    // The presented token is never logged: only that one was there.
    log_refusal(
        &state.guard,
        format_args!(
            "unauthorized {} {} from {peer} ({})",
            request.method(),
            quoted(request.uri().path()),
            if presented.is_some() {
                "wrong token"
            } else {
                "no bearer token"
            }
        ),
    );
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, "a valid bearer token is required").into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// The token of `Bearer TOKEN`; the scheme name is case-insensitive (RFC 7235) and may
/// be followed by several spaces.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once([' ', '\t'])?;
    let token = token.trim_start_matches([' ', '\t']);
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A pipeline name from a path: one that cannot be valid is not looked up (nor repeated
/// in full in the answer).
fn known_name(name: &str) -> Result<(), ApiError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no pipeline named `{}`", quoted(name)),
        ))
    }
}

/// Compares without stopping at the first difference, so the time taken does not tell
/// how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn readyz(State(state): State<ApiState>) -> Response {
    let not_ready = state.supervisor.not_ready();
    let ready = not_ready.is_empty();
    let pipelines: serde_json::Map<String, serde_json::Value> = state
        .supervisor
        .views()
        .into_iter()
        .map(|v| (v.name, json!(v.state)))
        .collect();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // Every pipeline not ready yet says what it waits for (its turn to start, an NVDEC
    // seat, frames without drops); pipelines waiting for an NVDEC seat also get the host's
    // count: how many NVDEC pipelines the config asks for and how many its GPUs seat.
    let mut body = json!({ "ready": ready, "pipelines": pipelines });
    if !ready {
        body["not_ready"] = json!(not_ready);
    }
    if let Some(reason) = convstream_media::SeatBoard::global().waiting_reason() {
        body["reason"] = json!(reason);
    }
    (status, Json(body)).into_response()
}

async fn metrics(State(state): State<ApiState>) -> Response {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &state.registry) {
        Ok(()) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "encoding the metrics failed").into_response(),
    }
}

async fn list_pipelines(State(state): State<ApiState>) -> Response {
    let mut answer = json!({ "pipelines": state.supervisor.views() });
    if let Some(shard) = &state.shard {
        answer["shard"] = shard.view();
    }
    Json(answer).into_response()
}

async fn get_pipeline(State(state): State<ApiState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    known_name(&name)?;
    Ok(Json(state.supervisor.view(&name)?).into_response())
}

async fn add_pipeline(State(state): State<ApiState>, body: Bytes) -> Result<Response, ApiError> {
    let what = "pipeline (same fields as a [[pipeline]] table)";
    let (mut pipeline, mut error) = match parse_body::<PipelineConfig>(&body, what) {
        Ok(pipeline) => (Some(pipeline), None),
        Err(mut error) => {
            error.problems = every_shape_problem(&body).unwrap_or(error.problems);
            // The rest of the body is checked as a well-shaped one is.
            (pipeline_without_misshapen_parts(&body), Some(error))
        }
    };
    let mut problems = pipeline
        .as_mut()
        .map(|pipeline| state.policy.check_pipeline(pipeline))
        .unwrap_or_default();
    if error.is_some() || !problems.is_empty() {
        // Every problem at once: what validation finds too. Only once the policy passes:
        // validation opens files (a mask's), and the policy is what keeps them inside their
        // folders.
        if let (Some(checked), true) = (pipeline.clone(), problems.is_empty()) {
            let supervisor = state.supervisor.clone();
            let more = blocking(move || Ok(supervisor.problems_of(checked))).await?;
            problems.extend(more);
        }
        let mut error = error.take().unwrap_or_else(|| ApiError {
            status: StatusCode::BAD_REQUEST,
            message: String::new(),
            problems: Vec::new(),
        });
        for problem in problems {
            if !error.problems.contains(&problem) {
                error.problems.push(problem);
            }
        }
        if error.message.is_empty() {
            // Each problem is said as found; the list reads as a config's does.
            let listed = error.problems.iter().map(|p| Problem::general(p.as_str())).collect();
            error.message = ConfigError::Invalid(listed).to_string();
        }
        return Err(error);
    }
    let Some(pipeline) = pipeline else {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, format!("invalid {what}")));
    };
    let supervisor = state.supervisor.clone();
    let view = blocking(move || supervisor.add(pipeline)).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

async fn delete_pipeline(State(state): State<ApiState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    known_name(&name)?;
    let supervisor = state.supervisor.clone();
    let timeout = state.stop_timeout;
    let (view, threads_ended) = blocking(move || supervisor.remove(&name, timeout)).await?;
    Ok(Json(json!({ "stopped": view, "threads_ended": threads_ended })).into_response())
}

/// Stops a pipeline and keeps it listed as stopped (`threads_ended` as for DELETE).
async fn stop_pipeline(State(state): State<ApiState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    known_name(&name)?;
    let supervisor = state.supervisor.clone();
    let timeout = state.stop_timeout;
    let (view, threads_ended) = blocking(move || supervisor.stop(&name, timeout)).await?;
    Ok(Json(json!({ "stopped": view, "threads_ended": threads_ended })).into_response())
}

/// Starts a stopped, finished or failed pipeline again with its settings.
async fn start_pipeline(State(state): State<ApiState>, Path(name): Path<String>) -> Result<Response, ApiError> {
    known_name(&name)?;
    let supervisor = state.supervisor.clone();
    let view = blocking(move || supervisor.start_again(&name)).await?;
    Ok(Json(view).into_response())
}

async fn switch_filter(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    known_name(&name)?;
    let mut update: FilterUpdate = parse_body(
        &body,
        "filter (fields: mask, planes, border, plane_masks, clear_plane_masks)",
    )?;
    let masks = update.mask.iter_mut().map(|mask| ("mask".to_string(), mask));
    let plane_masks = update
        .plane_masks
        .iter_mut()
        .flatten()
        .map(|(key, mask)| (format!("plane_masks.{}", convstream_core::quoted(key)), mask));
    for (place, mask) in masks.chain(plane_masks) {
        state.policy.check_mask(mask).map_err(|problem| {
            let mut error = ApiError::new(StatusCode::BAD_REQUEST, format!("{place}: {problem}"));
            error.problems.push(problem);
            error
        })?;
    }
    if update.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "nothing to change: give at least one of mask, planes, border, plane_masks, clear_plane_masks",
        ));
    }
    let supervisor = state.supervisor.clone();
    let target = name.clone();
    let switched = blocking(move || supervisor.switch_filter(&target, update)).await?;
    let view = state.supervisor.view(&name)?;
    let changed: Vec<&str> = switched.changed_planes.iter().map(|plane| plane.name()).collect();
    let mut answer = json!({
        "pipeline": name,
        "applies_from_frame": switched.applies_from,
        "changed_planes": changed,
        "mask": view.mask,
        "planes": view.planes,
        "plane_masks": view.plane_masks,
        "border": view.border,
    });
    // The switch stands (a later change of plane_masks shows it), but a client that meant
    // to change the picture learns here that it did not, and why.
    let mut warnings = switched.warnings;
    if let Some(reason) = switched.unchanged_because {
        let warning = format!("this switch changes no plane: {reason}");
        answer["warning"] = json!(warning);
        warnings.push(warning);
    }
    answer["warnings"] = json!(warnings);
    Ok(Json(answer).into_response())
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such endpoint; see /healthz, /readyz, /metrics, /pipelines",
    )
}

//! The API's 421 Misdirected Request for a pipeline another shard owns, naming the owner
//! (in the body and in headers, for clients and proxies that route by them).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

use super::rendezvous::owner;
use super::replica::Sharding;
use convstream_config::limits::is_valid_name;
use convstream_core::quoted;

/// The header of a 421 that names the owning shard (`2/3`), for clients and proxies that
/// route by it.
pub const OWNER_SHARD_HEADER: &str = "convstream-owner-shard";
/// The header of a 421 that names the owning pod (`convstream-2`), where the hostnames say it.
pub const OWNER_POD_HEADER: &str = "convstream-owner-pod";

/// The most a POST body read here may hold: axum's own default limit, which the handler
/// applies too.
const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The 421 for a pipeline `name` this shard does not own, or `None` when it does.
fn misdirected(sharding: &Sharding, name: &str) -> Option<Response> {
    let placement = sharding.placement();
    let shard = placement.shard;
    if placement.owns(name) {
        return None;
    }
    let owner = owner(name, shard.count());
    let pod = placement.pod_of(owner);
    let message = format!(
        "pipeline `{}` belongs to {}; this is {}: send the request there",
        quoted(name),
        placement.describe_owner(name),
        sharding.describe()
    );
    let body = json!({
        "error": message,
        "owner": { "index": owner, "count": shard.count(), "pod": pod },
    });
    let mut response = (StatusCode::MISDIRECTED_REQUEST, Json(body)).into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&format!("{owner}/{}", shard.count())) {
        headers.insert(OWNER_SHARD_HEADER, value);
    }
    if let Some(value) = pod.and_then(|pod| HeaderValue::from_str(&pod).ok()) {
        headers.insert(OWNER_POD_HEADER, value);
    }
    Some(response)
}

/// Middleware of the pipeline routes: a request about a pipeline that another shard owns
/// (`/pipelines/NAME...`, or a POST of a new pipeline whose name hashes elsewhere) gets 421
/// Misdirected Request naming the owner. Anything else goes on to the handler, which answers
/// malformed requests as it always does.
pub async fn route_to_owner(State(sharding): State<Option<Arc<Sharding>>>, request: Request, next: Next) -> Response {
    let Some(sharding) = sharding else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    if let Some(rest) = path.strip_prefix("/pipelines/") {
        let name = rest.split('/').next().unwrap_or_default();
        if is_valid_name(name) {
            if let Some(response) = misdirected(&sharding, name) {
                return response;
            }
        }
        return next.run(request).await;
    }
    if path != "/pipelines" || request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            Json(json!({ "error": format!("the body is over {BODY_LIMIT} bytes") })),
        )
            .into_response();
    };
    let name = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|value| value.get("name").and_then(|n| n.as_str()).map(str::to_string));
    if let Some(response) = name
        .filter(|n| is_valid_name(n))
        .and_then(|n| misdirected(&sharding, &n))
    {
        return response;
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

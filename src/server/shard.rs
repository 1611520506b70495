//! A sharded `serve`: which shard this replica is (`[server] shard`, `--shard`, the hostname
//! and `CONVSTREAM_SHARDS`), the config's pipelines narrowed to the ones it owns at start and
//! at every reload, the API's 421 for a pipeline another shard owns, and the shard's own
//! metrics. The assignment itself is [`crate::config::shard`].

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use serde_json::json;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::limits::is_valid_name;
use crate::config::shard::{self, Placement, ShardError, ShardSpec, Surroundings, SHARDS_ENV};
use crate::config::ConfigFile;
use crate::text::quoted;

/// The header of a 421 that names the owning shard (`2/3`), for clients and proxies that
/// route by it.
pub const OWNER_SHARD_HEADER: &str = "convstream-owner-shard";
/// The header of a 421 that names the owning pod (`convstream-2`), where the hostnames say it.
pub const OWNER_POD_HEADER: &str = "convstream-owner-pod";

/// The most a POST body read here may hold: axum's own default limit, which the handler
/// applies too.
const BODY_LIMIT: usize = 2 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ShardingError {
    #[error("[server] shard = \"{spec}\": {error}")]
    Placement { spec: String, error: ShardError },
    #[error("no [[pipeline]] defined; a sharded config needs at least one")]
    NoPipeline,
    #[error("shard {shard} owns {owned} of the config's pipelines, more than server.max_pipelines ({max}); raise it or add shards")]
    TooMany { shard: String, owned: usize, max: usize },
}

/// This replica's shard and the config pipelines it runs.
#[derive(Debug)]
pub struct Sharding {
    placement: Placement,
    /// `[server] shard` and `shards` as the replica started with them.
    spec: String,
    configured_count: Option<usize>,
    /// The config's pipelines at the last start or reload: those run here, and how many in all.
    assignment: Mutex<Assignment>,
}

#[derive(Debug, Default, Clone)]
struct Assignment {
    runs: Vec<String>,
    configured: usize,
}

/// The machine's hostname: `$HOSTNAME` (which container runtimes and the kubelet set to the
/// pod's name), else the kernel's.
fn hostname() -> Option<String> {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
}

impl Sharding {
    /// The shard a config asks for (`[server] shard`, which `--shard` sets), or `None` when it
    /// runs every pipeline. Reads the hostname and `CONVSTREAM_SHARDS`.
    pub fn from_config(config: &ConfigFile) -> Result<Option<Sharding>, ShardingError> {
        let Some(spec) = config.server.shard.clone() else {
            return Ok(None);
        };
        let placement_error = |error| ShardingError::Placement {
            spec: spec.clone(),
            error,
        };
        let parsed = ShardSpec::parse(&spec).map_err(placement_error)?;
        let env_count = std::env::var(SHARDS_ENV).ok();
        let hostname = hostname();
        let around = Surroundings {
            configured_count: config.server.shards,
            env_count: env_count.as_deref(),
            hostname: hostname.as_deref(),
        };
        let placement = shard::resolve(parsed, around).map_err(placement_error)?;
        Ok(Some(Sharding {
            placement,
            spec,
            configured_count: config.server.shards,
            assignment: Mutex::new(Assignment::default()),
        }))
    }

    fn assignment(&self) -> MutexGuard<'_, Assignment> {
        self.assignment.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// `1/3`: the value of the `shard` label on every series of `/metrics`.
    pub fn label(&self) -> String {
        self.placement.shard.to_string()
    }

    /// `shard 1 of 3 (pod convstream-1)`.
    pub fn describe(&self) -> String {
        let shard = self.placement.shard;
        match self.placement.pod_of(shard.index()) {
            Some(pod) => format!("shard {} of {} (pod {pod})", shard.index(), shard.count()),
            None => format!("shard {} of {}", shard.index(), shard.count()),
        }
    }

    /// A reloaded file keeps the shard settings the replica started with (the count changes
    /// with the StatefulSet's replicas, which restarts the pods); a change is said.
    pub fn keep_settings(&self, config: &mut ConfigFile) {
        let (file_spec, file_count) = (config.server.shard.take(), config.server.shards.take());
        if file_spec.as_deref() != Some(self.spec.as_str()) || file_count != self.configured_count {
            tracing::warn!(
                "reload: [server] shard and shards apply at the next start; this replica stays {}",
                self.describe()
            );
        }
        config.server.shard = Some(self.spec.clone());
        config.server.shards = self.configured_count;
    }

    /// The config narrowed to this shard's pipelines (the whole config validated already).
    pub fn select(&self, mut config: ConfigFile) -> Result<ConfigFile, ShardingError> {
        if config.pipelines.is_empty() {
            return Err(ShardingError::NoPipeline);
        }
        let configured = config.pipelines.len();
        let shard = self.placement.shard;
        config.pipelines.retain(|pipeline| shard.owns(&pipeline.name));
        if config.pipelines.len() > config.server.max_pipelines {
            return Err(ShardingError::TooMany {
                shard: shard.to_string(),
                owned: config.pipelines.len(),
                max: config.server.max_pipelines,
            });
        }
        let runs: Vec<String> = config.pipelines.iter().map(|p| p.name.clone()).collect();
        tracing::info!(
            "{} runs {} of the config's {configured} pipelines: {} ({})",
            self.describe(),
            runs.len(),
            if runs.is_empty() {
                "none".to_string()
            } else {
                runs.join(", ")
            },
            self.placement.origin,
        );
        *self.assignment() = Assignment { runs, configured };
        Ok(config)
    }

    /// The `shard` object of `GET /pipelines`.
    pub fn view(&self) -> serde_json::Value {
        let shard = self.placement.shard;
        let assignment = self.assignment().clone();
        json!({
            "index": shard.index(),
            "count": shard.count(),
            "pod": self.placement.pod_of(shard.index()),
            "origin": self.placement.origin,
            "configured_pipelines": assignment.configured,
            "runs": assignment.runs,
        })
    }

    /// The 421 for a pipeline `name` this shard does not own, or `None` when it does.
    fn misdirected(&self, name: &str) -> Option<Response> {
        let shard = self.placement.shard;
        if shard.owns(name) {
            return None;
        }
        let owner = shard::owner(name, shard.count());
        let pod = self.placement.pod_of(owner);
        let message = format!(
            "pipeline `{}` belongs to {}; this is {}: send the request there",
            quoted(name),
            self.placement.describe_owner(name),
            self.describe()
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
            if let Some(response) = sharding.misdirected(name) {
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
    if let Some(response) = name.filter(|n| is_valid_name(n)).and_then(|n| sharding.misdirected(&n)) {
        return response;
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// `convstream_shard_info` and `convstream_shard_pipelines`: which shard a scraped replica is
/// and how many of the config's pipelines it runs (summed over the replicas, the config's
/// count).
#[derive(Debug)]
pub struct ShardCollector(pub Arc<Sharding>);

impl Collector for ShardCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sharding = &self.0;
        let shard = sharding.placement.shard;
        let pod = sharding.placement.pod_of(shard.index()).unwrap_or_default();
        let labels = vec![
            ("index", shard.index().to_string()),
            ("count", shard.count().to_string()),
            ("pod", pod),
        ];
        let mut family = encoder.encode_descriptor(
            "convstream_shard_info",
            "This replica's shard: index of count, and its pod where the hostname says it",
            None,
            MetricType::Gauge,
        )?;
        family.encode_family(&labels)?.encode_gauge(&1i64)?;
        let mut family = encoder.encode_descriptor(
            "convstream_shard_pipelines",
            "Pipelines of the config file this shard runs (API pipelines not counted)",
            None,
            MetricType::Gauge,
        )?;
        family
            .encode_family(&labels)?
            .encode_gauge(&(sharding.assignment().runs.len() as i64))?;
        Ok(())
    }
}

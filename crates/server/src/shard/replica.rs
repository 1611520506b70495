//! This replica's shard: where it comes from (`[server] shard`, `--shard`, the hostname and
//! `CONVSTREAM_SHARDS`), the config's pipelines narrowed to the ones it owns at start and at
//! every reload, what `GET /pipelines` and `/metrics` say of it.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use serde_json::json;
use std::sync::{Arc, Mutex, MutexGuard};

use super::placement::{resolve, Placement, Surroundings, SHARDS_ENV};
use convstream_config::shard_spec::{ShardError, ShardSpec};
use convstream_config::ConfigFile;

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
        let placement = resolve(parsed, around).map_err(placement_error)?;
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
        config.pipelines.retain(|pipeline| self.placement.owns(&pipeline.name));
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

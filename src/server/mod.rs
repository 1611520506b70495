//! `convstream serve`: runs every pipeline of a config at once behind an HTTP API, with
//! Prometheus metrics, live filter switching, reload (SIGHUP or a changed file) and a
//! graceful stop. This tokio control plane never touches pixels: it starts, stops and
//! reconfigures pipeline threads through the [`supervisor::Supervisor`] and reads their
//! counters.

pub mod api;
mod console;
mod gpu_metrics;
pub mod guard;
pub mod metrics;
pub mod policy;
mod process_metrics;
pub mod shard;
pub mod snapshot;

/// The process's CPU time (seconds) and resident memory (bytes), from `/proc`.
pub fn process_usage() -> Option<(f64, u64)> {
    process_metrics::cpu_and_resident()
}
pub mod supervisor;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

use crate::config::{ConfigError, ConfigFile};
use crate::log_filter::is_log_filter;
use api::ApiState;
use metrics::ServerCounters;
use supervisor::{Supervisor, SupervisorError};

/// How often the config file is checked for changes (`server.watch`). Polling the content
/// (rather than file events) also sees a Kubernetes ConfigMap's symlink swap and editors
/// that replace the file.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("server.token_env names {0}, which is not set or empty; set it or remove token_env")]
    MissingToken(String),
    #[error("refusing to serve the API on {0} without a token: anyone who reaches that address would control the pipelines; set [server] token_env (a bearer token), listen on loopback (127.0.0.1), or set [server] insecure_no_token = true to accept that")]
    NoToken(SocketAddr),
    #[error("cannot listen on {address}: {reason}")]
    Bind { address: String, reason: String },
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
    #[error(transparent)]
    Shard(#[from] shard::ShardingError),
    #[error("cannot start the control plane: {0}")]
    Runtime(String),
    #[error("stopped, but these pipelines did not finish within shutdown_timeout: {}", .0.join(", "))]
    ShutdownIncomplete(Vec<String>),
}

/// Where `serve` reads its config and listens.
pub struct ServeOptions {
    pub config_path: PathBuf,
    /// Overrides `server.listen`.
    pub listen: Option<String>,
}

/// Runs until SIGTERM or SIGINT, then drains every pipeline and returns. A second signal
/// exits at once.
pub fn serve(config: ConfigFile, options: ServeOptions) -> Result<(), ServeError> {
    // Validated before anything starts: a bad config is a usage error, not a half-started server.
    config.validate(options.config_path.parent(), is_log_filter)?;
    let sharding = shard::Sharding::from_config(&config)?.map(Arc::new);
    let config = match &sharding {
        Some(sharding) => sharding.select(config)?,
        None => config,
    };
    let server = config.server.clone();
    let address = options.listen.clone().unwrap_or_else(|| server.listen.clone());
    let address: SocketAddr = address.parse().map_err(|_| ServeError::Bind {
        address: address.clone(),
        reason: "not an address and port such as 127.0.0.1:8686".into(),
    })?;
    let token = match &server.token_env {
        Some(name) => match std::env::var(name) {
            Ok(value) if !value.is_empty() => Some(Arc::<str>::from(value)),
            _ => return Err(ServeError::MissingToken(name.clone())),
        },
        None => None,
    };
    if !address.ip().is_loopback() && token.is_none() && !server.insecure_no_token {
        return Err(ServeError::NoToken(address));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("control")
        .enable_all()
        .build()
        .map_err(|e| ServeError::Runtime(e.to_string()))?;
    runtime.block_on(run(config, options, address, token, sharding))
}

async fn run(
    config: ConfigFile,
    options: ServeOptions,
    address: SocketAddr,
    token: Option<Arc<str>>,
    sharding: Option<Arc<shard::Sharding>>,
) -> Result<(), ServeError> {
    // Validated to be in range; a conversion still never panics.
    let shutdown_timeout =
        Duration::try_from_secs_f64(config.server.shutdown_timeout).unwrap_or(Duration::from_secs(10));
    let watch = config.server.watch;
    let server_config = config.server.clone();
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| ServeError::Bind {
            address: address.to_string(),
            reason: e.to_string(),
        })?;
    let bound = listener.local_addr().unwrap_or(address);
    if !bound.ip().is_loopback() && token.is_none() {
        tracing::warn!("listening on {bound} without a token ([server] insecure_no_token = true): anyone who reaches this address controls the pipelines");
    }
    let base_dir = options.config_path.parent().map(Path::to_path_buf);
    let supervisor = Arc::new(Supervisor::new(config, base_dir).protecting(vec![options.config_path.clone()]));
    supervisor.start_configured()?;

    let counters = Arc::new(ServerCounters::default());
    let state = ApiState {
        supervisor: supervisor.clone(),
        registry: Arc::new(metrics::registry(supervisor.clone(), &counters, sharding.clone())),
        counters: counters.clone(),
        token,
        stop_timeout: shutdown_timeout,
        guard: Arc::new(guard::RequestGuard::new(bound, &server_config)),
        policy: Arc::new(policy::ApiPolicy::new(&server_config, &options.config_path)),
        shard: sharding.clone(),
    };
    let app = api::router(state).into_make_service_with_connect_info::<SocketAddr>();
    tracing::info!("API listening on http://{bound}");

    let signal_error = |e: std::io::Error| ServeError::Runtime(format!("cannot install signal handlers: {e}"));
    let mut terminate = signal(SignalKind::terminate()).map_err(signal_error)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(signal_error)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(signal_error)?;

    let (http_stop_tx, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = http_stop_rx.await;
            })
            .await
    });

    let mut reloader = Reloader {
        path: options.config_path.clone(),
        supervisor: supervisor.clone(),
        counters,
        timeout: shutdown_timeout,
        last_seen: crate::config::read_config_bytes(&options.config_path).ok(),
        sharding,
    };
    let mut ticker = tokio::time::interval(WATCH_INTERVAL);
    let signal_name = loop {
        tokio::select! {
            _ = terminate.recv() => break "SIGTERM",
            _ = interrupt.recv() => break "SIGINT",
            _ = hangup.recv() => reloader.reload("SIGHUP").await,
            _ = ticker.tick(), if watch => reloader.reload_if_changed().await,
        }
    };

    tracing::info!(
        "{signal_name}: stopping; draining every pipeline (at most {:.0} s; a second signal stops at once)",
        shutdown_timeout.as_secs_f64()
    );
    let draining = tokio::task::spawn_blocking({
        let supervisor = supervisor.clone();
        move || supervisor.shutdown(shutdown_timeout)
    });
    let late = tokio::select! {
        late = draining => late.unwrap_or_default(),
        _ = terminate.recv() => second_signal(),
        _ = interrupt.recv() => second_signal(),
    };
    let _ = http_stop_tx.send(());
    let _ = http.await;
    if late.is_empty() {
        tracing::info!("every pipeline stopped; outputs finalised");
        Ok(())
    } else {
        Err(ServeError::ShutdownIncomplete(late))
    }
}

fn second_signal() -> Vec<String> {
    tracing::warn!("second signal: exiting without waiting for the pipelines");
    std::process::exit(130);
}

/// Applies the config file again when asked (SIGHUP) or when its content changed.
struct Reloader {
    path: PathBuf,
    supervisor: Arc<Supervisor>,
    counters: Arc<ServerCounters>,
    timeout: Duration,
    /// The content last tried, valid or not: an invalid file is reported once, not every second.
    last_seen: Option<Vec<u8>>,
    /// This replica's shard: a reloaded config runs only its pipelines too.
    sharding: Option<Arc<shard::Sharding>>,
}

impl Reloader {
    async fn reload_if_changed(&mut self) {
        // Read as a reload reads it (a regular file, bounded): a config swapped for a FIFO or
        // a device is reported by the reload, once, instead of blocking or filling memory.
        let path = self.path.clone();
        let content = tokio::task::spawn_blocking(move || crate::config::read_config_bytes(&path)).await;
        let content = match content {
            Ok(Ok(content)) => Some(content),
            // Removed or mid-replacement: the running pipelines stay as they are.
            Ok(Err(ConfigError::Read { .. })) if !self.path.exists() => return,
            _ => None,
        };
        if self.last_seen != content {
            self.reload("the config file changed").await;
        }
    }

    async fn reload(&mut self, why: &str) {
        let path = self.path.clone();
        self.last_seen = tokio::task::spawn_blocking(move || crate::config::read_config_bytes(&path).ok())
            .await
            .ok()
            .flatten();
        tracing::info!("{why}: reloading {}", self.path.display());
        let mut config = match ConfigFile::load(&self.path, is_log_filter) {
            Ok(config) => config,
            Err(e) => return self.reject(e),
        };
        if let Some(sharding) = &self.sharding {
            sharding.keep_settings(&mut config);
        }
        if let Err(e) = config.validate(self.path.parent(), is_log_filter) {
            return self.reject(e);
        }
        if let Some(sharding) = &self.sharding {
            config = match sharding.select(config) {
                Ok(config) => config,
                Err(e) => {
                    metrics::count_reload(&self.counters, false);
                    tracing::error!("reload refused, the running pipelines are unchanged: {e}");
                    return;
                }
            };
        }
        let supervisor = self.supervisor.clone();
        let timeout = self.timeout;
        let outcome = tokio::task::spawn_blocking(move || supervisor.reload(config, timeout)).await;
        match outcome {
            Ok(Ok(summary)) => {
                metrics::count_reload(&self.counters, true);
                tracing::info!(
                    "reload applied: started {:?}, stopped {:?}, restarted {:?}, switched {:?}, unchanged {:?}",
                    summary.started,
                    summary.stopped,
                    summary.restarted,
                    summary.switched,
                    summary.unchanged
                );
                for problem in summary.problems {
                    tracing::warn!("reload: {problem}");
                }
            }
            Ok(Err(SupervisorError::Invalid(e))) => self.reject(e),
            Ok(Err(e)) => {
                metrics::count_reload(&self.counters, false);
                tracing::error!("reload failed: {e}");
            }
            Err(e) => {
                metrics::count_reload(&self.counters, false);
                tracing::error!("reload failed: {e}");
            }
        }
    }

    fn reject(&self, error: ConfigError) {
        metrics::count_reload(&self.counters, false);
        // One log line per problem, each with its control characters escaped: a value in
        // the file cannot continue a line or start one of its own.
        match &error {
            ConfigError::Invalid(problems) | ConfigError::InvalidFile { problems, .. } => {
                tracing::error!(
                    "reload refused, the running pipelines are unchanged: {} problem(s) in the configuration",
                    problems.len()
                );
                for problem in problems {
                    tracing::error!("config problem: {}", crate::text::escape_control(problem));
                }
            }
            other => tracing::error!(
                "reload refused, the running pipelines are unchanged: {}",
                crate::text::escape_control(&other.to_string())
            ),
        }
    }
}

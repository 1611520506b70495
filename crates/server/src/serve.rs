//! `serve` from start to stop: the config checked and narrowed to this replica's shard, the
//! control plane's runtime, the API listening, the pipelines started, then signals and
//! reloads until SIGTERM or SIGINT, and the drain.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::guard::RequestGuard;
use super::history::PipelineHistory;
use super::metrics::{self, ServerCounters};
use super::pause_watch;
use super::policy::ApiPolicy;
use super::reload::{ReloadRequests, Reloader, WATCH_INTERVAL};
use super::shard::{Sharding, ShardingError};
use super::state::ApiState;
use super::supervisor::{Supervisor, SupervisorError};
use convstream_config::{ConfigError, ConfigFile};
use convstream_media::output_problems;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("server.token_env names {0}, which is not set or empty; set it or remove token_env")]
    MissingToken(String),
    #[error("refusing to serve the API on {0} without a token: anyone who reaches that address would control the pipelines; set [server] token_env (a bearer token), listen on loopback (127.0.0.1), or set [server] insecure_no_token = true to accept that")]
    NoToken(SocketAddr),
    #[error("cannot listen on `{0}`: not an IP address and port such as 127.0.0.1:8686 (names such as localhost are not resolved)")]
    NotAnAddress(String),
    #[error("cannot listen on {address}: {reason}")]
    Bind { address: String, reason: String },
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
    #[error(transparent)]
    Shard(#[from] ShardingError),
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
    /// The commit the binary was built from, shown by the `convstream_build` metric.
    pub commit: &'static str,
}

/// Runs until SIGTERM or SIGINT, then drains every pipeline and returns. A second signal
/// exits at once.
pub fn serve(config: ConfigFile, options: ServeOptions) -> Result<(), ServeError> {
    // Pipelines' `filter.graph`, from the file or the API, is read with libavfilter.
    convstream_media::install_graph_reader();
    // Validated before anything starts: a bad config is a usage error, not a half-started server.
    // No pipelines is an API-only server.
    config.validate_for_serve(options.config_path.parent(), output_problems)?;
    let sharding = Sharding::from_config(&config)?.map(Arc::new);
    let config = match &sharding {
        Some(sharding) => sharding.select(config)?,
        None => config,
    };
    let server = config.server.clone();
    convstream_core::PinnedBudget::host().set_limit(server.pinned_memory_mb.map(|mb| mb.saturating_mul(1 << 20)));
    super::reload::apply_nvdec_seats(&server, options.config_path.parent());
    let address = options.listen.clone().unwrap_or_else(|| server.listen.clone());
    let address: SocketAddr = address
        .parse()
        .map_err(|_| ServeError::NotAnAddress(convstream_core::quoted(&address)))?;
    let token = match &server.token_env {
        Some(name) => match std::env::var(name) {
            Ok(value) if !value.is_empty() => Some(Arc::<str>::from(value)),
            _ => return Err(ServeError::MissingToken(name.clone())),
        },
        None => None,
    };
    // A token_env that names no value was refused above: no token_env means no token.
    if server.open_without_token(address) {
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
    sharding: Option<Arc<Sharding>>,
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

    let history = Arc::new(PipelineHistory::default());
    let history_task = tokio::spawn(history.clone().keep(supervisor.clone()));
    let counters = Arc::new(ServerCounters::default());
    if let Err(e) = pause_watch::start(Arc::downgrade(&counters)) {
        tracing::warn!("cannot watch for the process standing still: {e}");
    }
    let reload_requests = ReloadRequests::default();
    let state = ApiState {
        supervisor: supervisor.clone(),
        registry: Arc::new(metrics::registry(
            supervisor.clone(),
            &counters,
            sharding.clone(),
            options.commit,
        )),
        counters: counters.clone(),
        token,
        stop_timeout: shutdown_timeout,
        guard: Arc::new(RequestGuard::new(bound, &server_config)),
        policy: Arc::new(ApiPolicy::new(&server_config, &options.config_path)),
        shard: sharding.clone(),
        reload: reload_requests.clone(),
        history: history.clone(),
    };
    let app = super::api::router(state).into_make_service_with_connect_info::<SocketAddr>();
    tracing::info!("API listening on http://{bound}");

    let mut signals = Signals::install()?;
    let (http_stop_tx, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = http_stop_rx.await;
            })
            .await
    });

    let mut reloader = Reloader::new(
        options.config_path.clone(),
        supervisor.clone(),
        counters,
        shutdown_timeout,
        sharding,
    );
    let signal_name = signals
        .serve_until_stopped(&mut reloader, &reload_requests, watch)
        .await;

    tracing::info!(
        "{signal_name}: stopping; draining every pipeline (at most {:.0} s; a second signal stops at once)",
        shutdown_timeout.as_secs_f64()
    );
    let late = signals.drain(&supervisor, shutdown_timeout).await;
    history_task.abort();
    let _ = http_stop_tx.send(());
    let _ = http.await;
    if late.is_empty() {
        tracing::info!("every pipeline stopped; outputs finalised");
        Ok(())
    } else {
        Err(ServeError::ShutdownIncomplete(late))
    }
}

/// The signals `serve` handles: SIGTERM and SIGINT stop it, SIGHUP reloads.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

impl Signals {
    fn install() -> Result<Signals, ServeError> {
        let signal_error = |e: std::io::Error| ServeError::Runtime(format!("cannot install signal handlers: {e}"));
        Ok(Signals {
            terminate: signal(SignalKind::terminate()).map_err(signal_error)?,
            interrupt: signal(SignalKind::interrupt()).map_err(signal_error)?,
            hangup: signal(SignalKind::hangup()).map_err(signal_error)?,
        })
    }

    /// Reloads on SIGHUP, on a request from the console and (with `watch`) on a change of
    /// the file, until SIGTERM or SIGINT; returns that signal's name.
    async fn serve_until_stopped(
        &mut self,
        reloader: &mut Reloader,
        requests: &ReloadRequests,
        watch: bool,
    ) -> &'static str {
        let mut ticker = tokio::time::interval(WATCH_INTERVAL);
        loop {
            tokio::select! {
                _ = self.terminate.recv() => break "SIGTERM",
                _ = self.interrupt.recv() => break "SIGINT",
                _ = self.hangup.recv() => reloader.reload("SIGHUP").await,
                // The console's reload is SIGHUP's: the same reload, log line and count.
                _ = requests.requested() => reloader.reload("SIGHUP").await,
                _ = ticker.tick(), if watch => reloader.reload_if_changed().await,
            }
        }
    }

    /// Stops every pipeline and waits for them (at most `timeout`); a second SIGTERM or
    /// SIGINT meanwhile exits at once. Returns the pipelines that did not finish in time.
    async fn drain(&mut self, supervisor: &Arc<Supervisor>, timeout: Duration) -> Vec<String> {
        let draining = tokio::task::spawn_blocking({
            let supervisor = supervisor.clone();
            move || supervisor.shutdown(timeout)
        });
        tokio::select! {
            late = draining => late.unwrap_or_default(),
            _ = self.terminate.recv() => second_signal(),
            _ = self.interrupt.recv() => second_signal(),
        }
    }
}

fn second_signal() -> Vec<String> {
    tracing::warn!("second signal: exiting without waiting for the pipelines");
    std::process::exit(130);
}

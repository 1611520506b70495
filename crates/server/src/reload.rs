//! Reloading the config file of `serve`: on SIGHUP, on a request from inside the process
//! (the console), and, with `[server] watch`, when the file's content changes. A file that
//! does not validate changes nothing; its problems are logged and counted.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

use super::metrics::{self, ServerCounters};
use super::shard::Sharding;
use super::supervisor::{Supervisor, SupervisorError};
use convstream_config::{ConfigError, ConfigFile};
use convstream_media::output_problems;

/// How often the config file is checked for changes (`server.watch`). Polling the content
/// (rather than file events) also sees a Kubernetes ConfigMap's symlink swap and editors
/// that replace the file.
pub(super) const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// Reloads asked for from inside the process (`POST /console/reload`). The serve loop waits
/// on these beside SIGHUP and takes the same path for both; requests made while one is
/// pending are one reload, as several SIGHUPs are.
#[derive(Debug, Clone, Default)]
pub struct ReloadRequests(Arc<Notify>);

impl ReloadRequests {
    /// Asks for a reload; never waits.
    pub fn request(&self) {
        self.0.notify_one();
    }

    /// Returns once a reload was asked for.
    pub(super) async fn requested(&self) {
        self.0.notified().await;
    }
}

/// Applies the config file again when asked (SIGHUP, the console) or when its content changed.
pub(super) struct Reloader {
    path: PathBuf,
    supervisor: Arc<Supervisor>,
    counters: Arc<ServerCounters>,
    timeout: Duration,
    /// The content last tried, valid or not: an invalid file is reported once, not every second.
    last_seen: Option<Vec<u8>>,
    /// This replica's shard: a reloaded config runs only its pipelines too.
    sharding: Option<Arc<Sharding>>,
}

impl Reloader {
    pub(super) fn new(
        path: PathBuf,
        supervisor: Arc<Supervisor>,
        counters: Arc<ServerCounters>,
        timeout: Duration,
        sharding: Option<Arc<Sharding>>,
    ) -> Reloader {
        Reloader {
            last_seen: convstream_config::read_config_bytes(&path).ok(),
            path,
            supervisor,
            counters,
            timeout,
            sharding,
        }
    }

    pub(super) async fn reload_if_changed(&mut self) {
        // Read as a reload reads it (a regular file, bounded): a config swapped for a FIFO or
        // a device is reported by the reload, once, instead of blocking or filling memory.
        let path = self.path.clone();
        let content = tokio::task::spawn_blocking(move || convstream_config::read_config_bytes(&path)).await;
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

    pub(super) async fn reload(&mut self, why: &str) {
        let path = self.path.clone();
        self.last_seen = tokio::task::spawn_blocking(move || convstream_config::read_config_bytes(&path).ok())
            .await
            .ok()
            .flatten();
        tracing::info!("{why}: reloading {}", self.path.display());
        let mut config = match ConfigFile::load(&self.path, output_problems) {
            Ok(config) => config,
            Err(e) => return self.reject(e),
        };
        if let Some(sharding) = &self.sharding {
            sharding.keep_settings(&mut config);
        }
        if let Err(e) = config.validate_for_serve(self.path.parent(), output_problems) {
            return self.reject(e);
        }
        apply_nvdec_seats(&config.server, self.path.parent());
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
                    tracing::error!(
                        "config problem: {}",
                        convstream_core::escape_control(&problem.to_string())
                    );
                }
            }
            other => tracing::error!(
                "reload refused, the running pipelines are unchanged: {}",
                convstream_core::escape_control(&other.to_string())
            ),
        }
    }
}

/// The NVDEC seats `[server]` sets or names a measured file of, for every admission from now
/// on (at the start and at each reload; the config was validated, so the file read then);
/// what admission learns goes into that file (`learned_seats`).
pub(super) fn apply_nvdec_seats(server: &convstream_config::ServerConfig, base_dir: Option<&std::path::Path>) {
    let board = convstream_media::SeatBoard::global();
    board.on_learned(Some(super::learned_seats::listener(server.nvdec_seats_path(base_dir))));
    match server.measured_nvdec_seats(base_dir) {
        Ok(measured) => board.set_measured_seats(measured),
        // Changed since it was validated: the seats stay as they were, and the log says so.
        Err(problem) => tracing::warn!("server.nvdec_seats_file: {problem}; the NVDEC seats stay as they were"),
    }
    board.set_seats_per_gpu(server.nvdec_seats_per_gpu);
}

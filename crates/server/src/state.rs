//! What every handler of the API reaches (`ApiState`) and how a failed request is answered
//! (`ApiError`): a status and a JSON body. The routes, the console, the snapshots and the
//! shard's middleware all take these from here, so none of them imports another's handlers.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use prometheus_client::registry::Registry;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

use super::guard::RequestGuard;
use super::history::PipelineHistory;
use super::metrics::ServerCounters;
use super::policy::ApiPolicy;
use super::reload::ReloadRequests;
use super::shard::Sharding;
use super::supervisor::{Supervisor, SupervisorError};
use convstream_config::ConfigError;

/// What every handler can reach.
#[derive(Clone)]
pub struct ApiState {
    pub supervisor: Arc<Supervisor>,
    pub registry: Arc<Registry>,
    pub counters: Arc<ServerCounters>,
    /// The bearer token every endpoint but /healthz requires, when set.
    pub token: Option<Arc<str>>,
    /// How long a DELETE waits for the pipeline to drain.
    pub stop_timeout: Duration,
    /// The Host and Origin values served; rate-limits refusal logs.
    pub guard: Arc<RequestGuard>,
    /// What API pipelines may read and write.
    pub policy: Arc<ApiPolicy>,
    /// This replica's shard, when the config is sharded.
    pub shard: Option<Arc<Sharding>>,
    /// Reloads the console asks for, which `serve` takes as it takes SIGHUP.
    pub reload: ReloadRequests,
    /// Every pipeline's last 10 minutes, taken by a task of `serve`.
    pub history: Arc<PipelineHistory>,
}

/// An error answer: a status and a JSON body with the message (and every problem, for a
/// configuration that does not validate).
pub(super) struct ApiError {
    pub(super) status: StatusCode,
    pub(super) message: String,
    pub(super) problems: Vec<String>,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            problems: Vec::new(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // Credentials of a URL the request or the config holds are never echoed, and no
        // control or bidi character of a quoted value reaches whoever renders the answer.
        let redact = |text: &str| convstream_core::for_display(text);
        let mut body = json!({ "error": redact(&self.message) });
        if !self.problems.is_empty() {
            body["problems"] = json!(self.problems.iter().map(|p| redact(p)).collect::<Vec<_>>());
        }
        (self.status, Json(body)).into_response()
    }
}

impl From<SupervisorError> for ApiError {
    fn from(error: SupervisorError) -> ApiError {
        let status = match &error {
            SupervisorError::NotFound(_) => StatusCode::NOT_FOUND,
            SupervisorError::Exists(_)
            | SupervisorError::StillEnding(_)
            | SupervisorError::NotRunning { .. }
            | SupervisorError::EndedDuringSwitch(_)
            | SupervisorError::WrongState { .. }
            | SupervisorError::OutputInUse(_) => StatusCode::CONFLICT,
            SupervisorError::Invalid(_) => StatusCode::BAD_REQUEST,
            // A filter the engine cannot take is the request's fault; the engine failing
            // on its own (a thread of it gone) is the server's.
            SupervisorError::Engine { error, .. } if error.is_internal() => StatusCode::INTERNAL_SERVER_ERROR,
            SupervisorError::Engine { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            SupervisorError::SwitchTimedOut(_) => StatusCode::GATEWAY_TIMEOUT,
            SupervisorError::Spawn { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            SupervisorError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
        };
        let problems = match &error {
            SupervisorError::Invalid(ConfigError::Invalid(problems)) => {
                problems.iter().map(ToString::to_string).collect()
            }
            _ => Vec::new(),
        };
        ApiError {
            status,
            message: error.to_string(),
            problems,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_core::{EngineError, UnsupportedRequest};

    fn status_of(error: EngineError) -> StatusCode {
        ApiError::from(SupervisorError::Engine {
            name: "cam1".into(),
            error,
        })
        .status
    }

    #[test]
    fn engine_failures_of_the_request_are_422_and_of_the_engine_500() {
        let unsupported = EngineError::Unsupported {
            request: UnsupportedRequest::NotRankOne { mask: "sharpen".into() },
        };
        assert_eq!(status_of(unsupported), StatusCode::UNPROCESSABLE_ENTITY);
        let compile = EngineError::Compile {
            variant: "13x13".into(),
            log: "error".into(),
        };
        assert_eq!(status_of(compile), StatusCode::UNPROCESSABLE_ENTITY);
        let internal = EngineError::Internal {
            what: "the GPU completion thread stopped".into(),
        };
        assert_eq!(status_of(internal), StatusCode::INTERNAL_SERVER_ERROR);
    }
}

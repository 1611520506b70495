//! Why a supervisor call failed; the API maps each variant to its status code.

use convstream_config::ConfigError;
use convstream_core::EngineError;
use convstream_media::PipelineState;

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error("no pipeline named {0:?}")]
    NotFound(String),
    #[error("a pipeline named {0:?} exists already")]
    Exists(String),
    /// A stopped or deleted run whose threads have not ended (blocked in I/O) still holds
    /// its name and files.
    #[error("pipeline {0:?} was stopped, but its threads have not ended yet (blocked in I/O); its name and files stay taken until they do: DELETE it again, or try later")]
    StillEnding(String),
    /// The pipeline would write a file another running pipeline reads or writes.
    #[error("{0}")]
    OutputInUse(String),
    #[error(transparent)]
    Invalid(ConfigError),
    #[error("pipeline {name:?} is {state:?}; its filter can only switch while it runs")]
    NotRunning { name: String, state: PipelineState },
    /// The engine's error is in the message, and not also a `source()`, so that printing the
    /// chain does not repeat it.
    #[error("pipeline {name:?}: {error}")]
    Engine { name: String, error: EngineError },
    #[error("pipeline {0:?} did not take the new filter within 10 s")]
    SwitchTimedOut(String),
    /// The run ended (its input ended, a stop, a failure) before it took a filter switch:
    /// what a switch asked of a pipeline that has ended gets, not a timeout.
    #[error("pipeline {0:?} ended (its input ended, it was stopped or it failed) before it took the new filter; a filter can only switch while the pipeline runs")]
    EndedDuringSwitch(String),
    #[error("cannot start a thread for pipeline {name:?}: {reason}")]
    Spawn { name: String, reason: String },
    /// A stop or start asked of a pipeline in a state that does not allow it.
    #[error("pipeline {name:?} is {state:?}; {why}")]
    WrongState {
        name: String,
        state: PipelineState,
        why: &'static str,
    },
    #[error("{count} pipelines exist, the most [server] max_pipelines allows ({max}); delete one (finished ones count until deleted) or raise max_pipelines")]
    TooMany { count: usize, max: usize },
}

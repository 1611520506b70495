//! Waits that Ctrl-C ends: every blocking call of the module waits with the GIL released and
//! wakes every [`SIGNAL_POLL`] to run Python's signal handlers, so a `KeyboardInterrupt`
//! reaches the caller within a fraction of a second. On one, the work is told to stop (the
//! flag a SIGINT sets for the command line), so threads end and outputs are finished as
//! `convstream run` finishes them, and only then is the exception raised.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// How long a wait goes without looking at Python's signals: short enough for Ctrl-C to feel
/// immediate, long enough to cost nothing.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// How long, after Ctrl-C, the stopped work is given to wind down (finish its files, end its
/// threads) before the exception is raised anyway; a second Ctrl-C ends the wait at once.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// Runs `work` on a thread of its own and waits for its result with the GIL released, Ctrl-C
/// honoured: on a `KeyboardInterrupt` (or any exception a signal handler raises) `stop` is
/// set, the work is waited for (see [`STOP_GRACE`]) and the exception is raised. Work that
/// does not stop in time is left to end on its own thread.
pub(crate) fn run_interruptibly<T: Send + 'static>(
    py: Python<'_>,
    stop: &Arc<AtomicBool>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let (done_tx, done_rx) = bounded(1);
    std::thread::Builder::new()
        .name("python-call".into())
        .spawn(move || {
            // The waiter may have given up (a second Ctrl-C): the result then has no one to go to.
            let _ = done_tx.send(work());
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    loop {
        match py.detach(|| done_rx.recv_timeout(SIGNAL_POLL)) {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Disconnected) => return Err(PyRuntimeError::new_err("the call's thread panicked")),
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Err(interrupt) = py.check_signals() {
            stop.store(true, Ordering::SeqCst);
            wind_down(py, &done_rx);
            return Err(interrupt);
        }
    }
}

/// Waits for stopped work to end, at most [`STOP_GRACE`], a further signal ending the wait.
fn wind_down<T: Send>(py: Python<'_>, done: &Receiver<T>) {
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        match py.detach(|| done.recv_timeout(SIGNAL_POLL)) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(_) | Err(RecvTimeoutError::Disconnected) => return,
        }
        if py.check_signals().is_err() {
            return;
        }
    }
}

/// The next message of `from`, `None` once its senders are gone; for a thread that released
/// the GIL: it takes the GIL back every [`SIGNAL_POLL`] to run Python's signal handlers and
/// returns the exception one raises.
pub(crate) fn recv_interruptibly<T>(from: &Receiver<T>) -> PyResult<Option<T>> {
    loop {
        match from.recv_timeout(SIGNAL_POLL) {
            Ok(message) => return Ok(Some(message)),
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
            Err(RecvTimeoutError::Timeout) => Python::attach(|py| py.check_signals())?,
        }
    }
}

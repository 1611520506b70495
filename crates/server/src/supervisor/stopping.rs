//! Stopping pipelines: every stop flag set at once, threads joined against one deadline,
//! and a pipeline blocked on a named pipe nobody reads given a reader so it can end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::handle::Handle;
use convstream_media::PipelineState;

/// After a stop's timeout, how long a pipeline unblocked by reading its pipe has to finish.
const UNBLOCK_GRACE: Duration = Duration::from_secs(5);

/// Sets every stop flag first (so all drain together), then joins each thread until the
/// shared deadline. A pipeline still blocked then in writing to a pipe nobody reads (or in
/// opening it) gets a reader that takes and drops what it writes, so that its threads end.
/// Returns the names still running after that.
pub(super) fn stop_and_join(handles: &mut [Handle], timeout: Duration) -> Vec<String> {
    for handle in handles.iter() {
        if !handle.monitor.state().has_ended() {
            handle.monitor.set_state(PipelineState::Stopping);
        }
        handle.stop.store(true, Ordering::Relaxed);
    }
    let deadline = Instant::now() + timeout;
    let mut late = Vec::new();
    for handle in handles.iter_mut() {
        let Some(thread) = handle.thread.clone() else { continue };
        wait_for_end(&thread, deadline);
        if !thread.is_finished() {
            if let Some(drain) = PipeDrain::start(&handle.settings.sink.url) {
                tracing::warn!(
                    "pipeline {:?} is blocked writing to a pipe nobody reads; dropping what it writes so it can stop",
                    handle.monitor.name
                );
                wait_for_end(&thread, Instant::now() + UNBLOCK_GRACE);
                drain.stop();
            }
        }
        if thread.is_finished() {
            handle.thread = None;
            // Joined by the last holder; a finished thread dropped elsewhere is done anyway.
            if let Ok(thread) = Arc::try_unwrap(thread) {
                let _ = thread.join();
            }
        } else {
            tracing::warn!(
                "pipeline {:?} did not finish within {:.1} s",
                handle.monitor.name,
                timeout.as_secs_f64()
            );
            late.push(handle.monitor.name.clone());
        }
    }
    late
}

fn wait_for_end(thread: &JoinHandle<()>, deadline: Instant) {
    while !thread.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A reader on a sink's named pipe that discards what comes, until stopped.
struct PipeDrain {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl PipeDrain {
    /// Starts one when `url` is a local named pipe.
    fn start(url: &str) -> Option<PipeDrain> {
        use std::io::Read;
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let path = crate::policy::local_path(url, true)?;
        if !std::fs::metadata(path).ok()?.file_type().is_fifo() {
            return None;
        }
        // Non-blocking: opening succeeds without a writer, and reads never wait, so the
        // reader can always be stopped.
        let mut pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("pipe-drain".into())
            .spawn({
                let stop = stop.clone();
                move || {
                    let mut buffer = vec![0u8; 64 * 1024];
                    while !stop.load(Ordering::Relaxed) {
                        match pipe.read(&mut buffer) {
                            Ok(n) if n > 0 => continue,
                            _ => std::thread::sleep(Duration::from_millis(5)),
                        }
                    }
                }
            })
            .ok()?;
        Some(PipeDrain { stop, thread })
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

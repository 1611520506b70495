//! Decoder threads below the pipeline's own. FFmpeg starts a frame-threaded decoder's
//! workers when it opens the decoder, and on Linux a thread starts with the nice value of
//! the thread that made it. So the decoder is opened on a short-lived thread that first
//! lowers its own priority: the workers run there, while the source, filter, GPU-completion
//! and sink threads keep the pipeline's. On a host whose cores the decoder keeps busy, the
//! few microseconds of work that feed the GPU and hand frames on then run when they are due
//! instead of after a decoder thread's time slice (about 4 ms), which also stalled the
//! decoder behind a full queue.

/// Runs `open` on a thread whose nice value is `lower_by` above the caller's (capped at
/// 19), so the threads it starts inherit that; directly when `lower_by` is 0 or off Linux.
pub fn run_lowered<R: Send>(lower_by: u8, open: impl FnOnce() -> R + Send) -> R {
    if lower_by == 0 || !cfg!(target_os = "linux") {
        return open();
    }
    std::thread::scope(|scope| {
        let opener = scope.spawn(move || {
            lower_this_thread(lower_by);
            open()
        });
        opener.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// This thread's nice value (Linux; 0 elsewhere).
pub fn this_thread_nice() -> i32 {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread. A nice value of -1 is a valid result,
    // so errno is cleared first and read after.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if *libc::__errno_location() == 0 {
            return nice;
        }
    }
    0
}

#[cfg(target_os = "linux")]
fn lower_this_thread(by: u8) {
    let target = (this_thread_nice() + i32::from(by)).min(19);
    // SAFETY: on Linux, PRIO_PROCESS with id 0 sets the calling thread's nice value only.
    // Raising it needs no privilege; failing leaves the decoder at the pipeline's priority.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, target) } != 0 {
        tracing::debug!(
            "could not lower the decoder threads' priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_thread(_by: u8) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{run_lowered, this_thread_nice};

    #[test]
    fn threads_started_while_opening_run_lowered_and_the_caller_does_not() {
        let before = this_thread_nice();
        let (opener, worker) = run_lowered(5, || {
            // As FFmpeg does when it opens a frame-threaded decoder.
            let worker = std::thread::spawn(this_thread_nice).join().unwrap();
            (this_thread_nice(), worker)
        });
        let expected = (before + 5).min(19);
        assert_eq!((opener, worker), (expected, expected));
        assert_eq!(this_thread_nice(), before, "the calling thread keeps its priority");
        assert_eq!(run_lowered(0, this_thread_nice), before, "0 runs on the caller");
    }
}

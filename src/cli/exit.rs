//! How a finished command leaves the process. A process that made a CUDA context takes about
//! 0.1 s to end as its parent sees it, against 0.008 s without one (measured on H100 and H200
//! hosts, `benchmarks/results/2026-11-26-host-work/exit_probe.py`): the driver's exit handlers, then
//! the kernel's release of the GPU's descriptors and memory mappings. `_exit` alone saves only
//! the handlers' tenth of it. So a command that used a GPU hands its memory and descriptors to
//! a helper task before it exits (`clone` sharing both, a separate process): the command's own
//! exit then drops references only, its parent (a shell, a script timing it) sees it end at
//! once, and the helper, left to the init process, pays the release in the background.
//!
//! By then the user's data is safe: each sink wrote its trailer and closed its file before the
//! run returned, the summary and stats are out, the log's capture has been drained, and the
//! standard streams are flushed, then pointed at /dev/null so that a reader of a pipe sees its
//! end with the command's exit, not the helper's.
//!
//! A profiler or checker that hooks the driver (Nsight Systems, Nsight Compute,
//! compute-sanitizer all set `CUDA_INJECTION64_PATH`) writes its results from the driver's
//! exit handlers: with one present, or with `CONVSTREAM_GPU_TEARDOWN=1`, the process exits the
//! usual way.

use std::io::Write;
use std::process::ExitCode;

/// Whether the driver's exit handlers must run: a tool hooked into the driver needs them, or
/// they were asked for.
fn teardown_wanted() -> bool {
    std::env::var_os("CUDA_INJECTION64_PATH").is_some_and(|v| !v.is_empty())
        || std::env::var_os("CONVSTREAM_GPU_TEARDOWN").is_some_and(|v| v == "1")
}

/// Whether this process opened a CUDA context (the driver's exit handlers have work then), or
/// `CONVSTREAM_EXIT_HANDOFF=always` asks for the hand-off anyway (the tests check it on hosts
/// without a GPU).
fn gpu_used() -> bool {
    #[cfg(feature = "cuda")]
    let used = convstream_core::cuda_context_open();
    #[cfg(not(feature = "cuda"))]
    let used = false;
    used || std::env::var_os("CONVSTREAM_EXIT_HANDOFF").is_some_and(|v| v == "always")
}

/// Ends a command that has finished everything it does with exit status `status`: at once,
/// leaving the GPU's teardown to a helper, when it used a GPU (see the module's text); else
/// returns the status for `main` to return.
pub(crate) fn end(status: u8) -> ExitCode {
    if gpu_used() && !teardown_wanted() {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: fflush(NULL) flushes C's own stream buffers (FFmpeg's, if any); the helper
        // runs raw system calls only (see `linger`); dup2 onto the standard descriptors of a
        // process that writes nothing more; _exit ends the process without atexit handlers
        // or library destructors, which is the point.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            if hand_off_teardown() {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                if null >= 0 {
                    for fd in 0..=2 {
                        libc::dup2(null, fd);
                    }
                }
            }
            libc::_exit(i32::from(status));
        }
    }
    ExitCode::from(status)
}

/// Bytes of the helper's stack: it only loops over two system calls.
const HELPER_STACK: usize = 64 * 1024;

/// Starts the helper that keeps this process's memory and descriptors until the process has
/// ended (see the module's text); false when it could not be started (the process then ends
/// the usual way, teardown and all).
///
/// # Safety
/// Called once, right before `_exit`: the helper shares the memory it runs in with the
/// process, which must not free anything it uses (its stack is never unmapped).
unsafe fn hand_off_teardown() -> bool {
    // SAFETY: a fresh anonymous mapping for the helper's stack, never unmapped; clone is
    // given its top (stacks grow down) and a function that makes raw system calls only.
    unsafe {
        let stack = libc::mmap(
            std::ptr::null_mut(),
            HELPER_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return false;
        }
        let top = stack.cast::<u8>().add(HELPER_STACK).cast::<libc::c_void>();
        let parent = libc::getpid();
        // Its own process (no CLONE_THREAD, so exit_group does not take it), sharing the
        // address space and the descriptor table, so the process's exit releases neither.
        let flags = libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_FS | libc::SIGCHLD;
        libc::clone(linger, top, flags, parent as usize as *mut libc::c_void) > 0
    }
}

/// The helper: waits (1 ms at a time) until the process that made it has ended, so that its
/// own end is the one that releases the GPU's memory and descriptors, then exits. Raw system
/// calls only: it shares the memory, and the thread-local storage, of the thread that made it.
extern "C" fn linger(parent: *mut libc::c_void) -> libc::c_int {
    let parent = parent as usize as libc::c_long;
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: getppid, nanosleep and exit take no pointers but `pause`, which lives on this stack.
    unsafe {
        while libc::syscall(libc::SYS_getppid) == parent {
            libc::syscall(libc::SYS_nanosleep, &pause, std::ptr::null_mut::<libc::timespec>());
        }
        libc::syscall(libc::SYS_exit, 0);
    }
    0
}

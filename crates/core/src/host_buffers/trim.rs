//! Freed heap memory given back to the system ([`give_back_freed_memory`]): when a pool gives
//! back idle blocks of ordinary memory, glibc keeps the freed pages resident in its arenas
//! (a host's start, when every pipeline's frames wait for page-locked blocks, leaves most of a
//! full host's ordinary frames freed but resident: 4.7 GB for 96 pipelines). `malloc_trim`
//! hands those pages back. It walks and locks every arena, so it runs on a thread of its own,
//! at most once a [`TRIM_EVERY`], never on the frame path; a pool's reserve of ordinary blocks
//! (kept, not freed) is what a catch-up after a stall reuses without faulting pages in.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::Duration;

/// The shortest time between two trims: pools give back their idle blocks at the end of
/// their 10 s windows, which a full host's pipelines reach at about the same time.
pub const TRIM_EVERY: Duration = Duration::from_secs(1);

/// Set when a pool freed ordinary blocks since the last trim.
static WANTED: AtomicBool = AtomicBool::new(false);

/// Asks for the heap's freed pages to go back to the system soon, off the caller's thread.
pub fn give_back_freed_memory() {
    WANTED.store(true, Ordering::Relaxed);
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new().name("heap-trim".into()).spawn(|| loop {
            std::thread::sleep(TRIM_EVERY);
            if WANTED.swap(false, Ordering::Relaxed) {
                trim();
            }
        });
        if let Err(e) = spawned {
            tracing::debug!("cannot start the heap-trim thread ({e}); freed memory stays with the allocator");
        }
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only reads and releases the allocator's own free memory.
    unsafe { libc::malloc_trim(0) };
}

/// Other allocators return freed memory by their own rules.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

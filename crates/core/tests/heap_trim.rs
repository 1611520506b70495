//! Freed heap memory goes back to the system after `give_back_freed_memory` (glibc keeps it
//! otherwise). A test binary of its own: the process's RSS is what it measures, so no other
//! test may allocate meanwhile.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::time::Duration;

/// The process's resident memory, in bytes (`/proc/self/statm`, in pages).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a page count");
    pages * 4096
}

#[test]
fn frame_sized_blocks_freed_on_another_thread_leave_the_resident_memory() {
    const BLOCKS: usize = 40;
    // A 1080p frame's planes.
    const BLOCK: usize = 3 << 20;
    // Whether glibc serves frame-sized blocks from an arena (where it keeps what is freed) or
    // maps each on its own (given back when freed) depends on its dynamic threshold, which a
    // long-running server's history raises; fixed thresholds make the arena case certain here.
    // SAFETY: mallopt only sets the allocator's parameters (this binary holds no other test).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
    std::thread::spawn(|| {
        // Allocated, written and freed on a thread of its own, as a pipeline's frames are:
        // glibc serves that thread from an arena of its own and keeps what it frees (the
        // thread's exit does not return it).
        let mut blocks: Vec<Vec<u8>> = (0..BLOCKS).map(|i| vec![i as u8 | 1; BLOCK]).collect();
        // Freed all but the last, so the arena's top stays in use and nothing is trimmed on free.
        let last = blocks.pop();
        drop(blocks);
        std::mem::forget(last);
    })
    .join()
    .unwrap();
    let before = resident_bytes();
    convstream_core::give_back_freed_memory();
    std::thread::sleep(2 * convstream_core::HEAP_TRIM_EVERY + Duration::from_millis(500));
    let after = resident_bytes();
    let freed = (BLOCKS - 1) * BLOCK;
    assert!(
        before.saturating_sub(after) >= freed / 2,
        "RSS {} MB before, {} MB after; {} MB were freed",
        before >> 20,
        after >> 20,
        freed >> 20
    );
}

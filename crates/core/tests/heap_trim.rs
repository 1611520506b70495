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
    const BLOCK: usize = 3 << 20; // a 1080p frame's planes
                                  // Allocated, written and freed on a thread of its own, as a pipeline's frames are: glibc
                                  // serves that thread from an arena of its own and keeps what it frees (the thread's exit
                                  // does not return it).
    std::thread::spawn(|| {
        // One block allocated and freed first: glibc maps a block this large on its own until
        // it frees one, then raises its threshold and serves such blocks from the arena (what
        // a pipeline's steady allocating and freeing leads to).
        drop(vec![1u8; BLOCK]);
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

//! Unit tests of plane memory: reuse, limits, the heap fallback and the ordinary tier, lent
//! bytes, growing in the background (not for a burst that has passed) and late memory. Idle
//! blocks given back. Pending planes.

use super::pool::ORDINARY_RESERVE;
use super::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn heap_pool(limit: usize) -> Arc<BufferPool> {
    BufferPool::new(Box::new(HeapMemory), limit)
}

#[test]
fn a_dropped_buffer_is_lent_again_without_allocating() {
    let pool = heap_pool(1 << 20);
    let mut first = pool.take(1000);
    first[..3].copy_from_slice(&[1, 2, 3]);
    let address = first.as_ptr();
    drop(first);
    let second = pool.take(1000);
    assert_eq!(second.as_ptr(), address, "the same block came back");
    assert_eq!(pool.allocated_bytes(), 1000);
    assert_eq!(pool.fallbacks(), 0);
}

#[test]
fn past_the_limit_buffers_come_from_the_heap_and_are_counted() {
    let pool = heap_pool(2500);
    let lent: Vec<PlaneData> = (0..3).map(|_| pool.take(1000)).collect();
    assert_eq!(pool.allocated_bytes(), 2000, "the third block would pass the limit");
    assert_eq!(pool.fallbacks(), 1);
    assert!(lent.iter().all(|b| b.len() == 1000));
    drop(lent);
    // The two pooled blocks are free again; the heap one was simply freed.
    let again: Vec<PlaneData> = (0..2).map(|_| pool.take(1000)).collect();
    assert_eq!(pool.allocated_bytes(), 2000);
    assert_eq!(pool.fallbacks(), 1);
    drop(again);
}

#[test]
fn reserved_blocks_are_lent_first_and_respect_the_limit() {
    let pool = heap_pool(3000);
    pool.reserve(1000, 5).unwrap();
    assert_eq!(pool.allocated_bytes(), 3000, "reserving stops at the limit");
    let lent: Vec<PlaneData> = (0..3).map(|_| pool.take(1000)).collect();
    assert_eq!(pool.allocated_bytes(), 3000, "reserved blocks served the takes");
    assert_eq!(pool.fallbacks(), 0);
    drop(lent);
}

#[test]
fn blocks_are_kept_by_size() {
    let pool = heap_pool(1 << 20);
    drop(pool.take(100));
    let other = pool.take(200);
    assert_eq!(other.len(), 200);
    assert_eq!(pool.allocated_bytes(), 300, "a 100-byte block does not serve 200 bytes");
}

#[test]
fn a_clone_is_an_independent_heap_copy_equal_in_bytes() {
    let pool = heap_pool(1 << 20);
    let mut data = pool.take(16);
    data[5] = 9;
    let copy = data.clone();
    assert_eq!(copy, data);
    data[5] = 1;
    assert_ne!(copy, data);
    assert!(!copy.is_page_locked());
    assert_eq!(format!("{copy:?}"), "PlaneData(16 bytes, heap)");
    assert_eq!(format!("{data:?}"), "PlaneData(16 bytes, pooled)");
}

#[test]
fn lent_bytes_are_read_in_place_and_copied_before_a_write() {
    struct Keeper(Arc<AtomicU64>);
    impl Drop for Keeper {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let owner: Arc<[u8]> = Arc::from(vec![7u8; 32]);
    let released = Arc::new(AtomicU64::new(0));
    // SAFETY: `owner` stays alive (and unchanged) for the whole test.
    let mut data = unsafe { PlaneData::lent(owner.as_ptr(), 32, false, Box::new(Keeper(released.clone()))) };
    assert!(data.is_lent());
    assert_eq!(data.as_ptr(), owner.as_ptr(), "read in place");
    assert_eq!(format!("{data:?}"), "PlaneData(32 bytes, lent)");
    data[0] = 1;
    assert!(!data.is_lent(), "the write went to a heap copy");
    assert_eq!((data[0], data[1]), (1, 7));
    assert!(owner.iter().all(|&b| b == 7), "the lender's bytes are unchanged");
    assert_eq!(
        released.load(Ordering::Relaxed),
        1,
        "the keeper went with the lent bytes"
    );
}

/// Heap memory that says it is slow to allocate, as pinned memory is.
struct SlowHeap;
impl HostMemory for SlowHeap {
    fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
        std::thread::sleep(Duration::from_millis(2));
        Ok(Box::new(vec![0u8; len]))
    }
    fn page_locked(&self) -> bool {
        false
    }
    fn grows_in_background(&self) -> bool {
        true
    }
}

#[test]
fn a_pending_plane_holds_no_memory_of_its_own_until_written() {
    let small = PlaneData::pending(1000);
    let large = PlaneData::pending(5000);
    let again = PlaneData::pending(1000);
    assert!(small.is_pending() && !small.is_page_locked() && !small.is_lent());
    assert_eq!((small.len(), large.len()), (1000, 5000));
    assert!(small.iter().chain(large.iter()).all(|&b| b == 0), "reads see zeroes");
    // Pending planes read one shared block: none allocates its own.
    assert_eq!(
        again.as_ptr(),
        large.as_ptr(),
        "the longest block serves the shorter plane"
    );
    let mut written = again;
    written[999] = 7;
    assert!(!written.is_pending(), "a write gives it memory");
    assert_eq!(written.len(), 1000);
    assert!(written[..999].iter().all(|&b| b == 0) && written[999] == 7);
    assert!(large.iter().all(|&b| b == 0), "the shared zeroes were not written");
    assert!(format!("{small:?}").contains("pending"));
}

#[test]
fn slow_memory_grows_on_its_own_thread_and_lends_ordinary_memory_meanwhile() {
    let pool = BufferPool::new(Box::new(SlowHeap), 3000);
    let first = pool.take(1000);
    assert_eq!(
        format!("{first:?}"),
        "PlaneData(1000 bytes, pooled, ordinary)",
        "no wait on the frame path"
    );
    assert!(pool.wait_until_grown(Duration::from_secs(10)));
    assert_eq!(
        pool.allocated_bytes(),
        1000,
        "the block asked for was allocated meanwhile"
    );
    let second = pool.take(1000);
    assert_eq!(format!("{second:?}"), "PlaneData(1000 bytes, pooled)");
    pool.reserve_in_background(1000, 5).unwrap();
    assert!(pool.wait_until_grown(Duration::from_secs(10)));
    assert_eq!(pool.allocated_bytes(), 3000, "growth stops at the limit");
    drop((first, second));
}

#[test]
fn a_late_pool_lends_ordinary_memory_until_its_memory_is_installed() {
    let late = LatePool::new(1 << 20);
    let early = late.pool.take(1000);
    assert_eq!(format!("{early:?}"), "PlaneData(1000 bytes, pooled, ordinary)");
    assert_eq!(late.pool.allocated_bytes(), 0, "nothing asked of missing memory");
    assert!(late.memory.install(Box::new(HeapMemory)));
    assert!(!late.memory.install(Box::new(HeapMemory)), "the first memory stays");
    let pooled = late.pool.take(1000);
    assert_eq!(format!("{pooled:?}"), "PlaneData(1000 bytes, pooled)");
    assert_eq!(late.pool.allocated_bytes(), 1000);
    drop((early, pooled));
}

#[test]
fn a_pool_dropped_while_growing_stops_allocating() {
    struct Counted(Arc<AtomicU64>);
    impl HostMemory for Counted {
        fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
            std::thread::sleep(Duration::from_millis(20));
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(Box::new(vec![0u8; len]))
        }
        fn page_locked(&self) -> bool {
            false
        }
        fn grows_in_background(&self) -> bool {
            true
        }
    }
    let allocations = Arc::new(AtomicU64::new(0));
    let pool = BufferPool::new(Box::new(Counted(allocations.clone())), 1 << 20);
    pool.reserve_in_background(1000, 50).unwrap();
    drop(pool);
    // The 50 blocks would take a second; the thread stops after the one under way.
    std::thread::sleep(Duration::from_millis(300));
    assert!(allocations.load(Ordering::Relaxed) <= 2, "{allocations:?}");
}

#[test]
fn buffers_outlive_their_pool_handle() {
    let pool = heap_pool(1 << 20);
    let data = pool.take(64);
    drop(pool);
    // The buffer holds the pool alive and gives its block back on drop without panicking.
    assert_eq!(data.len(), 64);
    drop(data);
}

#[test]
fn blocks_a_window_did_not_need_go_back_and_an_idle_pool_empties() {
    let window = Duration::from_millis(30);
    let pool = BufferPool::with_idle_window(Box::new(HeapMemory), 1 << 20, window);
    // A burst (a decoder's start) takes eight blocks at once.
    drop((0..8).map(|_| pool.take(100)).collect::<Vec<_>>());
    std::thread::sleep(window + Duration::from_millis(10));
    // Then steady use holds two at a time: what the burst added goes back.
    for _ in 0..3 {
        drop((0..2).map(|_| pool.take(100)).collect::<Vec<_>>());
        std::thread::sleep(window + Duration::from_millis(10));
    }
    assert!(
        pool.allocated_bytes() <= 200,
        "steady use of two blocks keeps two at most, not the burst's eight: {} bytes",
        pool.allocated_bytes()
    );
    assert_eq!(pool.fallbacks(), 0, "the limit was never reached");
    // Idle: nothing comes back to the pool, so it is asked; within two windows it is empty.
    pool.release_idle();
    std::thread::sleep(window + Duration::from_millis(10));
    pool.release_idle();
    assert_eq!(pool.allocated_bytes(), 0, "an idle pool holds nothing");
    // And it lends again as before.
    let again = pool.take(100);
    assert_eq!((again.len(), pool.allocated_bytes()), (100, 100));
}

#[test]
fn blocks_in_use_through_every_window_are_kept() {
    let pool = BufferPool::with_idle_window(Box::new(HeapMemory), 1 << 20, Duration::ZERO);
    // Every give-back ends a window; four blocks lent and given back in turn are each
    // needed again before the next one comes back.
    let mut lent: std::collections::VecDeque<PlaneData> = (0..4).map(|_| pool.take(100)).collect();
    for _ in 0..100 {
        lent.pop_front();
        lent.push_back(pool.take(100));
    }
    assert!(
        pool.allocated_bytes() <= 500,
        "four in use and at most one free: {} bytes",
        pool.allocated_bytes()
    );
    assert!(pool.allocated_bytes() >= 400, "what is in use stays allocated");
}

#[test]
fn a_pool_counts_the_blocks_it_allocates_and_gives_back() {
    let window = Duration::from_millis(20);
    let pool = BufferPool::with_idle_window(Box::new(HeapMemory), 1000, window);
    pool.reserve(100, 2).unwrap();
    // Five at once: two reserved, three grown; reused blocks are not counted again.
    drop((0..5).map(|_| pool.take(100)).collect::<Vec<_>>());
    drop((0..5).map(|_| pool.take(100)).collect::<Vec<_>>());
    assert_eq!((pool.allocations(), pool.releases(), pool.fallbacks()), (5, 0, 0));
    // Idle for two windows: every block goes back, and each is counted once.
    pool.release_idle();
    std::thread::sleep(window + Duration::from_millis(10));
    pool.release_idle();
    std::thread::sleep(window + Duration::from_millis(10));
    pool.release_idle();
    assert_eq!((pool.allocated_bytes(), pool.releases()), (0, 5));
    // Past the limit: ten blocks fit, the eleventh comes from the heap.
    let lent: Vec<PlaneData> = (0..11).map(|_| pool.take(100)).collect();
    assert_eq!((pool.allocations(), pool.fallbacks()), (15, 1));
    drop(lent);
}

#[test]
fn ordinary_blocks_a_burst_used_go_back_but_a_reserve_while_the_pools_own_blocks_keep_cycling() {
    let window = Duration::from_millis(100);
    let pool = BufferPool::with_idle_window(Box::new(SlowHeap), 10_000, window);
    pool.reserve(1000, 1).unwrap();
    // A burst: the pool's one block and ORDINARY_RESERVE + 2 ordinary ones lent together.
    let burst: Vec<PlaneData> = (0..ORDINARY_RESERVE + 3).map(|_| pool.take(1000)).collect();
    assert_eq!(pool.ordinary_bytes(), (ORDINARY_RESERVE + 2) * 1000);
    drop(burst);
    // Then the steady flow of one frame at a time, through the pool's own block only: nobody
    // asks the pool to release anything.
    let began = std::time::Instant::now();
    while began.elapsed() < window * 4 {
        let frame = pool.take(1000);
        assert_eq!(format!("{frame:?}"), "PlaneData(1000 bytes, pooled)");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        pool.ordinary_bytes(),
        ORDINARY_RESERVE * 1000,
        "the burst's ordinary blocks went back but the reserve a catch-up reuses"
    );
    assert_eq!(pool.allocated_bytes(), 1000, "the block in use stays");
    // The reserve is lent again, not allocated anew: the tier holds no more than it did.
    let again: Vec<PlaneData> = (0..ORDINARY_RESERVE + 1).map(|_| pool.take(1000)).collect();
    assert!(again[1..].iter().all(|plane| !plane.is_page_locked()));
    assert_eq!(pool.ordinary_bytes(), ORDINARY_RESERVE * 1000);
    drop(again);
}

#[test]
fn planes_a_slow_pool_cannot_lend_reuse_its_ordinary_blocks() {
    let window = Duration::from_millis(200);
    let pool = BufferPool::with_idle_window(Box::new(SlowHeap), 1000, window);
    // Nothing free: an ordinary block now, a slow one asked for.
    let first = pool.take(1000);
    assert!(!first.is_page_locked());
    let first_bytes = first.as_ptr();
    drop(first);
    assert!(pool.wait_until_grown(Duration::from_secs(10)));
    let slow = pool.take(1000);
    assert_eq!(format!("{slow:?}"), "PlaneData(1000 bytes, pooled)", "the grown block");
    // At the limit: the ordinary block given back before is lent again, not a fresh one.
    let again = pool.take(1000);
    assert_eq!(format!("{again:?}"), "PlaneData(1000 bytes, pooled, ordinary)");
    assert_eq!(again.as_ptr(), first_bytes, "the same ordinary block, reused");
    assert_eq!(
        pool.fallbacks(),
        2,
        "both still count as planes outside the pool's memory"
    );
    drop((slow, again));
    // Idle ordinary blocks go back with the pool's own: after a window in which both were
    // lent (which ends it), and a whole window in which neither was.
    // (Whether the first window ends here or when they were given back depends on how long
    // the slow block took to grow.)
    std::thread::sleep(window);
    let released = pool.release_idle();
    std::thread::sleep(window);
    assert_eq!(
        released + pool.release_idle(),
        1000,
        "the slow block; the ordinary one stays, the tier's reserve"
    );
}

#[test]
fn a_block_asked_for_in_a_burst_is_not_allocated_once_blocks_are_back() {
    /// Slow memory whose 2000-byte blocks wait for a permit: the growing thread is held up
    /// while the test gives a block back.
    struct Gated(Mutex<std::sync::mpsc::Receiver<()>>, Arc<AtomicU64>);
    impl HostMemory for Gated {
        fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
            if len == 2000 {
                let _ = self.0.lock().unwrap().recv();
            }
            self.1.fetch_add(1, Ordering::Relaxed);
            Ok(Box::new(vec![0u8; len]))
        }
        fn page_locked(&self) -> bool {
            false
        }
        fn grows_in_background(&self) -> bool {
            true
        }
    }
    let (permit, gate) = std::sync::mpsc::channel();
    let allocated = Arc::new(AtomicU64::new(0));
    let pool = BufferPool::new(Box::new(Gated(Mutex::new(gate), allocated.clone())), 1 << 20);
    pool.reserve(1000, 1).unwrap();
    pool.reserve_in_background(2000, 1).unwrap(); // holds the growing thread at the gate
    let lent = pool.take(1000);
    assert_eq!(format!("{lent:?}"), "PlaneData(1000 bytes, pooled)");
    // None free: this one asks for a block (queued behind the gated one).
    let short = pool.take(1000);
    assert_eq!(format!("{short:?}"), "PlaneData(1000 bytes, pooled, ordinary)");
    drop(lent); // the burst passes: a 1000-byte block is free again
    permit.send(()).unwrap();
    assert!(pool.wait_until_grown(Duration::from_secs(10)));
    assert_eq!(
        allocated.load(Ordering::Relaxed),
        2,
        "the reserved blocks only: the block asked for in the burst was not allocated"
    );
    assert_eq!(pool.allocated_bytes(), 3000);
    drop(short);
}

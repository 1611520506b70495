//! Host memory for frame planes: a plane's bytes live in an ordinary heap `Vec`, in a block
//! lent by a [`BufferPool`], which takes it back when the plane is dropped, or in memory
//! another owner lends read-only (a decoder's picture, see [`PlaneData::lent`]).
//!
//! The CUDA engine lends page-locked (pinned) blocks, so a frame the source decodes into
//! pool memory goes to the GPU and back without a CPU copy: the copy engines read and write
//! the plane itself. Blocks are reused, because pinning memory is slow (about half a
//! millisecond per megabyte on an H100 host: 1.7 ms for a 1080p frame, more than decoding
//! it) and a pipeline keeps a few dozen frames alive at most. For the same reason a pool of
//! such memory grows on a thread of its own: a buffer asked for while the pool is still
//! growing comes from the heap (the engine stages it through its own buffers, a copy of a
//! fraction of the pinning's cost), and the first frames never wait for the driver.
//!
//! One job at some length (about 670 lines, a third of them tests): plane memory and the
//! pool that lends it, grows it and takes memory that arrives late are one contract.

use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// One block of host memory a [`HostMemory`] allocated.
pub trait HostBlock: Send + Sync {
    fn bytes(&self) -> &[u8];
    fn bytes_mut(&mut self) -> &mut [u8];
}

/// Why a [`HostMemory`] has no block to give: the allocator's own error, whatever its type
/// (the CUDA engine's carries the driver's error code).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct AllocationError(Box<dyn Error + Send + Sync + 'static>);

impl AllocationError {
    pub fn new(error: impl Error + Send + Sync + 'static) -> AllocationError {
        AllocationError(Box::new(error))
    }

    /// The allocator's error as its own type, when it is an `E`.
    pub fn downcast<E: Error + 'static>(self) -> Result<E, AllocationError> {
        self.0.downcast::<E>().map(|error| *error).map_err(AllocationError)
    }
}

/// Where a pool's blocks come from.
pub trait HostMemory: Send + Sync {
    /// A new block of exactly `len` bytes, or why there is none.
    fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError>;
    /// Whether the blocks are page-locked, so the GPU can copy them asynchronously.
    fn page_locked(&self) -> bool;
    /// Whether allocating is slow enough to keep off the frame path (pinning is): a pool of
    /// such memory allocates on a thread of its own and lends heap memory meanwhile.
    fn grows_in_background(&self) -> bool {
        false
    }
    /// Whether blocks can be allocated yet (see [`LateMemory`]); until then the pool lends
    /// heap memory without asking.
    fn ready(&self) -> bool {
        true
    }
}

/// Memory that arrives after its pool is made: a pipeline makes its frame pool when its input
/// is open, so the decoder can start, and the engine puts its page-locked memory in once its
/// GPU is ready. Until then the pool lends heap memory (which the engine stages).
#[derive(Default)]
pub struct LateMemory {
    memory: std::sync::OnceLock<Box<dyn HostMemory>>,
}

impl LateMemory {
    /// Puts `memory` in; the first one stays (false when one was there already).
    pub fn install(&self, memory: Box<dyn HostMemory>) -> bool {
        self.memory.set(memory).is_ok()
    }
}

/// A late pool's memory, shared by the pool and whoever installs it.
struct SharedLate(Arc<LateMemory>);

impl HostMemory for SharedLate {
    fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
        match self.0.memory.get() {
            Some(memory) => memory.allocate(len),
            None => Err(AllocationError::new(std::io::Error::other("no memory installed yet"))),
        }
    }
    fn page_locked(&self) -> bool {
        self.0.memory.get().is_some_and(|memory| memory.page_locked())
    }
    fn grows_in_background(&self) -> bool {
        self.0.memory.get().is_none_or(|memory| memory.grows_in_background())
    }
    fn ready(&self) -> bool {
        self.0.memory.get().is_some()
    }
}

/// A frame pool made before its memory (see [`LateMemory`]): the pool the decoder fills,
/// and the slot the engine's memory goes in.
#[derive(Clone)]
pub struct LatePool {
    pub pool: Arc<BufferPool>,
    pub memory: Arc<LateMemory>,
}

impl LatePool {
    /// A pool of at most `limit` bytes, lending heap memory until memory is installed.
    pub fn new(limit: usize) -> LatePool {
        let memory = Arc::new(LateMemory::default());
        LatePool {
            pool: BufferPool::new(Box::new(SharedLate(memory.clone())), limit),
            memory,
        }
    }
}

impl fmt::Debug for LatePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatePool").field("pool", &self.pool).finish()
    }
}

/// Ordinary heap blocks: what tests and the CPU engine would use.
pub struct HeapMemory;

impl HostBlock for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl HostMemory for HeapMemory {
    fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
        Ok(Box::new(vec![0u8; len]))
    }
    fn page_locked(&self) -> bool {
        false
    }
}

/// Reusable blocks, by size. Lending past `limit` bytes (or a failed allocation) falls
/// back to the heap, so a stalled consumer costs speed, never memory it cannot get back.
pub struct BufferPool {
    memory: Arc<dyn HostMemory>,
    limit: usize,
    state: Mutex<PoolState>,
    fallbacks: AtomicU64,
    /// Block sizes for the growing thread to allocate (see [`HostMemory::grows_in_background`]);
    /// started with the first request. Dropping the pool closes it, which ends the thread.
    grower: Mutex<Option<Sender<usize>>>,
}

#[derive(Default)]
struct PoolState {
    free: HashMap<usize, Vec<Box<dyn HostBlock>>>,
    /// Bytes of every block this pool allocated, lent or free.
    allocated: usize,
    /// Bytes asked of the growing thread and not allocated yet (they count against the limit).
    growing: usize,
}

impl BufferPool {
    pub fn new(memory: Box<dyn HostMemory>, limit: usize) -> Arc<BufferPool> {
        Arc::new(BufferPool {
            memory: Arc::from(memory),
            limit,
            state: Mutex::new(PoolState::default()),
            fallbacks: AtomicU64::new(0),
            grower: Mutex::new(None),
        })
    }

    /// A buffer of `len` bytes: a pool block when one is free or may be allocated,
    /// otherwise (zeroed) heap memory. A reused block holds what its last user wrote: the
    /// caller writes every byte it will read (zeroing 3 MB per frame would cost as much as
    /// the copy it saves).
    pub fn take(self: &Arc<Self>, len: usize) -> PlaneData {
        if let Some(block) = self.take_block(len) {
            return PlaneData(Storage::Pooled {
                block: Some(block),
                len,
                pool: self.clone(),
            });
        }
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        PlaneData::from(vec![0u8; len])
    }

    /// A page-locked block of `len` bytes if one is free or may be allocated now; `None`
    /// (nothing counted) when the pool's memory is not page-locked or none is to be had.
    pub fn take_page_locked(self: &Arc<Self>, len: usize) -> Option<PlaneData> {
        if !self.memory.page_locked() {
            return None;
        }
        self.take_block(len).map(|block| {
            PlaneData(Storage::Pooled {
                block: Some(block),
                len,
                pool: self.clone(),
            })
        })
    }

    fn take_block(self: &Arc<Self>, len: usize) -> Option<Box<dyn HostBlock>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(block) = state.free.get_mut(&len).and_then(Vec::pop) {
            return Some(block);
        }
        if state.allocated + state.growing + len > self.limit || !self.memory.ready() {
            return None;
        }
        if self.memory.grows_in_background() {
            state.growing += len;
            drop(state);
            self.grow(len);
            return None;
        }
        match self.memory.allocate(len) {
            Ok(block) => {
                state.allocated += len;
                Some(block)
            }
            Err(reason) => {
                tracing::warn!("cannot allocate a {len}-byte frame buffer ({reason}); using ordinary memory");
                None
            }
        }
    }

    /// Allocates `count` free blocks of `len` bytes now (within the limit), so the first
    /// frames do not wait for slow allocations. Fails on the first allocation that does.
    pub fn reserve(&self, len: usize, count: usize) -> Result<(), AllocationError> {
        for _ in 0..count {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.allocated + state.growing + len > self.limit {
                break;
            }
            let block = self.memory.allocate(len)?;
            state.allocated += len;
            state.free.entry(len).or_default().push(block);
        }
        Ok(())
    }

    /// Asks the growing thread for `count` blocks of `len` bytes (within the limit) and
    /// returns at once; they are lent once allocated. For memory that does not grow in the
    /// background this is [`BufferPool::reserve`].
    pub fn reserve_in_background(self: &Arc<Self>, len: usize, count: usize) -> Result<(), AllocationError> {
        if !self.memory.ready() {
            return Ok(());
        }
        if !self.memory.grows_in_background() {
            return self.reserve(len, count);
        }
        for _ in 0..count {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.allocated + state.growing + len > self.limit {
                break;
            }
            state.growing += len;
            drop(state);
            self.grow(len);
        }
        Ok(())
    }

    /// Hands one block size to the growing thread, starting it if need be.
    fn grow(self: &Arc<Self>, len: usize) {
        let mut grower = self.grower.lock().unwrap_or_else(|e| e.into_inner());
        if grower.is_none() {
            let (requests, received) = channel::<usize>();
            let pool = Arc::downgrade(self);
            let started = std::thread::Builder::new()
                .name("buffer-pool-grow".into())
                .spawn(move || grow_while_wanted(&pool, received.iter()));
            match started {
                Ok(_) => *grower = Some(requests),
                Err(e) => {
                    tracing::warn!("cannot start the frame pool's allocating thread ({e}); using ordinary memory")
                }
            }
        }
        let sent = grower.as_ref().is_some_and(|requests| requests.send(len).is_ok());
        if !sent {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.growing -= len;
        }
    }

    /// Waits up to `timeout` for the blocks asked of the growing thread; true when none is
    /// left to allocate.
    pub fn wait_until_grown(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        loop {
            if self.state.lock().unwrap_or_else(|e| e.into_inner()).growing == 0 {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn give_back(&self, len: usize, block: Box<dyn HostBlock>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.free.entry(len).or_default().push(block);
    }

    /// The most bytes this pool allocates.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes this pool holds, lent or free.
    pub fn allocated_bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).allocated
    }

    /// Buffers handed out from the heap because the pool was full or could not allocate.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    pub fn page_locked(&self) -> bool {
        self.memory.page_locked()
    }
}

/// The growing thread: allocates each requested block and adds it to the free blocks, for as
/// long as the pool lives (a dropped pool ends the requests, and the thread with them).
fn grow_while_wanted(pool: &Weak<BufferPool>, requests: impl Iterator<Item = usize>) {
    for len in requests {
        let Some(pool) = pool.upgrade() else { return };
        // Allocated outside the lock: lending and giving back go on meanwhile.
        let block = pool.memory.allocate(len);
        let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
        state.growing -= len;
        match block {
            Ok(block) => {
                state.allocated += len;
                state.free.entry(len).or_default().push(block);
            }
            Err(reason) => {
                drop(state);
                tracing::warn!("cannot allocate a {len}-byte frame buffer ({reason}); using ordinary memory");
            }
        }
    }
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("limit", &self.limit)
            .field("allocated", &self.allocated_bytes())
            .field("page_locked", &self.page_locked())
            .finish()
    }
}

/// The bytes of one plane. Derefs to `[u8]`; cloning copies into heap memory.
pub struct PlaneData(Storage);

enum Storage {
    Heap(Vec<u8>),
    Pooled {
        /// Always `Some` until dropped (taken then to go back to the pool).
        block: Option<Box<dyn HostBlock>>,
        len: usize,
        pool: Arc<BufferPool>,
    },
    /// Read-only bytes another owner keeps alive through `keeper` (a decoded picture the
    /// decoder may still read as a reference). A write first copies them to the heap.
    Lent {
        bytes: *const u8,
        len: usize,
        page_locked: bool,
        /// Held, never read: keeps `bytes` valid and unchanged until the plane is dropped.
        _keeper: Box<dyn Send + Sync>,
    },
}

// SAFETY: the only field that is not Send + Sync is `Lent::bytes`, a pointer to memory that
// `PlaneData::lent`'s contract keeps valid and unchanged for the plane's life; it is only
// ever read through `&self`, so sharing or moving it between threads is as safe as a `&[u8]`.
unsafe impl Send for Storage {}
// SAFETY: see the `Send` impl above.
unsafe impl Sync for Storage {}

impl PlaneData {
    /// Bytes lent read-only by another owner, which `keeper` keeps alive: `len` bytes at
    /// `bytes`, page-locked or not. Reading them costs nothing; the first write through
    /// `DerefMut` copies them into the heap, so the lender's bytes are never changed.
    ///
    /// # Safety
    /// `bytes` must point to `len` readable bytes that stay valid and unchanged until
    /// `keeper` is dropped, and `page_locked` must be true only for page-locked memory.
    pub unsafe fn lent(bytes: *const u8, len: usize, page_locked: bool, keeper: Box<dyn Send + Sync>) -> PlaneData {
        PlaneData(Storage::Lent {
            bytes,
            len,
            page_locked,
            _keeper: keeper,
        })
    }

    /// Whether the bytes are page-locked host memory (the GPU may copy them directly).
    pub fn is_page_locked(&self) -> bool {
        match &self.0 {
            Storage::Heap(_) => false,
            Storage::Pooled { pool, .. } => pool.page_locked(),
            Storage::Lent { page_locked, .. } => *page_locked,
        }
    }

    /// Whether the bytes are lent read-only (see [`PlaneData::lent`]): writing them would
    /// copy them first, so an engine writes its results elsewhere.
    pub fn is_lent(&self) -> bool {
        matches!(self.0, Storage::Lent { .. })
    }
}

impl From<Vec<u8>> for PlaneData {
    fn from(bytes: Vec<u8>) -> PlaneData {
        PlaneData(Storage::Heap(bytes))
    }
}

impl Deref for PlaneData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Storage::Heap(bytes) => bytes,
            Storage::Pooled { block, len, .. } => block.as_ref().map_or(&[], |b| &b.bytes()[..*len]),
            // SAFETY: `PlaneData::lent`'s contract: `len` readable bytes, valid and unchanged
            // while the keeper (dropped only with `self`) lives.
            Storage::Lent { bytes, len, .. } => unsafe { std::slice::from_raw_parts(*bytes, *len) },
        }
    }
}

impl DerefMut for PlaneData {
    fn deref_mut(&mut self) -> &mut [u8] {
        if self.is_lent() {
            // Copy on write: the lender may still read its bytes.
            *self = PlaneData::from(self.to_vec());
        }
        match &mut self.0 {
            Storage::Heap(bytes) => bytes,
            Storage::Pooled { block, len, .. } => block.as_mut().map_or(&mut [], |b| &mut b.bytes_mut()[..*len]),
            Storage::Lent { .. } => unreachable!("lent bytes were just copied to the heap"),
        }
    }
}

impl Drop for PlaneData {
    fn drop(&mut self) {
        if let Storage::Pooled { block, len, pool } = &mut self.0 {
            if let Some(block) = block.take() {
                pool.give_back(*len, block);
            }
        }
    }
}

impl Clone for PlaneData {
    fn clone(&self) -> PlaneData {
        PlaneData::from(self.to_vec())
    }
}

impl PartialEq for PlaneData {
    fn eq(&self, other: &PlaneData) -> bool {
        **self == **other
    }
}

impl Eq for PlaneData {}

impl fmt::Debug for PlaneData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.0 {
            Storage::Heap(_) => "heap",
            Storage::Pooled { .. } if self.is_page_locked() => "pinned",
            Storage::Pooled { .. } => "pooled",
            Storage::Lent { page_locked: true, .. } => "lent, pinned",
            Storage::Lent { .. } => "lent",
        };
        write!(f, "PlaneData({} bytes, {kind})", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn slow_memory_grows_on_its_own_thread_and_lends_heap_meanwhile() {
        let pool = BufferPool::new(Box::new(SlowHeap), 3000);
        let first = pool.take(1000);
        assert_eq!(
            format!("{first:?}"),
            "PlaneData(1000 bytes, heap)",
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
    fn a_late_pool_lends_heap_until_its_memory_is_installed() {
        let late = LatePool::new(1 << 20);
        let early = late.pool.take(1000);
        assert_eq!(format!("{early:?}"), "PlaneData(1000 bytes, heap)");
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
}

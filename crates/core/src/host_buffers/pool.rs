//! The pool that lends reusable blocks by size ([`BufferPool`]): up to a limit, from memory
//! allocated on the frame path or, for slow (pinned) memory, on a thread of its own; past the
//! limit or while memory grows, the caller falls back to the heap. Lending a block as a
//! plane's bytes (`BufferPool::take`) is in `plane_data.rs`, beside the plane that gives it
//! back.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::memory::{AllocationError, HostBlock, HostMemory};

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
    /// A pool lending blocks of `memory`, at most `limit` bytes of them.
    pub fn new(memory: Box<dyn HostMemory>, limit: usize) -> Arc<BufferPool> {
        Arc::new(BufferPool {
            memory: Arc::from(memory),
            limit,
            state: Mutex::new(PoolState::default()),
            fallbacks: AtomicU64::new(0),
            grower: Mutex::new(None),
        })
    }

    /// A free block of `len` bytes, or a new one when the limit and the memory allow; `None`
    /// when the caller must do without (a background allocation may have been asked for).
    pub(super) fn take_block(self: &Arc<Self>, len: usize) -> Option<Box<dyn HostBlock>> {
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

    /// A lent block back among the free ones.
    pub(super) fn give_back(&self, len: usize, block: Box<dyn HostBlock>) {
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

    /// Counts one buffer handed out from the heap instead of the pool.
    pub(super) fn count_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether its blocks are page-locked (see [`HostMemory::page_locked`]).
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

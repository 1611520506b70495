//! The pool that lends reusable blocks by size ([`BufferPool`]): up to a limit, from memory
//! allocated on the frame path or, for slow (pinned) memory, on a thread of its own; past the
//! limit or while memory grows, the caller falls back to ordinary memory. The pool holds what
//! its frames in flight need, not its limit: blocks that stayed free through a whole window
//! ([`IDLE_WINDOW`]) are given back to the system. Lending a block as a plane's bytes
//! (`BufferPool::take`) is in `plane_data.rs`, beside the plane that gives it back.
//!
//! A burst (a host that stood still for a moment, frames catching up) must not turn into a
//! stall: the ordinary memory a slow pool falls back to is itself pooled (the `ordinary`
//! tier), so frames past the page-locked blocks reuse blocks instead of mapping, faulting in
//! and unmapping fresh memory for every plane (the CUDA engine copies such planes as they
//! are, page-locking nothing for them); and a block a frame asked for is allocated only if
//! the pool is still short of that size [`GROW_AFTER`] later, so a pool does not pin
//! gigabytes for a moment that has passed (page-locking also holds up every other thread's
//! calls into the GPU's driver).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::memory::{AllocationError, HostBlock, HostMemory};

/// How long a free block may stay unused before the pool gives it back: long enough that a
/// pipeline's steady use (a frame every 17-40 ms, bursts at a keyframe or a seek) keeps its
/// blocks, short enough that memory a pipeline no longer needs (its decoder's start, a
/// stalled output drained) returns within seconds.
pub const IDLE_WINDOW: Duration = Duration::from_secs(10);

/// How long after a frame found no free block the pool looks again before it grows: a burst
/// (a host that stood still, frames catching up) has passed by then and its blocks are back,
/// while a pipeline that needs more blocks for good is still short and gets them.
pub const GROW_AFTER: Duration = Duration::from_millis(1500);

/// Idle blocks of each size a slow pool's ordinary tier keeps when it gives the rest back: the
/// frames a catch-up after a brief stall takes beyond the page-locked blocks, reused without
/// faulting pages in, while the burst of a host's start (about 50 MB a 1080p pipeline) goes
/// back to the system ([`super::trim`]).
pub const ORDINARY_RESERVE: usize = 4;

/// Reusable blocks, by size. Lending past `limit` bytes (or a failed allocation) falls
/// back to the heap, so a stalled consumer costs speed, never memory it cannot get back.
pub struct BufferPool {
    memory: Arc<dyn HostMemory>,
    limit: usize,
    state: Mutex<PoolState>,
    fallbacks: AtomicU64,
    /// Blocks allocated and blocks given back as idle, since the pool began: how often it
    /// grew and shrank (each page-locked allocation also holds up the GPU's other streams).
    allocations: AtomicU64,
    releases: AtomicU64,
    /// Whether an allocation failure was logged: said once per pool, not once per frame.
    warned: AtomicBool,
    /// See [`IDLE_WINDOW`]; shorter in tests.
    idle_window: Duration,
    /// Work for the growing thread (see [`HostMemory::grows_in_background`]); started with
    /// the first request. Dropping the pool closes it, which ends the thread.
    grower: Mutex<Option<Sender<PoolChore>>>,
    /// Ordinary memory, pooled, for what a slow pool cannot lend at once (see the module's
    /// docs); `None` in the tier itself.
    ordinary: Option<Arc<BufferPool>>,
    /// Idle blocks of each size kept when the others are given back ([`ORDINARY_RESERVE`] in
    /// an ordinary tier, none elsewhere).
    reserve: usize,
}

/// What the growing thread does for its pool, off the frame path: both allocating and
/// freeing page-locked memory are slow.
enum PoolChore {
    /// Allocate a block of `len` bytes and add it to the free ones. `short_at`: when a frame
    /// found none free; the block is then allocated only if none is free [`GROW_AFTER`] later.
    Grow { len: usize, short_at: Option<Instant> },
    /// Free these blocks (given back as idle).
    Free(Vec<Box<dyn HostBlock>>),
}

struct PoolState {
    free: HashMap<usize, Vec<Box<dyn HostBlock>>>,
    /// Bytes of every block this pool allocated, lent or free.
    allocated: usize,
    /// Bytes asked of the growing thread and not allocated yet (they count against the limit).
    growing: usize,
    /// The fewest free blocks of each size seen since `window_began`: that many were never
    /// needed during the window.
    fewest_free: HashMap<usize, usize>,
    window_began: Instant,
}

impl PoolState {
    fn new() -> PoolState {
        PoolState {
            free: HashMap::new(),
            allocated: 0,
            growing: 0,
            fewest_free: HashMap::new(),
            window_began: Instant::now(),
        }
    }

    /// Notes how many free blocks of `len` bytes are left after a lending (0 when none was).
    fn note_free(&mut self, len: usize) {
        let left = self.free.get(&len).map_or(0, Vec::len);
        let fewest = self.fewest_free.entry(len).or_insert(left);
        *fewest = (*fewest).min(left);
    }

    /// Takes out the blocks no lending needed since the window began (the fewest free of
    /// each size), keeping `reserve` free blocks of each size, and begins a new window.
    fn take_idle(&mut self, reserve: usize) -> Vec<Box<dyn HostBlock>> {
        let mut idle = Vec::new();
        for (len, blocks) in &mut self.free {
            let unused = self
                .fewest_free
                .get(len)
                .copied()
                .unwrap_or(blocks.len())
                .min(blocks.len().saturating_sub(reserve));
            for _ in 0..unused {
                if let Some(block) = blocks.pop() {
                    self.allocated -= len;
                    idle.push(block);
                }
            }
        }
        self.free.retain(|_, blocks| !blocks.is_empty());
        self.fewest_free = self.free.iter().map(|(len, blocks)| (*len, blocks.len())).collect();
        self.window_began = Instant::now();
        idle
    }
}

impl BufferPool {
    /// A pool lending blocks of `memory`, at most `limit` bytes of them.
    pub fn new(memory: Box<dyn HostMemory>, limit: usize) -> Arc<BufferPool> {
        BufferPool::with_idle_window(memory, limit, IDLE_WINDOW)
    }

    /// A pool as [`BufferPool::new`] makes, giving back blocks unused for `idle_window`.
    pub fn with_idle_window(memory: Box<dyn HostMemory>, limit: usize, idle_window: Duration) -> Arc<BufferPool> {
        let ordinary = BufferPool::build(
            Box::new(super::memory::HeapMemory),
            limit,
            idle_window,
            None,
            ORDINARY_RESERVE,
        );
        BufferPool::build(memory, limit, idle_window, Some(ordinary), 0)
    }

    fn build(
        memory: Box<dyn HostMemory>,
        limit: usize,
        idle_window: Duration,
        ordinary: Option<Arc<BufferPool>>,
        reserve: usize,
    ) -> Arc<BufferPool> {
        Arc::new(BufferPool {
            memory: Arc::from(memory),
            limit,
            state: Mutex::new(PoolState::new()),
            fallbacks: AtomicU64::new(0),
            allocations: AtomicU64::new(0),
            releases: AtomicU64::new(0),
            warned: AtomicBool::new(false),
            idle_window,
            grower: Mutex::new(None),
            ordinary,
            reserve,
        })
    }

    /// Whether this is another pool's ordinary tier.
    pub(super) fn is_ordinary_tier(&self) -> bool {
        self.ordinary.is_none()
    }

    /// Where a plane this pool cannot lend now goes: the pooled ordinary memory for a pool
    /// whose own memory is slow to come (grown in the background, or not installed yet);
    /// `None` (a plain heap allocation) otherwise, as for a pool of heap memory at its limit.
    pub(super) fn ordinary_tier(&self) -> Option<&Arc<BufferPool>> {
        let slow = self.memory.grows_in_background() || !self.memory.ready();
        self.ordinary.as_ref().filter(|_| slow)
    }

    /// A free block of `len` bytes, or a new one when the limit and the memory allow; `None`
    /// when the caller must do without (a background allocation may have been asked for).
    pub(super) fn take_block(self: &Arc<Self>, len: usize) -> Option<Box<dyn HostBlock>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let block = state.free.get_mut(&len).and_then(Vec::pop);
        state.note_free(len);
        if block.is_some() {
            return block;
        }
        if state.allocated + state.growing + len > self.limit || !self.memory.ready() {
            return None;
        }
        if self.memory.grows_in_background() {
            state.growing += len;
            drop(state);
            self.grow(len, Some(Instant::now()));
            return None;
        }
        match self.memory.allocate(len) {
            Ok(block) => {
                state.allocated += len;
                self.allocations.fetch_add(1, Ordering::Relaxed);
                Some(block)
            }
            Err(reason) => {
                drop(state);
                self.warn_once(len, &reason);
                None
            }
        }
    }

    /// Says why a block could not be allocated, the first time only: the frames go on in
    /// ordinary memory, and a message per frame would bury the log.
    fn warn_once(&self, len: usize, reason: &AllocationError) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "cannot allocate a {len}-byte frame buffer ({reason}); frames that find no free buffer use ordinary memory \
                 (said once)"
            );
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
            self.allocations.fetch_add(1, Ordering::Relaxed);
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
            self.grow(len, None);
        }
        Ok(())
    }

    /// Hands one block size to the growing thread, starting it if need be (`short_at`: see
    /// [`PoolChore::Grow`]).
    fn grow(self: &Arc<Self>, len: usize, short_at: Option<Instant>) {
        if !self.send_chore(PoolChore::Grow { len, short_at }) {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.growing -= len;
        }
    }

    /// Hands `chore` to the growing thread, starting it if need be; false when there is no
    /// thread to take it.
    fn send_chore(self: &Arc<Self>, chore: PoolChore) -> bool {
        let mut grower = self.grower.lock().unwrap_or_else(|e| e.into_inner());
        if grower.is_none() {
            let (requests, received) = channel::<PoolChore>();
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
        grower.as_ref().is_some_and(|requests| requests.send(chore).is_ok())
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

    /// A lent block back among the free ones; once a window is over, the blocks no lending
    /// needed during it go back to the system (see [`IDLE_WINDOW`]).
    pub(super) fn give_back(self: &Arc<Self>, len: usize, block: Box<dyn HostBlock>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.free.entry(len).or_default().push(block);
        if state.window_began.elapsed() < self.idle_window {
            return;
        }
        let idle = state.take_idle(self.reserve);
        drop(state);
        self.release(idle);
        // The ordinary tier's blocks come back only in bursts, so its own windows would end
        // only with the next burst: this pool's steady flow ends them instead.
        if let Some(ordinary) = &self.ordinary {
            ordinary.release_idle();
        }
    }

    /// Gives back the blocks that stayed free since the last window began, now: for a
    /// pipeline that goes idle (a live input with no sender), whose frames no longer come
    /// back to give the pool its chance. Returns the bytes given back.
    pub fn release_idle(self: &Arc<Self>) -> usize {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.window_began.elapsed() < self.idle_window {
            return 0;
        }
        let before = state.allocated;
        let idle = state.take_idle(self.reserve);
        let released = before - state.allocated;
        drop(state);
        self.release(idle);
        released + self.ordinary.as_ref().map_or(0, |ordinary| ordinary.release_idle())
    }

    /// Frees `blocks`: slow memory on the growing thread, so the frame path never waits for
    /// the driver; other memory here. Also for blocks of the pool's memory that were never
    /// the pool's (the engine's idle staging buffers).
    pub fn release(self: &Arc<Self>, blocks: Vec<Box<dyn HostBlock>>) {
        if blocks.is_empty() {
            return;
        }
        tracing::debug!("frame pool: {} idle buffer(s) given back", blocks.len());
        self.releases.fetch_add(blocks.len() as u64, Ordering::Relaxed);
        if self.memory.grows_in_background() {
            // A thread that cannot take them leaves them to be freed here, by the drop.
            let _ = self.send_chore(PoolChore::Free(blocks));
        } else if !self.memory.page_locked() {
            // Heap blocks: freed here, then their pages back to the system (glibc would keep them).
            drop(blocks);
            super::trim::give_back_freed_memory();
        }
    }

    /// The most bytes this pool allocates.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes this pool holds, lent or free.
    pub fn allocated_bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).allocated
    }

    /// Bytes of ordinary memory the pool holds (lent or free) for frames past its own blocks.
    pub fn ordinary_bytes(&self) -> usize {
        self.ordinary.as_ref().map_or(0, |ordinary| ordinary.allocated_bytes())
    }

    /// Buffers handed out from the heap because the pool was full or could not allocate.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Blocks this pool allocated so far (grown on demand or reserved).
    pub fn allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Blocks this pool gave back to the system so far (idle ones, and the engine's idle
    /// staging buffers it frees).
    pub fn releases(&self) -> u64 {
        self.releases.load(Ordering::Relaxed)
    }

    /// Counts one buffer handed out from the heap instead of the pool.
    pub(super) fn count_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether its blocks are page-locked (see `HostMemory::page_locked`).
    pub fn page_locked(&self) -> bool {
        self.memory.page_locked()
    }
}

/// The growing thread: allocates each requested block and adds it to the free blocks, and
/// frees the blocks given back, for as long as the pool lives (a dropped pool ends the
/// requests, and the thread with them).
fn grow_while_wanted(pool: &Weak<BufferPool>, requests: impl Iterator<Item = PoolChore>) {
    for chore in requests {
        let (len, short_at) = match chore {
            PoolChore::Grow { len, short_at } => (len, short_at),
            PoolChore::Free(blocks) => {
                drop(blocks);
                continue;
            }
        };
        if let Some(short_at) = short_at {
            // Chores come in the order they were asked for, so each waits at most its own time.
            std::thread::sleep((short_at + GROW_AFTER).saturating_duration_since(Instant::now()));
        }
        let Some(pool) = pool.upgrade() else { return };
        if short_at.is_some() {
            let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.free.get(&len).is_some_and(|free| !free.is_empty()) {
                // Blocks came back since this one was asked for: the burst has passed.
                state.growing -= len;
                continue;
            }
        }
        // Allocated outside the lock: lending and giving back go on meanwhile.
        let block = pool.memory.allocate(len);
        let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
        state.growing -= len;
        match block {
            Ok(block) => {
                state.allocated += len;
                state.free.entry(len).or_default().push(block);
                pool.allocations.fetch_add(1, Ordering::Relaxed);
            }
            Err(reason) => {
                drop(state);
                pool.warn_once(len, &reason);
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

//! A frame pool made before its memory: [`LatePool`] lends heap memory until the engine puts
//! its page-locked memory in ([`LateMemory`]).

use std::fmt;
use std::sync::Arc;

use super::memory::{AllocationError, HostBlock, HostMemory};
use super::pool::BufferPool;

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

/// A frame pool made before its memory (see `LateMemory`): the pool the decoder fills,
/// and the slot the engine's memory goes in.
#[derive(Clone)]
pub struct LatePool {
    /// The pool the decoder fills.
    pub pool: Arc<BufferPool>,
    /// Where the engine puts its memory once it has some.
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

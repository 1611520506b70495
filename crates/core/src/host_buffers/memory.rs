//! Where plane memory comes from: the [`HostMemory`] an allocator is, the [`HostBlock`]s it
//! gives, why it may give none ([`AllocationError`]), and ordinary heap memory
//! ([`HeapMemory`]). A leaf: the pool and the planes build on it.

use std::error::Error;

/// One block of host memory a [`HostMemory`] allocated.
pub trait HostBlock: Send + Sync {
    /// The block's bytes.
    fn bytes(&self) -> &[u8];
    /// The block's bytes, to write.
    fn bytes_mut(&mut self) -> &mut [u8];
}

/// Why a [`HostMemory`] has no block to give: the allocator's own error, whatever its type
/// (the CUDA engine's carries the driver's error code).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct AllocationError(Box<dyn Error + Send + Sync + 'static>);

impl AllocationError {
    /// The allocator's error, kept as it is.
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
    /// Whether blocks can be allocated yet (see [`LateMemory`](super::LateMemory)); until then the pool lends
    /// heap memory without asking.
    fn ready(&self) -> bool {
        true
    }
}

/// Blocks at least this large get an anonymous mapping of their own (glibc maps allocations
/// this large too, until a freed one raises its threshold; see [`HeapMemory`]).
pub const MAPPED_FROM: usize = 128 * 1024;

/// Ordinary memory (what the CPU engine's pools and a page-locked pool's ordinary tier use):
/// small blocks from the heap, frame-sized ones ([`MAPPED_FROM`] and up) as zeroed anonymous
/// mappings of their own. A pool gives idle blocks back after a burst (a start, a stall); from
/// the heap they would stay in the process: once any large block has been freed, glibc serves
/// blocks of a frame's size from its arenas and keeps what is freed there resident (a freed
/// 3 MB frame between blocks still in use is never returned), so the memory a full host's start
/// used stayed for good. A mapping is returned whole when its block is dropped.
pub struct HeapMemory;

impl HostBlock for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl HostBlock for memmap2::MmapMut {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl HostMemory for HeapMemory {
    fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
        if len < MAPPED_FROM {
            return Ok(Box::new(vec![0u8; len]));
        }
        // Zeroed by the kernel as each page is first touched.
        let mapping = memmap2::MmapMut::map_anon(len).map_err(AllocationError::new)?;
        Ok(Box::new(mapping))
    }
    fn page_locked(&self) -> bool {
        false
    }
}

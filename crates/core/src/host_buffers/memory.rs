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

/// Ordinary heap memory (what the CPU engine's pools and a page-locked pool's ordinary tier
/// use). A pool gives idle blocks back after a burst (a start, a stall) and glibc keeps most of
/// what is freed resident in its arenas: that kept memory is what the next catch-up reuses
/// without faulting a page in. Frame-sized blocks as mappings of their own, returned to the
/// system whole, cut the full 2-GPU host's RSS from 52 to 28 MB a pipeline but cost several
/// times the frames dropped after a brief stall, as each catch-up faulted its frames in anew,
/// most likely (BENCHMARKS.md, "Ordinary memory given back to the system").
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

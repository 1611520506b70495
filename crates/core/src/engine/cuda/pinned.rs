//! Page-locked host memory: the blocks of the engine's frame pool (see
//! [`crate::host_buffers`]) and the lanes' staging buffers for frames that are not in it.
//!
//! Copies are enqueued with the raw driver calls on a block's address, so a block carries
//! no cudarc event: whoever enqueues a copy keeps the block untouched until the copy's
//! stream has passed an event it waits on (the lanes' done event).

use cudarc::driver::{sys, CudaContext, PinnedHostSlice};
use std::sync::Arc;

use super::engine_error::CudaResultExt;
use crate::engine::EngineError;
use crate::host_buffers::pinned_budget::{PinnedBudget, PinnedCharge};
use crate::host_buffers::{AllocationError, HostBlock, HostMemory};

/// One page-locked allocation with a stable address.
pub struct PinnedBlock {
    /// Owns the allocation (freed on drop, in its context).
    _allocation: PinnedHostSlice<u8>,
    /// The block's bytes counted in the process's page-locked budget until it is freed.
    _charge: PinnedCharge,
    address: *mut u8,
    len: usize,
}

// SAFETY: the block owns its allocation exclusively (the raw address only caches where it
// is); moving the block to another thread moves that ownership. `PinnedHostSlice` itself is
// Send.
unsafe impl Send for PinnedBlock {}
// SAFETY: shared and mutable access go through `bytes` / `bytes_mut`, so Rust's borrow
// rules order every CPU access across threads. `PinnedHostSlice` itself is Sync.
unsafe impl Sync for PinnedBlock {}

impl PinnedBlock {
    /// Allocates `len` page-locked bytes, zeroed, counted in the process's budget but never
    /// refused by it (a lane's staging buffers). `write_combined` suits memory the CPU only
    /// writes (faster to write and for the GPU to read, very slow for the CPU to read).
    pub fn new(
        context: &Arc<CudaContext>,
        len: usize,
        write_combined: bool,
        what: String,
    ) -> Result<PinnedBlock, EngineError> {
        let charge = PinnedBudget::host().charge_always(len.max(1));
        PinnedBlock::charged(context, len, write_combined, what, charge)
    }

    /// Allocates `len` page-locked bytes with `charge` already taken for them.
    fn charged(
        context: &Arc<CudaContext>,
        len: usize,
        write_combined: bool,
        what: String,
        charge: PinnedCharge,
    ) -> Result<PinnedBlock, EngineError> {
        // Portable: the block counts as pinned for every context, so frames from a pool can
        // go to any GPU.
        let mut flags = sys::CU_MEMHOSTALLOC_PORTABLE;
        if write_combined {
            flags |= sys::CU_MEMHOSTALLOC_WRITECOMBINED;
        }
        let len = len.max(1);
        // SAFETY: the memory is zeroed below before anything reads it.
        let mut allocation =
            unsafe { context.alloc_pinned_with_flags::<u8>(len, flags) }.context(|| format!("{what} ({len} bytes)"))?;
        let address = allocation.as_mut_ptr().context(|| what.clone())?;
        let mut block = PinnedBlock {
            _allocation: allocation,
            _charge: charge,
            address,
            len,
        };
        block.bytes_mut().fill(0);
        Ok(block)
    }
}

impl HostBlock for PinnedBlock {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `address` points to `len` bytes owned by this block for its lifetime.
        unsafe { std::slice::from_raw_parts(self.address, self.len) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.address, self.len) }
    }
}

/// The frame pool's memory: page-locked blocks in one GPU's context.
pub struct PinnedMemory {
    /// The GPU context the blocks are page-locked in.
    pub context: Arc<CudaContext>,
    /// Names the pipeline in allocation errors.
    pub pipeline: String,
}

impl HostMemory for PinnedMemory {
    /// Fails with the [`EngineError`] of the allocation, which keeps the driver's error, or
    /// with [`BudgetSpent`](crate::host_buffers::pinned_budget::BudgetSpent) when the block
    /// would pass the process's page-locked budget.
    fn allocate(&self, len: usize) -> Result<Box<dyn HostBlock>, AllocationError> {
        let charge = PinnedBudget::host()
            .charge_pool_block(len.max(1))
            .map_err(AllocationError::new)?;
        let what = format!("pipeline {:?}: allocating a pinned frame buffer", self.pipeline);
        PinnedBlock::charged(&self.context, len, false, what, charge)
            .map(|block| Box::new(block) as Box<dyn HostBlock>)
            .map_err(AllocationError::new)
    }
    fn page_locked(&self) -> bool {
        true
    }
    /// Pinning takes about half a millisecond per megabyte: never on the frame path.
    fn grows_in_background(&self) -> bool {
        true
    }
}

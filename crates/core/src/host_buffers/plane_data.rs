//! The bytes of one plane ([`PlaneData`]): a heap `Vec`, a block lent by a [`BufferPool`]
//! and given back on drop, memory another owner lends read-only (copied on write), or none
//! yet (a plane that is to be written later, see [`PlaneData::pending`]). The pool's lending
//! of blocks as planes (`BufferPool::take`) is here, beside the drop that gives them back.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use super::memory::HostBlock;
use super::pool::BufferPool;

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
        /// Lent out of a frame pool's block (see [`PlaneData::lent_from`]), not by a caller.
        from_pool: bool,
        /// Held, never read: keeps `bytes` valid and unchanged until the plane is dropped.
        _keeper: Box<dyn Send + Sync>,
    },
    /// No memory of its own yet: reads see zeroes (a block shared by every such plane, never
    /// written), the first write allocates.
    Pending {
        zeroes: Arc<Vec<u8>>,
        len: usize,
    },
}

/// The zeroes every pending plane reads: one block, as long as the longest plane asked for.
/// Allocated zeroed and never written, its pages cost no memory until something reads them.
static SHARED_ZEROES: Mutex<Option<Arc<Vec<u8>>>> = Mutex::new(None);

fn shared_zeroes(len: usize) -> Arc<Vec<u8>> {
    let mut shared = SHARED_ZEROES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match shared.as_ref() {
        Some(zeroes) if zeroes.len() >= len => zeroes.clone(),
        _ => {
            // Planes that hold the shorter block keep it until they are dropped.
            let zeroes = Arc::new(vec![0u8; len]);
            *shared = Some(zeroes.clone());
            zeroes
        }
    }
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
            from_pool: false,
            _keeper: keeper,
        })
    }

    /// As [`PlaneData::lent`], for bytes inside `block`, a frame pool's block (a decoder's
    /// picture made in the pool): page-locked as `block` is, and not a caller's (see
    /// [`PlaneData::is_lent_by_caller`]).
    ///
    /// # Safety
    /// As [`PlaneData::lent`]; `bytes` must lie inside `block`.
    pub unsafe fn lent_from(
        block: &PlaneData,
        bytes: *const u8,
        len: usize,
        keeper: Box<dyn Send + Sync>,
    ) -> PlaneData {
        PlaneData(Storage::Lent {
            bytes,
            len,
            page_locked: block.is_page_locked(),
            from_pool: true,
            _keeper: keeper,
        })
    }

    /// `len` bytes not allocated yet: a plane whose pixels someone will write later (a
    /// picture the decoder left on the GPU, which the engine filters into host memory). Until
    /// then it holds no memory and reads as zeroes; the writer replaces it with memory of its
    /// choice (see [`PlaneData::is_pending`]), or its first write allocates heap memory.
    pub fn pending(len: usize) -> PlaneData {
        PlaneData(Storage::Pending {
            zeroes: shared_zeroes(len),
            len,
        })
    }

    /// Whether the plane has no memory yet (see [`PlaneData::pending`]).
    pub fn is_pending(&self) -> bool {
        matches!(self.0, Storage::Pending { .. })
    }

    /// Whether the bytes are page-locked host memory (the GPU may copy them directly).
    pub fn is_page_locked(&self) -> bool {
        match &self.0 {
            Storage::Heap(_) | Storage::Pending { .. } => false,
            Storage::Pooled { pool, .. } => pool.page_locked(),
            Storage::Lent { page_locked, .. } => *page_locked,
        }
    }

    /// Whether a caller lent the bytes ([`PlaneData::lent`]: a GStreamer buffer, a NumPy
    /// array), rather than a frame pool or the heap holding them for the pipeline itself. A
    /// caller's buffers come steadily, so the CUDA engine stages them through page-locked
    /// buffers of its own, where copies overlap; the pipeline's own ordinary memory is there
    /// while its pool is short (a start, a burst), when the engine page-locks nothing for it.
    pub fn is_lent_by_caller(&self) -> bool {
        matches!(self.0, Storage::Lent { from_pool: false, .. })
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
            Storage::Pending { zeroes, len } => &zeroes[..*len],
        }
    }
}

impl DerefMut for PlaneData {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &self.0 {
            // Copy on write: the lender may still read its bytes.
            Storage::Lent { .. } => *self = PlaneData::from(self.to_vec()),
            Storage::Pending { len, .. } => *self = PlaneData::from(vec![0u8; *len]),
            Storage::Heap(_) | Storage::Pooled { .. } => {}
        }
        match &mut self.0 {
            Storage::Heap(bytes) => bytes,
            Storage::Pooled { block, len, .. } => block.as_mut().map_or(&mut [], |b| &mut b.bytes_mut()[..*len]),
            Storage::Lent { .. } | Storage::Pending { .. } => unreachable!("the bytes were just given heap memory"),
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
            Storage::Pooled { pool, .. } if pool.is_ordinary_tier() => "pooled, ordinary",
            Storage::Pooled { .. } => "pooled",
            Storage::Lent { page_locked: true, .. } => "lent, pinned",
            Storage::Lent { .. } => "lent",
            Storage::Pending { .. } => "pending",
        };
        write!(f, "PlaneData({} bytes, {kind})", self.len())
    }
}

/// Lending pool blocks as plane bytes.
impl BufferPool {
    /// A buffer of `len` bytes: a pool block when one is free or may be allocated,
    /// otherwise a block of the pool's ordinary tier (see `pool.rs`) or (zeroed) heap
    /// memory. A reused block holds what its last user wrote: the caller writes every byte
    /// it will read (zeroing 3 MB per frame would cost as much as the copy it saves).
    pub fn take(self: &Arc<Self>, len: usize) -> PlaneData {
        if let Some(block) = self.take_block(len) {
            return PlaneData(Storage::Pooled {
                block: Some(block),
                len,
                pool: self.clone(),
            });
        }
        self.count_fallback();
        match self.ordinary_tier() {
            Some(ordinary) => ordinary.take(len),
            None => PlaneData::from(vec![0u8; len]),
        }
    }

    /// A page-locked block of `len` bytes if one is free or may be allocated now; `None`
    /// (nothing counted) when the pool's memory is not page-locked or none is to be had.
    pub fn take_page_locked(self: &Arc<Self>, len: usize) -> Option<PlaneData> {
        if !self.page_locked() {
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
}

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
//! Here: the modules and what they give the crates above. Where memory comes from is
//! `memory.rs`, the pool `pool.rs`, a plane's bytes `plane_data.rs`, a pool whose memory
//! arrives late `late.rs`, the process's budget of page-locked memory [`pinned_budget`], freed
//! heap memory given back to the system [`trim`].

mod late;
mod memory;
pub mod pinned_budget;
mod plane_data;
mod pool;
pub mod trim;

pub use late::LatePool;
pub use memory::HeapMemory;
// What the CUDA engine's pinned blocks are made of (and the pool's tests' fake memory).
#[cfg_attr(not(any(feature = "cuda", test)), allow(unused_imports))]
pub(crate) use memory::{AllocationError, HostBlock, HostMemory};
pub use plane_data::PlaneData;
pub use pool::{BufferPool, IDLE_WINDOW};

#[cfg(test)]
mod tests;

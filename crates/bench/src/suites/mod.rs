//! The benchmark suites, one module each, beside their helpers (`workload`, `run_info`,
//! `cpu_info`, `overlap_runs`, `cli_runs`). GPU figures come from `engine::cuda::measure`
//! (CUDA events) through [`gpu`], the one module built only with CUDA support; CPU figures
//! from wall-clock medians. The kernel, transfer, overlap and e2e suites measure their
//! baseline in the same run.

mod cli_runs;
mod cpu_info;
mod decode_capacity;
mod e2e;
#[cfg(feature = "cuda")]
mod gpu;
mod kernel;
mod overlap;
mod overlap_runs;
mod run_info;
mod scale;
mod transfer;
mod workload;

pub use e2e::e2e;
pub use kernel::kernel;
pub use overlap::overlap;
pub use run_info::{gpu_ordinal, run_info, utc_now};
pub use scale::scale;
pub use transfer::transfer;
pub(crate) use workload::E2E_MASK;

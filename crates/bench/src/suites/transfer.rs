//! The transfer suite: host-to-device and device-to-host copies of one frame, from pinned
//! and pageable memory, one way and both ways at once.

use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::TransferRow;

// Without CUDA support only the skipping arm is built, which needs no `options`.
#[cfg_attr(not(feature = "cuda"), allow(unused_variables))]
pub fn transfer(
    options: &BenchOptions,
    gpu: Option<usize>,
    skipped: &mut Vec<String>,
) -> Result<Vec<TransferRow>, BenchError> {
    match gpu {
        #[cfg(feature = "cuda")]
        Some(ordinal) => super::gpu::transfer(options, ordinal),
        _ => {
            skipped.push("transfer: host-GPU copies need a GPU".into());
            Ok(Vec::new())
        }
    }
}

//! Kernel planning: which kernel path and variant each channel count of a frame layout
//! takes on a device, and the loaded kernels of one filter.

use cudarc::driver::{CudaContext, CudaStream};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::device::DeviceInfo;
use super::kernels::{KernelSet, Variant};
use super::lanes::Layout;
use crate::engine::{EngineError, GpuTuning, KernelPath};
use crate::filter::FilterSpec;

/// The kernels of one filter, one set per channel count the frame's planes have, each with
/// the kernel path it runs.
pub struct FilterKernels {
    pub filter: FilterSpec,
    pub sets: BTreeMap<usize, (KernelSet, KernelPath)>,
}

/// What planning needs besides the filter and the layout: the device, a forced kernel path
/// and the tuning.
#[derive(Clone)]
pub struct Planner {
    pub device: DeviceInfo,
    pub force_path: Option<KernelPath>,
    pub tuning: GpuTuning,
}

impl FilterKernels {
    /// Compiles (or loads from the cache) every variant `layout` needs, before any frame.
    pub fn build(
        context: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        planner: &Planner,
        filter: FilterSpec,
        layout: &Layout,
    ) -> Result<FilterKernels, EngineError> {
        let device = &planner.device;
        let mut sets = BTreeMap::new();
        for (channels, variant, path) in planner.plan(&filter, layout)? {
            let set = KernelSet::load(
                context,
                stream,
                variant,
                &device.arch(),
                &filter.mask,
                device.max_shared_per_block,
            )?;
            sets.insert(channels, (set, path));
        }
        Ok(FilterKernels { filter, sets })
    }
}

impl Planner {
    /// The kernel variant and path for each channel count among `layout`'s planes.
    pub fn plan(&self, filter: &FilterSpec, layout: &Layout) -> Result<Vec<(usize, Variant, KernelPath)>, EngineError> {
        let (device, force_path) = (&self.device, self.force_path);
        let mask = &filter.mask;
        let path = force_path.unwrap_or(if mask.is_separable() {
            KernelPath::Separable
        } else {
            KernelPath::Dense
        });
        if path == KernelPath::Separable && !mask.is_separable() {
            return Err(EngineError::Unsupported(format!(
                "the separable kernel needs a rank-one mask; {} is not",
                mask.description()
            )));
        }
        let max_shared = device.max_shared_per_block;
        let mut plan: Vec<(usize, Variant, KernelPath)> = Vec::new();
        for slot in &layout.slots {
            if plan.iter().any(|(channels, ..)| *channels == slot.channels) {
                continue;
            }
            let variant_for = |path| {
                Variant::new(
                    mask.width(),
                    mask.height(),
                    slot.channels,
                    filter.border,
                    max_shared,
                    path,
                    // The first slot of a channel count is its largest plane (luma before chroma).
                    slot.width * slot.height,
                )
                .tuned(&self.tuning, path, max_shared)
            };
            let mut chosen = path;
            let mut variant = variant_for(chosen);
            if chosen == KernelPath::Separable && variant.shared_bytes(chosen) > max_shared && force_path.is_none() {
                // The fused separable kernel holds two tiles; the dense one fits where it may not.
                tracing::info!(
                    "{} does not fit in {} bytes of shared memory; using the dense kernel",
                    variant.describe(),
                    max_shared
                );
                chosen = KernelPath::Dense;
                variant = variant_for(chosen);
            }
            let needed = variant.shared_bytes(chosen);
            if needed > max_shared {
                return Err(EngineError::Unsupported(format!(
                    "{} needs {needed} bytes of shared memory per block; {} allows {max_shared}",
                    variant.describe(),
                    device.name
                )));
            }
            plan.push((slot.channels, variant, chosen));
        }
        Ok(plan)
    }
}

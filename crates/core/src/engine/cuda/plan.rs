//! Kernel planning: which kernel path and variant each filtered plane of a frame layout
//! takes on a device, and the loaded kernels of one filter.

use cudarc::driver::{CudaContext, CudaStream};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::device::DeviceInfo;
use super::kernels::{KernelSet, Variant};
use super::lanes::Layout;
use crate::engine::{EngineError, GpuTuning, KernelPath, UnsupportedRequest};
use crate::filter::FilterSpec;
use crate::mask::Mask;

/// The kernels of one filter: for each filtered plane (by index), the loaded set and the
/// kernel path it runs, and the bias its mask adds (in the plane's sample units). Planes with
/// the same mask and variant share one set.
pub struct FilterKernels {
    pub sets: BTreeMap<usize, (Arc<KernelSet>, KernelPath, f32)>,
}

/// What planning needs besides the filter and the layout: the device, a forced kernel path
/// and the tuning.
#[derive(Clone)]
pub struct Planner {
    pub device: DeviceInfo,
    pub force_path: Option<KernelPath>,
    pub tuning: GpuTuning,
}

/// The kernel one plane runs: its variant, path and mask.
pub struct PlanePlan {
    pub plane: usize,
    pub variant: Variant,
    pub path: KernelPath,
    pub mask: Mask,
}

impl FilterKernels {
    /// Compiles (or loads from the cache) every variant `layout` needs, before any frame.
    pub fn build(
        context: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        planner: &Planner,
        filter: &FilterSpec,
        layout: &Layout,
    ) -> Result<FilterKernels, EngineError> {
        let device = &planner.device;
        let mut loaded: Vec<(Variant, Mask, Arc<KernelSet>)> = Vec::new();
        let mut sets = BTreeMap::new();
        for plan in planner.plan(filter, layout)? {
            let shared = loaded
                .iter()
                .find(|(variant, mask, _)| *variant == plan.variant && *mask == plan.mask)
                .map(|(_, _, set)| set.clone());
            let set = match shared {
                Some(set) => set,
                None => {
                    let set = Arc::new(KernelSet::load(
                        context,
                        stream,
                        plan.variant,
                        &device.arch(),
                        &plan.mask,
                        device.max_shared_per_block,
                    )?);
                    loaded.push((plan.variant, plan.mask.clone(), set.clone()));
                    set
                }
            };
            // The mask's bias is in 8-bit units (FFmpeg's arithmetic: the plane's); the kernel
            // adds it in the plane's.
            let bias = plan.mask.bias_at(plan.variant.depth);
            sets.insert(plan.plane, (set, plan.path, bias));
        }
        Ok(FilterKernels { sets })
    }
}

impl Planner {
    /// The kernel variant and path for each plane `layout` filters, with its mask.
    pub fn plan(&self, filter: &FilterSpec, layout: &Layout) -> Result<Vec<PlanePlan>, EngineError> {
        let (device, force_path) = (&self.device, self.force_path);
        let max_shared = device.max_shared_per_block;
        let mut plan = Vec::new();
        for slot in &layout.slots {
            let Some(mask) = filter.mask_for(layout.shape.format, slot.plane) else {
                continue;
            };
            let path = force_path.unwrap_or(if mask.is_separable() {
                KernelPath::Separable
            } else {
                KernelPath::Dense
            });
            if path == KernelPath::Separable && !mask.is_separable() {
                return Err(EngineError::Unsupported {
                    request: UnsupportedRequest::NotRankOne {
                        mask: mask.description().to_string(),
                    },
                });
            }
            let variant_for = |path| {
                Variant::new(
                    mask.width(),
                    mask.height(),
                    slot.channels,
                    filter.border.for_mask(mask.width(), mask.height()),
                    max_shared,
                    path,
                    slot.width * slot.height,
                )
                .tuned(&self.tuning, path, max_shared)
                .with_magnitude(mask.is_magnitude())
                .with_depth(slot.depth)
                .with_ffmpeg_rdiv(mask.ffmpeg_rdiv())
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
                return Err(EngineError::Unsupported {
                    request: UnsupportedRequest::SharedMemory {
                        variant: variant.describe(),
                        needed,
                        device: device.name.clone(),
                        allowed: max_shared,
                    },
                });
            }
            plan.push(PlanePlan {
                plane: slot.plane,
                variant,
                path: chosen,
                mask: mask.clone(),
            });
        }
        Ok(plan)
    }
}

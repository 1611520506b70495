//! What the CUDA engine's copies moved over PCIe, counted per frame ([`PcieBytes`]).

use super::lanes::Layout;
use crate::frame::Frame;

/// Bytes the engine moved over PCIe: every selected plane goes to the GPU and back, except
/// that a picture already on the GPU comes only back, with the planes the filter skips, and
/// one whose output is on the GPU too does not cross at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcieBytes {
    /// Frames counted.
    pub frames: u64,
    /// Bytes copied to the GPU.
    pub to_gpu: u64,
    /// Bytes copied back.
    pub from_gpu: u64,
}

impl PcieBytes {
    /// Counts `frame`'s crossings, its filtered planes laid out as `layout`.
    pub(super) fn count(&mut self, layout: &Layout, frame: &Frame) {
        let selected: u64 = layout
            .slots
            .iter()
            .map(|slot| (slot.row_bytes() * slot.height) as u64)
            .sum();
        self.frames += 1;
        if frame.device.as_ref().is_some_and(|picture| picture.stays_on_device()) {
            // In and out on the GPU: nothing crosses PCIe.
        } else if frame.device.is_some() {
            self.from_gpu += frame
                .planes
                .iter()
                .map(|p| (p.row_bytes() * p.height) as u64)
                .sum::<u64>();
        } else {
            self.to_gpu += selected;
            self.from_gpu += selected;
        }
    }
}

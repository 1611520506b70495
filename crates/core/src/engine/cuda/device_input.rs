//! A frame whose picture is already in GPU memory (a [`DevicePicture`] NVDEC left there)
//! enters its lane without crossing PCIe: the planes the filter reads are copied device to
//! device into the lane's input buffer, and the planes it leaves alone go straight from the
//! picture into the frame's host planes. The filtered planes come back as any frame's do,
//! so the frame crosses PCIe once, on its way out. A picture with an output on the GPU
//! ([`DevicePicture::output`], an array of the caller's) never crosses PCIe: every plane goes
//! device to device, the filtered ones from the lane's output buffer.

use cudarc::driver::sys::{self, CUmemorytype};
use cudarc::driver::DevicePtr;

use super::engine_error::CudaResultExt;
use super::lanes::{Lane, Layout};
use crate::engine::EngineError;
use crate::frame::{DevicePicture, Frame};

/// One end of a 2D copy.
#[derive(Clone, Copy)]
enum End {
    Device { address: u64, pitch: usize },
    Host { address: *mut u8, pitch: usize },
}

// A method of `Lane` kept with the device-to-device copies it enqueues: `Lane::upload` calls
// it for frames whose picture is on the GPU.
impl Lane {
    /// Enqueues the copies that bring `picture` into this lane for `frame` (see the module
    /// docs). The caller keeps `frame` and `picture` alive and untouched until the lane is done.
    pub(super) fn copy_in_from_device(
        &mut self,
        layout: &Layout,
        frame: &mut Frame,
        picture: &DevicePicture,
    ) -> Result<(), EngineError> {
        let lane = self;
        if picture.planes.len() != frame.planes.len() {
            return Err(EngineError::Internal {
                what: format!(
                    "a picture on the GPU with {} planes for a {} frame",
                    picture.planes.len(),
                    frame.format
                ),
            });
        }
        let what = |action: &str| format!("lane {}, frame {}: {action}", lane.index, frame.index);
        // The decoder copied the picture into its surface on the context's legacy default
        // stream, which the lane's (non-blocking) stream does not wait for by itself. An event
        // recorded there now covers every copy queued before the frame was handed over.
        let context = lane.stream.context().clone();
        let ready = context
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .context(|| what("creating the picture's ready event"))?;
        ready
            .record(&context.default_stream())
            .context(|| what("recording the picture's ready event"))?;
        lane.stream
            .wait(&ready)
            .context(|| what("waiting for the decoder's copy"))?;
        let stream = lane.stream.cu_stream();
        let (device_in, _record) = lane.device_in.device_ptr(&lane.stream);
        for slot in &layout.slots {
            let plane = picture.planes[slot.plane];
            let from = End::Device {
                address: plane.address,
                pitch: plane.pitch,
            };
            let to = End::Device {
                address: device_in + slot.offset as u64,
                pitch: slot.pitch,
            };
            // SAFETY: the source plane lies in the picture's surface (held by the frame), the
            // destination inside `device_in` (the layout sized it); both are `slot.height` rows
            // of at least `slot.row_bytes()` bytes at their pitches.
            unsafe { copy_2d(from, to, slot.row_bytes(), slot.height, stream) }
                .context(|| what(&format!("copying plane {} on the GPU", slot.plane)))?;
        }
        for (index, plane) in frame.planes.iter_mut().enumerate() {
            if layout.slots.iter().any(|slot| slot.plane == index) {
                continue;
            }
            let from = picture.planes[index];
            if let Some(output) = &picture.output {
                let to = output.get(index).ok_or_else(|| EngineError::Internal {
                    what: format!("a picture with {} output planes", output.len()),
                })?;
                let (from, to) = (
                    End::Device {
                        address: from.address,
                        pitch: from.pitch,
                    },
                    End::Device {
                        address: to.address,
                        pitch: to.pitch,
                    },
                );
                // SAFETY: both planes lie in memory the picture's owner keeps allocated until
                // the frame comes back, `plane.height` rows of at least `row_bytes` bytes.
                unsafe { copy_2d(from, to, plane.row_bytes(), plane.height, stream) }
                    .context(|| what(&format!("copying plane {index} on the GPU")))?;
                continue;
            }
            let (row_bytes, height, pitch) = (plane.row_bytes(), plane.height, plane.stride);
            let to = End::Host {
                address: plane.data.as_mut_ptr(),
                pitch,
            };
            let from = End::Device {
                address: from.address,
                pitch: from.pitch,
            };
            // SAFETY: the host plane holds `height` rows of `pitch >= row_bytes` bytes and is
            // not read or freed until the lane is done (the ticket holds the frame); the source
            // lies in the picture's surface.
            unsafe { copy_2d(from, to, row_bytes, height, stream) }
                .context(|| what(&format!("copying plane {index} from the GPU")))?;
        }
        Ok(())
    }
}

impl Lane {
    /// Enqueues the copies of the filtered planes from the lane's output buffer into the
    /// picture's output planes on the GPU (see [`DevicePicture::output`]). The caller keeps
    /// the picture alive until the lane is done.
    pub(super) fn copy_out_to_device(
        &mut self,
        layout: &Layout,
        frame: &Frame,
        output: &[crate::frame::DevicePlane],
    ) -> Result<(), EngineError> {
        let what = |action: &str| format!("lane {}, frame {}: {action}", self.index, frame.index);
        if output.len() != frame.planes.len() {
            return Err(EngineError::Internal {
                what: format!(
                    "a picture with {} output planes for a {} frame",
                    output.len(),
                    frame.format
                ),
            });
        }
        let stream = self.stream.cu_stream();
        let (device_out, _record) = self.device_out.device_ptr(&self.stream);
        for slot in &layout.slots {
            let to = output[slot.plane];
            let from = End::Device {
                address: device_out + slot.offset as u64,
                pitch: slot.pitch,
            };
            let to = End::Device {
                address: to.address,
                pitch: to.pitch,
            };
            // SAFETY: the source lies inside `device_out` (the layout sized it), the
            // destination in memory the picture's owner keeps allocated until the frame comes
            // back; both hold `slot.height` rows of at least `slot.row_bytes()` bytes.
            unsafe { copy_2d(from, to, slot.row_bytes(), slot.height, stream) }
                .context(|| what(&format!("copying plane {} into the output on the GPU", slot.plane)))?;
        }
        Ok(())
    }
}

/// Enqueues a 2D copy of `rows` rows of `row_bytes` bytes on `stream`.
///
/// # Safety
/// Both ends must be valid for `rows` rows of `row_bytes` bytes at their pitches until the
/// copy has run, and a host end must not be touched by anything else meanwhile.
unsafe fn copy_2d(
    from: End,
    to: End,
    row_bytes: usize,
    rows: usize,
    stream: sys::CUstream,
) -> Result<(), cudarc::driver::DriverError> {
    let mut copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: 0,
        srcArray: std::ptr::null_mut(),
        srcPitch: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: 0,
        dstArray: std::ptr::null_mut(),
        dstPitch: 0,
        WidthInBytes: row_bytes,
        Height: rows,
    };
    match from {
        End::Device { address, pitch } => (copy.srcDevice, copy.srcPitch) = (address, pitch),
        End::Host { address, pitch } => {
            (copy.srcMemoryType, copy.srcHost, copy.srcPitch) =
                (CUmemorytype::CU_MEMORYTYPE_HOST, address.cast(), pitch)
        }
    }
    match to {
        End::Device { address, pitch } => (copy.dstDevice, copy.dstPitch) = (address, pitch),
        End::Host { address, pitch } => {
            (copy.dstMemoryType, copy.dstHost, copy.dstPitch) =
                (CUmemorytype::CU_MEMORYTYPE_HOST, address.cast(), pitch)
        }
    }
    // SAFETY: the caller's contract covers both ends; `copy` outlives the call (the driver
    // reads the descriptor before returning).
    unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream) }.result()
}

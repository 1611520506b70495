//! One picture NVDEC left on the GPU ([`DevicePicture`]) copied back to the host, whole, for
//! a watcher that asked for it (a preview of a pipeline's input): the frame's own host
//! planes are never written for such a picture, so its pixels exist only on the GPU.

use cudarc::driver::sys::{self, CUmemorytype};

use super::device;
use super::engine_error::CudaResultExt;
use crate::engine::EngineError;
use crate::frame::DevicePicture;

/// Copies `rows` rows of `row_bytes` bytes of each plane of `picture` (`shapes[i]` for
/// plane `i`) into packed host rows, and waits for the copies. Runs on the caller's thread
/// with the picture's device context bound; the copy is ordered after the decoder's (both
/// on the context's legacy default stream). The caller keeps `picture` alive meanwhile.
pub fn copy_picture_to_host(picture: &DevicePicture, shapes: &[(usize, usize)]) -> Result<Vec<Vec<u8>>, EngineError> {
    if shapes.len() != picture.planes.len() {
        return Err(EngineError::Internal {
            what: format!(
                "a picture on the GPU with {} planes copied as {}",
                picture.planes.len(),
                shapes.len()
            ),
        });
    }
    let context = device::open(picture.ordinal)?;
    context
        .bind_to_thread()
        .context(|| format!("binding cuda:{} to copy a picture back", picture.ordinal))?;
    let mut planes = Vec::with_capacity(shapes.len());
    for (index, (plane, &(row_bytes, rows))) in picture.planes.iter().zip(shapes).enumerate() {
        if plane.pitch < row_bytes {
            return Err(EngineError::Internal {
                what: format!(
                    "plane {index} on the GPU: pitch {} under {row_bytes} bytes a row",
                    plane.pitch
                ),
            });
        }
        let mut data = vec![0u8; row_bytes * rows];
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: plane.address,
            srcArray: std::ptr::null_mut(),
            srcPitch: plane.pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: CUmemorytype::CU_MEMORYTYPE_HOST,
            dstHost: data.as_mut_ptr().cast(),
            dstDevice: 0,
            dstArray: std::ptr::null_mut(),
            dstPitch: row_bytes,
            WidthInBytes: row_bytes,
            Height: rows,
        };
        // SAFETY: the source plane lies in the picture's surface, which `picture` keeps
        // allocated and unchanged, `rows` rows at its pitch of at least `row_bytes` bytes;
        // `data` holds `rows * row_bytes` bytes and is not touched until the synchronous
        // copy has returned.
        unsafe { sys::cuMemcpy2D_v2(&copy) }
            .result()
            .context(|| format!("copying plane {index} of a picture back from cuda:{}", picture.ordinal))?;
        planes.push(data);
    }
    Ok(planes)
}

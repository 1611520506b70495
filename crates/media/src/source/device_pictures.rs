//! NVDEC pictures that stay on the GPU. When the engine is CUDA, the cuvid decoder is given
//! an FFmpeg CUDA device on the engine's own context ([`CudaDecoding`]), so it outputs CUDA
//! frames instead of copying each picture to host memory. A decoded picture then becomes a
//! frame that carries its device planes ([`DevicePicture`]) and unwritten host planes: the
//! engine copies the picture into its lane on the GPU and brings back only the filtered
//! result, so each frame crosses PCIe once instead of three times (decoder to host, host to
//! engine, engine to host).
//!
//! One context per device also means NVDEC pipelines no longer each create a CUDA context
//! of their own (what cuvid does without a device), which costs GPU memory and start-up time.
//!
//! Pictures the engine cannot take as they are (another surface format, a size change the
//! pipeline scales away) are copied to host memory and converted as before.

use ffmpeg::ffi;
use ffmpeg::format::Pixel;
use ffmpeg_next as ffmpeg;
use std::ffi::c_void;
use std::sync::Arc;

use crate::ffmpeg::ffmpeg_format;
use convstream_core::GpuContext;
use convstream_core::{DevicePicture, DevicePlane, Frame, PixelFormat, PixelLayout};

/// An FFmpeg CUDA device on one GPU's primary context, for cuvid decoders.
pub struct CudaDecoding {
    ordinal: usize,
    device: *mut ffi::AVBufferRef,
}

// SAFETY: the device reference is only read (to make new references to it, which FFmpeg
// counts atomically) and unreferenced once, on drop.
unsafe impl Send for CudaDecoding {}
// SAFETY: see the `Send` impl.
unsafe impl Sync for CudaDecoding {}

impl Drop for CudaDecoding {
    fn drop(&mut self) {
        // SAFETY: `self.device` is the reference `new` made, owned by this value.
        unsafe { ffi::av_buffer_unref(&mut self.device) };
    }
}

/// `AVCUDADeviceContext` from FFmpeg 5.1's `hwcontext_cuda.h` (not in the bindings, which
/// are made without the CUDA headers).
#[repr(C)]
struct CudaDeviceContext {
    cuda_ctx: *mut c_void,
    stream: *mut c_void,
    internal: *mut c_void,
}

/// `AVHWDeviceContext.free`: drops the context keeper `CudaDecoding::new` leaked.
unsafe extern "C" fn release_context(device: *mut ffi::AVHWDeviceContext) {
    // SAFETY: `user_opaque` is the boxed keeper `new` leaked; FFmpeg calls this once.
    unsafe {
        drop(Box::from_raw(
            (*device).user_opaque.cast::<Arc<dyn std::any::Any + Send + Sync>>(),
        ))
    };
}

/// A decoded CUDA frame, kept until the picture's last user is done.
struct FrameRef(*mut ffi::AVFrame);

// SAFETY: the frame is never read or written through this handle; it is freed once, on
// drop, which FFmpeg allows from any thread (its buffers are counted atomically).
unsafe impl Send for FrameRef {}
// SAFETY: see the `Send` impl.
unsafe impl Sync for FrameRef {}

impl Drop for FrameRef {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from av_frame_clone and is owned by this value.
        unsafe { ffi::av_frame_free(&mut self.0) };
    }
}

/// A decoded picture as FFmpeg's filters before the engine take it, in host memory: a CUDA
/// frame downloaded once (in its surface format, which the filters were set up for), any
/// other `None` (it is there already). The filters' output is then an ordinary host picture,
/// which the engine takes as a software decoder's.
pub(super) fn for_host_filters(
    device: Option<&CudaDecoding>,
    decoded: &ffmpeg::frame::Video,
) -> Result<Option<ffmpeg::frame::Video>, String> {
    if decoded.format() != Pixel::CUDA {
        return Ok(None);
    }
    let device = device.ok_or("a CUDA picture came from a decoder without a CUDA device")?;
    device
        .download(decoded)
        .map(Some)
        .map_err(|e| format!("cannot copy the decoded picture from the GPU for FFmpeg's filters: {e}"))
}

/// The pixel format FFmpeg's filters before the engine are set up for: the decoder's, or,
/// for NVDEC (whose decoder may name only `cuda`, its pictures' place), the surface format
/// the source gives (NV12, P010, P016), in which its pictures come to host memory.
pub(super) fn host_filters_format(hardware: bool, decoder: Pixel, source: PixelFormat) -> Pixel {
    match hardware || decoder == Pixel::CUDA || decoder == Pixel::None {
        true => ffmpeg_format(source),
        false => decoder,
    }
}

/// What became of a decoded picture.
pub(super) enum Picture {
    /// Not a CUDA frame: the caller converts it as usual.
    Host,
    /// A frame whose picture stays on the GPU.
    OnDevice(Frame),
    /// Copied to host memory, for the caller to convert.
    Downloaded(ffmpeg::frame::Video),
}

impl CudaDecoding {
    /// The GPU's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// An FFmpeg CUDA device on `context` (the engine's), for decoders.
    pub fn new(context: GpuContext) -> Result<Arc<CudaDecoding>, String> {
        let ordinal = context.ordinal;
        let fail = |what: &str, code: i32| {
            format!(
                "cannot share GPU {ordinal}'s context with NVDEC: {what}: {}",
                ffmpeg::Error::from(code)
            )
        };
        // SAFETY: plain FFmpeg calls. The device's CUDA part is filled in as
        // hwcontext_cuda.h says (a context of the caller's, the legacy default stream)
        // before av_hwdevice_ctx_init; FFmpeg then neither creates nor destroys a context.
        // The keeper, leaked into `user_opaque`, is dropped by `release_context` when FFmpeg
        // frees the device, after everything made from it: the context outlives them all.
        unsafe {
            let mut device = ffi::av_hwdevice_ctx_alloc(ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_CUDA);
            if device.is_null() {
                return Err(fail("allocating the device", ffi::AVERROR(libc::ENOMEM)));
            }
            let hw = (*device).data as *mut ffi::AVHWDeviceContext;
            let cuda = (*hw).hwctx as *mut CudaDeviceContext;
            (*cuda).cuda_ctx = context.handle as *mut c_void;
            (*cuda).stream = std::ptr::null_mut();
            (*hw).user_opaque = Box::into_raw(Box::new(context.keeper)).cast();
            (*hw).free = Some(release_context);
            let result = ffi::av_hwdevice_ctx_init(device);
            if result < 0 {
                ffi::av_buffer_unref(&mut device);
                return Err(fail("initialising the device", result));
            }
            Ok(Arc::new(CudaDecoding { ordinal, device }))
        }
    }

    /// Makes a decoder context (not open yet) output CUDA frames on this device.
    ///
    /// # Safety
    /// `context` must be a valid, not yet opened AVCodecContext that nothing else uses now.
    pub(super) unsafe fn install(&self, context: *mut ffi::AVCodecContext) {
        // SAFETY: the caller's contract; the context owns the new reference.
        unsafe { (*context).hw_device_ctx = ffi::av_buffer_ref(self.device) };
    }

    /// The decoded picture as a frame that keeps it on the GPU, when the engine takes it as
    /// it is (`target`: the pipeline's format and size); else copied to host memory.
    pub(super) fn picture(
        &self,
        decoded: &ffmpeg::frame::Video,
        target: (PixelFormat, usize, usize),
    ) -> Result<Picture, ffmpeg::Error> {
        if decoded.format() != Pixel::CUDA {
            return Ok(Picture::Host);
        }
        // SAFETY: `decoded` is a valid CUDA frame: its hw_frames_ctx holds an AVHWFramesContext.
        let (raw, surface) = unsafe {
            let raw = &*decoded.as_ptr();
            let frames = (*raw.hw_frames_ctx).data as *const ffi::AVHWFramesContext;
            (raw, (*frames).sw_format)
        };
        let (format, width, height) = target;
        let fits = surface == ffi::AVPixelFormat::from(ffmpeg_format(format))
            && format.layout() == PixelLayout::SemiPlanar420
            && decoded.width() as usize == width
            && decoded.height() as usize == height;
        if !fits {
            return self.download(decoded).map(Picture::Downloaded);
        }
        let planes = (0..2)
            .map(|i| DevicePlane {
                address: raw.data[i] as u64,
                pitch: raw.linesize[i] as usize,
            })
            .collect();
        // SAFETY: `decoded` is valid; the clone references the same surface.
        let keeper = FrameRef(unsafe { ffi::av_frame_clone(decoded.as_ptr()) });
        if keeper.0.is_null() {
            return Err(ffmpeg::Error::Other {
                errno: ffmpeg::util::error::ENOMEM,
            });
        }
        // Host planes for the engine to fill, with no memory until then: a frame waiting in
        // a queue (a pipeline behind its input, catching up) holds only the GPU surface.
        let mut frame = Frame::pending(format, width, height);
        frame.device = Some(Arc::new(DevicePicture::new(self.ordinal, planes, Box::new(keeper))));
        Ok(Picture::OnDevice(frame))
    }

    /// The picture copied into host memory (its surface format, e.g. NV12 or P010).
    pub(super) fn download(&self, decoded: &ffmpeg::frame::Video) -> Result<ffmpeg::frame::Video, ffmpeg::Error> {
        let mut host = ffmpeg::frame::Video::empty();
        // SAFETY: both frames are valid; FFmpeg allocates the host frame's buffers.
        let result = unsafe { ffi::av_hwframe_transfer_data(host.as_mut_ptr(), decoded.as_ptr(), 0) };
        if result < 0 {
            return Err(ffmpeg::Error::from(result));
        }
        // SAFETY: both frames are valid; copies timestamps and colour properties.
        let result = unsafe { ffi::av_frame_copy_props(host.as_mut_ptr(), decoded.as_ptr()) };
        if result < 0 {
            return Err(ffmpeg::Error::from(result));
        }
        Ok(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvdec_pictures_meet_host_filters_in_their_surface_format() {
        // NVDEC's decoder names only where its pictures are; they come to host memory in the
        // source's surface format, which the filters before the engine are set up for.
        for decoder in [Pixel::CUDA, Pixel::None, Pixel::NV12] {
            assert_eq!(host_filters_format(true, decoder, PixelFormat::NV12), Pixel::NV12);
        }
        assert_eq!(host_filters_format(true, Pixel::CUDA, PixelFormat::P010), Pixel::P010LE);
        // A software decoder's pictures are taken as they are.
        assert_eq!(
            host_filters_format(false, Pixel::YUV420P, PixelFormat::NV12),
            Pixel::YUV420P
        );
    }

    #[test]
    fn a_host_picture_is_not_copied_again() {
        let picture = ffmpeg::frame::Video::new(Pixel::NV12, 64, 48);
        assert!(for_host_filters(None, &picture).unwrap().is_none());
        let mut cuda = ffmpeg::frame::Video::empty();
        // SAFETY: only the format field of a fresh frame is set.
        unsafe { (*cuda.as_mut_ptr()).format = ffi::AVPixelFormat::AV_PIX_FMT_CUDA as i32 };
        let error = for_host_filters(None, &cuda).err().expect("refused");
        assert!(error.contains("without a CUDA device"), "{error}");
    }
}

//! `convstream.Filter`'s calls on GPU arrays (PyTorch, CuPy, DLPack): planes filtered where
//! they are, into an output the caller's library allocated, on the caller's CUDA stream, with
//! no host wait unless asked (see `engine::cuda::stream_call`). One stream filter per GPU,
//! made on the first call there and kept with its plans; the Python side reads the arrays'
//! addresses, strides and stream and keeps the arrays alive.

use std::collections::HashMap;
use std::sync::Mutex;

use convstream_core::BorderMode;
use convstream_core::Mask;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::filter::NativeFilter;

#[cfg(feature = "cuda")]
use convstream_core::{DeviceBatch, DeviceCallError, SampleValues, StreamFilter};

#[pyclass(module = "convstream._convstream", name = "NativeStreamFilter")]
pub struct NativeStreamFilter {
    #[cfg_attr(not(feature = "cuda"), expect(dead_code, reason = "read by the CUDA path only"))]
    mask: Mask,
    #[cfg_attr(not(feature = "cuda"), expect(dead_code, reason = "read by the CUDA path only"))]
    border: BorderMode,
    /// The stream filter of each GPU called on, by ordinal.
    by_device: Mutex<HashMap<usize, PerDevice>>,
}

/// What a GPU called on holds: its stream filter (nothing in a build without CUDA).
#[cfg(feature = "cuda")]
type PerDevice = StreamFilter;
#[cfg(not(feature = "cuda"))]
type PerDevice = ();

/// A refused call as `ValueError` (the caller's to fix), a failed one as the engine's error.
#[cfg(feature = "cuda")]
fn device_call_error(error: DeviceCallError) -> PyErr {
    match error {
        DeviceCallError::Refused(what) => pyo3::exceptions::PyValueError::new_err(what),
        DeviceCallError::Engine(error) => crate::filter::engine_error(error),
    }
}

/// Where a batch is and how it is laid out, as the Python side passes it: addresses, then
/// `(height, width)`, then the source's and output's `(row, plane)` strides in bytes.
type Placement = ((usize, usize), (usize, usize), (usize, usize), (usize, usize));

#[pymethods]
impl NativeStreamFilter {
    #[new]
    fn new(filter: PyRef<'_, NativeFilter>) -> NativeStreamFilter {
        NativeStreamFilter {
            mask: filter.filter.mask.clone(),
            border: filter.filter.border,
            by_device: Mutex::new(HashMap::new()),
        }
    }

    /// Queues the filtering of `planes` planes on GPU `ordinal` on `stream` (a `CUstream`
    /// handle; 0 is the legacy default stream): `placement` is `((source, output), (height,
    /// width), (source row pitch, source plane stride), (output row pitch, output plane
    /// stride))`, in bytes; `values` is `uint` (samples of `bit_depth` bits), `float32` or
    /// `float16`; `channels`: samples a pixel, side by side (an image laid out channels
    /// last; `width` counts pixels); `pixel`: bytes between source pixels (0: side by side;
    /// more for a strided view). Returns once the work is queued.
    #[expect(clippy::too_many_arguments, reason = "one parameter per part of the call")]
    #[pyo3(signature = (ordinal, placement, planes, values, bit_depth, stream, channels=1, pixel=0))]
    fn launch(
        &self,
        py: Python<'_>,
        ordinal: usize,
        placement: Placement,
        planes: usize,
        values: &str,
        bit_depth: u8,
        stream: u64,
        channels: usize,
        pixel: usize,
    ) -> PyResult<()> {
        self.launch_on(
            py,
            ordinal,
            placement,
            (planes, channels, pixel),
            values,
            bit_depth,
            stream,
        )
    }

    /// Waits (the GIL released) until `stream` on GPU `ordinal` has run everything queued on
    /// it; a GPU this filter never ran on has nothing of it to wait for.
    fn synchronize(&self, py: Python<'_>, ordinal: usize, stream: u64) -> PyResult<()> {
        #[cfg(feature = "cuda")]
        return py.detach(|| {
            let held = self.lock()?;
            match held.get(&ordinal) {
                Some(filter) => filter.synchronize(stream).map_err(device_call_error),
                None => Ok(()),
            }
        });
        #[cfg(not(feature = "cuda"))]
        return {
            let _ = (py, ordinal, stream);
            Ok(())
        };
    }

    /// The GPU the calls on `ordinal` run on (`cuda:0 (NVIDIA H100 ...)`); `None` before one.
    fn engine_name(&self, ordinal: usize) -> PyResult<Option<String>> {
        let held = self.lock()?;
        #[cfg(feature = "cuda")]
        return Ok(held.get(&ordinal).map(StreamFilter::name));
        #[cfg(not(feature = "cuda"))]
        return Ok(held.get(&ordinal).map(|()| String::new()));
    }
}

impl NativeStreamFilter {
    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, HashMap<usize, PerDevice>>> {
        self.by_device
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a previous call of this filter panicked"))
    }

    #[cfg(feature = "cuda")]
    #[expect(clippy::too_many_arguments, reason = "one parameter per part of the call")]
    fn launch_on(
        &self,
        py: Python<'_>,
        ordinal: usize,
        placement: Placement,
        (planes, channels, pixel): (usize, usize, usize),
        values: &str,
        bit_depth: u8,
        stream: u64,
    ) -> PyResult<()> {
        let ((src, dst), (height, width), (src_pitch, src_plane), (dst_pitch, dst_plane)) = placement;
        let (values, depth) = match values {
            "uint" => {
                let format = convstream_core::PixelFormat::new(convstream_core::PixelLayout::Gray, bit_depth)
                    .ok_or_else(|| {
                        pyo3::exceptions::PyTypeError::new_err(format!("bit_depth: {bit_depth} is not a depth"))
                    })?;
                (SampleValues::Integer, format.sample_depth())
            }
            "float32" => (SampleValues::Float32, convstream_core::SampleDepth::EIGHT),
            "float16" => (SampleValues::Float16, convstream_core::SampleDepth::EIGHT),
            other => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "values: {other:?} is not uint, float32 or float16"
                )))
            }
        };
        // 0: the pixels' samples follow each other.
        let sample_bytes = match values {
            SampleValues::Integer => depth.bytes(),
            SampleValues::Float32 => 4,
            SampleValues::Float16 => 2,
        };
        let pixel = if pixel == 0 { channels * sample_bytes } else { pixel };
        let batch = DeviceBatch {
            src: src as u64,
            dst: dst as u64,
            width,
            channels,
            height,
            src_pitch,
            src_pixel: pixel,
            dst_pitch,
            planes,
            src_plane,
            dst_plane,
            values,
            depth,
        };
        py.detach(|| {
            let mut held = self.lock()?;
            let filter = match held.entry(ordinal) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => entry.insert(
                    StreamFilter::new(self.mask.clone(), self.border, ordinal).map_err(crate::filter::engine_error)?,
                ),
            };
            filter.launch(&batch, stream, false).map_err(device_call_error)
        })
    }

    #[cfg(not(feature = "cuda"))]
    #[expect(clippy::too_many_arguments, reason = "one parameter per part of the call")]
    fn launch_on(
        &self,
        _: Python<'_>,
        _: usize,
        _: Placement,
        _: (usize, usize, usize),
        _: &str,
        _: u8,
        _: u64,
    ) -> PyResult<()> {
        Err(crate::filter::engine_error(
            convstream_core::EngineError::NotCompiledWithCuda,
        ))
    }
}

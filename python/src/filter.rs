//! `convstream.Filter`'s native half: a filter (mask, border) and the engine that applies it to
//! planes the Python side hands over by address: host memory (NumPy) or GPU memory (CuPy,
//! PyTorch), each plane a 2D array of 8-bit samples or of 16-bit words holding `bit_depth`
//! bits. The Python side checks the arrays (dtype, contiguity, device) and keeps them alive
//! for the call; here the GIL is released while the planes are filtered.

use std::sync::Mutex;

use convstream_core::convolve_plane_into;
use convstream_core::{CpuEngine, DeviceChoice, EngineError, FrameShape};
#[cfg(feature = "cuda")]
use convstream_core::{Engine, EngineOptions};
use convstream_core::{FilterSpec, PlaneSelection};
use convstream_core::{Frame, Plane, PlaneData};
use convstream_core::{MaskMode, MaskParams};
use convstream_core::{PixelFormat, PixelLayout, PlaneShape};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::float_planes::{filter_float_plane, FloatPlaneAt};
use crate::settings::Request;
use crate::GpuUnavailableError;

/// One plane's place in memory: `rows` rows `row_pitch` bytes apart, samples `sample_pitch`
/// bytes apart within a row (the channel count times the sample size, for a channel of an
/// interleaved H x W x C array).
#[derive(Debug, Clone, Copy)]
struct PlaneAt {
    address: usize,
    row_pitch: usize,
    sample_pitch: usize,
}

/// The engine a filter runs on, made for one plane geometry at a time.
enum Held {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda {
        engine: Box<convstream_core::CudaEngine>,
        ordinal: usize,
        shape: (usize, usize, u8),
    },
}

#[pyclass(module = "convstream._convstream", name = "NativeFilter")]
pub struct NativeFilter {
    pub(crate) filter: FilterSpec,
    device: DeviceChoice,
    /// The CUDA engine's lanes (streams, frames per stream); a build without CUDA support
    /// has no use for them.
    #[cfg_attr(not(feature = "cuda"), expect(dead_code, reason = "read by the CUDA engine only"))]
    streams: usize,
    #[cfg_attr(not(feature = "cuda"), expect(dead_code, reason = "read by the CUDA engine only"))]
    frames_per_stream: usize,
    description: String,
    engine: Mutex<Option<Held>>,
}

/// The gray format of `bit_depth`, refused when the array's samples are `itemsize` bytes
/// and that depth takes the other size.
fn gray_with_samples(bit_depth: u8, itemsize: usize) -> PyResult<PixelFormat> {
    let format = gray(bit_depth)?;
    if itemsize != format.sample_depth().bytes() {
        let dtype = if format.sample_depth().bytes() == 1 {
            "uint8"
        } else {
            "uint16"
        };
        return Err(PyValueError::new_err(format!(
            "bit_depth={bit_depth} takes {dtype} samples"
        )));
    }
    Ok(format)
}

/// The geometry of one call's planes, from the Python arguments that give it: `height x
/// width` gray samples of `bit_depth` bits, `itemsize` bytes each.
fn gray_planes(height: usize, width: usize, itemsize: usize, bit_depth: u8) -> PyResult<FrameShape> {
    Ok(FrameShape {
        format: gray_with_samples(bit_depth, itemsize)?,
        width,
        height,
    })
}

/// A frame of one gray plane at `bits` bits.
fn gray(bits: u8) -> Result<PixelFormat, PyErr> {
    PixelFormat::new(PixelLayout::Gray, bits).ok_or_else(|| {
        PyValueError::new_err(format!(
            "bit_depth: {bits} is not a depth; gray samples have {} bits",
            PixelLayout::Gray
                .depths()
                .iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

pub(crate) fn engine_error(error: EngineError) -> PyErr {
    match error {
        EngineError::NoGpu { .. } | EngineError::NotCompiledWithCuda => GpuUnavailableError::new_err(error.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// A mask given as an array (`Filter(np.array(...), mode=, divisor=, bias=)`), passed as the
/// tuple `(rows, mode, divisor, bias)`: its rows as floats and the SPEC keys that go with it.
#[derive(FromPyObject)]
pub struct ArrayMask(Vec<Vec<f64>>, Option<String>, Option<f64>, Option<f64>);

impl ArrayMask {
    /// The mask as a `[masks.NAME]` table would give it.
    fn into_params(self) -> PyResult<MaskParams> {
        let ArrayMask(rows, mode, divisor, bias) = self;
        let mode = match mode.as_deref() {
            None => None,
            Some("convolve") => Some(MaskMode::Convolve),
            Some("correlate") => Some(MaskMode::Correlate),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "mode: invalid value {other:?} [possible values: convolve, correlate]"
                )))
            }
        };
        Ok(MaskParams {
            matrix: Some(rows),
            mode,
            divisor,
            bias,
            ..MaskParams::default()
        })
    }
}

#[pymethods]
impl NativeFilter {
    #[new]
    #[pyo3(signature = (mask, border=None, plane_masks=Vec::new(), device=None, streams=None, frames_per_stream=None, config=None, matrix=None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "one Rust parameter per Python keyword argument"
    )]
    fn new(
        mask: String,
        border: Option<String>,
        plane_masks: Vec<(String, String)>,
        device: Option<String>,
        streams: Option<usize>,
        frames_per_stream: Option<usize>,
        config: Option<String>,
        matrix: Option<ArrayMask>,
    ) -> PyResult<NativeFilter> {
        let request = Request {
            mask,
            border,
            planes: Some("all".into()),
            plane_masks,
            device,
            config,
            overrides: convstream_config::Overrides {
                streams,
                frames_per_stream,
                ..Default::default()
            },
            array_mask: matrix.map(ArrayMask::into_params).transpose()?,
            ..Request::default()
        };
        let settings = request.resolve_filter()?;
        let description = settings.filter.description();
        Ok(NativeFilter {
            filter: FilterSpec {
                planes: PlaneSelection::All,
                ..settings.filter
            },
            device: settings.device,
            streams: settings.streams,
            frames_per_stream: settings.frames_per_stream,
            description,
            engine: Mutex::new(None),
        })
    }

    /// The mask in words (`gaussian:size=13,sigma=3`).
    #[getter]
    fn description(&self) -> String {
        self.description.clone()
    }

    /// The border mode's name (`reflect`).
    #[getter]
    fn border(&self) -> String {
        self.filter.border.name().to_string()
    }

    /// The mask's width and height.
    #[getter]
    fn mask_size(&self) -> (usize, usize) {
        (self.filter.mask.width(), self.filter.mask.height())
    }

    /// `cpu`, `cuda`, `cuda:N` or `auto`, as asked.
    #[getter]
    fn device(&self) -> String {
        match self.device {
            DeviceChoice::Auto => "auto".into(),
            DeviceChoice::Cpu => "cpu".into(),
            DeviceChoice::AnyCuda => "cuda".into(),
            DeviceChoice::Cuda(n) => format!("cuda:{n}"),
        }
    }

    /// Where the filter ran last (`cpu`, `cuda:0 (NVIDIA H100 ...)`); `None` before its first call.
    fn engine_name(&self) -> PyResult<Option<String>> {
        let held = self.lock()?;
        Ok(held.as_ref().map(|held| match held {
            Held::Cpu => "cpu".to_string(),
            #[cfg(feature = "cuda")]
            Held::Cuda { engine, .. } => engine.name(),
        }))
    }

    /// Bytes the CUDA engine moved over PCIe so far, `(to_gpu, from_gpu, frames)`; `None` when
    /// no CUDA engine ran.
    fn pcie_bytes(&self) -> PyResult<Option<(u64, u64, u64)>> {
        let held = self.lock()?;
        Ok(match held.as_ref() {
            #[cfg(feature = "cuda")]
            Some(Held::Cuda { engine, .. }) => {
                let bytes = engine.pcie_bytes();
                Some((bytes.to_gpu, bytes.from_gpu, bytes.frames))
            }
            _ => None,
        })
    }

    /// Filters planes in host memory: `planes` lists `(source, destination)` addresses of
    /// `height x width` planes with the given row and sample pitches (bytes), `itemsize` 1 or
    /// 2. The caller keeps both buffers alive and untouched for the call.
    #[expect(clippy::too_many_arguments, reason = "one parameter per Python argument")]
    fn filter_host(
        &self,
        py: Python<'_>,
        planes: Vec<(usize, usize)>,
        height: usize,
        width: usize,
        itemsize: usize,
        bit_depth: u8,
        row_pitch: usize,
        sample_pitch: usize,
    ) -> PyResult<()> {
        let shape = gray_planes(height, width, itemsize, bit_depth)?;
        self.reserve_host_memory(height, width, itemsize)?;
        let at = |address| PlaneAt {
            address,
            row_pitch,
            sample_pitch,
        };
        let planes: Vec<(PlaneAt, PlaneAt)> = planes.into_iter().map(|(from, to)| (at(from), at(to))).collect();
        py.detach(|| self.run_host(&planes, shape))
    }

    /// Filters float32 planes in host memory with the GPU kernels' float arithmetic (see
    /// float_planes.rs): `planes` lists `(source, destination)` addresses of `height x width`
    /// planes with the given row and sample pitches (bytes). The caller keeps both buffers
    /// alive and untouched for the call.
    fn filter_host_float(
        &self,
        py: Python<'_>,
        planes: Vec<(usize, usize)>,
        height: usize,
        width: usize,
        row_pitch: usize,
        sample_pitch: usize,
    ) -> PyResult<()> {
        self.reserve_host_memory(height, width, std::mem::size_of::<f32>())?;
        let at = |address| FloatPlaneAt {
            address,
            row_pitch,
            sample_pitch,
        };
        py.detach(|| {
            for &(from, to) in &planes {
                // SAFETY: the Python side checked both arrays (float32, this shape and these
                // pitches, the output writable and apart from the source) and keeps them alive.
                unsafe { filter_float_plane(&self.filter.mask, self.filter.border, at(from), at(to), height, width) };
            }
        });
        Ok(())
    }
}

impl NativeFilter {
    /// Refuses with `MemoryError` a plane whose filtering cannot get the memory it takes: the
    /// copy in, the result, and the f32 rows of the CPU engine (the padded source and the
    /// sums, three times the samples as f32 at most), reserved (not touched) and let go here,
    /// because an allocation that fails inside the engine aborts the process.
    fn reserve_host_memory(&self, height: usize, width: usize, itemsize: usize) -> PyResult<()> {
        let padded_width = width.checked_add(self.filter.mask.width());
        let needed = padded_width
            .and_then(|w| w.checked_mul(height))
            .and_then(|samples| samples.checked_mul(2 * itemsize + 3 * std::mem::size_of::<f32>()));
        let refused = || {
            PyMemoryError::new_err(format!(
                "a {height} x {width} plane of {itemsize}-byte samples needs more memory than can be had"
            ))
        };
        let needed = needed.ok_or_else(refused)?;
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(needed).map_err(|_| refused())
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Option<Held>>> {
        self.engine
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a previous call of this filter panicked"))
    }

    /// The engine options for planes of this geometry.
    #[cfg(feature = "cuda")]
    fn options(&self, device: DeviceChoice, shape: FrameShape) -> EngineOptions {
        EngineOptions {
            shape: Some(shape),
            frames_per_stream: self.frames_per_stream,
            ..EngineOptions::new(device, self.streams, "python")
        }
    }

    /// The engine for host planes of this geometry, made (or remade) as needed: the CPU
    /// engine, or CUDA on the GPU asked for (`cuda`: device 0); `auto` falls back to the CPU
    /// when no GPU is usable, as `convstream run` does.
    fn host_engine(&self, held: &mut Option<Held>, shape: FrameShape) -> PyResult<()> {
        let ordinal = match self.device {
            DeviceChoice::Cpu => {
                *held = Some(Held::Cpu);
                return Ok(());
            }
            DeviceChoice::Cuda(n) => n,
            DeviceChoice::AnyCuda | DeviceChoice::Auto => 0,
        };
        match self.cuda_engine(held, ordinal, shape) {
            Err(EngineError::NoGpu { .. } | EngineError::NotCompiledWithCuda) if self.device == DeviceChoice::Auto => {
                *held = Some(Held::Cpu);
                Ok(())
            }
            other => other.map_err(engine_error),
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda_engine(&self, held: &mut Option<Held>, ordinal: usize, shape: FrameShape) -> Result<(), EngineError> {
        let made_for = (shape.width, shape.height, shape.format.bits());
        if let Some(Held::Cuda {
            ordinal: o, shape: s, ..
        }) = held
        {
            if *o == ordinal && *s == made_for {
                return Ok(());
            }
        }
        let options = self.options(DeviceChoice::Cuda(ordinal), shape);
        let engine = convstream_core::CudaEngine::new(self.filter.clone(), &options, ordinal)?;
        *held = Some(Held::Cuda {
            engine: Box::new(engine),
            ordinal,
            shape: made_for,
        });
        Ok(())
    }

    #[cfg(not(feature = "cuda"))]
    fn cuda_engine(&self, _: &mut Option<Held>, _: usize, _: FrameShape) -> Result<(), EngineError> {
        Err(EngineError::NotCompiledWithCuda)
    }

    fn run_host(&self, planes: &[(PlaneAt, PlaneAt)], shape: FrameShape) -> PyResult<()> {
        let FrameShape { format, width, height } = shape;
        let mut held = self.lock()?;
        self.host_engine(&mut held, shape)?;
        let plane_shape = format.plane_shapes(width, height)[0];
        if matches!(held.as_ref(), Some(Held::Cpu) | None)
            && planes
                .iter()
                .all(|(from, to)| packed(*from, plane_shape) && packed(*to, plane_shape))
        {
            for (from, to) in planes {
                // SAFETY: the Python side checked both arrays (this shape and these pitches,
                // samples packed in their rows, the output writable and apart from the
                // source) and keeps them alive and the source unchanged for the call.
                unsafe { self.filter_in_place(*from, *to, plane_shape, format) };
            }
            return Ok(());
        }
        let frames: Vec<Frame> = planes
            .iter()
            .enumerate()
            .map(|(index, (from, _))| {
                let mut frame = Frame::of_planes(format, width, height, vec![gather(*from, plane_shape)]);
                frame.index = index as u64;
                frame
            })
            .collect();
        let filtered: Vec<Frame> = match held.as_mut() {
            Some(Held::Cpu) | None => frames
                .iter()
                .map(|frame| CpuEngine::filter_frame(&self.filter, frame))
                .collect(),
            #[cfg(feature = "cuda")]
            Some(Held::Cuda { engine, .. }) => through(engine.as_mut(), frames)?,
        };
        for (frame, (_, to)) in filtered.iter().zip(planes) {
            scatter(&frame.planes[0], *to);
        }
        Ok(())
    }
}

/// Whether the plane at `at` is packed: samples side by side, rows one after the other.
fn packed(at: PlaneAt, shape: PlaneShape) -> bool {
    at.sample_pitch == shape.depth.bytes() && at.row_pitch == shape.row_bytes()
}

impl NativeFilter {
    /// Filters the plane at `from` into `to` on the CPU with neither copied: the source read
    /// where it is (lent to the engine read-only), the samples written straight into the
    /// destination's rows.
    ///
    /// # Safety
    ///
    /// Both places hold `shape.height` rows of `shape`'s samples, packed (see [`packed`]);
    /// `from` stays alive and unchanged and `to` is written by no one else during the
    /// call, and the two do not overlap.
    unsafe fn filter_in_place(&self, from: PlaneAt, to: PlaneAt, shape: PlaneShape, format: PixelFormat) {
        let len = |at: PlaneAt| shape.height * at.row_pitch;
        // SAFETY: the caller vouches for `len(from)` readable bytes that stay unchanged while
        // the plane (dropped at the end of this call) lives; nothing needs keeping alive here.
        let data = unsafe { PlaneData::lent(from.address as *const u8, len(from), false, Box::new(())) };
        let source = Plane::of_data(shape, from.row_pitch, data);
        // SAFETY: the caller vouches for `len(to)` writable bytes no one else touches.
        let target = unsafe { std::slice::from_raw_parts_mut(to.address as *mut u8, len(to)) };
        match self.filter.mask_for(format, 0) {
            Some(mask) if !mask.is_identity() => {
                convolve_plane_into(&source, mask, self.filter.border, target, to.row_pitch);
            }
            _ => {
                for y in 0..shape.height {
                    let start = y * to.row_pitch;
                    target[start..start + shape.row_bytes()].copy_from_slice(source.row(y));
                }
            }
        }
    }
}

/// Runs `frames` through `engine`, keeping it full, and returns them filtered, in order.
#[cfg(feature = "cuda")]
fn through(engine: &mut dyn Engine, frames: Vec<Frame>) -> PyResult<Vec<Frame>> {
    let mut filtered = Vec::with_capacity(frames.len());
    for frame in frames {
        while engine.in_flight() >= engine.capacity() {
            filtered.extend(engine.receive().map_err(engine_error)?);
        }
        engine.submit(frame).map_err(engine_error)?;
    }
    while let Some(frame) = engine.receive().map_err(engine_error)? {
        filtered.push(frame);
    }
    Ok(filtered)
}

/// A tightly packed plane of `shape` read from `at`.
fn gather(at: PlaneAt, shape: PlaneShape) -> Plane {
    let bytes = shape.depth.bytes();
    let mut plane = Plane::new(shape);
    for y in 0..shape.height {
        let row = plane.row_mut(y);
        let start = at.address + y * at.row_pitch;
        if at.sample_pitch == bytes {
            // SAFETY: the caller's buffer holds `height` rows of `width` samples at these
            // pitches (checked on the Python side) and outlives the call.
            let source = unsafe { std::slice::from_raw_parts(start as *const u8, row.len()) };
            row.copy_from_slice(source);
        } else {
            for (x, sample) in row.chunks_exact_mut(bytes).enumerate() {
                // SAFETY: as above; sample `x` of row `y` lies at this offset.
                let source = unsafe { std::slice::from_raw_parts((start + x * at.sample_pitch) as *const u8, bytes) };
                sample.copy_from_slice(source);
            }
        }
    }
    plane
}

/// Writes `plane`'s pixels to `at`.
fn scatter(plane: &Plane, at: PlaneAt) {
    let bytes = plane.depth.bytes();
    for y in 0..plane.height {
        let row = plane.row(y);
        let start = at.address + y * at.row_pitch;
        if at.sample_pitch == bytes {
            // SAFETY: the caller's destination holds `height` rows of `width` samples at these
            // pitches, is writable (checked on the Python side), and no one else touches it
            // during the call.
            let target = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, row.len()) };
            target.copy_from_slice(row);
        } else {
            for (x, sample) in row.chunks_exact(bytes).enumerate() {
                // SAFETY: as above; sample `x` of row `y` lies at this offset.
                let target = unsafe { std::slice::from_raw_parts_mut((start + x * at.sample_pitch) as *mut u8, bytes) };
                target.copy_from_slice(sample);
            }
        }
    }
}

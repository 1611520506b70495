//! `convstream.Filter`'s native half for host arrays: a filter (mask, border) and the engine
//! that applies it to NumPy arrays handed over themselves (`host_array.rs` checks them and
//! lays out their planes), each plane a 2D array of 8-bit samples, of 16-bit words holding
//! `bit_depth` bits, or of float32 values. The GIL is released while the planes are
//! filtered. On the CPU, memory beside the arrays is bounded (the engine works in bands and
//! column tiles) or taken fallibly: a call that cannot have it raises `MemoryError`. GPU
//! arrays take `device_call.rs`.
//!
//! One file at some length (about 560 lines): the filter's Python methods and the three ways
//! its planes reach an engine (read in place, gathered and scattered, through the GPU
//! engine) share the engine the filter holds and the checks made before any of them.

use std::sync::Mutex;

use convstream_core::{convolve_view_into, Pitches, PlaneView, ViewSamples};
use convstream_core::{DeviceChoice, EngineError, FrameShape};
#[cfg(feature = "cuda")]
use convstream_core::{Engine, EngineOptions, Frame, Plane, PlaneData, PlaneShape};
use convstream_core::{FilterSpec, PlaneSelection};
use convstream_core::{MaskMode, MaskParams};
use convstream_core::{PixelFormat, PixelLayout};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

#[cfg(feature = "cuda")]
use crate::host_array::try_zeroed;
use crate::host_array::{host_planes, HostPlanes, Samples, SourceAt, TargetAt};
use crate::settings::Request;
use crate::GpuUnavailableError;
use rayon::prelude::*;

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

/// A GPU asked for by name (`cuda`, `cuda:N`) must be on this host when the filter is made:
/// refused there rather than at the first call, with the driver's reason
/// (`GpuUnavailableError`) when there is no usable GPU, as a `ValueError` naming `device`
/// when the host has GPUs but not that one.
fn asked_gpu_is_there(device: DeviceChoice) -> PyResult<()> {
    let ordinal = match device {
        DeviceChoice::Cuda(n) => n,
        DeviceChoice::AnyCuda => 0,
        DeviceChoice::Cpu | DeviceChoice::Auto => return Ok(()),
    };
    #[cfg(feature = "cuda")]
    {
        let count = convstream_core::cuda_devices().map_err(engine_error)?;
        if ordinal >= count {
            // The host has GPUs, not this one: the argument's fault, a ValueError naming it.
            let reason = convstream_core::NoGpuReason::NoSuchDevice { ordinal, count };
            return Err(PyValueError::new_err(format!("device: {reason}")));
        }
        Ok(())
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(engine_error(EngineError::NotCompiledWithCuda))
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
        asked_gpu_is_there(settings.device)?;
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

    /// Filters `channels` of `source` into `out`, two NumPy arrays of one shape and sample
    /// type (`source` at any strides, `out` C-contiguous; see `host_array.rs`), laid out
    /// channels last or as planes: uint8 or uint16 samples of `bit_depth` bits (8 or 16 when
    /// not given), or float32 values, each filtered as the kernels' float variants do.
    #[pyo3(signature = (source, out, channels, bit_depth=None, channels_last=false))]
    fn filter_host(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        channels: Vec<usize>,
        bit_depth: Option<u8>,
        channels_last: bool,
    ) -> PyResult<()> {
        let planes = host_planes(source, out, &channels, channels_last)?;
        if planes.samples == Samples::F32 {
            if let Some(bits) = bit_depth {
                return Err(PyValueError::new_err(format!(
                    "bit_depth: float32 values take none, not {bits}"
                )));
            }
            // Float values take the CPU's band loops on every device: the same values the
            // GPU's float kernels give, without a trip over PCIe.
            // SAFETY: `host_planes` laid every place out inside its array, the output
            // writable and apart from the source; the caller's references keep both alive.
            return py.detach(|| unsafe { self.filter_on_cpu(&planes, ViewSamples::Float32) });
        }
        let bits = bit_depth.unwrap_or(8 * planes.samples.bytes() as u8);
        let shape = gray_planes(planes.height, planes.width, planes.samples.bytes(), bits)?;
        py.detach(|| self.run_host(&planes, shape))
    }
}

impl NativeFilter {
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
            // The caller waits for each call's result.
            low_latency: true,
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

    fn run_host(&self, planes: &HostPlanes, shape: FrameShape) -> PyResult<()> {
        let FrameShape { format, width, height } = shape;
        let mut held = self.lock()?;
        self.host_engine(&mut held, shape)?;
        #[cfg(feature = "cuda")]
        if let Some(Held::Cuda { engine, .. }) = held.as_mut() {
            let plane_shape = format.plane_shapes(width, height)[0];
            // SAFETY: `host_planes` laid every place out inside its array, the outputs
            // writable and apart from the sources; the caller's references keep them alive.
            return unsafe { through_gpu(engine.as_mut(), planes, plane_shape, format) };
        }
        let _ = (width, height);
        // SAFETY: as above.
        unsafe { self.filter_on_cpu(planes, ViewSamples::Integer(format.sample_depth())) }
    }

    /// Filters every place of `planes` on the CPU with nothing copied: each source read
    /// where it is, at its strides, the results written straight into the output's rows.
    ///
    /// # Safety
    ///
    /// `planes` lays every place out inside its array (the source's span is
    /// `planes.source`), the sources alive and unchanged and the output written by no one
    /// else for the call, the two apart.
    unsafe fn filter_on_cpu(&self, planes: &HostPlanes, samples: ViewSamples) -> PyResult<()> {
        let (low, len) = planes.source;
        // SAFETY: the caller vouches for the source's span.
        let source = unsafe { std::slice::from_raw_parts(low as *const u8, len) };
        // The bytes each place's results span in the output.
        let (height, width) = (planes.height, planes.width);
        let extent = |to: &TargetAt, channels: usize| {
            (height - 1) * to.row + (width - 1) * to.pixel + channels * samples.bytes()
        };
        let filter_one = |(from, to): &(SourceAt, TargetAt)| -> PyResult<()> {
            let pitches = Pitches {
                row: from.row,
                pixel: from.pixel,
                channel: from.channel,
            };
            let view = PlaneView::new(
                source,
                from.address - low,
                (width, height, from.channels),
                pitches,
                samples,
            )
            .map_err(|error| PyValueError::new_err(format!("source: {error}")))?;
            // SAFETY: the caller vouches for the output's span, which holds this place's
            // results; no other place being written shares a byte of them (see below).
            let out = unsafe { std::slice::from_raw_parts_mut(to.address as *mut u8, extent(to, from.channels)) };
            convolve_view_into(&view, &self.filter.mask, self.filter.border, out, (to.row, to.pixel));
            Ok(())
        };
        if height == 0 || width == 0 {
            return Ok(());
        }
        // Places whose results lie apart (the planes of a batch) are filtered side by side:
        // a small plane's bands alone would leave cores idle. Interleaved channels filtered
        // one at a time share their bytes' span, and take turns.
        let mut spans: Vec<(usize, usize)> = planes
            .places
            .iter()
            .map(|(from, to)| (to.address, to.address + extent(to, from.channels)))
            .collect();
        spans.sort_unstable();
        if let [place] = planes.places.as_slice() {
            // One place is filtered from this thread: the band loops decide whether its
            // bands go to the pool (a small plane's stay here, where a hop to the pool and
            // back would cost more than its work).
            filter_one(place)
        } else if spans.windows(2).all(|pair| pair[0].1 <= pair[1].0) {
            planes.places.par_iter().try_for_each(filter_one)
        } else {
            planes.places.iter().try_for_each(filter_one)
        }
    }
}

#[cfg(feature = "cuda")]
/// What a plane of `shape` is called in a `MemoryError` (`the result of a 1 x 268435456
/// plane of 1-byte samples`).
fn plane_words(what: &str, shape: PlaneShape) -> String {
    format!(
        "{what} of a {} x {} plane of {}-byte samples",
        shape.height,
        shape.width,
        shape.depth.bytes()
    )
}

/// Filters every plane on the GPU: each channel of each place gathered into a frame of its
/// own (in memory taken fallibly), the frames run through `engine`, the results scattered to
/// their places.
///
/// # Safety
///
/// Every place holds `shape.height` rows of `shape.width` pixels at its pitches, the
/// sources alive and unchanged and the destinations written by no one else for the call.
#[cfg(feature = "cuda")]
unsafe fn through_gpu(
    engine: &mut dyn Engine,
    planes: &HostPlanes,
    shape: PlaneShape,
    format: PixelFormat,
) -> PyResult<()> {
    // One plane a channel: (source place, target place, channel).
    let channels: Vec<(SourceAt, TargetAt, usize)> = planes
        .places
        .iter()
        .flat_map(|(from, to)| (0..from.channels).map(move |c| (*from, *to, c)))
        .collect();
    // The engine makes its results' planes with ordinary allocations, which end the process
    // when they fail: memory for all of them is asked for here first (and let go), so a call
    // that could not have it raises MemoryError instead.
    let results = (shape.row_bytes() * shape.height).saturating_mul(channels.len());
    let mut probe: Vec<u8> = Vec::new();
    if probe.try_reserve_exact(results).is_err() {
        return Err(pyo3::exceptions::PyMemoryError::new_err(format!(
            "the GPU engine's results ({} planes): {results} bytes are more than can be had",
            channels.len()
        )));
    }
    drop(probe);
    let mut frames = Vec::new();
    for (index, (from, _, c)) in channels.iter().enumerate() {
        // SAFETY: the caller vouches for `from`.
        let plane = unsafe { gather(*from, *c, shape)? };
        let mut frame = Frame::of_planes(format, shape.width, shape.height, vec![plane]);
        frame.index = index as u64;
        frames.push(frame);
    }
    let filtered = through(engine, frames)?;
    let bytes = shape.depth.bytes();
    for (frame, (_, to, c)) in filtered.iter().zip(&channels) {
        let plane = &frame.planes[0];
        for y in 0..plane.height {
            let start = to.address + y * to.row + c * bytes;
            for (x, sample) in plane.row(y).chunks_exact(bytes).enumerate() {
                // SAFETY: the caller vouches for `to`; sample `c` of pixel `x` of row `y`
                // lies at this offset.
                let target = unsafe { std::slice::from_raw_parts_mut((start + x * to.pixel) as *mut u8, bytes) };
                target.copy_from_slice(sample);
            }
        }
    }
    Ok(())
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

/// A tightly packed copy of channel `c` of the place `at` (a plane of `shape`), in memory
/// taken fallibly.
///
/// # Safety
///
/// `at` holds `shape.height` rows of `shape.width` pixels of `at.channels` channels at its
/// pitches, alive and unchanged for the call.
#[cfg(feature = "cuda")]
unsafe fn gather(at: SourceAt, c: usize, shape: PlaneShape) -> PyResult<Plane> {
    let bytes = shape.depth.bytes();
    let row_bytes = shape.row_bytes();
    let mut data = try_zeroed::<u8>(row_bytes * shape.height, || plane_words("a copy", shape))?;
    for (y, row) in data.chunks_exact_mut(row_bytes.max(1)).enumerate() {
        let start = at
            .address
            .wrapping_add_signed(y as isize * at.row + c as isize * at.channel);
        for (x, sample) in row.chunks_exact_mut(bytes).enumerate() {
            // SAFETY: the caller vouches for `at`; sample `c` of pixel `x` of row `y` lies
            // at this offset.
            let source = unsafe {
                std::slice::from_raw_parts(start.wrapping_add_signed(x as isize * at.pixel) as *const u8, bytes)
            };
            sample.copy_from_slice(source);
        }
    }
    Ok(Plane::of_data(shape, row_bytes, PlaneData::from(data)))
}

//! Video from Python: `convstream.read` (decoded and filtered frames, one by one, with their
//! timestamps) and `convstream.run` (a whole pipeline, as `convstream run` runs it). Both
//! resolve their arguments as the CLI resolves its flags ([`crate::settings`]); `read`
//! decodes on a thread of its own through the media crate's source, and filters on the
//! engine the pipeline would use.
//!
//! One file at some length (about 600 lines): `read` and `run` share the arguments, the
//! source's opening and the errors, and `read`'s two ways out (host planes, device tensors)
//! are one loop around one engine.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use convstream_config::Overrides;
use convstream_core::Frame;
use convstream_core::{build_engine, Engine, EngineOptions, FrameShape};
use convstream_media::AfterFilters;
use convstream_media::Counters;
use convstream_media::PassthroughPacket;
use convstream_media::{run_pipeline, OutputPolicy, RunOptions};
use convstream_media::{Source, SourceError};
use crossbeam_channel::{bounded, Receiver};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict};

use crate::filter::engine_error;
use crate::interrupt::{recv_interruptibly, run_interruptibly};
use crate::settings::Request;

/// `(width, height, format, time_base, frame_rate, bits, engine)` of a video's frames.
type StreamInfo = (usize, usize, String, (i32, i32), (i32, i32), u8, String);

/// Frames decoded ahead of the one being filtered.
const DECODED_AHEAD: usize = 4;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeReader>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}

/// The filtered frames of a video, in order; see `convstream.read`.
#[pyclass(module = "convstream._convstream", name = "NativeReader")]
pub struct NativeReader {
    state: Mutex<ReaderState>,
    stop: Arc<AtomicBool>,
    info: StreamInfo,
}

struct ReaderState {
    engine: Box<dyn Engine>,
    decoded: Option<Receiver<Frame>>,
    source: Option<JoinHandle<Result<(), SourceError>>>,
    /// FFmpeg's filters after the engine (`vf=`'s part after its convolution stage), until
    /// the input ends and they give what they held.
    after: Option<AfterFilters>,
    /// Frames they gave and Python has not yet taken.
    ready: VecDeque<Frame>,
    /// The arrays each frame in the engine writes into, oldest first (`None` for a frame
    /// that comes back through host memory); see [`NativeReader::next_frame_on_device`].
    device_outputs: VecDeque<Option<Vec<Py<PyAny>>>>,
}

#[pymethods]
impl NativeReader {
    #[new]
    #[pyo3(signature = (input, mask, border=None, planes=None, plane_masks=Vec::new(), device=None, decoder=None, start=None, duration=None, frames=None, depth=None, input_format=None, config=None, copyts=true, vf=None))]
    #[expect(clippy::too_many_arguments, reason = "one parameter per Python argument")]
    fn new(
        py: Python<'_>,
        input: String,
        mask: String,
        border: Option<String>,
        planes: Option<String>,
        plane_masks: Vec<(String, String)>,
        device: Option<String>,
        decoder: Option<String>,
        start: Option<f64>,
        duration: Option<f64>,
        frames: Option<u64>,
        depth: Option<u8>,
        input_format: Option<String>,
        config: Option<String>,
        copyts: bool,
        vf: Option<String>,
    ) -> PyResult<NativeReader> {
        let overrides = Overrides {
            graph: vf,
            decoder,
            start,
            duration,
            frames,
            depth,
            input_format,
            no_audio: true,
            copyts,
            ..Overrides::default()
        };
        let settings = Request {
            input,
            output: "null".into(),
            mask,
            border,
            planes,
            plane_masks,
            device,
            config,
            overrides,
            array_mask: None,
        }
        .resolve()?;
        let stop = Arc::new(AtomicBool::new(false));
        let opener_stop = stop.clone();
        let started = run_interruptibly(py, &stop, move || open(&settings, &opener_stop))??;
        Ok(NativeReader {
            info: started.info,
            state: Mutex::new(ReaderState {
                engine: started.engine,
                decoded: Some(started.decoded),
                source: Some(started.source),
                after: started.after,
                ready: VecDeque::new(),
                device_outputs: VecDeque::new(),
            }),
            stop,
        })
    }

    /// `(width, height, format, time_base, frame_rate, bits, engine)` of the frames to come.
    #[getter]
    fn info(&self) -> StreamInfo {
        self.info.clone()
    }

    /// The next filtered frame as `(pts, index, [(plane bytes, height, width, channels,
    /// bytes per sample)...])`, or `None` at the end of the input.
    #[allow(clippy::type_complexity)]
    fn next_frame<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<
        Option<(
            Option<i64>,
            u64,
            Vec<(Bound<'py, PyByteArray>, usize, usize, usize, usize)>,
        )>,
    > {
        let frame = py.detach(|| self.next_filtered())?;
        Ok(frame.map(|frame| (frame.pts, frame.index, host_planes(py, &frame))))
    }

    /// The next filtered frame left on the GPU, for `as_="torch"`/`"cupy"`: when the decoder
    /// (NVDEC) left the picture in the CUDA engine's GPU memory, `allocate(shapes, ordinal)`
    /// is called with each plane's `(height, width, channels, bytes per sample)` and returns
    /// `(array, device address)` per plane, arrays of the caller's library on that GPU; the
    /// engine filters the picture into them device to device, and they come back as
    /// `(pts, index, arrays, None)`. Any other frame comes back through host memory as
    /// `(pts, index, None, planes)` with planes as [`NativeReader::next_frame`] gives them.
    ///
    /// The engine is kept full, as for host planes: each decoded frame gets its arrays and is
    /// submitted while the engine has room, so the GPU filters the next frames while Python
    /// takes this one. A frame is returned once the engine is done with it, so its arrays
    /// are whole whatever stream the caller reads them on.
    #[allow(clippy::type_complexity)]
    fn next_frame_on_device<'py>(
        &self,
        py: Python<'py>,
        allocate: Bound<'py, PyAny>,
    ) -> PyResult<
        Option<(
            Option<i64>,
            u64,
            Option<Vec<Bound<'py, PyAny>>>,
            Option<Vec<HostPlane<'py>>>,
        )>,
    > {
        let mut state = self.lock()?;
        // Frames that FFmpeg's filters take after the engine come through host memory.
        let on_gpu = (state.after.is_none())
            .then(|| state.engine.device_pictures_on().map(|context| context.ordinal))
            .flatten();
        let Some(ordinal) = on_gpu else {
            drop(state);
            let frame = py.detach(|| self.next_filtered())?;
            return Ok(frame.map(|frame| (frame.pts, frame.index, None, Some(host_planes(py, &frame)))));
        };
        while state.engine.in_flight() < state.engine.capacity() {
            let Some(decoded) = state.decoded.clone() else {
                break;
            };
            // Waits for a decoded frame only when nothing is in flight to return meanwhile.
            let next = if state.engine.in_flight() == 0 {
                let next = py.detach(|| recv_interruptibly(&decoded));
                self.stop_on_error(&mut state, next)?
            } else {
                match decoded.try_recv() {
                    Ok(frame) => Some(frame),
                    Err(crossbeam_channel::TryRecvError::Empty) => break,
                    Err(crossbeam_channel::TryRecvError::Disconnected) => None,
                }
            };
            let Some(frame) = next else {
                state.decoded = None;
                break;
            };
            let (frame, arrays) = with_device_output(frame, &allocate, ordinal)?;
            let engine = &mut state.engine;
            py.detach(move || engine.submit(frame)).map_err(engine_error)?;
            state.device_outputs.push_back(arrays);
        }
        if state.engine.in_flight() == 0 {
            // Nothing in flight and nothing more decoded: the end, or the source's failure.
            drop(state);
            let frame = py.detach(|| self.next_filtered())?;
            return Ok(frame.map(|frame| (frame.pts, frame.index, None, Some(host_planes(py, &frame)))));
        }
        let engine = &mut state.engine;
        let filtered = py.detach(move || engine.receive()).map_err(engine_error)?;
        // Frames leave the engine in the order they went in, as their arrays were queued.
        let arrays = state.device_outputs.pop_front().flatten();
        drop(state);
        Ok(filtered.map(|frame| match arrays {
            Some(arrays) => {
                let arrays = arrays.into_iter().map(|array| array.into_bound(py)).collect();
                (frame.pts, frame.index, Some(arrays), None)
            }
            None => {
                let planes = host_planes(py, &frame);
                (frame.pts, frame.index, None, Some(planes))
            }
        }))
    }

    /// Stops decoding and lets the input go; the iterator ends.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        py.detach(|| {
            let mut state = self.lock()?;
            state.decoded = None;
            if let Some(source) = state.source.take() {
                let _ = source.join();
            }
            Ok(())
        })
    }
}

impl NativeReader {
    /// `result`, after stopping the decoder when it is an error (Ctrl-C while waiting for a
    /// frame): its thread ends on its own, and the iterator ends with it.
    fn stop_on_error<T>(&self, state: &mut ReaderState, result: PyResult<T>) -> PyResult<T> {
        if result.is_err() {
            self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            state.decoded = None;
        }
        result
    }

    fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, ReaderState>> {
        self.state
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a previous read of this video panicked"))
    }

    /// Keeps the engine full from the decoder and returns the oldest frame filtered; at
    /// the end of the input, the source's error if it failed.
    fn next_filtered(&self) -> PyResult<Option<Frame>> {
        let mut state = self.lock()?;
        let state = &mut *state;
        loop {
            if let Some(frame) = state.ready.pop_front() {
                return Ok(Some(frame));
            }
            if state.after.is_none() {
                return self.next_from_engine(state);
            }
            let more = match (self.next_from_engine(state)?, state.after.as_mut()) {
                (Some(frame), Some(after)) => after.push(frame),
                // The end of the input: the filters give what they held, once.
                (_, _) => state.after.take().map_or(Ok(Vec::new()), |mut after| after.finish()),
            };
            let more = more.map_err(PyRuntimeError::new_err)?;
            state.ready.extend(more);
        }
    }

    /// The engine's next frame: decoded frames submitted while it has room.
    fn next_from_engine(&self, state: &mut ReaderState) -> PyResult<Option<Frame>> {
        loop {
            if state.engine.in_flight() < state.engine.capacity() {
                if let Some(decoded) = &state.decoded {
                    // Waits for a frame only when nothing is in flight to return meanwhile.
                    let next = if state.engine.in_flight() == 0 {
                        let next = recv_interruptibly(decoded);
                        self.stop_on_error(state, next)?
                    } else {
                        match decoded.recv_timeout(Duration::ZERO) {
                            Ok(frame) => Some(frame),
                            Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                                state.decoded = None;
                                None
                            }
                        }
                    };
                    match next {
                        Some(frame) => {
                            state.engine.submit(frame).map_err(engine_error)?;
                            continue;
                        }
                        None if state.engine.in_flight() == 0 => state.decoded = None,
                        None => {}
                    }
                }
            }
            if let Some(frame) = state.engine.receive().map_err(engine_error)? {
                return Ok(Some(frame));
            }
            // Nothing in flight and nothing more decoded: the end, or the source's failure.
            if let Some(source) = state.source.take() {
                match source.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(PyRuntimeError::new_err(e.to_string())),
                    Err(_) => return Err(PyRuntimeError::new_err("the decoder thread panicked")),
                }
            }
            return Ok(None);
        }
    }
}

impl Drop for NativeReader {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut state) = self.state.lock() {
            state.decoded = None;
            if let Some(source) = state.source.take() {
                let _ = source.join();
            }
        }
    }
}

/// A plane of a frame in host memory, for Python: its bytes (tightly packed rows), height,
/// width, channels and bytes per sample.
type HostPlane<'py> = (Bound<'py, PyByteArray>, usize, usize, usize, usize);

/// `frame`'s host planes as Python sees them.
fn host_planes<'py>(py: Python<'py>, frame: &Frame) -> Vec<HostPlane<'py>> {
    frame
        .planes
        .iter()
        .map(|plane| {
            let row_bytes = plane.row_bytes();
            let packed = if plane.stride == row_bytes {
                PyByteArray::new(py, &plane.data[..row_bytes * plane.height])
            } else {
                let mut bytes = Vec::with_capacity(row_bytes * plane.height);
                (0..plane.height).for_each(|y| bytes.extend_from_slice(plane.row(y)));
                PyByteArray::new(py, &bytes)
            };
            (packed, plane.height, plane.width, plane.channels, plane.depth.bytes())
        })
        .collect()
}

/// `frame` ready for the engine with its output in arrays `allocate` makes on GPU `ordinal`,
/// when its picture is on the GPU and the source holds no other reference to it (the
/// source made it in the engine's context, `with_device_pictures`); else as it is, to come
/// back through host memory (no arrays).
fn with_device_output(
    mut frame: Frame,
    allocate: &Bound<'_, PyAny>,
    ordinal: usize,
) -> PyResult<(Frame, Option<Vec<Py<PyAny>>>)> {
    let picture = frame
        .device
        .take()
        .map(|picture| Arc::try_unwrap(picture).map_err(Some));
    let mut arrays = None;
    frame.device = match picture {
        Some(Ok(picture)) => {
            let shapes: Vec<(usize, usize, usize, usize)> = frame
                .planes
                .iter()
                .map(|p| (p.height, p.width, p.channels, p.depth.bytes()))
                .collect();
            let allocated: Vec<(Bound<'_, PyAny>, u64)> = allocate.call1((shapes, ordinal))?.extract()?;
            if allocated.len() != frame.planes.len() {
                return Err(PyValueError::new_err(format!(
                    "allocate gave {} arrays for {} planes",
                    allocated.len(),
                    frame.planes.len()
                )));
            }
            let output = allocated
                .iter()
                .zip(&frame.planes)
                .map(|((_, address), plane)| convstream_core::DevicePlane {
                    address: *address,
                    pitch: plane.row_bytes(),
                })
                .collect();
            arrays = Some(allocated.into_iter().map(|(array, _)| array.unbind()).collect());
            Some(Arc::new(picture.with_output(output)))
        }
        Some(Err(Some(shared))) => Some(shared),
        Some(Err(None)) | None => None,
    };
    Ok((frame, arrays))
}

struct Started {
    engine: Box<dyn Engine>,
    after: Option<AfterFilters>,
    decoded: Receiver<Frame>,
    source: JoinHandle<Result<(), SourceError>>,
    info: StreamInfo,
}

/// Opens the input as the pipeline does (formats converted where the filter needs it),
/// builds the engine and starts decoding.
fn open(settings: &convstream_config::PipelineSettings, stop: &Arc<AtomicBool>) -> PyResult<Started> {
    let counters = Arc::new(Counters::default());
    let probe = convstream_core::nvdec_probe();
    let source = Source::connect(&settings.source, stop, &counters, false, &probe, None).map_err(|e| {
        let message = e.to_string();
        if e.is_usage() {
            PyValueError::new_err(message)
        } else {
            PyRuntimeError::new_err(message)
        }
    })?;
    let source = convstream_media::fit_to_filter(settings, source).map_err(PyValueError::new_err)?;
    let info = source.info().clone();
    let (after, shown) = match &settings.ffmpeg_after {
        Some(chain) => {
            let (after, written) = AfterFilters::new(chain, &info).map_err(PyValueError::new_err)?;
            (Some(after), written)
        }
        None => (None, info.clone()),
    };
    let options = EngineOptions {
        shape: Some(FrameShape {
            format: info.format,
            width: info.width,
            height: info.height,
        }),
        frames_per_stream: settings.frames_per_stream,
        tuning: settings.gpu,
        ..EngineOptions::new(settings.device, settings.streams, "python")
    };
    let engine = build_engine(settings.filter.clone(), &options).map_err(engine_error)?;
    // NVDEC's pictures (NV12, P010, P016) stay on the GPU when the engine takes them so, as in
    // a pipeline: a frame then crosses PCIe once, or never with `as_="torch"`/`"cupy"`.
    let source = source.with_device_pictures(
        engine
            .device_pictures_on()
            .filter(|_| info.format.layout() == convstream_core::PixelLayout::SemiPlanar420),
    );
    let (decoded_tx, decoded_rx) = bounded::<Frame>(DECODED_AHEAD);
    // No stream is copied: a closed packet queue makes the source skip those packets.
    let (packets_tx, _) = bounded::<PassthroughPacket>(0);
    let thread_stop = stop.clone();
    let source = std::thread::Builder::new()
        .name("python-source".into())
        .spawn(move || source.run(&decoded_tx, &packets_tx, &thread_stop, &counters, None))
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the decoder thread: {e}")))?;
    Ok(Started {
        info: (
            shown.width,
            shown.height,
            shown.format.to_string(),
            (shown.time_base.numerator(), shown.time_base.denominator()),
            (shown.frame_rate.numerator(), shown.frame_rate.denominator()),
            shown.format.bits(),
            engine.name(),
        ),
        engine,
        after,
        decoded: decoded_rx,
        source,
    })
}

/// Runs one pipeline as `convstream run` does and returns its report (a dict, the fields
/// of `--report` JSON); see `convstream.run`.
#[pyfunction]
#[pyo3(signature = (input, output, mask, border=None, planes=None, plane_masks=Vec::new(), device=None, config=None, codec=None, lossless=false, overwrite=false, encoder_options=Vec::new(), no_audio=false, start=None, duration=None, frames=None, depth=None, decoder=None, input_format=None, output_format=None, streams=None, frames_per_stream=None, copyts=false))]
#[expect(clippy::too_many_arguments, reason = "one parameter per Python argument")]
fn run<'py>(
    py: Python<'py>,
    input: String,
    output: String,
    mask: String,
    border: Option<String>,
    planes: Option<String>,
    plane_masks: Vec<(String, String)>,
    device: Option<String>,
    config: Option<String>,
    codec: Option<String>,
    lossless: bool,
    overwrite: bool,
    encoder_options: Vec<(String, String)>,
    no_audio: bool,
    start: Option<f64>,
    duration: Option<f64>,
    frames: Option<u64>,
    depth: Option<u8>,
    decoder: Option<String>,
    input_format: Option<String>,
    output_format: Option<String>,
    streams: Option<usize>,
    frames_per_stream: Option<usize>,
    copyts: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let overrides = Overrides {
        codec,
        lossless,
        overwrite,
        encoder_options,
        no_audio,
        start,
        duration,
        frames,
        depth,
        decoder,
        input_format,
        output_format,
        streams,
        frames_per_stream,
        copyts,
        ..Overrides::default()
    };
    let settings = Request {
        input,
        output,
        mask,
        border,
        planes,
        plane_masks,
        device,
        config,
        overrides,
        array_mask: None,
    }
    .resolve()?;
    if let Some(existing) = convstream_config::existing_outputs(std::slice::from_ref(&settings)).first() {
        return Err(PyValueError::new_err(format!(
            "output: `{}` exists; it is kept: pass overwrite=True to replace it, or choose another name",
            convstream_core::quoted(&existing.sink.url)
        )));
    }
    let options = RunOptions {
        stop: Arc::new(AtomicBool::new(false)),
        progress: None,
        trace: None,
        stage_times: false,
        outputs: OutputPolicy::Command,
        io_grace: Duration::from_secs(5),
        protected: Vec::new(),
        // As the CLI's `run`: frames taken while a fresh process's GPU starts (engine::starting).
        overlap_gpu_start: true,
        // An empty run is an error below, and its output is discarded (an old file kept).
        keep_empty_outputs: false,
        start_gate: None,
    };
    let stop = options.stop.clone();
    let report = run_interruptibly(py, &stop, move || run_pipeline(&settings, &options))?.map_err(|e| {
        let message = e.to_string();
        if e.is_usage() {
            PyValueError::new_err(message)
        } else {
            PyRuntimeError::new_err(message)
        }
    })?;
    if report.frames_out == 0 && report.stopped_early.is_none() {
        return Err(PyRuntimeError::new_err(format!(
            "no frame was written to {} (the input had none in the part asked for, or none decoded); \
             the output was not written, and a file already there is kept",
            convstream_core::redact_credentials(&report.output)
        )));
    }
    let json = serde_json::to_string(&report).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let loads = py.import("json")?.getattr("loads")?;
    loads
        .call1((json,))?
        .cast_into::<PyDict>()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

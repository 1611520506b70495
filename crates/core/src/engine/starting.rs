//! An engine that starts on the CPU while its GPU engine is made. In a fresh process the
//! driver's initialisation and the GPU's context take 0.2-0.4 s (measured on an H100 host),
//! longer than decoding and filtering the first frames on the CPU: a short clip would spend
//! most of its run waiting. So the first frames are filtered by the CPU engine, and from the
//! first frame submitted after the GPU engine is ready (the CPU engine having handed back
//! everything it took), every frame goes to the GPU. The two engines give identical results
//! (the CPU engine is the reference every GPU result is checked against), so the output
//! cannot tell where a frame was filtered; frames leave in order across the switch.
//!
//! When the GPU engine cannot be made, `auto` goes on with the CPU engine (a missing GPU,
//! said once), and any other choice fails the run with the GPU's error, as it would have
//! without this engine, after the frames filtered meanwhile.

use crossbeam_channel::{Receiver, TryRecvError};

use super::cpu::CpuEngine;
use super::{Engine, EngineError, FilterPreparer, StageTimes, TraceSpan};
use crate::filter::FilterSpec;

/// Where the GPU engine arrives from the thread making it.
pub type ComingEngine = Receiver<Result<Box<dyn Engine>, EngineError>>;

/// The GPU engine being made on another thread, or what became of it.
enum Gpu {
    Coming(ComingEngine),
    /// Ready: frames go to it once the CPU engine is empty.
    Ready(Box<dyn Engine>),
    /// It could not be made and `auto` allows the CPU: the CPU engine stays.
    Missing,
}

pub struct StartingEngine {
    cpu: CpuEngine,
    gpu: Gpu,
    /// Whether frames now go to the GPU engine (set once, at the switch).
    on_gpu: bool,
    /// The filter as last set: given to the GPU engine when it arrives, if it changed meanwhile.
    filter: FilterSpec,
    filter_changed: bool,
    /// A missing GPU leaves the CPU engine in place (`auto`), rather than failing the run.
    fall_back: bool,
    /// Which engine handed back the last frame, for its stage times.
    last_from_gpu: bool,
}

impl StartingEngine {
    /// Filters on the CPU (with `cpu`, already set up for `filter`) until the engine that
    /// `coming` delivers is ready. `fall_back`: a GPU that is missing (not one that fails)
    /// leaves the CPU engine in place.
    pub fn new(filter: FilterSpec, cpu: CpuEngine, coming: ComingEngine, fall_back: bool) -> StartingEngine {
        StartingEngine {
            cpu,
            gpu: Gpu::Coming(coming),
            on_gpu: false,
            filter,
            filter_changed: false,
            fall_back,
            last_from_gpu: false,
        }
    }

    /// Takes the GPU engine if it has arrived, and switches to it once the CPU engine has
    /// handed back every frame it took.
    fn look_for_the_gpu(&mut self) -> Result<(), EngineError> {
        if let Gpu::Coming(coming) = &self.gpu {
            match coming.try_recv() {
                Err(TryRecvError::Empty) => {}
                Ok(Ok(mut engine)) => {
                    if self.filter_changed {
                        engine.set_filter(self.filter.clone())?;
                    }
                    tracing::info!(
                        "{} ready; the frames before were filtered on the CPU (identical results)",
                        engine.name()
                    );
                    self.gpu = Gpu::Ready(engine);
                }
                Ok(Err(e @ (EngineError::NoGpu(_) | EngineError::NotCompiledWithCuda))) if self.fall_back => {
                    tracing::warn!("{e}; using the CPU engine");
                    self.gpu = Gpu::Missing;
                }
                Ok(Err(e)) => return Err(e),
                Err(TryRecvError::Disconnected) => {
                    return Err(EngineError::Internal(
                        "the thread making the GPU engine ended without one".into(),
                    ))
                }
            }
        }
        if matches!(self.gpu, Gpu::Ready(_)) && self.cpu.in_flight() == 0 {
            self.on_gpu = true;
        }
        Ok(())
    }

    fn gpu(&mut self) -> Option<&mut Box<dyn Engine>> {
        match &mut self.gpu {
            Gpu::Ready(engine) => Some(engine),
            _ => None,
        }
    }

    fn gpu_ref(&self) -> Option<&dyn Engine> {
        match &self.gpu {
            Gpu::Ready(engine) => Some(engine.as_ref()),
            _ => None,
        }
    }
}

impl Engine for StartingEngine {
    fn name(&self) -> String {
        match (&self.gpu, self.on_gpu) {
            (Gpu::Ready(engine), true) => engine.name(),
            (Gpu::Missing, _) => self.cpu.name(),
            _ => "cpu (the GPU still starting)".into(),
        }
    }
    fn capacity(&self) -> usize {
        match self.gpu_ref() {
            Some(engine) if self.on_gpu => engine.capacity(),
            _ => self.cpu.capacity(),
        }
    }
    fn in_flight(&self) -> usize {
        self.cpu.in_flight() + self.gpu_ref().map_or(0, |engine| engine.in_flight())
    }
    fn submit(&mut self, frame: crate::frame::Frame) -> Result<(), EngineError> {
        self.look_for_the_gpu()?;
        if self.on_gpu {
            if let Some(engine) = self.gpu() {
                return engine.submit(frame);
            }
        }
        self.cpu.submit(frame)
    }
    fn receive(&mut self) -> Result<Option<crate::frame::Frame>, EngineError> {
        // The CPU engine's frames came first: they leave first.
        if self.cpu.in_flight() > 0 {
            self.last_from_gpu = false;
            return self.cpu.receive();
        }
        self.last_from_gpu = true;
        match self.gpu() {
            Some(engine) => engine.receive(),
            None => Ok(None),
        }
    }
    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
        self.cpu.set_filter(filter.clone())?;
        match self.gpu() {
            Some(engine) => engine.set_filter(filter.clone())?,
            None => self.filter_changed = true,
        }
        self.filter = filter;
        Ok(())
    }
    fn take_trace(&mut self) -> Vec<TraceSpan> {
        let mut spans = self.cpu.take_trace();
        if let Some(engine) = self.gpu() {
            spans.extend(engine.take_trace());
        }
        spans
    }
    fn device(&self) -> String {
        match self.gpu_ref() {
            Some(engine) if self.on_gpu => engine.device(),
            _ => self.cpu.device(),
        }
    }
    fn last_stage_times(&self) -> Option<StageTimes> {
        match self.gpu_ref() {
            Some(engine) if self.last_from_gpu => engine.last_stage_times(),
            _ => self.cpu.last_stage_times(),
        }
    }
    fn pinned_bytes(&self) -> usize {
        self.gpu_ref().map_or(0, |engine| engine.pinned_bytes())
    }
    fn preparer(&self) -> FilterPreparer {
        match self.gpu_ref() {
            Some(engine) => engine.preparer(),
            None => self.cpu.preparer(),
        }
    }
    fn settled(&self) -> bool {
        self.on_gpu || matches!(self.gpu, Gpu::Missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{BorderMode, PlaneSelection};
    use crate::frame::{Frame, PixelFormat, Plane};
    use crate::mask::Mask;
    use crossbeam_channel::{bounded, Sender};

    fn filter(spec: &str) -> FilterSpec {
        FilterSpec {
            mask: Mask::from_spec(spec).unwrap(),
            border: BorderMode::Reflect,
            planes: PlaneSelection::All,
            plane_masks: Default::default(),
        }
    }

    fn frame(index: u64) -> Frame {
        let (width, height) = (9, 7);
        let planes = PixelFormat::GRAY8
            .plane_shapes(width, height)
            .into_iter()
            .map(|shape| {
                let mut plane = Plane::new(shape);
                for (i, byte) in plane.data.iter_mut().enumerate() {
                    *byte = (i as u64 * 37 + index * 11) as u8;
                }
                plane
            })
            .collect();
        let mut frame = Frame::of_planes(PixelFormat::GRAY8, width, height, planes);
        frame.index = index;
        frame
    }

    /// A "GPU" engine that is the CPU engine under another name: what matters here is when
    /// frames go to it, and that they come back in order and right.
    struct NamedGpu(CpuEngine);
    impl Engine for NamedGpu {
        fn name(&self) -> String {
            "gpu".into()
        }
        fn capacity(&self) -> usize {
            3
        }
        fn in_flight(&self) -> usize {
            self.0.in_flight()
        }
        fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
            self.0.submit(frame)
        }
        fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
            self.0.receive()
        }
        fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
            self.0.set_filter(filter)
        }
        fn device(&self) -> String {
            "gpu:0".into()
        }
    }

    type Delivery = Sender<Result<Box<dyn Engine>, EngineError>>;

    fn starting(spec: &str, fall_back: bool) -> (StartingEngine, Delivery) {
        let (deliver, coming) = bounded(1);
        let engine = StartingEngine::new(filter(spec), CpuEngine::new(filter(spec)), coming, fall_back);
        (engine, deliver)
    }

    /// Submits `frames` the way the filter stage does and returns what came back.
    fn run(engine: &mut dyn Engine, frames: std::ops::Range<u64>) -> Vec<Frame> {
        let mut out = Vec::new();
        for index in frames {
            engine.submit(frame(index)).unwrap();
            while engine.in_flight() >= engine.capacity() {
                out.extend(engine.receive().unwrap());
            }
        }
        while engine.in_flight() > 0 {
            out.extend(engine.receive().unwrap());
        }
        out
    }

    #[test]
    fn frames_go_to_the_gpu_from_the_first_one_after_it_is_ready_in_order_and_identical() {
        let (mut engine, deliver) = starting("gaussian:size=3", false);
        assert_eq!(engine.name(), "cpu (the GPU still starting)");
        let before = run(&mut engine, 0..4);
        assert!(!engine.settled());
        deliver
            .send(Ok(Box::new(NamedGpu(CpuEngine::new(filter("gaussian:size=3"))))))
            .unwrap();
        let after = run(&mut engine, 4..10);
        assert!(engine.settled());
        assert_eq!(
            (engine.name(), engine.device(), engine.capacity()),
            ("gpu".into(), "gpu:0".into(), 3)
        );
        let out: Vec<Frame> = before.into_iter().chain(after).collect();
        assert_eq!(
            out.iter().map(|f| f.index).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        for frame_out in &out {
            let expected = CpuEngine::filter_frame(&filter("gaussian:size=3"), &frame(frame_out.index));
            assert_eq!(frame_out.planes, expected.planes, "frame {}", frame_out.index);
        }
    }

    #[test]
    fn a_filter_set_before_the_gpu_arrives_is_the_one_it_applies() {
        let (mut engine, deliver) = starting("gaussian:size=3", false);
        run(&mut engine, 0..2);
        engine.set_filter(filter("sharpen")).unwrap();
        deliver
            .send(Ok(Box::new(NamedGpu(CpuEngine::new(filter("gaussian:size=3"))))))
            .unwrap();
        let out = run(&mut engine, 2..6);
        assert!(engine.settled());
        for frame_out in &out {
            let expected = CpuEngine::filter_frame(&filter("sharpen"), &frame(frame_out.index));
            assert_eq!(frame_out.planes, expected.planes, "frame {}", frame_out.index);
        }
    }

    #[test]
    fn a_missing_gpu_keeps_the_cpu_engine_when_allowed_and_fails_the_run_otherwise() {
        let (mut allowed, deliver) = starting("box:size=3", true);
        deliver.send(Err(EngineError::NoGpu("none here".into()))).unwrap();
        let out = run(&mut allowed, 0..5);
        assert_eq!(out.len(), 5);
        assert!(allowed.settled());
        assert_eq!(allowed.name(), "cpu");

        let (mut strict, deliver) = starting("box:size=3", false);
        deliver.send(Err(EngineError::NoGpu("none here".into()))).unwrap();
        let error = strict.submit(frame(0)).unwrap_err();
        assert!(error.to_string().contains("none here"), "{error}");

        let (mut failing, deliver) = starting("box:size=3", true);
        deliver
            .send(Err(EngineError::Unsupported("a kernel that does not fit".into())))
            .unwrap();
        assert!(failing.submit(frame(0)).is_err(), "only a missing GPU falls back");

        let (mut orphaned, deliver) = starting("box:size=3", true);
        drop(deliver);
        assert!(matches!(orphaned.submit(frame(0)), Err(EngineError::Internal(_))));
    }
}

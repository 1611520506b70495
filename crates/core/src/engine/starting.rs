//! An engine that takes frames while its GPU engine is made. In a fresh process the driver's
//! initialisation and the GPU's context take about 0.2 s (measured on H100 and H200 hosts),
//! the time a 16-core host decodes some 200 1080p frames in. The CPU engine filters the
//! first frame (out at once, whatever the GPU's start costs); later frames wait in memory
//! for the GPU, up to a limit the caller sets, and those past it are filtered on the CPU,
//! as are those still held when the input ends first (a clip shorter than the start).
//!
//! Which is better depends on what else wants the cores. With nothing downstream (a null
//! sink) holding wins: a 13x13 mask on the CPU costs about 2.6 frames' decoding per frame,
//! and filtering every frame there while the GPU started slowed the decoder to a quarter
//! of its rate. An encoder downstream would sit idle while frames wait: there the caller
//! holds none and the CPU filters until the GPU is ready. The two engines give identical
//! results (the CPU engine is the reference every GPU result is checked against), so the
//! output cannot tell where a frame was filtered; frames leave in order.
//!
//! Once the GPU engine is ready, the frames held go to it oldest first, several for each new
//! frame taken, so the decoder is not stopped while they drain.
//!
//! When the GPU engine cannot be made, `auto` goes on with the CPU engine (a missing GPU,
//! said once), and any other choice fails the run with the GPU's error, as it would have
//! without this engine.
//!
//! One job at some length (about 600 lines, half of them tests): the hand-over's states.

use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::collections::VecDeque;
use std::time::Duration;

use super::contract::{Engine, FilterPreparer, StageTimes};
use super::cpu::CpuEngine;
use super::error::EngineError;
use super::trace::TraceSpan;
use crate::filter::FilterSpec;
use crate::frame::Frame;

/// Where the GPU engine arrives from the thread making it.
pub type ComingEngine = Receiver<Result<Box<dyn Engine>, EngineError>>;

/// The default limit of the memory held for the GPU; where the engine's options live.
pub use super::contract::HELD_BYTES;

/// How long `receive` waits for the GPU engine when it has nothing else to give: short, so
/// that the caller takes the next decoded frame (or a filter switch) without a delay.
const GPU_POLL: Duration = Duration::from_millis(2);

/// How long `finish` waits for the GPU engine's start to end, when the run was over first:
/// a start takes about 0.2 s; one that takes longer than this is not held against the run.
const GPU_VERDICT_WAIT: Duration = Duration::from_secs(10);

/// Frames handed to the GPU from those held for each new frame taken, once it is ready.
const DRAIN_PER_FRAME: usize = 4;

/// The GPU engine being made on another thread, or what became of it.
enum Gpu {
    Coming(ComingEngine),
    /// Ready: frames go to it once the CPU engine is empty.
    Ready(Box<dyn Engine>),
    /// It could not be made and `auto` allows the CPU: the CPU engine stays.
    Missing,
}

/// Filters on the CPU while the GPU engine is made on another thread, then hands frames to it
/// (see the module's text).
pub struct StartingEngine {
    cpu: CpuEngine,
    gpu: Gpu,
    /// Whether frames now go to the GPU engine (set once, at the switch).
    on_gpu: bool,
    /// Frames waiting for the GPU, oldest first, and the bytes they take.
    held: VecDeque<Frame>,
    held_bytes: usize,
    held_limit: usize,
    /// How many held frames to leave after the frame just taken (see `capacity`).
    drain_goal: usize,
    /// Frames filtered on the CPU, for the log line at the switch.
    filtered_on_cpu: u64,
    /// The input has ended: frames held are filtered on the CPU until the GPU comes.
    input_ended: bool,
    /// The filter as last set: given to the GPU engine when it arrives, if it changed meanwhile.
    filter: FilterSpec,
    filter_changed: bool,
    /// A missing GPU leaves the CPU engine in place (`auto`), rather than failing the run.
    fall_back: bool,
    /// Which engine handed back the last frame, for its stage times.
    last_from_gpu: bool,
}

/// Bytes a frame's planes take in memory (rows with their padding).
fn frame_bytes(frame: &Frame) -> usize {
    frame.planes.iter().map(|plane| plane.stride * plane.height).sum()
}

impl StartingEngine {
    /// Filters the first frame on the CPU (with `cpu`, already set up for `filter`) and
    /// holds the next ones, up to `held_limit` bytes, until the engine that `coming`
    /// delivers is ready. `fall_back`: a GPU that is missing (not one that fails) leaves the
    /// CPU engine in place.
    pub fn new(
        filter: FilterSpec,
        cpu: CpuEngine,
        coming: ComingEngine,
        fall_back: bool,
        held_limit: usize,
    ) -> StartingEngine {
        StartingEngine {
            cpu,
            gpu: Gpu::Coming(coming),
            on_gpu: false,
            held: VecDeque::new(),
            held_bytes: 0,
            held_limit,
            drain_goal: 0,
            filtered_on_cpu: 0,
            input_ended: false,
            filter,
            filter_changed: false,
            fall_back,
            last_from_gpu: false,
        }
    }

    /// Takes the GPU engine if it has arrived (waiting up to `wait` for it), and switches
    /// to it once the CPU engine has handed back every frame it took.
    fn look_for_the_gpu(&mut self, wait: Duration) -> Result<(), EngineError> {
        if let Gpu::Coming(coming) = &self.gpu {
            let arrived = if wait.is_zero() {
                coming.try_recv().map_err(|e| match e {
                    crossbeam_channel::TryRecvError::Empty => RecvTimeoutError::Timeout,
                    crossbeam_channel::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                })
            } else {
                coming.recv_timeout(wait)
            };
            match arrived {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Ok(mut engine)) => {
                    if self.filter_changed {
                        engine.set_filter(self.filter.clone())?;
                    }
                    tracing::info!(
                        "{} ready; {} frame(s) before it filtered on the CPU, {} waiting for it (identical results)",
                        engine.name(),
                        self.filtered_on_cpu,
                        self.held.len(),
                    );
                    self.gpu = Gpu::Ready(engine);
                }
                Ok(Err(e @ (EngineError::NoGpu { .. } | EngineError::NotCompiledWithCuda))) if self.fall_back => {
                    tracing::warn!("{e}; using the CPU engine");
                    self.gpu = Gpu::Missing;
                }
                Ok(Err(e)) => return Err(e),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(EngineError::Internal {
                        what: "the thread making the GPU engine ended without one".into(),
                    })
                }
            }
        }
        if matches!(self.gpu, Gpu::Ready(_)) && self.cpu.in_flight() == 0 {
            self.on_gpu = true;
        }
        Ok(())
    }

    /// Filters the oldest held frame on the CPU.
    fn filter_oldest_on_cpu(&mut self) -> Result<(), EngineError> {
        if let Some(frame) = self.held.pop_front() {
            self.held_bytes -= frame_bytes(&frame);
            self.filtered_on_cpu += 1;
            self.cpu.submit(frame)?;
        }
        Ok(())
    }

    fn hold(&mut self, frame: Frame) {
        self.held_bytes += frame_bytes(&frame);
        self.held.push_back(frame);
    }

    /// Hands held frames to the GPU engine, oldest first, while it has room.
    fn feed_the_gpu(&mut self) -> Result<(), EngineError> {
        let Gpu::Ready(engine) = &mut self.gpu else {
            return Ok(());
        };
        while engine.in_flight() < engine.capacity() {
            let Some(frame) = self.held.pop_front() else { break };
            self.held_bytes -= frame_bytes(&frame);
            engine.submit(frame)?;
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
        match (self.gpu_ref(), self.on_gpu) {
            // Held frames drain a few for each new one (`drain_goal` is set as each is taken).
            (Some(engine), true) if !self.held.is_empty() => engine.capacity() + self.drain_goal,
            (Some(engine), true) => engine.capacity(),
            // The CPU engine's frames are handed on as soon as filtered; held ones wait.
            _ if matches!(self.gpu, Gpu::Missing) => self.cpu.capacity(),
            _ => self.held.len() + 1,
        }
    }
    fn in_flight(&self) -> usize {
        self.cpu.in_flight() + self.held.len() + self.gpu_ref().map_or(0, |engine| engine.in_flight())
    }
    fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
        self.look_for_the_gpu(Duration::ZERO)?;
        if self.on_gpu {
            // Behind the frames held, to keep the order.
            self.hold(frame);
            self.drain_goal = self.held.len().saturating_sub(DRAIN_PER_FRAME);
            return self.feed_the_gpu();
        }
        let nothing_before = self.held.is_empty() && self.filtered_on_cpu == 0;
        match self.gpu {
            Gpu::Missing if self.held.is_empty() => {
                self.filtered_on_cpu += 1;
                self.cpu.submit(frame)
            }
            Gpu::Missing => {
                self.hold(frame);
                Ok(())
            }
            // The first frame out at once, on the CPU.
            _ if nothing_before => {
                self.filtered_on_cpu += 1;
                self.cpu.submit(frame)
            }
            _ => {
                self.hold(frame);
                if self.held_bytes > self.held_limit {
                    self.filter_oldest_on_cpu()?;
                }
                Ok(())
            }
        }
    }
    fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
        // The CPU engine's frames came first: they leave first.
        if self.cpu.in_flight() > 0 {
            self.last_from_gpu = false;
            return self.cpu.receive();
        }
        if self.held.is_empty() && !self.on_gpu {
            return Ok(None);
        }
        // Held frames wait a moment for the GPU, unless nothing more will come.
        let wait = if self.input_ended { Duration::ZERO } else { GPU_POLL };
        self.look_for_the_gpu(wait)?;
        if self.on_gpu {
            self.feed_the_gpu()?;
            self.last_from_gpu = true;
            return match self.gpu() {
                Some(engine) => engine.receive(),
                None => Ok(None),
            };
        }
        if self.input_ended || matches!(self.gpu, Gpu::Missing) {
            self.filter_oldest_on_cpu()?;
            self.last_from_gpu = false;
            return self.cpu.receive();
        }
        Ok(None)
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
    fn input_ended(&mut self) {
        self.input_ended = true;
    }
    fn finish(&mut self) -> Result<(), EngineError> {
        // A clip shorter than the GPU's start: the GPU asked for (`cuda:N`) must exist for
        // the run to succeed, even though the CPU engine gave the same frames.
        if self.fall_back || !matches!(self.gpu, Gpu::Coming(_)) {
            return Ok(());
        }
        self.look_for_the_gpu(GPU_VERDICT_WAIT)?;
        if matches!(self.gpu, Gpu::Coming(_)) {
            tracing::warn!(
                "the GPU engine had not started {} s after the input ended; every frame was filtered on the CPU",
                GPU_VERDICT_WAIT.as_secs()
            );
        }
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
    fn device_bytes(&self) -> usize {
        self.gpu_ref().map_or(0, |engine| engine.device_bytes())
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
    use crate::engine::{NoGpuReason, UnsupportedRequest};
    use crate::filter::{BorderMode, PlaneSelection};
    use crate::frame::{Frame, PixelFormat, Plane};
    use crate::mask::Mask;
    use crossbeam_channel::{bounded, Sender};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

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

    /// A "GPU" engine that is the CPU engine under another name, counting the frames it
    /// took: what matters here is when frames go to it, and that they come back in order
    /// and right.
    struct NamedGpu(CpuEngine, Arc<AtomicUsize>);
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
            self.1.fetch_add(1, Ordering::Relaxed);
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

    /// A starting engine, and what delivers its "GPU".
    fn starting(spec: &str, fall_back: bool, held_frames: usize) -> (StartingEngine, Delivery) {
        let (deliver, coming) = bounded(1);
        let limit = held_frames * frame_bytes(&frame(0));
        let engine = StartingEngine::new(filter(spec), CpuEngine::new(filter(spec)), coming, fall_back, limit);
        (engine, deliver)
    }

    /// Delivers a "GPU" engine for `spec`; returns how many frames it has taken.
    fn deliver_gpu(deliver: &Delivery, spec: &str) -> Arc<AtomicUsize> {
        let taken = Arc::new(AtomicUsize::new(0));
        let gpu = NamedGpu(CpuEngine::new(filter(spec)), taken.clone());
        deliver.send(Ok(Box::new(gpu))).unwrap();
        taken
    }

    /// Submits `frames` the way the filter stage does (receiving while `in_flight` reaches
    /// `capacity`), without waiting for what is held; returns what came back.
    fn submit_all(engine: &mut dyn Engine, frames: std::ops::Range<u64>) -> Vec<Frame> {
        let mut out = Vec::new();
        for index in frames {
            engine.submit(frame(index)).unwrap();
            while engine.in_flight() >= engine.capacity() {
                out.extend(engine.receive().unwrap());
            }
        }
        out
    }

    /// The input's end as the filter stage handles it: everything in flight comes back.
    fn finish(engine: &mut dyn Engine) -> Vec<Frame> {
        engine.input_ended();
        let mut out = Vec::new();
        while engine.in_flight() > 0 {
            out.extend(engine.receive().unwrap());
        }
        out
    }

    /// `frames` are frames 0.. in order, each filtered exactly as the CPU engine filters it.
    fn assert_in_order_and_right(frames: &[Frame], spec: &str, count: u64) {
        assert_eq!(
            frames.iter().map(|f| f.index).collect::<Vec<_>>(),
            (0..count).collect::<Vec<_>>()
        );
        for frame_out in frames {
            let expected = CpuEngine::filter_frame(&filter(spec), &frame(frame_out.index));
            assert_eq!(frame_out.planes, expected.planes, "frame {}", frame_out.index);
        }
    }

    #[test]
    fn the_first_frame_is_filtered_at_once_and_the_next_wait_for_the_gpu_in_order() {
        let (mut engine, deliver) = starting("gaussian:size=3", false, 100);
        assert_eq!(engine.name(), "cpu (the GPU still starting)");
        let mut out = submit_all(&mut engine, 0..6);
        assert_eq!(
            out.iter().map(|f| f.index).collect::<Vec<_>>(),
            [0],
            "only the first, at once"
        );
        assert_eq!(engine.in_flight(), 5);
        // Nothing to give while the GPU is not there: a short wait, then nothing.
        assert!(engine.receive().unwrap().is_none());
        assert!(!engine.settled());
        let taken = deliver_gpu(&deliver, "gaussian:size=3");
        out.extend(submit_all(&mut engine, 6..20));
        assert!(engine.settled());
        assert_eq!(
            (engine.name(), engine.device(), engine.capacity()),
            ("gpu".into(), "gpu:0".into(), 3)
        );
        out.extend(finish(&mut engine));
        assert_in_order_and_right(&out, "gaussian:size=3", 20);
        assert_eq!(
            taken.load(Ordering::Relaxed),
            19,
            "every frame after the first went to the GPU"
        );
    }

    #[test]
    fn held_frames_drain_a_few_for_each_new_frame_once_the_gpu_is_ready() {
        let (mut engine, deliver) = starting("box:size=3", false, 100);
        let mut out = submit_all(&mut engine, 0..41);
        assert_eq!(engine.in_flight(), 40);
        deliver_gpu(&deliver, "box:size=3");
        let mut handed_on = Vec::new();
        for index in 41..60 {
            let before = out.len();
            out.extend(submit_all(&mut engine, index..index + 1));
            handed_on.push(out.len() - before);
        }
        out.extend(finish(&mut engine));
        assert_in_order_and_right(&out, "box:size=3", 60);
        // While frames are held, each new one hands on several (not all at once, which would
        // stop the decoder for the whole backlog), then one for one.
        assert!(
            handed_on[..8].iter().all(|&n| (2..=DRAIN_PER_FRAME + 1).contains(&n)),
            "{handed_on:?}"
        );
        assert!(handed_on[15..].iter().all(|&n| n == 1), "{handed_on:?}");
    }

    #[test]
    fn frames_past_the_memory_limit_are_filtered_on_the_cpu_oldest_first() {
        let (mut engine, deliver) = starting("sharpen", false, 3);
        let mut out = submit_all(&mut engine, 0..8);
        // Frame 0 at once; of 1..8, the four oldest went to the CPU as the limit was passed.
        assert_eq!(out.iter().map(|f| f.index).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(engine.in_flight(), 3);
        let taken = deliver_gpu(&deliver, "sharpen");
        out.extend(submit_all(&mut engine, 8..10));
        out.extend(finish(&mut engine));
        assert_in_order_and_right(&out, "sharpen", 10);
        assert_eq!(taken.load(Ordering::Relaxed), 5, "frames 5..10");
    }

    #[test]
    fn holding_nothing_filters_every_frame_on_the_cpu_until_the_gpu_is_ready() {
        let (mut engine, deliver) = starting("sharpen", false, 0);
        let mut out = submit_all(&mut engine, 0..5);
        assert_eq!(out.len(), 5, "each frame handed on as it is filtered");
        assert_eq!(engine.in_flight(), 0);
        let taken = deliver_gpu(&deliver, "sharpen");
        out.extend(submit_all(&mut engine, 5..9));
        out.extend(finish(&mut engine));
        assert_in_order_and_right(&out, "sharpen", 9);
        assert_eq!(taken.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_clip_that_ends_before_the_gpu_is_ready_is_filtered_on_the_cpu() {
        let (mut engine, deliver) = starting("emboss", false, 100);
        let mut out = submit_all(&mut engine, 0..5);
        out.extend(finish(&mut engine));
        assert_in_order_and_right(&out, "emboss", 5);
        assert_eq!(engine.name(), "cpu (the GPU still starting)");
        drop(deliver);
    }

    #[test]
    fn a_filter_set_before_the_gpu_arrives_is_the_one_it_applies() {
        let (mut engine, deliver) = starting("gaussian:size=3", false, 100);
        let mut out = submit_all(&mut engine, 0..2);
        out.extend(finish(&mut engine));
        engine.set_filter(filter("sharpen")).unwrap();
        let taken = deliver_gpu(&deliver, "gaussian:size=3");
        let after = submit_all(&mut engine, 2..6).into_iter().chain(finish(&mut engine));
        assert!(engine.settled());
        assert_eq!(taken.load(Ordering::Relaxed), 4);
        for frame_out in after {
            let expected = CpuEngine::filter_frame(&filter("sharpen"), &frame(frame_out.index));
            assert_eq!(frame_out.planes, expected.planes, "frame {}", frame_out.index);
        }
    }

    /// A missing GPU whose message says `none here`.
    fn none_here() -> EngineError {
        EngineError::NoGpu {
            reason: NoGpuReason::InitFailed {
                detail: "none here".into(),
            },
        }
    }

    #[test]
    fn a_missing_gpu_keeps_the_cpu_engine_when_allowed_and_fails_the_run_otherwise() {
        // Frames held before the GPU turns out missing are filtered on the CPU, in order.
        let (mut allowed, deliver) = starting("box:size=3", true, 100);
        let mut out = submit_all(&mut allowed, 0..4);
        deliver.send(Err(none_here())).unwrap();
        out.extend(submit_all(&mut allowed, 4..9));
        out.extend(finish(&mut allowed));
        assert_in_order_and_right(&out, "box:size=3", 9);
        assert!(allowed.settled());
        assert_eq!(allowed.name(), "cpu");

        let (mut strict, deliver) = starting("box:size=3", false, 100);
        deliver.send(Err(none_here())).unwrap();
        let error = strict.submit(frame(0)).unwrap_err();
        assert!(error.to_string().contains("none here"), "{error}");

        let (mut failing, deliver) = starting("box:size=3", true, 100);
        let too_big = UnsupportedRequest::SharedMemory {
            variant: "a kernel that does not fit".into(),
            needed: 2 << 20,
            device: "GPU".into(),
            allowed: 1 << 20,
        };
        deliver
            .send(Err(EngineError::Unsupported { request: too_big }))
            .unwrap();
        assert!(failing.submit(frame(0)).is_err(), "only a missing GPU falls back");

        // A clip over before the GPU answers: the CPU gave every frame, and the GPU's
        // answer still decides the run when it was asked for by name.
        let (mut short_strict, deliver) = starting("box:size=3", false, 100);
        let out = submit_all(&mut short_strict, 0..3)
            .into_iter()
            .chain(finish(&mut short_strict));
        assert_in_order_and_right(&out.collect::<Vec<_>>(), "box:size=3", 3);
        let answer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            deliver.send(Err(none_here())).unwrap();
        });
        let error = short_strict.finish().unwrap_err();
        assert!(error.to_string().contains("none here"), "{error}");
        answer.join().unwrap();
        let (mut short_allowed, deliver) = starting("box:size=3", true, 100);
        let out = submit_all(&mut short_allowed, 0..3)
            .into_iter()
            .chain(finish(&mut short_allowed));
        assert_eq!(out.count(), 3);
        deliver.send(Err(none_here())).unwrap();
        short_allowed.finish().unwrap();

        let (mut orphaned, deliver) = starting("box:size=3", true, 100);
        drop(deliver);
        assert!(matches!(orphaned.submit(frame(0)), Err(EngineError::Internal { .. })));
    }
}

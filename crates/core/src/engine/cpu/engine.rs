//! The CPU engine itself ([`CpuEngine`]): each frame filtered on `submit`, plane by plane
//! with its own mask, and handed back in order; traced and timed when asked.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::convolve::convolve_plane;
use crate::engine::contract::{Engine, StageTimes};
use crate::engine::error::EngineError;
use crate::engine::trace::{TraceSpan, CPU_STAGE};
use crate::filter::FilterSpec;
use crate::frame::Frame;

/// Filters each frame synchronously on `submit`; `receive` hands them back in order.
pub struct CpuEngine {
    filter: FilterSpec,
    done: VecDeque<(Frame, Duration)>,
    last_time: Option<Duration>,
    /// When tracing: the engine's start, which span times count from, and the spans.
    trace: Option<(Instant, Vec<TraceSpan>)>,
}

impl CpuEngine {
    /// An engine applying `filter`.
    pub fn new(filter: FilterSpec) -> CpuEngine {
        CpuEngine {
            filter,
            done: VecDeque::new(),
            last_time: None,
            trace: None,
        }
    }

    /// The same engine, recording each frame's filtering for a Chrome trace
    /// ([`Engine::take_trace`]), as the CUDA engine records its stages.
    pub fn traced(self) -> CpuEngine {
        CpuEngine {
            trace: Some((Instant::now(), Vec::new())),
            ..self
        }
    }

    /// Filters one frame: each plane with its mask (see [`FilterSpec::mask_for`]); planes
    /// without one, or whose mask is the identity, are copied.
    pub fn filter_frame(filter: &FilterSpec, frame: &Frame) -> Frame {
        let planes = frame
            .planes
            .iter()
            .enumerate()
            .map(|(i, plane)| match filter.mask_for(frame.format, i) {
                Some(mask) if !mask.is_identity() => convolve_plane(plane, mask, filter.border),
                _ => plane.clone(),
            })
            .collect();
        frame.with_planes(planes)
    }
}

impl CpuEngine {
    /// Whether every plane of `frame` comes out of `filter` as it went in.
    fn changes_nothing(filter: &FilterSpec, frame: &Frame) -> bool {
        (0..frame.planes.len()).all(|i| filter.mask_for(frame.format, i).is_none_or(|mask| mask.is_identity()))
    }
}

impl Engine for CpuEngine {
    fn name(&self) -> String {
        "cpu".to_string()
    }
    fn capacity(&self) -> usize {
        1
    }
    fn in_flight(&self) -> usize {
        self.done.len()
    }
    fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
        if frame.device.is_some() {
            // Only an engine that says so (`device_pictures_on`) is given such frames.
            return Err(EngineError::Internal {
                what: "a picture in GPU memory was given to the CPU engine".into(),
            });
        }
        let started = Instant::now();
        // A filter that changes no plane (no mask, the identity) hands the frame on as it
        // came: no pass and no copy.
        let mut filtered = if CpuEngine::changes_nothing(&self.filter, &frame) {
            frame
        } else {
            CpuEngine::filter_frame(&self.filter, &frame)
        };
        // Filtered in place of queueing: the engine's part is the filtering itself, from
        // `started` (its work begins as soon as it is handed over) to `done`.
        let done = Instant::now();
        if let Some((origin, spans)) = &mut self.trace {
            spans.push(TraceSpan {
                stream: 0,
                frame: filtered.index,
                stage: CPU_STAGE,
                start_us: started.saturating_duration_since(*origin).as_secs_f64() * 1e6,
                duration_us: (done - started).as_secs_f64() * 1e6,
            });
        }
        filtered.timeline.enqueued = Some(started);
        filtered.timeline.finished = Some(done);
        self.done.push_back((filtered, done - started));
        Ok(())
    }
    fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
        Ok(self.done.pop_front().map(|(frame, time)| {
            self.last_time = Some(time);
            frame
        }))
    }
    fn device(&self) -> String {
        "cpu".to_string()
    }
    fn last_stage_times(&self) -> Option<StageTimes> {
        self.last_time.map(|filter| StageTimes::Cpu { filter })
    }
    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
        self.filter = filter;
        Ok(())
    }
    fn take_trace(&mut self) -> Vec<TraceSpan> {
        self.trace
            .as_mut()
            .map(|(_, spans)| std::mem::take(spans))
            .unwrap_or_default()
    }
}

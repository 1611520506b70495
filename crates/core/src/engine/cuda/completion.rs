//! The lane protocol and the completion thread. A frame takes a free lane as a
//! [`LaneTicket`], which holds the lane and the frame for as long as GPU work for them may be
//! queued; the completion thread waits on lanes in submission order, copies each frame out,
//! reads its stage timings and puts the lane back on the free list.

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use cudarc::driver::CudaEvent;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::engine_error::CudaResultExt;
use super::lanes::{Lane, Layout, PlaneRoutes};
use super::plan::FilterKernels;
use crate::engine::{EngineError, StageTimes, TraceSpan};
use crate::frame::{Frame, Plane};

/// A lane taken from the free list for one frame, with the frame. GPU work queued on the
/// lane's stream reads and writes the lane's buffers and the frame's memory, so neither may
/// be reused or freed until that work is done. The completion thread [`release`]s the ticket
/// after waiting for the lane's done event; a ticket dropped any other way (an enqueue that
/// failed half way, a completion thread gone, a panic) first waits for the lane's stream,
/// then puts the lane back on the free list and lets the frame go.
///
/// [`release`]: LaneTicket::release
pub struct LaneTicket {
    /// Both `Some` until the ticket is released or dropped.
    lane: Option<Lane>,
    frame: Option<Frame>,
    /// Planes the frame gave up for fresh ones that take its results (planes lent
    /// read-only, such as a decoder's pictures) while the lane's upload may still read them.
    held: Vec<Plane>,
    free_lanes: Sender<Lane>,
}

impl LaneTicket {
    /// The lane, the frame and the planes held for the lane's copies, to queue the frame's
    /// work or to finish it.
    pub fn parts(&mut self) -> (&mut Lane, &mut Frame, &mut Vec<Plane>) {
        match (self.lane.as_mut(), self.frame.as_mut()) {
            (Some(lane), Some(frame)) => (lane, frame, &mut self.held),
            _ => unreachable!("a ticket holds its lane and frame until it is released"),
        }
    }

    /// The lane and the frame, once the lane's done event has completed (or failed): nothing
    /// of theirs is queued any more.
    fn release(mut self) -> (Lane, Frame) {
        match (self.lane.take(), self.frame.take()) {
            (Some(lane), Some(frame)) => (lane, frame),
            _ => unreachable!("a ticket holds its lane and frame until it is released"),
        }
    }
}

impl Drop for LaneTicket {
    fn drop(&mut self) {
        let Some(lane) = self.lane.take() else { return };
        // Part of the frame's work may be queued: let it finish before the lane is reused
        // and before the frame's memory is released (the frame and held planes drop after this).
        let _ = lane.stream.synchronize();
        // A closed channel means the engine is gone; the lane is dropped with it.
        let _ = self.free_lanes.send(lane);
    }
}

/// A frame on its lane, on its way to the completion thread. It holds the kernels it was
/// enqueued with, so they stay loaded until the frame is done even if the filter changes.
pub struct InFlight {
    pub ticket: LaneTicket,
    pub routes: PlaneRoutes,
    pub layout: Arc<Layout>,
    /// Held, never read: keeps the kernels the frame was enqueued with loaded.
    pub _kernels: Arc<FilterKernels>,
    pub origin: Option<Arc<CudaEvent>>,
}

/// A finished frame (or the error that stopped it), with its stage timings.
pub struct Finished {
    pub frame: Result<Frame, EngineError>,
    pub spans: Vec<TraceSpan>,
    pub stages: Option<StageTimes>,
    pub copy_out: Duration,
}

/// The completion thread and the channels around it.
pub struct Completion {
    jobs: Option<Sender<InFlight>>,
    finished: Receiver<Finished>,
    free_lanes: Receiver<Lane>,
    /// Where tickets put their lane back.
    return_lane: Sender<Lane>,
    thread: Option<JoinHandle<()>>,
}

/// What the engine answers when its completion thread is gone: a bug, not a request's fault.
fn stopped() -> EngineError {
    EngineError::Internal {
        what: "the GPU completion thread stopped".into(),
    }
}

impl Completion {
    /// Starts the thread with every lane free. It polls a lane's done event for `spin`
    /// before blocking on it (see [`crate::engine::GpuTuning::spin_us`]).
    pub fn start(lanes: Vec<Lane>, pipeline: &str, spin: Duration) -> Result<Completion, EngineError> {
        let (jobs_tx, jobs_rx) = unbounded::<InFlight>();
        let (finished_tx, finished_rx) = unbounded::<Finished>();
        let (free_tx, free_rx) = bounded::<Lane>(lanes.len());
        for lane in lanes {
            let _ = free_tx.send(lane);
        }
        let return_lane = free_tx.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{pipeline}-gpu-done"))
            .spawn(move || {
                for job in jobs_rx {
                    let (finished, lane) = complete(job, spin);
                    // Closed channels mean the engine is gone; the lane is dropped with it.
                    let _ = finished_tx.send(finished);
                    let _ = free_tx.send(lane);
                }
            })
            .map_err(|e| EngineError::Internal {
                what: format!("cannot start the GPU completion thread: {e}"),
            })?;
        Ok(Completion {
            jobs: Some(jobs_tx),
            finished: finished_rx,
            free_lanes: free_rx,
            return_lane,
            thread: Some(thread),
        })
    }

    /// The next free lane for `frame`; waits while every lane is busy. A lane is free once
    /// the completion thread has copied its last frame out.
    pub fn take_lane(&self, frame: Frame) -> Result<LaneTicket, EngineError> {
        let lane = self.free_lanes.recv().map_err(|_| stopped())?;
        Ok(LaneTicket {
            lane: Some(lane),
            frame: Some(frame),
            held: Vec::new(),
            free_lanes: self.return_lane.clone(),
        })
    }

    /// Hands a frame whose work is queued to the completion thread.
    pub fn send(&self, job: InFlight) -> Result<(), EngineError> {
        // A job that cannot be sent is dropped here, and its ticket waits for its lane.
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if sent {
            Ok(())
        } else {
            Err(stopped())
        }
    }

    /// The oldest frame sent, once it is finished.
    pub fn receive(&self) -> Result<Finished, EngineError> {
        self.finished.recv().map_err(|_| stopped())
    }

    /// Stops the thread once it has finished the frames already queued (each waits for its
    /// lane's GPU work), so no buffer is freed while the GPU may still use it.
    pub fn stop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits for a frame's lane, copies its filtered planes out and reads its stage timings.
/// The lane always comes back, even if copying panics (the frame then fails).
fn complete(job: InFlight, spin: Duration) -> (Finished, Lane) {
    let InFlight {
        mut ticket,
        routes,
        layout,
        origin,
        ..
    } = job;
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        finish_frame(&mut ticket, &routes, &layout, origin, spin)
    }));
    // Waited for (or failed waiting): nothing of the lane's or the frame's is queued now.
    let (lane, frame) = ticket.release();
    let (result, spans) = outcome.unwrap_or_else(|_| {
        let error = EngineError::Internal {
            what: format!("lane {}: copying a frame out of pinned memory panicked", lane.index),
        };
        (Err(error), Vec::new())
    });
    let frame = result.map(|()| frame);
    let stages = frame.as_ref().ok().and_then(|_| lane_stage_times(&lane));
    (
        Finished {
            frame,
            spans,
            stages,
            copy_out: started.elapsed(),
        },
        lane,
    )
}

fn finish_frame(
    ticket: &mut LaneTicket,
    routes: &PlaneRoutes,
    layout: &Layout,
    origin: Option<Arc<CudaEvent>>,
    spin: Duration,
) -> (Result<(), EngineError>, Vec<TraceSpan>) {
    let (lane, frame, _) = ticket.parts();
    let index = lane.index;
    let what = || format!("lane {index}, frame {}: waiting for the GPU", frame.index);
    let result = wait_for(&lane.events.done, spin).context(what);
    frame.timeline.finished = Some(Instant::now());
    if result.is_ok() {
        lane.drain_output(layout, frame, routes);
        // The host planes hold the whole picture now: give the decoder its surface back.
        frame.device = None;
    }
    let spans = match (&result, origin) {
        (Ok(()), Some(origin)) => lane_spans(lane, &origin, frame.index).unwrap_or_default(),
        _ => Vec::new(),
    };
    (result, spans)
}

/// Waits for `event`: polls it (yielding the core between polls, so decoder threads that
/// want it get it) for `spin`, then blocks.
fn wait_for(event: &CudaEvent, spin: Duration) -> Result<(), cudarc::driver::DriverError> {
    let started = Instant::now();
    while started.elapsed() < spin {
        if event.try_is_complete()? {
            return Ok(());
        }
        std::thread::yield_now();
    }
    event.synchronize()
}

/// The upload, kernel and download stages of the frame a lane just finished.
fn lane_spans(lane: &Lane, origin: &CudaEvent, frame: u64) -> Result<Vec<TraceSpan>, cudarc::driver::DriverError> {
    let events = &lane.events;
    let (Some(start), Some(uploaded), Some(filtered)) = (&events.start, &events.uploaded, &events.filtered) else {
        return Ok(Vec::new());
    };
    let at = |event: &CudaEvent| origin.elapsed_ms(event).map(|ms| ms as f64 * 1e3);
    let stamps = [at(start)?, at(uploaded)?, at(filtered)?, at(&events.done)?];
    Ok(["upload", "kernels", "download"]
        .into_iter()
        .zip(stamps.windows(2))
        .map(|(stage, pair)| TraceSpan {
            stream: lane.stream_index,
            frame,
            stage,
            start_us: pair[0],
            duration_us: pair[1] - pair[0],
        })
        .collect())
}

/// How long the upload, kernels and download of a lane's last frame took on the GPU (None
/// when the lane records no timing events).
fn lane_stage_times(lane: &Lane) -> Option<StageTimes> {
    let events = &lane.events;
    let (start, uploaded, filtered) = (
        events.start.as_ref()?,
        events.uploaded.as_ref()?,
        events.filtered.as_ref()?,
    );
    let between = |from: &CudaEvent, to: &CudaEvent| {
        from.elapsed_ms(to)
            .ok()
            .map(|ms| Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    };
    Some(StageTimes::Gpu {
        upload: between(start, uploaded)?,
        kernels: between(uploaded, filtered)?,
        download: between(filtered, &events.done)?,
    })
}

/// Time the CPU spent on frames: staging copies plus enqueueing on the way in, waiting and
/// staging copies on the way out.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostCopyTimes {
    /// Frames counted.
    pub frames: u64,
    /// Staging copies and enqueueing on the way in, summed.
    pub copy_in: Duration,
    /// Waiting and staging copies on the way out, summed.
    pub copy_out: Duration,
}

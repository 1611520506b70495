//! The filter stage: keeps the engine's lanes full, passes frames on in order, and applies
//! live filter switches between two frames.

use convstream_core::IDLE_WINDOW;
use crossbeam_channel::{never, select, Receiver, Sender, TryRecvError};
use std::time::Instant;

use super::held_up::HeldUpFrames;
use super::monitor::{EngineStatus, FilterSwitch, PipelineMonitor};
use crate::stats::{Counters, FrameLatency, StartupMarks};
use convstream_core::Frame;
use convstream_core::{Engine, EngineError, StageTimes, TraceSpan};

/// Runs until the decoded queue closes (or the sink is gone), then drains the engine.
pub fn run_engine(
    mut engine: Box<dyn Engine>,
    decoded: &Receiver<Frame>,
    filtered: &Sender<Frame>,
    monitor: &PipelineMonitor,
    switches: Receiver<FilterSwitch>,
) -> Result<Vec<TraceSpan>, EngineError> {
    let counters = &monitor.counters;
    let mut switches = switches;
    // The index the next submitted frame will have at the earliest: where a switch applies.
    let mut next_index = 0u64;
    // An engine that starts on the CPU says when it has gone over to the GPU: the monitor
    // then shows the GPU's engine (and its preparer for filter switches).
    let mut settled = engine.settled();
    let mut pool_seen = PoolTally::default();
    let mut held_up = HeldUpFrames::default();
    loop {
        note_settled(engine.as_ref(), &mut settled, monitor);
        pool_seen.add_news(engine.as_ref(), counters);
        // Switches waiting go first, so one never waits behind a busy input.
        while let Ok(switch) = switches.try_recv() {
            apply_switch(&mut engine, switch, next_index, filtered, monitor, &mut held_up)?;
        }
        let next = match decoded.try_recv() {
            Ok(frame) => Some(frame),
            Err(TryRecvError::Disconnected) => break,
            // Frames in flight and none waiting (a live or paced input): hand on the oldest
            // instead of holding it until more arrive.
            Err(TryRecvError::Empty) if engine.in_flight() > 0 => None,
            Err(TryRecvError::Empty) => select! {
                recv(decoded) -> frame => match frame {
                    Ok(frame) => Some(frame),
                    Err(_) => break,
                },
                recv(switches) -> switch => {
                    match switch {
                        Ok(switch) => apply_switch(&mut engine, switch, next_index, filtered, monitor, &mut held_up)?,
                        // Nobody can switch any more: stop listening.
                        Err(_) => switches = never(),
                    }
                    continue;
                },
                // No frame for a while (a live input with no sender, a stalled source): the
                // frame pool's idle buffers go back now, as no frame will give it the chance.
                default(IDLE_WINDOW) => {
                    if let Some(pool) = engine.frame_pool() {
                        pool.release_idle();
                        Counters::set(&counters.ordinary_pool_bytes, pool.ordinary_bytes() as u64);
                    }
                    Counters::set(&counters.pinned_bytes, engine.pinned_bytes() as u64);
                    continue;
                },
            },
        };
        match next {
            Some(mut frame) => {
                next_index = frame.index + 1;
                let started = Instant::now();
                frame.timeline.submitted = Some(started);
                monitor.snapshots.input.offer(&frame);
                engine.submit(frame)?;
                Counters::add_time(&counters.filter_busy_ns, started.elapsed());
                while engine.in_flight() >= engine.capacity() {
                    if !forward(&mut engine, filtered, monitor, &mut held_up)? {
                        return Ok(engine.take_trace()); // the sink is gone; upstream stops on its own
                    }
                }
            }
            None => {
                if !forward(&mut engine, filtered, monitor, &mut held_up)? {
                    return Ok(engine.take_trace());
                }
            }
        }
    }
    // Nothing more comes: frames an engine held back (for a GPU still starting) go now.
    engine.input_ended();
    while engine.in_flight() > 0 {
        if !forward(&mut engine, filtered, monitor, &mut held_up)? {
            break;
        }
    }
    // A GPU asked for by name that turned out missing fails the run, even when the input
    // ended before it answered.
    engine.finish()?;
    note_settled(engine.as_ref(), &mut settled, monitor);
    Ok(engine.take_trace())
}

/// What the engine's frame pool had counted when last looked at: the pipeline's counters
/// get what it counted since, so they never go back when a restarted pipeline's new
/// engine begins a new pool.
#[derive(Default)]
struct PoolTally {
    allocations: u64,
    releases: u64,
    fallbacks: u64,
}

impl PoolTally {
    fn add_news(&mut self, engine: &dyn Engine, counters: &Counters) {
        let Some(pool) = engine.frame_pool() else { return };
        let now = PoolTally {
            allocations: pool.allocations(),
            releases: pool.releases(),
            fallbacks: pool.fallbacks(),
        };
        Counters::add(
            &counters.pool_allocations,
            now.allocations.saturating_sub(self.allocations),
        );
        Counters::add(&counters.pool_releases, now.releases.saturating_sub(self.releases));
        Counters::add(&counters.pool_fallbacks, now.fallbacks.saturating_sub(self.fallbacks));
        *self = now;
    }
}

/// Shows the engine in the monitor once it has settled (see `Engine::settled`).
fn note_settled(engine: &dyn Engine, settled: &mut bool, monitor: &PipelineMonitor) {
    if !*settled && engine.settled() {
        *settled = true;
        StartupMarks::mark(&monitor.counters.startup.engine_settled);
        monitor.set_engine(
            EngineStatus {
                device: engine.device(),
                name: engine.name(),
            },
            engine.preparer(),
        );
    }
}

/// Receives the oldest frame in flight and sends it on. False when the sink is gone.
fn forward(
    engine: &mut Box<dyn Engine>,
    filtered: &Sender<Frame>,
    monitor: &PipelineMonitor,
    held_up: &mut HeldUpFrames,
) -> Result<bool, EngineError> {
    let counters = &monitor.counters;
    let started = Instant::now();
    let frame = engine.receive()?;
    let received_at = Instant::now();
    Counters::add_time(&counters.filter_busy_ns, received_at - started);
    let Some(frame) = frame else { return Ok(true) };
    Counters::add(&counters.frames_filtered, 1);
    let mut gpu_time = None;
    match engine.last_stage_times() {
        Some(StageTimes::Gpu {
            upload,
            kernels,
            download,
        }) => {
            Counters::observe(&counters.stages.upload, upload);
            Counters::observe(&counters.stages.gpu, kernels);
            Counters::observe(&counters.stages.download, download);
            gpu_time = Some(upload + kernels + download);
        }
        Some(StageTimes::Cpu { filter }) => Counters::observe(&counters.stages.cpu_filter, filter),
        None => {}
    }
    if let Some(latency) = FrameLatency::of(frame.index, &frame.timeline, gpu_time, received_at) {
        if let Some(held) = held_up.note(&latency, engine.settled(), || engine.device(), received_at) {
            Counters::add(&counters.frames_held_up, 1);
            if let Some(warning) = held.say {
                tracing::warn!("{warning}");
            }
        }
        counters.record_latency(latency);
    }
    Counters::set(&counters.pinned_bytes, engine.pinned_bytes() as u64);
    Counters::set(&counters.gpu_memory_bytes, engine.device_bytes() as u64);
    let ordinary = engine.frame_pool().map_or(0, |pool| pool.ordinary_bytes());
    Counters::set(&counters.ordinary_pool_bytes, ordinary as u64);
    monitor.snapshots.output.offer(&frame);
    let sent = filtered.send(frame).is_ok();
    Counters::set(&counters.filtered_queue, filtered.len() as u64);
    Ok(sent)
}

/// Finishes the frames in flight with the old filter, then switches: the new filter
/// applies from frame `next_index` on, exactly. The kernels were compiled beforehand (off
/// this thread), so the pause is the in-flight frames plus loading a module.
fn apply_switch(
    engine: &mut Box<dyn Engine>,
    switch: FilterSwitch,
    next_index: u64,
    filtered: &Sender<Frame>,
    monitor: &PipelineMonitor,
    held_up: &mut HeldUpFrames,
) -> Result<(), EngineError> {
    let started = Instant::now();
    while engine.in_flight() > 0 {
        if !forward(engine, filtered, monitor, held_up)? {
            break;
        }
    }
    let description = switch.filter.description();
    let result = match engine.set_filter(switch.filter.clone()) {
        Ok(()) => {
            monitor.set_filter(&switch.filter);
            tracing::info!(
                "filter switched to {description} from frame {next_index} ({:.1} ms)",
                started.elapsed().as_secs_f64() * 1e3
            );
            Ok(next_index)
        }
        Err(e) => {
            tracing::warn!("filter switch to {description} refused: {e}");
            Err(e)
        }
    };
    // The requester may have given up waiting; the switch stands either way.
    let _ = switch.reply.send(result);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_core::FilterSpec;
    use convstream_core::{BufferPool, HeapMemory};
    use std::sync::Arc;

    /// An engine that only has a frame pool: what the tally reads.
    struct PoolOnly(Arc<BufferPool>);

    impl Engine for PoolOnly {
        fn name(&self) -> String {
            "pool only".into()
        }
        fn capacity(&self) -> usize {
            1
        }
        fn in_flight(&self) -> usize {
            0
        }
        fn submit(&mut self, _: Frame) -> Result<(), EngineError> {
            Ok(())
        }
        fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
            Ok(None)
        }
        fn set_filter(&mut self, _: FilterSpec) -> Result<(), EngineError> {
            Ok(())
        }
        fn device(&self) -> String {
            "cpu".into()
        }
        fn frame_pool(&self) -> Option<Arc<BufferPool>> {
            Some(self.0.clone())
        }
    }

    /// An engine that hands back each frame as it came, one at a time.
    #[derive(Default)]
    struct PassThrough(Option<Frame>);

    impl Engine for PassThrough {
        fn name(&self) -> String {
            "pass-through".into()
        }
        fn capacity(&self) -> usize {
            1
        }
        fn in_flight(&self) -> usize {
            usize::from(self.0.is_some())
        }
        fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
            self.0 = Some(frame);
            Ok(())
        }
        fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
            Ok(self.0.take())
        }
        fn set_filter(&mut self, _: FilterSpec) -> Result<(), EngineError> {
            Ok(())
        }
        fn device(&self) -> String {
            "cpu".into()
        }
    }

    #[test]
    fn a_frame_a_second_or_more_from_decoded_to_filtered_is_counted_held_up() {
        use super::super::held_up::START_GRACE;
        use convstream_core::PixelFormat;
        use std::time::Duration;
        let identity = convstream_core::Mask::from_spec("identity").expect("a preset");
        let filter = FilterSpec::uniform(identity, Default::default(), Default::default());
        let monitor = PipelineMonitor::new("held", &filter);
        let (filtered_tx, filtered_rx) = crossbeam_channel::unbounded();
        let mut engine: Box<dyn Engine> = Box::<PassThrough>::default();
        let mut held_up = HeldUpFrames::settled_at(Instant::now() - START_GRACE);
        for decoded_ago in [1_500, 0, 2_500] {
            let mut frame = Frame::new(PixelFormat::GRAY8, 4, 2);
            frame.timeline.decoded = Instant::now().checked_sub(Duration::from_millis(decoded_ago));
            engine.submit(frame).unwrap();
            assert!(forward(&mut engine, &filtered_tx, &monitor, &mut held_up).unwrap());
        }
        assert_eq!(filtered_rx.len(), 3, "every frame goes on");
        assert_eq!(monitor.counters.snapshot().frames_held_up, 2);
        // A pipeline that has just started is not watched: its first frames are slow by design.
        let starting = PipelineMonitor::new("starting", &filter);
        let mut frame = Frame::new(PixelFormat::GRAY8, 4, 2);
        frame.timeline.decoded = Instant::now().checked_sub(Duration::from_millis(2_500));
        run_as_first_frame(frame, &starting);
        assert_eq!(starting.counters.snapshot().frames_held_up, 0);
    }

    /// Runs one frame through a fresh filter stage, as a pipeline's first.
    fn run_as_first_frame(frame: Frame, monitor: &PipelineMonitor) {
        let (decoded_tx, decoded_rx) = crossbeam_channel::unbounded();
        let (filtered_tx, _filtered_rx) = crossbeam_channel::unbounded();
        let (_switch_tx, switch_rx) = crossbeam_channel::unbounded();
        decoded_tx.send(frame).unwrap();
        drop(decoded_tx);
        run_engine(
            Box::<PassThrough>::default(),
            &decoded_rx,
            &filtered_tx,
            monitor,
            switch_rx,
        )
        .unwrap();
    }

    #[test]
    fn the_pipelines_pool_counters_add_what_each_engines_pool_counted_since_last_seen() {
        let counters = Counters::default();
        let first = PoolOnly(BufferPool::new(Box::new(HeapMemory), 250));
        let mut seen = PoolTally::default();
        let lent: Vec<_> = (0..3).map(|_| first.0.take(100)).collect();
        seen.add_news(&first, &counters);
        seen.add_news(&first, &counters);
        let read = |c: &Counters| {
            let s = c.snapshot();
            (s.pool_allocations, s.pool_releases, s.pool_fallbacks)
        };
        assert_eq!(
            read(&counters),
            (2, 0, 1),
            "two pooled, one past the limit; counted once"
        );
        drop(lent);
        // A restarted pipeline's new engine starts a new pool (and a new tally): the
        // counters go on from where they were.
        let second = PoolOnly(BufferPool::new(Box::new(HeapMemory), 1000));
        let mut seen = PoolTally::default();
        drop(second.0.take(100));
        seen.add_news(&second, &counters);
        assert_eq!(read(&counters), (3, 0, 1));
    }
}

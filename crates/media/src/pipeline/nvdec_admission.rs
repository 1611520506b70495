//! Admission of NVDEC pipelines over every GPU of the host. A GPU's NVDEC engines carry only
//! so many live streams; one more makes every pipeline on them fall behind and drop frames,
//! where before it each kept its rate. So a pipeline asking for NVDEC takes a seat first, in
//! ONE step under one lock: `cuda:N` a seat on GPU N, `auto`/`cuda` a seat on whichever GPU
//! has one free and the fewest NVDEC pipelines (ties: the fewest filter engines), reserved at
//! once so pipelines starting together spread over the GPUs. Its decoder and engine then run
//! on that GPU. Past every seat it waits (saying why; stopping ends the wait) instead of
//! slowing the others, and takes the first seat given back on any GPU it may use.
//!
//! Each GPU's seats, strongest first: the operator's figure for every GPU (`[server]
//! nvdec_seats_per_gpu`: [`SeatBoard::set_seats_per_gpu`]); what this process learned
//! (below); what was measured for its model (`[server] nvdec_seats_file`, which `bench
//! --suite scale` or the service itself writes: [`SeatBoard::set_measured_seats`]); else
//! the prediction of `engine::nvdec_capacity`, what one such GPU alone sustains. The
//! prediction is a start, not the host's truth: GPUs of one host share one NVDEC ceiling.
//! So admission learns (`pace`): it admits while every seated real-time pipeline keeps its
//! pace, holds while one is behind, and once one fell behind, lowers each GPU's seats to the
//! pipelines' worth of frames its NVDEC kept (never above those seated then): no pipeline is
//! admitted there until enough end. What it learned goes to whoever listens
//! ([`SeatBoard::on_learned`]: the service keeps it in the seats file) and into the reason
//! `/readyz` gives for pipelines waiting.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub use convstream_core::GpuNvdec;

use convstream_config::MeasuredSeats;

mod learned;
mod pace;

pub use learned::{GpuLearned, Learned};
pub use pace::{PaceGauge, PaceReading};

/// Which GPU's seat a pipeline may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeatWanted {
    /// `auto` or `cuda`: any GPU's.
    AnyGpu,
    /// `cuda:N`: GPU N's only.
    Gpu(usize),
}

/// One GPU's seats as the board counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSeats {
    /// The GPU's CUDA ordinal.
    pub ordinal: usize,
    /// NVDEC pipelines seated on it now.
    pub taken: usize,
    /// `None`: unknown, so no limit.
    pub capacity: Option<usize>,
    /// Where the capacity comes from.
    pub source: SeatSource,
}

/// Where a GPU's NVDEC seats come from, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeatSource {
    /// `[server] nvdec_seats_per_gpu`.
    Set,
    /// Learned by this process: its NVDEC pipelines fell behind with more seated.
    Learned,
    /// `[server] nvdec_seats_file`, measured for the GPU's model.
    Measured,
    /// The GPU's NVDEC engines times a per-engine figure.
    Predicted,
    /// None of these: every pipeline is admitted.
    Unknown,
}

impl SeatSource {
    /// How the API, metrics and `doctor` name it.
    pub fn as_str(self) -> &'static str {
        match self {
            SeatSource::Set => "set",
            SeatSource::Learned => "learned",
            SeatSource::Measured => "measured",
            SeatSource::Predicted => "predicted",
            SeatSource::Unknown => "unknown",
        }
    }
}

/// A GPU's seats and where the figure comes from: the operator's setting, else what this
/// process learned, else the measured seats of its model, else the prediction.
pub fn seats_of(
    gpu: &GpuNvdec,
    set: Option<usize>,
    learned: Option<usize>,
    measured: Option<&MeasuredSeats>,
) -> (Option<usize>, SeatSource) {
    if let Some(seats) = set {
        return (Some(seats), SeatSource::Set);
    }
    if let Some(seats) = learned {
        return (Some(seats), SeatSource::Learned);
    }
    if let Some(seats) = measured.and_then(|m| m.seats_for(gpu.model.as_deref())) {
        return (Some(seats), SeatSource::Measured);
    }
    match gpu.nvdec_capacity {
        Some(seats) => (Some(seats), SeatSource::Predicted),
        None => (None, SeatSource::Unknown),
    }
}

#[derive(Debug, Default)]
struct Board {
    /// Seats taken per GPU ordinal, and each GPU's capacity as last told.
    gpus: BTreeMap<usize, GpuSeats>,
    /// Pipelines waiting for a seat now.
    waiting: usize,
    /// Seats per GPU the operator set, in place of the measured seats and the prediction.
    seats_per_gpu: Option<usize>,
    /// Seats measured per GPU model, in place of the prediction.
    measured: Option<MeasuredSeats>,
    /// Seats learned per GPU ordinal by this process, in place of the measured ones.
    learned: BTreeMap<usize, usize>,
    /// The last thing learned, for the reason pipelines wait.
    last_learned: Option<Learned>,
    /// Each GPU's model, as the inventory last named it.
    models: BTreeMap<usize, Option<String>>,
    /// The pace of the seated pipelines that show one.
    judge: pace::PaceJudge,
    /// The number of the next seat taken.
    next_seat: u64,
    /// Told of each thing learned, outside the lock.
    on_learned: Listener,
    /// Whether a thread looks at the pace of the seated pipelines.
    watching: bool,
}

/// Whoever is told what admission learned (the service: it keeps it in the seats file).
pub type LearnedListener = dyn Fn(&Learned) + Send + Sync;

#[derive(Clone, Default)]
struct Listener(Option<Arc<LearnedListener>>);

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Listener(set)"
        } else {
            "Listener(none)"
        })
    }
}

/// The NVDEC seats of a set of GPUs (the process's: [`SeatBoard::global`]).
#[derive(Debug, Default)]
pub struct SeatBoard {
    board: Mutex<Board>,
    freed: Condvar,
}

/// One pipeline's seat on a GPU's NVDEC engines, given back when dropped.
pub struct NvdecSeat {
    board: Arc<SeatBoard>,
    ordinal: usize,
    id: u64,
}

impl NvdecSeat {
    /// The GPU the seat is on: the pipeline's decoder and engine run there.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Shows the board this pipeline's pace from now on (a real-time input's): what
    /// admission learns the host's seats from.
    pub fn show_pace(&self, gauge: Arc<dyn PaceGauge>) {
        self.board.watch_seat(self, gauge, Instant::now());
        self.board.keep_watching();
    }
}

impl Drop for NvdecSeat {
    fn drop(&mut self) {
        let mut board = self.board.lock();
        if let Some(gpu) = board.gpus.get_mut(&self.ordinal) {
            gpu.taken = gpu.taken.saturating_sub(1);
        }
        board.judge.forget(self.id);
        self.board.freed.notify_all();
    }
}

impl Board {
    /// Each of `inventory`'s GPUs on the board, with its seats as now set, measured or
    /// predicted.
    fn refresh(&mut self, inventory: &[GpuNvdec]) {
        for gpu in inventory {
            self.models.insert(gpu.ordinal, gpu.model.clone());
            let learned = self.learned.get(&gpu.ordinal).copied();
            let (capacity, source) = seats_of(gpu, self.seats_per_gpu, learned, self.measured.as_ref());
            let seats = self.gpus.entry(gpu.ordinal).or_insert(GpuSeats {
                ordinal: gpu.ordinal,
                taken: 0,
                capacity,
                source,
            });
            seats.capacity = capacity;
            seats.source = source;
        }
    }

    /// Lowers the seats of each GPU whose own pipelines fell behind (kept less than their
    /// number by half a pipeline's worth or more) to what they kept: the pipelines' worth of
    /// frames the watched ones kept plus one for each pipeline not watched, rounded, at least
    /// 1, never more than were seated or than its seats already were. Nothing is learned while the operator sets the seats, or while a
    /// GPU holds more pipelines than its seats (that overload was judged already).
    fn learn(&mut self, paces: &[pace::GpuPace]) -> Option<Learned> {
        if self.seats_per_gpu.is_some() {
            return None;
        }
        let over = self
            .gpus
            .values()
            .any(|gpu| gpu.capacity.is_some_and(|capacity| gpu.taken > capacity));
        if over {
            return None;
        }
        let mut gpus = Vec::new();
        for gpu in self.gpus.values().filter(|gpu| gpu.taken > 0) {
            let (watched, kept) = paces
                .iter()
                .find(|pace| pace.ordinal == gpu.ordinal)
                .map_or((0, 0.0), |pace| (pace.watched, pace.kept));
            // A GPU whose own pipelines kept their pace (within half a pipeline's worth)
            // taught nothing: the one behind is elsewhere.
            if watched == 0 || kept > watched as f64 - 0.5 {
                continue;
            }
            let unwatched = gpu.taken.saturating_sub(watched);
            let worth = kept + unwatched as f64;
            let mut seats = ((worth + 0.5).floor() as usize).clamp(1, gpu.taken);
            if let Some(capacity) = gpu.capacity {
                seats = seats.min(capacity);
            }
            gpus.push(GpuLearned {
                ordinal: gpu.ordinal,
                model: self.models.get(&gpu.ordinal).cloned().flatten(),
                seated: gpu.taken,
                kept: worth,
                seats,
            });
        }
        if gpus.is_empty() {
            return None;
        }
        for gpu in &gpus {
            self.learned.insert(gpu.ordinal, gpu.seats);
            if let Some(seats) = self.gpus.get_mut(&gpu.ordinal) {
                seats.capacity = Some(gpu.seats);
                seats.source = SeatSource::Learned;
            }
        }
        let learned = Learned { gpus };
        self.last_learned = Some(learned.clone());
        Some(learned)
    }
}

/// How often the board looks at the pace of the seated pipelines.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How long a waiting pipeline sleeps between looks at its stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

impl SeatBoard {
    /// The process's board, shared by every pipeline.
    pub fn global() -> Arc<SeatBoard> {
        static GLOBAL: OnceLock<Arc<SeatBoard>> = OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(SeatBoard::default())).clone()
    }

    fn lock(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seats per GPU from now on: `Some(n)` for what the operator measured (every GPU
    /// seats `n`), `None` for each GPU's predicted capacity. Waiting pipelines look again.
    pub fn set_seats_per_gpu(&self, seats: Option<usize>) {
        let mut board = self.lock();
        board.seats_per_gpu = seats;
        if let Some(seats) = seats {
            for gpu in board.gpus.values_mut() {
                gpu.capacity = Some(seats);
                gpu.source = SeatSource::Set;
            }
        }
        drop(board);
        self.freed.notify_all();
    }

    /// Seats measured per GPU model from now on (`None`: none), used for the GPUs whose
    /// model they name unless seats per GPU are set. Takes effect at the next admission.
    pub fn set_measured_seats(&self, measured: Option<MeasuredSeats>) {
        self.lock().measured = measured;
        self.freed.notify_all();
    }

    /// Whoever is told what admission learns from now on (`None`: nobody).
    pub fn on_learned(&self, listener: Option<Arc<LearnedListener>>) {
        self.lock().on_learned = Listener(listener);
    }

    /// Looks at the pace of every seated pipeline that shows one as of `now`; when one fell
    /// behind, lowers the seats (see `Board::learn`) and returns what was learned. Waiting
    /// pipelines look again either way (a window on time ends a hold).
    pub fn look_at_pace(&self, now: Instant) -> Option<Learned> {
        let mut board = self.lock();
        let learned = board.judge.look(now).and_then(|paces| board.learn(&paces));
        drop(board);
        self.freed.notify_all();
        learned
    }

    /// Watches seat `seat`'s pace from `now` on, without a thread of its own to look.
    fn watch_seat(&self, seat: &NvdecSeat, gauge: Arc<dyn PaceGauge>, now: Instant) {
        self.lock().judge.watch(seat.id, seat.ordinal, gauge, now);
    }

    /// Starts the thread that looks at the seated pipelines' pace every [`LOOK_EVERY`],
    /// once per board; it ends with the board.
    fn keep_watching(self: &Arc<Self>) {
        let mut board = self.lock();
        if board.watching {
            return;
        }
        board.watching = true;
        drop(board);
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("nvdec-pace".into())
            .spawn(move || loop {
                std::thread::sleep(LOOK_EVERY);
                let Some(board) = weak.upgrade() else { return };
                if let Some(learned) = board.look_at_pace(Instant::now()) {
                    board.tell(&learned);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("NVDEC admission cannot watch the pipelines' pace ({e}); the seats stay as they are");
            self.lock().watching = false;
        }
    }

    /// Says what was learned: in the log, and to the listener.
    fn tell(&self, learned: &Learned) {
        tracing::warn!("{}", learned.describe());
        let listener = self.lock().on_learned.clone();
        if let Some(listener) = listener.0 {
            listener(learned);
        }
    }

    /// Why pipelines wait, when some do: "N pipelines wait for an NVDEC seat: ..." naming
    /// how many NVDEC pipelines are asked for and how many the host's GPUs seat.
    pub fn waiting_reason(&self) -> Option<String> {
        let (gpus, waiting) = self.snapshot();
        if waiting == 0 {
            return None;
        }
        let asked = waiting + gpus.iter().map(|gpu| gpu.taken).sum::<usize>();
        let seated: usize = gpus.iter().filter_map(|gpu| gpu.capacity).sum();
        let mut reason = format!(
            "{waiting} pipelines wait for an NVDEC seat: the config asks more NVDEC pipelines ({asked}) than this \
             host's GPUs seat ({seated} on {} GPUs); decoder = \"software\" decodes the rest on the CPU",
            gpus.len()
        );
        let board = self.lock();
        if board.judge.any_behind() {
            reason.push_str("; admission holds while a seated NVDEC pipeline is behind its pace");
        }
        if let Some(learned) = &board.last_learned {
            reason.push_str("; ");
            reason.push_str(&learned.describe());
        }
        Some(reason)
    }

    /// Every GPU's seats (taken and capacity) and how many pipelines wait for one.
    pub fn snapshot(&self) -> (Vec<GpuSeats>, usize) {
        let board = self.lock();
        (board.gpus.values().copied().collect(), board.waiting)
    }

    /// A seat on one of `inventory`'s GPUs that `wanted` allows: at once when one is free,
    /// else once another pipeline gives one back. `engines[ordinal]` (filter engines per GPU)
    /// breaks ties. `on_wait` hears, once, why it waits. `None` when `stop` was set first,
    /// or when `wanted` names a GPU the inventory lacks.
    pub fn admit(
        self: &Arc<Self>,
        inventory: &[GpuNvdec],
        wanted: SeatWanted,
        engines: &[usize],
        stop: &AtomicBool,
        on_wait: &mut dyn FnMut(&str),
    ) -> Option<NvdecSeat> {
        let mut board = self.lock();
        board.refresh(inventory);
        let allowed = |ordinal: usize| match wanted {
            SeatWanted::AnyGpu => inventory.iter().any(|gpu| gpu.ordinal == ordinal),
            SeatWanted::Gpu(n) => n == ordinal,
        };
        if !board.gpus.keys().any(|&ordinal| allowed(ordinal)) {
            return None;
        }
        // Counted among the waiting (under the same lock) from its first wait to its return.
        let mut waiting = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                board.waiting -= usize::from(waiting);
                return None;
            }
            // Seats set or measured anew (a reload) count for those already waiting.
            board.refresh(inventory);
            // While a seated pipeline is behind its pace, another would only add to it; seats
            // the operator set are taken as given.
            let holding = board.seats_per_gpu.is_none() && board.judge.any_behind();
            let free = board
                .gpus
                .values()
                .filter(|_| !holding)
                .filter(|gpu| allowed(gpu.ordinal) && gpu.capacity.is_none_or(|capacity| gpu.taken < capacity))
                .min_by_key(|gpu| (gpu.taken, engines.get(gpu.ordinal).copied().unwrap_or(0), gpu.ordinal))
                .map(|gpu| gpu.ordinal);
            if let Some(ordinal) = free {
                board.waiting -= usize::from(waiting);
                if let Some(gpu) = board.gpus.get_mut(&ordinal) {
                    gpu.taken += 1;
                }
                board.judge.admitted(Instant::now());
                let id = board.next_seat;
                board.next_seat += 1;
                return Some(NvdecSeat {
                    board: self.clone(),
                    ordinal,
                    id,
                });
            }
            if !waiting {
                board.waiting += 1;
                waiting = true;
                let seats: Vec<String> = board
                    .gpus
                    .values()
                    .filter(|gpu| allowed(gpu.ordinal))
                    .map(|gpu| {
                        let learned = match gpu.source {
                            SeatSource::Learned => " learned",
                            _ => "",
                        };
                        format!(
                            "cuda:{} {}/{}{learned}",
                            gpu.ordinal,
                            gpu.taken,
                            gpu.capacity.unwrap_or_default()
                        )
                    })
                    .collect();
                // Told outside the lock: what hears it may log or take locks of its own.
                drop(board);
                on_wait(&format!("an NVDEC seat ({})", seats.join(", ")));
                board = self.lock();
                continue;
            }
            board = self
                .freed
                .wait_timeout(board, STOP_CHECK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod learning_tests;

//! Admission of NVDEC pipelines over every GPU of the host. A GPU's NVDEC engines carry only
//! so many live streams (about 8 live 1080p25 H.264 streams each on an H100); one more makes
//! every pipeline on them fall behind and drop frames, where before it each kept its rate.
//! So a pipeline asking for NVDEC takes a seat first, in ONE step under one lock: `cuda:N`
//! a seat on GPU N, `auto`/`cuda` a seat on whichever GPU has one free and the fewest NVDEC
//! pipelines (ties: the fewest filter engines), reserved at once so pipelines starting
//! together spread over the GPUs. Its decoder and engine then run on that GPU. Past every
//! seat it waits (saying why; stopping ends the wait) instead of slowing the others, and
//! takes the first seat given back on any GPU it may use. Each GPU's seats are the
//! prediction of `engine::nvdec_capacity` (its NVDEC engines x a per-engine figure) unless
//! measured for its model (`[server] nvdec_seats_file`, which `bench --suite scale` writes:
//! [`SeatBoard::set_measured_seats`]) or set by the operator for every GPU
//! (`[server] nvdec_seats_per_gpu`: [`SeatBoard::set_seats_per_gpu`]), in that order of weight.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

pub use convstream_core::GpuNvdec;

use convstream_config::MeasuredSeats;

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
            SeatSource::Measured => "measured",
            SeatSource::Predicted => "predicted",
            SeatSource::Unknown => "unknown",
        }
    }
}

/// A GPU's seats and where the figure comes from: the operator's setting, else the measured
/// seats of its model, else the prediction.
pub fn seats_of(gpu: &GpuNvdec, set: Option<usize>, measured: Option<&MeasuredSeats>) -> (Option<usize>, SeatSource) {
    if let Some(seats) = set {
        return (Some(seats), SeatSource::Set);
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
}

impl NvdecSeat {
    /// The GPU the seat is on: the pipeline's decoder and engine run there.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
}

impl Drop for NvdecSeat {
    fn drop(&mut self) {
        let mut board = self.board.lock();
        if let Some(gpu) = board.gpus.get_mut(&self.ordinal) {
            gpu.taken = gpu.taken.saturating_sub(1);
        }
        self.board.freed.notify_all();
    }
}

impl Board {
    /// Each of `inventory`'s GPUs on the board, with its seats as now set, measured or
    /// predicted.
    fn refresh(&mut self, inventory: &[GpuNvdec]) {
        for gpu in inventory {
            let (capacity, source) = seats_of(gpu, self.seats_per_gpu, self.measured.as_ref());
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
}

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

    /// Why pipelines wait, when some do: "N pipelines wait for an NVDEC seat: ..." naming
    /// how many NVDEC pipelines are asked for and how many the host's GPUs seat.
    pub fn waiting_reason(&self) -> Option<String> {
        let (gpus, waiting) = self.snapshot();
        if waiting == 0 {
            return None;
        }
        let asked = waiting + gpus.iter().map(|gpu| gpu.taken).sum::<usize>();
        let seated: usize = gpus.iter().filter_map(|gpu| gpu.capacity).sum();
        Some(format!(
            "{waiting} pipelines wait for an NVDEC seat: the config asks more NVDEC pipelines ({asked}) than this \
             host's GPUs seat ({seated} on {} GPUs); decoder = \"software\" decodes the rest on the CPU",
            gpus.len()
        ))
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
            let free = board
                .gpus
                .values()
                .filter(|gpu| allowed(gpu.ordinal) && gpu.capacity.is_none_or(|capacity| gpu.taken < capacity))
                .min_by_key(|gpu| (gpu.taken, engines.get(gpu.ordinal).copied().unwrap_or(0), gpu.ordinal))
                .map(|gpu| gpu.ordinal);
            if let Some(ordinal) = free {
                board.waiting -= usize::from(waiting);
                if let Some(gpu) = board.gpus.get_mut(&ordinal) {
                    gpu.taken += 1;
                }
                return Some(NvdecSeat {
                    board: self.clone(),
                    ordinal,
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
                        format!(
                            "cuda:{} {}/{}",
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

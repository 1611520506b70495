//! Which GPU a pipeline's engine lands on. `cuda:N` pins it; `cuda` and `auto` take the GPU
//! with the fewest active pipelines in this process (the lowest ordinal on a tie), so
//! pipelines started one after another spread over the host's GPUs. An engine holds its
//! [`Seat`] for as long as it lives; dropping it frees the place.

use std::sync::{Arc, Mutex};

/// Active pipelines per GPU ordinal.
#[derive(Debug, Default)]
pub struct Placements {
    active: Mutex<Vec<usize>>,
}

/// One pipeline's place on a GPU; gives it back when dropped.
#[derive(Debug)]
pub struct Seat {
    /// The GPU the seat is on.
    pub ordinal: usize,
    placements: Arc<Placements>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut active = self.placements.lock();
        if let Some(count) = active.get_mut(self.ordinal) {
            *count = count.saturating_sub(1);
        }
    }
}

/// The index of the smallest count, the first one on a tie; None when there is none.
pub fn least_loaded(active: &[usize]) -> Option<usize> {
    active
        .iter()
        .enumerate()
        .min_by_key(|&(ordinal, count)| (*count, ordinal))
        .map(|(ordinal, _)| ordinal)
}

impl Placements {
    /// The one table of the process: every engine built by `build_engine` takes its seat here.
    pub fn global() -> Arc<Placements> {
        static GLOBAL: std::sync::OnceLock<Arc<Placements>> = std::sync::OnceLock::new();
        GLOBAL.get_or_init(|| Arc::new(Placements::default())).clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        self.active.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes a seat on the least loaded of `devices` GPUs.
    pub fn take_least_loaded(self: &Arc<Self>, devices: usize) -> Option<Seat> {
        let mut active = self.lock();
        if active.len() < devices {
            active.resize(devices, 0);
        }
        let ordinal = least_loaded(&active[..devices])?;
        active[ordinal] += 1;
        Some(self.seat(ordinal))
    }

    /// Takes a seat on GPU `ordinal` (a pinned pipeline still counts towards its GPU's load).
    pub fn take(self: &Arc<Self>, ordinal: usize) -> Seat {
        let mut active = self.lock();
        if active.len() <= ordinal {
            active.resize(ordinal + 1, 0);
        }
        active[ordinal] += 1;
        self.seat(ordinal)
    }

    fn seat(self: &Arc<Self>, ordinal: usize) -> Seat {
        Seat {
            ordinal,
            placements: self.clone(),
        }
    }

    /// Active pipelines per GPU, for logs and tests.
    pub fn active(&self) -> Vec<usize> {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_loaded_prefers_the_emptiest_then_the_lowest_ordinal() {
        assert_eq!(least_loaded(&[]), None);
        assert_eq!(least_loaded(&[0]), Some(0));
        assert_eq!(least_loaded(&[1, 0, 0]), Some(1));
        assert_eq!(least_loaded(&[2, 1, 1, 3]), Some(1));
        assert_eq!(least_loaded(&[0, 0]), Some(0));
    }

    #[test]
    fn pipelines_spread_over_the_gpus_and_seats_come_back() {
        let placements = Arc::new(Placements::default());
        let seats: Vec<Seat> = (0..5).map(|_| placements.take_least_loaded(2).unwrap()).collect();
        let ordinals: Vec<usize> = seats.iter().map(|s| s.ordinal).collect();
        assert_eq!(ordinals, [0, 1, 0, 1, 0]);
        assert_eq!(placements.active(), [3, 2]);
        drop(seats);
        assert_eq!(placements.active(), [0, 0]);
    }

    #[test]
    fn pinned_pipelines_count_towards_their_gpu() {
        let placements = Arc::new(Placements::default());
        let pinned = [placements.take(0), placements.take(0)];
        let free = placements.take_least_loaded(3).unwrap();
        assert_eq!(free.ordinal, 1, "cuda:0 already holds two pinned pipelines");
        let next = placements.take_least_loaded(3).unwrap();
        assert_eq!(next.ordinal, 2);
        drop(pinned);
        let after = placements.take_least_loaded(3).unwrap();
        assert_eq!(after.ordinal, 0, "the pinned seats were given back");
        assert_eq!(placements.active(), [1, 1, 1]);
    }

    #[test]
    fn a_single_gpu_takes_everything() {
        let placements = Arc::new(Placements::default());
        let seats: Vec<Seat> = (0..3).map(|_| placements.take_least_loaded(1).unwrap()).collect();
        assert!(seats.iter().all(|s| s.ordinal == 0));
        assert!(placements.take_least_loaded(0).is_none(), "no GPU, no seat");
    }
}

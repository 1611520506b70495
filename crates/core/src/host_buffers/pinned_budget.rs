//! The host's budget of page-locked memory, shared by every pipeline of the process.
//!
//! Page-locked memory cannot be swapped or moved, and other GPU software on the host needs
//! it too, so the process caps what its frame pools pin: a pool block that would pass the
//! budget is refused ([`BudgetSpent`]), and the pool lends ordinary memory instead (its frames
//! are staged through the engine's own buffers: a CPU copy, never a stall). The engine's
//! staging buffers are counted but never refused, since a lane cannot run without them.
//! The default is a quarter of the host's memory ([`default_budget`]); `serve` takes
//! `[server] pinned_memory_mb`.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A budget of page-locked bytes and what is held against it. The process has one
/// ([`PinnedBudget::host`]).
#[derive(Debug, Default)]
pub struct PinnedBudget {
    /// Bytes pool blocks may take in all; 0 until set, which means [`default_budget`].
    limit: AtomicUsize,
    /// Bytes held now (pool blocks and staging buffers).
    in_use: AtomicUsize,
}

/// The process's budget.
static HOST: PinnedBudget = PinnedBudget::new();

/// Why a pool block was refused: the budget would be passed.
#[derive(Debug, thiserror::Error)]
#[error("the page-locked memory budget is spent ({in_use_mb} of {budget_mb} MB pinned; `[server] pinned_memory_mb` sets it)")]
pub struct BudgetSpent {
    /// Page-locked megabytes held when the block was asked for.
    pub in_use_mb: usize,
    /// The budget, in megabytes.
    pub budget_mb: usize,
}

/// Page-locked bytes counted against a budget until dropped.
#[derive(Debug)]
pub struct PinnedCharge {
    len: usize,
    budget: &'static PinnedBudget,
}

impl Drop for PinnedCharge {
    fn drop(&mut self) {
        self.budget.in_use.fetch_sub(self.len, Ordering::SeqCst);
    }
}

impl PinnedBudget {
    /// A budget at `default_budget` until set.
    pub const fn new() -> PinnedBudget {
        PinnedBudget {
            limit: AtomicUsize::new(0),
            in_use: AtomicUsize::new(0),
        }
    }

    /// The process's budget, which every pinned allocation counts against.
    pub fn host() -> &'static PinnedBudget {
        &HOST
    }

    /// Sets the limit, in bytes (`None`: `default_budget`).
    pub fn set_limit(&self, bytes: Option<usize>) {
        self.limit.store(bytes.unwrap_or(0), Ordering::SeqCst);
    }

    /// The limit now, in bytes.
    pub fn limit(&self) -> usize {
        match self.limit.load(Ordering::SeqCst) {
            0 => default_budget(),
            set => set,
        }
    }

    /// Page-locked bytes held now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::SeqCst)
    }

    /// Counts `len` bytes for a pool block, or refuses them when the limit would be passed.
    pub fn charge_pool_block(&'static self, len: usize) -> Result<PinnedCharge, BudgetSpent> {
        let limit = self.limit();
        let mut held = self.in_use.load(Ordering::SeqCst);
        loop {
            let after = held.saturating_add(len);
            if after > limit {
                return Err(BudgetSpent {
                    in_use_mb: held >> 20,
                    budget_mb: limit >> 20,
                });
            }
            match self
                .in_use
                .compare_exchange(held, after, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(PinnedCharge { len, budget: self }),
                Err(now) => held = now,
            }
        }
    }

    /// Counts `len` bytes that must be had whatever the limit (a lane's staging buffers).
    pub fn charge_always(&'static self, len: usize) -> PinnedCharge {
        self.in_use.fetch_add(len, Ordering::SeqCst);
        PinnedCharge { len, budget: self }
    }
}

/// A quarter of the host's memory (`MemTotal` in /proc/meminfo, read once), or no limit
/// where that cannot be read.
pub fn default_budget() -> usize {
    static DEFAULT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| mem_total_bytes(&text))
            .map_or(usize::MAX, |total| total / 4)
    })
}

/// `MemTotal` of a /proc/meminfo text, in bytes.
fn mem_total_bytes(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::{mem_total_bytes, PinnedBudget};

    #[test]
    fn the_host_memory_is_read_from_meminfo() {
        let text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total_bytes(text), Some(131_072_000 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 3 kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn pool_blocks_stop_at_the_limit_and_staging_is_never_refused() {
        let budget: &'static PinnedBudget = Box::leak(Box::new(PinnedBudget::new()));
        budget.set_limit(Some(10 << 20));
        let first = budget.charge_pool_block(6 << 20).expect("6 of 10 MB");
        let refused = budget.charge_pool_block(6 << 20).expect_err("12 of 10 MB");
        assert_eq!((refused.in_use_mb, refused.budget_mb), (6, 10));
        let staging = budget.charge_always(6 << 20);
        assert_eq!(budget.in_use(), 12 << 20);
        drop(first);
        drop(staging);
        assert_eq!(budget.in_use(), 0);
        assert!(budget.charge_pool_block(10 << 20).is_ok(), "a whole budget once freed");
        assert_eq!(budget.in_use(), 0, "a dropped charge gives its bytes back");
    }
}

//! GPU tuning a pipeline's config (`[pipeline.filter.gpu]`) or `convstream bench` flags set:
//! how long the completion thread polls before it blocks, and the kernels' tilings (per
//! [`KernelPath`], the kernels there are). Typed and passed in [`super::EngineOptions`], so
//! a run's tuning is what its config or flags say and what `results.json` records.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Which GPU kernel filters the planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum KernelPath {
    /// Shared-memory tile with halo, register blocked.
    Dense,
    /// Row pass then column pass, fused in shared memory (rank-one masks).
    Separable,
    /// One thread per output, taps read from global memory: the baseline.
    Global,
}

/// Microseconds the completion thread polls a lane's done event before blocking on it where
/// a frame's latency matters, unless the config says otherwise (see [`GpuTuning::spin`]).
pub const DEFAULT_SPIN_US: u64 = 300;
/// The longest poll a config may ask for: ten milliseconds, longer than any frame's GPU work.
pub const MAX_SPIN_US: u64 = 10_000;
/// Most threads a CUDA block holds.
const MAX_BLOCK_THREADS: u32 = 1024;

/// The CUDA engine's tuning: the completion thread's spin-wait and the kernels' tilings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuTuning {
    /// How long the completion thread polls a lane's done event (yielding the core between
    /// polls) before blocking on it, in microseconds; 0 blocks at once; unset, it depends on
    /// the input ([`GpuTuning::spin`]). A frame's GPU work takes 0.1-0.5 ms, and a thread
    /// blocked in the driver wakes tens of microseconds after its event: with a few lanes
    /// that delay is a large share of each lane's cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_us: Option<u64>,
    /// The dense kernel's tiling instead of the measured policy's (`BLOCK_XxBLOCK_YxPXxPY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense_tiling: Option<TileShape>,
    /// The separable kernel's tiling instead of the measured policy's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separable_tiling: Option<TileShape>,
}

impl GpuTuning {
    /// Whether nothing differs from the defaults.
    pub fn is_default(&self) -> bool {
        *self == GpuTuning::default()
    }

    /// The spin-wait as a duration: `spin_us` when set; else [`DEFAULT_SPIN_US`] where
    /// latency matters (`low_latency`: a live input, a file read at its frame rate, a call
    /// that waits for its result), since waking late is a share of every frame's latency,
    /// and none for frames read as fast as they decode, where the decoder keeps every core
    /// busy and a polling thread takes time from it (on a 16-core host, 8% of a
    /// 10,000-frame command's speed).
    pub fn spin(&self, low_latency: bool) -> Duration {
        let default = if low_latency { DEFAULT_SPIN_US } else { 0 };
        Duration::from_micros(self.spin_us.unwrap_or(default))
    }

    /// The tiling asked for `path`, if any (the baseline kernel has none).
    pub fn tiling_for(&self, path: KernelPath) -> Option<TileShape> {
        match path {
            KernelPath::Dense => self.dense_tiling,
            KernelPath::Separable => self.separable_tiling,
            KernelPath::Global => None,
        }
    }

    /// The settings that differ from the defaults, as a config writes them
    /// (`spin_us = 0, dense_tiling = 32x8x8x4`); empty for the defaults.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(spin_us) = self.spin_us {
            parts.push(format!("spin_us = {spin_us}"));
        }
        if let Some(tiling) = self.dense_tiling {
            parts.push(format!("dense_tiling = {tiling}"));
        }
        if let Some(tiling) = self.separable_tiling {
            parts.push(format!("separable_tiling = {tiling}"));
        }
        parts.join(", ")
    }

    /// Why `spin_us` cannot be used, if it cannot.
    pub fn spin_problem(&self) -> Option<String> {
        self.spin_us.filter(|&spin_us| spin_us > MAX_SPIN_US).map(|spin_us| {
            format!("{spin_us} is out of range; allowed 0..={MAX_SPIN_US} (microseconds; 0 blocks at once)")
        })
    }
}

/// How a tiled kernel lays threads and outputs over a tile: `BLOCK_X x BLOCK_Y` threads,
/// each computing `PX` adjacent output bytes (a multiple of 4) on `PY` rows. Written
/// `BLOCK_XxBLOCK_YxPXxPY`, e.g. `32x8x4x4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TileShape {
    /// Threads of a block across.
    pub block_x: u32,
    /// Threads of a block down.
    pub block_y: u32,
    /// Output bytes each thread computes across (a multiple of 4).
    pub px: u32,
    /// Output rows each thread computes.
    pub py: u32,
}

/// Why a text is not a [`TileShape`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a tiling: {reason}; write BLOCK_XxBLOCK_YxPXxPY such as 32x8x4x4")]
pub struct TileShapeError {
    text: String,
    reason: &'static str,
}

impl FromStr for TileShape {
    type Err = TileShapeError;

    fn from_str(text: &str) -> Result<TileShape, TileShapeError> {
        let error = |reason| TileShapeError {
            text: crate::text::quoted(text),
            reason,
        };
        let numbers: Option<Vec<u32>> = text.trim().split('x').map(|n| n.trim().parse().ok()).collect();
        let Some(&[block_x, block_y, px, py]) = numbers.as_deref() else {
            return Err(error("four whole numbers are needed"));
        };
        if block_x == 0 || block_y == 0 || px == 0 || py == 0 {
            return Err(error("every number must be at least 1"));
        }
        if block_x.saturating_mul(block_y) > MAX_BLOCK_THREADS {
            return Err(error("a block holds at most 1024 threads (BLOCK_X x BLOCK_Y)"));
        }
        if px % 4 != 0 {
            return Err(error("PX must be a multiple of 4"));
        }
        Ok(TileShape {
            block_x,
            block_y,
            px,
            py,
        })
    }
}

impl TryFrom<String> for TileShape {
    type Error = TileShapeError;
    fn try_from(text: String) -> Result<TileShape, TileShapeError> {
        text.parse()
    }
}

impl From<TileShape> for String {
    fn from(shape: TileShape) -> String {
        shape.to_string()
    }
}

impl fmt::Display for TileShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}x{}", self.block_x, self.block_y, self.px, self.py)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_shapes_read_and_write_the_same_text() {
        let shape: TileShape = "32x8x8x4".parse().unwrap();
        assert_eq!(
            shape,
            TileShape {
                block_x: 32,
                block_y: 8,
                px: 8,
                py: 4,
            }
        );
        assert_eq!(shape.to_string(), "32x8x8x4");
    }

    #[test]
    fn bad_tile_shapes_say_what_is_wrong() {
        for (text, reason) in [
            ("32x8x4", "four whole numbers"),
            ("32x8x4x4x1", "four whole numbers"),
            ("32xax4x4", "four whole numbers"),
            ("32x0x4x4", "at least 1"),
            ("64x32x4x4", "1024 threads"),
            ("32x8x6x4", "multiple of 4"),
            ("32x8x4x4s", "four whole numbers"),
        ] {
            let error = text.parse::<TileShape>().unwrap_err().to_string();
            assert!(error.contains(reason), "{text}: {error}");
            assert!(error.contains(text), "{text}: {error}");
        }
    }

    #[test]
    fn the_default_spins_300_us_where_latency_matters_only_and_keeps_the_policy() {
        let tuning = GpuTuning::default();
        assert_eq!(tuning.spin(true), Duration::from_micros(300));
        assert_eq!(tuning.spin(false), Duration::ZERO);
        assert_eq!(tuning.tiling_for(KernelPath::Dense), None);
        assert!(tuning.is_default());
        assert_eq!(tuning.describe(), "");
        assert_eq!(tuning.spin_problem(), None);
        let too_long = GpuTuning {
            spin_us: Some(MAX_SPIN_US + 1),
            ..tuning
        };
        assert!(too_long.spin_problem().unwrap().contains("out of range"));
        let tuned = GpuTuning {
            spin_us: Some(0),
            separable_tiling: Some("32x8x4x4".parse().unwrap()),
            ..tuning
        };
        assert_eq!(tuned.describe(), "spin_us = 0, separable_tiling = 32x8x4x4");
        // A value the config sets holds whatever the input.
        assert_eq!(tuned.spin(true), Duration::ZERO);
        let spinning = GpuTuning {
            spin_us: Some(300),
            ..tuning
        };
        assert_eq!(spinning.spin(false), Duration::from_micros(300));
    }
}

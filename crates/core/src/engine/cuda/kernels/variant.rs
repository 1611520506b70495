//! Kernel variants and the tiling policy: what one compiled module is specialised on
//! ([`Variant`]: mask size, channels, border, sample depth, [`Tiling`]), the tiling that
//! measured fastest for each case, and the shared memory each tiled kernel then needs. Pure:
//! no CUDA call, no environment.

use crate::engine::{GpuTuning, KernelPath, TileShape};
use crate::filter::BorderMode;
use crate::frame::SampleDepth;

/// How threads and outputs are laid out over a tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tiling {
    /// Threads of a block across.
    pub block_x: u32,
    /// Threads of a block down.
    pub block_y: u32,
    /// Output bytes per thread across (a multiple of 4).
    pub px: u32,
    /// Output rows per thread.
    pub py: u32,
    /// Whether the kernel's row loop is unrolled fully (masks up to 15 rows).
    pub unroll_rows: bool,
}

/// What a plane's samples are: integers of a [`SampleDepth`] (rounded and clamped results), or
/// float values read and written as floats (the unrounded sum + bias).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SampleValues {
    /// Integer samples of the variant's depth.
    #[default]
    Integer,
    /// float32 values.
    Float32,
    /// float16 values (IEEE half).
    Float16,
}

impl SampleValues {
    /// The kernel's `SAMPLE_FLOAT` define.
    fn define(self) -> u32 {
        match self {
            SampleValues::Integer => 0,
            SampleValues::Float32 => 32,
            SampleValues::Float16 => 16,
        }
    }
}

/// Everything a compiled module is specialised on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Variant {
    /// Mask columns.
    pub mask_width: u32,
    /// Mask rows.
    pub mask_height: u32,
    /// Interleaved channels per pixel of the plane.
    pub channels: u32,
    /// How samples beyond the edges are taken.
    pub border: BorderMode,
    /// How threads and outputs are laid out over a tile.
    pub tiling: Tiling,
    /// A gradient magnitude (two masks, `sqrt(a^2 + b^2)`) rather than one convolution.
    pub magnitude: bool,
    /// How the plane stores its samples (8 bits in a byte, or 9 to 16 in a word).
    pub depth: SampleDepth,
    /// Integer samples of `depth`, or float values.
    pub values: SampleValues,
    /// FFmpeg's arithmetic: the bits of the mask's f32 `rdiv` (see `Mask::ffmpeg_rdiv`),
    /// compiled in as `FFMPEG_RDIV_BITS`; `None` for the usual final step.
    pub ffmpeg_rdiv_bits: Option<u32>,
}

/// Tallest mask whose row loop is unrolled fully; taller masks keep it rolled to bound code size.
const MAX_UNROLLED_MASK_HEIGHT: u32 = 15;
/// Masks from this size up take wide tiles on large planes (dense path).
const LARGE_MASK: usize = 17;
/// Planes from this size up (a 2560x1600 plane, say) have tiles enough for wide ones.
const LARGE_PLANE_PIXELS: usize = 4_000_000;

impl Variant {
    /// The tiling that measured fastest for `path`, the mask and a plane of `plane_pixels`
    /// (BENCHMARKS.md, tiling sweep), on a device that allows `max_shared` bytes of shared
    /// memory per block, with fewer rows per thread if the kernel would not fit otherwise.
    pub fn new(
        mask_width: usize,
        mask_height: usize,
        channels: usize,
        border: BorderMode,
        max_shared: usize,
        path: KernelPath,
        plane_pixels: usize,
    ) -> Variant {
        let tiling = |block_x, block_y, px, py| Tiling {
            block_x,
            block_y,
            px,
            py,
            unroll_rows: mask_height as u32 <= MAX_UNROLLED_MASK_HEIGHT,
        };
        let large_mask = mask_width.max(mask_height) >= LARGE_MASK;
        let tiling = match path {
            // 512 threads of 4x2 outputs: twice the warps of 32x8x4x4 on the same tile hide
            // the two barriers' latency; 10-25% faster from 5x5 up, never slower.
            // Three interleaved channels: a tile 96 samples wide (32 pixels), so that its row
            // pass computes whole pixels, 12 samples a thread (see ROW_PX in convolve.cu). On an
            // H100, 13x13 on 1080p/2160p RGB: 25.3/81.0 us against 31.2/100.5 for 32x16x4x2,
            // whose 128-sample rows hold no whole number of 12-sample chunks (BENCHMARKS.md).
            KernelPath::Separable if channels == 3 => tiling(24, 16, 4, 2),
            KernelPath::Separable => tiling(32, 16, 4, 2),
            // Wide tiles (8 outputs per row per thread) halve the shared loads per tap; they
            // pay off once taps dominate, on planes with enough tiles to fill the GPU.
            KernelPath::Dense if large_mask && plane_pixels >= LARGE_PLANE_PIXELS => tiling(32, 8, 8, 4),
            _ => tiling(32, 8, 4, 4),
        };
        Variant {
            mask_width: mask_width as u32,
            mask_height: mask_height as u32,
            channels: channels as u32,
            border,
            tiling,
            magnitude: false,
            depth: SampleDepth::EIGHT,
            values: SampleValues::Integer,
            ffmpeg_rdiv_bits: None,
        }
        .fitted(path, max_shared)
    }

    /// This variant computing a gradient magnitude (or not). The dense kernel then holds a
    /// second set of accumulators; its shared memory is unchanged.
    pub fn with_magnitude(self, magnitude: bool) -> Variant {
        Variant { magnitude, ..self }
    }

    /// This variant for planes of `depth`. Shared memory holds floats whatever the depth, so
    /// the tiling and its fit are unchanged; only the loads and stores widen.
    pub fn with_depth(self, depth: SampleDepth) -> Variant {
        Variant { depth, ..self }
    }

    /// This variant for float values (or integer samples again). Shared memory holds floats
    /// whatever the samples, so the tiling and its fit are unchanged.
    pub fn with_values(self, values: SampleValues) -> Variant {
        Variant { values, ..self }
    }

    /// This variant finishing each sum with FFmpeg's arithmetic and `rdiv` (or not).
    pub fn with_ffmpeg_rdiv(self, rdiv: Option<f32>) -> Variant {
        Variant {
            ffmpeg_rdiv_bits: rdiv.map(f32::to_bits),
            ..self
        }
    }

    /// This variant with the tiling `tuning` asks for `path`, if it asks for one (a knob
    /// for tuning with `convstream bench`), fitted to `max_shared` as [`Variant::new`] does.
    pub fn tuned(self, tuning: &GpuTuning, path: KernelPath, max_shared: usize) -> Variant {
        let Some(TileShape {
            block_x,
            block_y,
            px,
            py,
        }) = tuning.tiling_for(path)
        else {
            return self;
        };
        Variant {
            tiling: Tiling {
                block_x,
                block_y,
                px,
                py,
                unroll_rows: self.tiling.unroll_rows,
            },
            ..self
        }
        .fitted(path, max_shared)
    }

    /// Fewer rows per thread until `path`'s kernel fits in `max_shared` bytes (or one row).
    fn fitted(mut self, path: KernelPath, max_shared: usize) -> Variant {
        while self.shared_bytes(path) > max_shared && self.tiling.py > 1 {
            self.tiling.py /= 2;
        }
        self
    }

    /// The tile one block computes: output bytes across, rows down.
    pub fn tile(&self) -> (u32, u32) {
        (
            self.tiling.block_x * self.tiling.px,
            self.tiling.block_y * self.tiling.py,
        )
    }

    /// Mirrors SHARED_H and SHARED_PITCH of the kernels.
    fn shared_rows_and_pitch(&self) -> (usize, usize) {
        let (tile_w, tile_h) = self.tile();
        let halo_w = (self.mask_width - 1) * self.channels;
        // Rows start at the aligned column at or before the left halo (SHIFT in the kernel).
        let shift = (4 - (self.mask_width / 2 * self.channels) % 4) % 4;
        let v_vec = (shift + self.tiling.px + halo_w).div_ceil(4);
        (
            (tile_h + self.mask_height - 1) as usize,
            (tile_w - self.tiling.px + 4 * v_vec) as usize,
        )
    }

    /// Dynamic shared memory `path`'s kernel needs per block.
    pub fn shared_bytes(&self, path: KernelPath) -> usize {
        match path {
            KernelPath::Dense => self.dense_shared_bytes(),
            KernelPath::Separable => self.separable_shared_bytes(),
            KernelPath::Global => 0,
        }
    }

    /// Shared memory the dense kernel needs per block: the tile with its halo, as floats.
    pub fn dense_shared_bytes(&self) -> usize {
        let (rows, pitch) = self.shared_rows_and_pitch();
        rows * pitch * 4
    }

    /// Shared memory the separable kernel needs per block: the dense kernel's plus the row pass's
    /// results.
    pub fn separable_shared_bytes(&self) -> usize {
        let (rows, pitch) = self.shared_rows_and_pitch();
        (rows * pitch + rows * self.tile().0 as usize) * 4
    }

    fn border_define(&self) -> &'static str {
        match self.border {
            BorderMode::Constant => "BORDER_CONSTANT",
            BorderMode::Nearest => "BORDER_NEAREST",
            BorderMode::Reflect => "BORDER_REFLECT",
            BorderMode::Mirror => "BORDER_MIRROR",
            BorderMode::Wrap => "BORDER_WRAP",
            BorderMode::Ffmpeg => "BORDER_FFMPEG",
        }
    }

    /// NVRTC options for this variant on `arch` (e.g. `sm_90`).
    pub fn options(&self, arch: &str) -> Vec<String> {
        let t = &self.tiling;
        let mut options = vec![
            format!("--gpu-architecture={arch}"),
            "-std=c++17".into(),
            format!("-DMASK_W={}", self.mask_width),
            format!("-DMASK_H={}", self.mask_height),
            format!("-DCH={}", self.channels),
            format!("-DBORDER={}", self.border_define()),
            format!("-DPX={}", t.px),
            format!("-DPY={}", t.py),
            format!("-DBLOCK_X={}", t.block_x),
            format!("-DBLOCK_Y={}", t.block_y),
            format!("-DUNROLL_ROWS={}", t.unroll_rows as u8),
            format!("-DMAGNITUDE={}", self.magnitude as u8),
            format!("-DSAMPLE_BITS={}", self.depth.bits),
            format!("-DSAMPLE_SHIFT={}", self.depth.shift),
            format!("-DSAMPLE_FLOAT={}", self.values.define()),
        ];
        options.extend(
            self.ffmpeg_rdiv_bits
                .map(|bits| format!("-DFFMPEG_RDIV_BITS={bits:#010x}u")),
        );
        options
    }

    /// The variant in words, for logs and errors.
    pub fn describe(&self) -> String {
        format!(
            "{}x{} {}, {} channel(s) of {}, {} border, {}x{} threads x {}x{} outputs",
            self.mask_width,
            self.mask_height,
            if self.magnitude { "gradient magnitude" } else { "mask" },
            self.channels,
            match self.values {
                SampleValues::Integer => format!("{} bits", self.depth.bits),
                SampleValues::Float32 => "float32".into(),
                SampleValues::Float16 => "float16".into(),
            },
            self.border,
            self.tiling.block_x,
            self.tiling.block_y,
            self.tiling.px,
            self.tiling.py,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOPPER_SHARED: usize = 232_448;
    const UHD: usize = 3840 * 2160;
    const HD: usize = 1920 * 1080;

    fn tiling(size: usize, path: KernelPath, pixels: usize) -> (u32, u32, u32, u32) {
        let t = Variant::new(size, size, 1, BorderMode::Reflect, HOPPER_SHARED, path, pixels).tiling;
        (t.block_x, t.block_y, t.px, t.py)
    }

    #[test]
    fn tilings_follow_the_sweep() {
        assert_eq!(tiling(13, KernelPath::Separable, UHD), (32, 16, 4, 2));
        assert_eq!(tiling(3, KernelPath::Separable, HD), (32, 16, 4, 2));
        // Three interleaved channels: tile rows of whole 12-sample row-pass chunks.
        let rgb = Variant::new(13, 13, 3, BorderMode::Reflect, HOPPER_SHARED, KernelPath::Separable, HD).tiling;
        assert_eq!((rgb.block_x, rgb.block_y, rgb.px, rgb.py), (24, 16, 4, 2));
        assert_eq!(rgb.block_x * rgb.px % (rgb.px * 3), 0);
        assert_eq!(tiling(13, KernelPath::Dense, UHD), (32, 8, 4, 4), "13x13 stays narrow");
        assert_eq!(
            tiling(31, KernelPath::Dense, UHD),
            (32, 8, 8, 4),
            "large mask, large plane"
        );
        assert_eq!(
            tiling(31, KernelPath::Dense, HD),
            (32, 8, 4, 4),
            "a 1080p plane has too few wide tiles"
        );
    }

    #[test]
    fn a_tuned_tiling_is_taken_and_fitted_to_shared_memory() {
        let tuning = GpuTuning {
            dense_tiling: Some("32x4x16x8".parse().unwrap()),
            ..GpuTuning::default()
        };
        let variant = Variant::new(21, 21, 1, BorderMode::Reflect, HOPPER_SHARED, KernelPath::Dense, UHD);
        let tuned = variant.tuned(&tuning, KernelPath::Dense, HOPPER_SHARED);
        assert_eq!((tuned.tiling.px, tuned.tiling.py), (16, 8));
        assert!(tuned.dense_shared_bytes() <= HOPPER_SHARED);
        let fitted = variant.tuned(&tuning, KernelPath::Dense, 64 * 1024);
        assert!(fitted.tiling.py < 8 && fitted.dense_shared_bytes() <= 64 * 1024);
    }

    #[test]
    fn tiles_that_do_not_fit_lose_rows_per_thread() {
        // 48 KiB without the opt-in: a 63x63 dense tile of 8x4 outputs does not fit.
        let v = Variant::new(63, 63, 1, BorderMode::Reflect, 48 * 1024, KernelPath::Dense, UHD);
        assert!(v.dense_shared_bytes() <= 48 * 1024 || v.tiling.py == 1);
        assert!(v.tiling.py < 4);
    }

    #[test]
    fn a_tuned_tiling_replaces_the_policy_for_its_path_only() {
        let tuning = GpuTuning {
            dense_tiling: Some("16x16x8x2".parse().unwrap()),
            ..GpuTuning::default()
        };
        let tuned = |size: usize, path| {
            let t = Variant::new(size, size, 1, BorderMode::Reflect, HOPPER_SHARED, path, HD)
                .tuned(&tuning, path, HOPPER_SHARED)
                .tiling;
            (t.block_x, t.block_y, t.px, t.py, t.unroll_rows)
        };
        assert_eq!(tuned(5, KernelPath::Dense), (16, 16, 8, 2, true));
        assert_eq!(tuned(21, KernelPath::Dense), (16, 16, 8, 2, false), "rows stay rolled");
        assert_eq!(tuned(5, KernelPath::Separable), (32, 16, 4, 2, true), "the policy's");
        // A tuned tiling that does not fit loses rows per thread like the policy's.
        let tall = GpuTuning {
            dense_tiling: Some("32x8x8x16".parse().unwrap()),
            ..GpuTuning::default()
        };
        let v = Variant::new(63, 63, 1, BorderMode::Reflect, 48 * 1024, KernelPath::Dense, HD).tuned(
            &tall,
            KernelPath::Dense,
            48 * 1024,
        );
        assert!(v.tiling.py < 16);
    }
}

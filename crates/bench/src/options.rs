//! What `convstream bench` is asked to run: the suites and every setting they take.

use std::path::PathBuf;

use convstream_core::{DeviceChoice, GpuTuning};

/// Which suites to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// Convolution kernels per mask size and plane size, against the baseline kernel.
    Kernel,
    /// Host-to-GPU and back, pinned against pageable memory.
    Transfer,
    /// Copies and kernels of frames on several CUDA streams, overlapping.
    Overlap,
    /// Decode, filter and write a clip end to end, against decoding alone.
    E2e,
    /// Live pipelines per host (not part of `all`: it runs for minutes).
    Scale,
    /// Every suite but scale.
    All,
}

impl Suite {
    pub(super) fn includes(self, other: Suite) -> bool {
        (self == Suite::All && other != Suite::Scale) || self == other
    }
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub suite: Suite,
    pub device: DeviceChoice,
    /// A real file for the e2e suite; one is generated when absent.
    pub input: Option<PathBuf>,
    /// Few sizes, few repetitions: a smoke test, not a speed claim.
    pub quick: bool,
    pub out: PathBuf,
    /// Mask sizes for the kernel suite instead of the standard list (profiling one case).
    pub mask_sizes: Option<Vec<usize>>,
    /// Plane sizes (width, height) for the GPU kernel suite instead of 1080p and 2160p.
    pub planes: Option<Vec<(usize, usize)>>,
    /// Kernel suite: bits per sample of the timed planes (8 and 16 by default).
    pub depths: Option<Vec<u8>>,
    /// Kernel suite: interleaved channels per pixel of the timed planes (1 to 4).
    pub channels: usize,
    /// Spin-wait and tilings of the CUDA engine (and the kernels the kernel suite times).
    pub tuning: GpuTuning,
    /// Scale suite: the one decoder to ramp (`software`, `nvdec`); default both on a GPU.
    pub decoder: Option<String>,
    /// Scale suite: fill these GPUs at once, each with a step's pipelines (`None`: the one
    /// device of `device`).
    pub gpus: Option<Vec<usize>>,
    /// Scale suite: these pipeline counts instead of the ramp.
    pub pipelines: Option<Vec<usize>>,
    /// Scale suite: the ramp stops here.
    pub max_pipelines: usize,
    /// Scale suite: seconds each step is measured for, after its warm-up.
    pub scale_seconds: Option<f64>,
    /// E2e suite: FFmpeg's `ffmpeg` program to compare whole commands with; `None` looks
    /// beside this executable, then on `PATH`.
    pub ffmpeg: Option<PathBuf>,
    /// The commit the binary was built from, written into the report.
    pub commit: &'static str,
    /// E2e suite: rounds of the whole-command comparison (FFmpeg and convstream alternating).
    pub rounds: usize,
}

//! Building the kernel pack (`kernels::pack`) at build time: the kernel variants the engine's
//! own planner asks for with the masks and frames people use most (the catalogue below),
//! compiled by NVRTC for each architecture a build targets. No GPU is needed: the planner
//! is given each architecture's shared-memory limit in place of a device. A variant outside
//! the catalogue (another border, an unusual mask size) is compiled on first use and kept in
//! the disk cache, as before.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::device::DeviceInfo;
use super::kernels::pack::{self, PackEntry};
use super::kernels::{compile_for_pack, pack_key, source_hash, Variant};
use super::lanes::Layout;
use super::plan::Planner;
use crate::engine::{EngineError, FrameShape, GpuTuning};
use crate::filter::{BorderMode, FilterSpec, PlaneSelection};
use crate::format::{PixelFormat, PixelLayout};
use crate::mask::Mask;

/// The architectures a pack is built for when none are named: Ampere (A100; its code also
/// runs on `sm_86`/`sm_89` devices, the A10, L4 and L40 class, which look for `sm_80` code when
/// the pack has none of their own), Hopper, and Blackwell's data-centre and workstation parts.
pub const DEFAULT_ARCHITECTURES: [&str; 4] = ["sm_80", "sm_90", "sm_100", "sm_120"];

/// Masks whose variants are packed on 8-bit planar and NV12 frames, the formats almost every
/// decoder gives: every odd separable size up to 31 (gaussian, box and the separable
/// presets share them), every odd dense size up to 15, and the presets as they come.
fn full_masks() -> Vec<String> {
    let mut masks: Vec<String> = [
        "identity",
        "neutral",
        "sobel",
        "roberts",
        "sharpen",
        "unsharp",
        "motion-blur",
    ]
    .map(String::from)
    .to_vec();
    masks.extend((3..=31).step_by(2).map(|size| format!("gaussian:size={size}")));
    masks.extend((3..=15).step_by(2).map(|size| format!("edge:size={size}")));
    masks
}

/// Masks whose variants are packed on 10-bit, P010 and packed RGB frames: the presets as they
/// come and the common blur and edge sizes.
fn common_masks() -> Vec<String> {
    let mut masks: Vec<String> = ["identity", "sobel", "unsharp", "edge"].map(String::from).to_vec();
    masks.extend([3, 5, 7, 9, 13].map(|size| format!("gaussian:size={size}")));
    masks.extend([3, 5].map(|size| format!("edge:size={size}")));
    masks
}

/// The frame sizes planned for: tilings differ with the plane's size for large dense masks.
const SIZES: [(usize, usize); 2] = [(1920, 1080), (3840, 2160)];

/// The shared memory a block may opt in to on `arch` (CUDA's tables); unknown ones get the
/// smallest of the recent ones, so a plan never counts on more than the device has.
fn max_shared_per_block(arch: &str) -> usize {
    match arch {
        "sm_80" | "sm_87" => 166_912,
        "sm_90" | "sm_100" | "sm_103" => 232_448,
        _ => 101_376,
    }
}

/// A planner for `arch` with no device behind it, the default tuning and no forced path.
fn planner_for(arch: &str) -> Result<Planner, EngineError> {
    let digits = arch
        .strip_prefix("sm_")
        .filter(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()));
    let Some(digits) = digits else {
        return Err(EngineError::Internal {
            what: format!("architecture {arch:?} is not of the form sm_XY (sm_80, sm_90, sm_120)"),
        });
    };
    let (major, minor) = digits.split_at(digits.len() - 1);
    let number = |text: &str| text.parse::<i32>().unwrap_or_default();
    Ok(Planner {
        device: DeviceInfo {
            ordinal: 0,
            name: format!("any {arch} device"),
            compute_capability: (number(major), number(minor)),
            total_memory: 0,
            free_memory: 0,
            multiprocessors: 0,
            clock_khz: 0,
            copy_engines: 0,
            max_shared_per_block: max_shared_per_block(arch),
        },
        force_path: None,
        tuning: GpuTuning::default(),
    })
}

/// The variants a pack holds for `arch`, in a stable order, each once.
pub fn catalogue(arch: &str) -> Result<Vec<Variant>, EngineError> {
    let planner = planner_for(arch)?;
    let eight_bit = [PixelLayout::Yuv420, PixelLayout::SemiPlanar420].map(|layout| PixelFormat::new(layout, 8));
    let others = [
        PixelFormat::new(PixelLayout::Yuv420, 10),
        PixelFormat::new(PixelLayout::SemiPlanar420, 10),
        PixelFormat::new(PixelLayout::Rgb, 8),
    ];
    let groups = [(full_masks(), eight_bit.to_vec()), (common_masks(), others.to_vec())];
    let mut seen = HashSet::new();
    let mut variants = Vec::new();
    for (masks, formats) in groups {
        for spec in masks {
            let mask = Mask::from_spec(&spec).map_err(|errors| EngineError::Internal {
                what: format!("the pack's mask {spec:?} is refused: {errors:?}"),
            })?;
            let filter = FilterSpec::uniform(mask, BorderMode::default(), PlaneSelection::All);
            for format in formats.iter().flatten() {
                for (width, height) in SIZES {
                    let shape = FrameShape {
                        format: *format,
                        width,
                        height,
                    };
                    for plan in planner.plan(&filter, &Layout::new(shape, &filter, 256))? {
                        if seen.insert(plan.variant) {
                            variants.push(plan.variant);
                        }
                    }
                }
            }
        }
    }
    Ok(variants)
}

/// What building a pack did.
#[derive(Debug, Clone)]
pub struct PackBuilt {
    /// Kernels per architecture, in the order asked.
    pub per_architecture: Vec<(String, usize)>,
    /// Bytes of the file written.
    pub bytes: u64,
}

/// Compiles the catalogue for each of `archs` with NVRTC on `jobs` threads and writes the
/// pack to `out`. `progress` hears of each kernel compiled (done, of how many).
pub fn build_pack(
    archs: &[String],
    out: &Path,
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<PackBuilt, EngineError> {
    let mut work = Vec::new();
    for arch in archs {
        work.extend(catalogue(arch)?.into_iter().map(|variant| (arch.clone(), variant)));
    }
    build_pack_of(&work, out, jobs, progress)
}

/// Compiles each (architecture, variant) of `work` with NVRTC on `jobs` threads and writes
/// the pack to `out`.
pub fn build_pack_of(
    work: &[(String, Variant)],
    out: &Path,
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<PackBuilt, EngineError> {
    let mut per_architecture: Vec<(String, usize)> = Vec::new();
    for (arch, _) in work {
        match per_architecture.iter_mut().find(|(seen, _)| seen == arch) {
            Some((_, count)) => *count += 1,
            None => per_architecture.push((arch.clone(), 1)),
        }
    }
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(work.len()));
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, 64) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some((arch, variant)) = work.get(index) else { break };
                let compiled = compile_for_pack(variant, arch).map(|cubin| PackEntry {
                    arch: arch.clone(),
                    key: pack_key(variant, arch),
                    cubin,
                });
                let failed = compiled.is_err();
                results.lock().unwrap_or_else(|e| e.into_inner()).push(compiled);
                progress(done.fetch_add(1, Ordering::Relaxed) + 1, work.len());
                if failed {
                    // Later work is pointless: the first failure is the answer.
                    next.store(work.len(), Ordering::Relaxed);
                }
            });
        }
    });
    let mut entries = results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    // Sorted, so one catalogue and one NVRTC always give the same file.
    entries.sort_by(|a, b| (&a.arch, a.key).cmp(&(&b.arch, b.key)));
    pack::write(out, source_hash(), &entries).map_err(|e| EngineError::Internal { what: e.to_string() })?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or_default();
    Ok(PackBuilt {
        per_architecture,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::KernelPath;

    #[test]
    fn the_catalogue_holds_what_a_13x13_gaussian_and_nvdec_identity_ask_for() {
        let variants = catalogue("sm_90").unwrap();
        let planner = planner_for("sm_90").unwrap();
        for (spec, format) in [
            ("gaussian:size=13", PixelFormat::new(PixelLayout::Yuv420, 8)),
            ("identity", PixelFormat::new(PixelLayout::SemiPlanar420, 8)),
            ("edge:size=7", PixelFormat::new(PixelLayout::Yuv420, 8)),
        ] {
            let filter = FilterSpec::uniform(
                Mask::from_spec(spec).unwrap(),
                BorderMode::default(),
                PlaneSelection::All,
            );
            let shape = FrameShape {
                format: format.unwrap(),
                width: 1280,
                height: 720,
            };
            let plans = planner.plan(&filter, &Layout::new(shape, &filter, 64)).unwrap();
            assert!(!plans.is_empty(), "{spec}");
            for plan in plans {
                assert!(variants.contains(&plan.variant), "{spec}: {}", plan.variant.describe());
            }
        }
        let separable = variants
            .iter()
            .filter(|v| v.shared_bytes(KernelPath::Separable) > 0)
            .count();
        assert!(separable > 0 && variants.len() < 200, "{} variants", variants.len());
    }

    #[test]
    fn architectures_are_checked_for_their_form() {
        assert!(catalogue("sm_9").is_err());
        assert!(catalogue("compute_90").is_err());
        assert_eq!(planner_for("sm_120").unwrap().device.compute_capability, (12, 0));
        assert_eq!(planner_for("sm_86").unwrap().device.arch(), "sm_86");
    }
}

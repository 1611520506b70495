//! The kernel pack with NVRTC and no GPU: a pack built for one architecture is where a fresh
//! process takes its kernels from (NVRTC compiles nothing), and a pack built from other
//! kernel sources is never used. Each verdict comes from a process of its own (this binary,
//! run again on the ignored `kernel_pack::origins_in_a_fresh_process`), because a process
//! opens its pack once.

use std::path::Path;
use std::process::Command;

use convstream_core::{
    build_kernel_pack_of, compile_kernels, kernel_origins, kernel_pack_key, kernel_program_source, kernel_source_hash,
    nvrtc_available, pack_key_for_source, source_hash_of, BorderMode, KernelPack, KernelPath, Variant,
};
use convstream_testkit::gpu_requested;

const ARCH: &str = "sm_90";
const HOPPER_SHARED: usize = 232_448;

/// Two variants a run asks for: a separable 5x5 on 8-bit planes and a dense 3x3 on NV12 chroma.
fn variants() -> Vec<Variant> {
    vec![
        Variant::new(
            5,
            5,
            1,
            BorderMode::Reflect,
            HOPPER_SHARED,
            KernelPath::Separable,
            1920 * 1080,
        ),
        Variant::new(
            3,
            3,
            2,
            BorderMode::Reflect,
            HOPPER_SHARED,
            KernelPath::Dense,
            960 * 540,
        ),
    ]
}

/// Where this process's kernels came from, as `packed cached compiled`, after compiling
/// [`variants`] (with the pack and cache the environment names).
#[test]
#[ignore = "run by kernel_pack::a_pack_is_used_for_its_own_source_only in a process of its own"]
fn origins_in_a_fresh_process() {
    for variant in variants() {
        let cubin = compile_kernels(&variant, ARCH).unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF", "CUBIN is an ELF image");
    }
    let origins = kernel_origins();
    println!("origins: {} {} {}", origins.packed, origins.cached, origins.compiled);
}

/// Runs [`origins_in_a_fresh_process`] with `pack` and no disk cache; its (packed, compiled).
fn origins_with(pack: &Path) -> (u64, u64) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "kernel_pack::origins_in_a_fresh_process",
            "--nocapture",
        ])
        .env("CONVSTREAM_KERNEL_PACK", pack)
        .env("CONVSTREAM_KERNEL_CACHE", "off")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix("origins: "))
        .unwrap_or_else(|| panic!("no origins line in {stdout}"));
    let numbers: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    (numbers[0], numbers[2])
}

#[test]
fn a_pack_is_used_for_its_own_source_only() {
    let required = std::env::var("CONVSTREAM_TEST_NVRTC").is_ok_and(|v| v == "1") || gpu_requested();
    if !nvrtc_available() {
        assert!(
            !required,
            "NVRTC was required (CONVSTREAM_TEST_NVRTC=1) but libnvrtc could not be loaded"
        );
        println!("a_pack_is_used_for_its_own_source_only: skipped (libnvrtc not found; CI installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work: Vec<(String, Variant)> = variants().into_iter().map(|v| (ARCH.to_string(), v)).collect();
    let good = dir.path().join("good.pack");
    let built = build_kernel_pack_of(&work, &good, 2, &|_, _| {}).unwrap();
    assert_eq!(built.per_architecture, [(ARCH.to_string(), 2)]);
    let pack = KernelPack::open(&good).unwrap();
    assert_eq!(pack.source_hash(), kernel_source_hash());
    for variant in variants() {
        assert!(
            pack.contains(ARCH, kernel_pack_key(&variant, ARCH)),
            "{}",
            variant.describe()
        );
        assert!(
            !pack.contains("sm_80", kernel_pack_key(&variant, "sm_80")),
            "only the arch built"
        );
    }
    assert_eq!(origins_with(&good), (2, 0), "every kernel from the pack, none compiled");

    // The kernel source as another engineer's edit leaves it: its keys are other keys.
    let changed = format!("{}\n// an edit\n", kernel_program_source());
    for variant in variants() {
        assert_ne!(
            pack_key_for_source(&changed, &variant, ARCH),
            kernel_pack_key(&variant, ARCH)
        );
    }
    // A pack built from the changed source (header and keys): none of it is used.
    let other = dir.path().join("other.pack");
    rewrite(&pack, &other, source_hash_of(&changed), |variant| {
        pack_key_for_source(&changed, variant, ARCH)
    });
    assert_eq!(origins_with(&other), (0, 2), "another source's pack is not used");
    // This source's keys under another source's header: refused as a whole all the same.
    let relabelled = dir.path().join("relabelled.pack");
    rewrite(&pack, &relabelled, source_hash_of(&changed), |variant| {
        kernel_pack_key(variant, ARCH)
    });
    assert_eq!(
        origins_with(&relabelled),
        (0, 2),
        "a pack of another source is never opened"
    );
}

/// Writes `pack`'s CUBINs to `out` under `source_hash`, each under the key `key` gives.
fn rewrite(pack: &KernelPack, out: &Path, source_hash: u64, key: impl Fn(&Variant) -> u64) {
    let entries: Vec<_> = variants()
        .iter()
        .map(|variant| convstream_core::KernelPackEntry {
            arch: ARCH.into(),
            key: key(variant),
            cubin: pack.get(ARCH, kernel_pack_key(variant, ARCH)).unwrap(),
        })
        .collect();
    convstream_core::write_kernel_pack(out, source_hash, &entries).unwrap();
}

//! `convstream kernels`: building the kernel pack a build ships (`build`, at build time, with
//! NVRTC and no GPU) and saying what a pack holds and whether this build would use it (`show`).

use std::path::PathBuf;

use super::args::KernelsAction;
use super::Failure;
#[cfg(feature = "cuda")]
use super::{commands::print_out, usage};

pub(crate) fn kernels(action: KernelsAction) -> Result<(), Failure> {
    match action {
        KernelsAction::Build { archs, out, jobs } => build(archs, out, jobs),
        KernelsAction::Show { catalogue: true, .. } => print_catalogue(),
        KernelsAction::Show { pack, .. } => show(pack),
    }
}

#[cfg(feature = "cuda")]
fn build(archs: Vec<String>, out: PathBuf, jobs: Option<usize>) -> Result<(), Failure> {
    use std::io::Write;
    if let Some(arch) = archs
        .iter()
        .find(|arch| convstream_core::kernel_catalogue(arch).is_err())
    {
        return Err(usage(anyhow::anyhow!(
            "--arch {arch:?} is not an architecture of the form sm_XY (sm_80, sm_90, sm_120)"
        )));
    }
    if !convstream_core::nvrtc_available() {
        return Err(anyhow::anyhow!(
            "NVRTC (libnvrtc.so) could not be loaded: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc-cu12` and put its lib folder on LD_LIBRARY_PATH"
        )
        .into());
    }
    let (major, minor) = convstream_core::nvrtc_version().map_err(anyhow::Error::new)?;
    let supported = convstream_core::nvrtc_architectures().map_err(anyhow::Error::new)?;
    let archs = match archs.is_empty() {
        // The default list, less what an older NVRTC cannot compile for (said, not fatal).
        true => {
            let (kept, left): (Vec<String>, Vec<String>) = convstream_core::DEFAULT_ARCHITECTURES
                .map(String::from)
                .into_iter()
                .partition(|arch| supported.contains(arch));
            if !left.is_empty() {
                eprintln!("NVRTC {major}.{minor} cannot compile for {}: left out", left.join(", "));
            }
            kept
        }
        false => archs,
    };
    if let Some(arch) = archs.iter().find(|arch| !supported.contains(arch)) {
        return Err(usage(anyhow::anyhow!(
            "NVRTC {major}.{minor} cannot compile for {arch}; it can for {}",
            supported.join(", ")
        )));
    }
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    eprintln!(
        "compiling the kernel catalogue for {} with NVRTC {major}.{minor} on {jobs} thread(s)",
        archs.join(", ")
    );
    let progress = |done: usize, all: usize| {
        if done.is_multiple_of(20) || done == all {
            eprint!("\r{done}/{all} kernels compiled");
            let _ = std::io::stderr().flush();
        }
    };
    let built = convstream_core::build_kernel_pack(&archs, &out, jobs, &progress).map_err(anyhow::Error::new)?;
    eprintln!();
    let counts: Vec<String> = built
        .per_architecture
        .iter()
        .map(|(arch, count)| format!("{arch}: {count}"))
        .collect();
    print_out(&format!(
        "{}: {} kernels ({}), {:.1} MB, kernel source {:016x}\n",
        out.display(),
        built.per_architecture.iter().map(|(_, count)| count).sum::<usize>(),
        counts.join(", "),
        built.bytes as f64 / 1e6,
        convstream_core::kernel_source_hash()
    ))
}

#[cfg(feature = "cuda")]
fn show(pack: Option<PathBuf>) -> Result<(), Failure> {
    let path = match pack {
        Some(path) => path,
        None => {
            let candidates = convstream_core::kernel_pack_candidates();
            if candidates.is_empty() {
                return print_out(
                    "no kernel pack used (CONVSTREAM_KERNEL_PACK=off); kernels are compiled on first use and cached\n",
                );
            }
            match candidates.iter().find(|path| path.exists()) {
                Some(path) => path.clone(),
                None => {
                    let looked: Vec<String> = candidates.iter().map(|path| path.display().to_string()).collect();
                    return print_out(&format!(
                        "no kernel pack found (looked at: {}); kernels are compiled on first use and cached\n",
                        looked.join(", ")
                    ));
                }
            }
        }
    };
    let pack = convstream_core::KernelPack::open(&path).map_err(anyhow::Error::new)?;
    let counts: Vec<String> = pack
        .architectures()
        .into_iter()
        .map(|(arch, count)| format!("{arch}: {count}"))
        .collect();
    let ours = convstream_core::kernel_source_hash();
    let verdict = match pack.source_hash() == ours {
        true => "built from this build's kernel source: used".to_string(),
        false => format!(
            "built from other kernel sources ({:016x}, this build's are {ours:016x}): not used",
            pack.source_hash()
        ),
    };
    print_out(&format!(
        "{}: {} kernels ({}); {verdict}\n",
        path.display(),
        pack.len(),
        counts.join(", ")
    ))
}

/// What this build packs, one line each: the kernel source's hash, then every catalogue
/// kernel of the default architectures as its NVRTC options.
#[cfg(feature = "cuda")]
fn print_catalogue() -> Result<(), Failure> {
    let mut text = format!("kernel source {:016x}\n", convstream_core::kernel_source_hash());
    for arch in convstream_core::DEFAULT_ARCHITECTURES {
        for variant in convstream_core::kernel_catalogue(arch).map_err(anyhow::Error::new)? {
            text.push_str(&variant.options(arch).join(" "));
            text.push('\n');
        }
    }
    print_out(&text)
}

#[cfg(not(feature = "cuda"))]
fn print_catalogue() -> Result<(), Failure> {
    build(Vec::new(), PathBuf::new(), None)
}

#[cfg(not(feature = "cuda"))]
fn build(_: Vec<String>, _: PathBuf, _: Option<usize>) -> Result<(), Failure> {
    Err(anyhow::anyhow!("this convstream was built without CUDA support: it has no GPU kernels").into())
}

#[cfg(not(feature = "cuda"))]
fn show(_: Option<PathBuf>) -> Result<(), Failure> {
    build(Vec::new(), PathBuf::new(), None)
}

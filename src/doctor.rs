//! `convstream doctor`: what this host offers the product, FFmpeg's codecs and hardware
//! support, the CUDA driver, each GPU, NVRTC, whether the kernels compile, and what
//! `--device auto` would pick.

use ffmpeg_next as ffmpeg;
use std::fmt::Write;

use convstream_media::{default_encoders, encoder_usable, first_usable, nvenc_usable, video_encoder_names};

const DECODERS: &[&str] = &[
    "h264",
    "hevc",
    "mpeg4",
    "vp9",
    "av1",
    "h264_cuvid",
    "hevc_cuvid",
    "vp9_cuvid",
    "av1_cuvid",
    "mpeg4_cuvid",
];
const ENCODERS: &[&str] = &[
    "libx264",
    "libopenh264",
    "libvpx-vp9",
    "mpeg4",
    "ffv1",
    "wrapped_avframe",
    "h264_nvenc",
    "hevc_nvenc",
    "aac",
];

/// The report as text, one fact per line.
pub fn report() -> String {
    convstream_media::init_ffmpeg();
    let mut out = String::new();
    let _ = writeln!(out, "convstream {}", env!("CARGO_PKG_VERSION"));
    let version = ffmpeg::codec::version();
    let _ = writeln!(
        out,
        "FFmpeg libavcodec {}.{}.{}",
        version >> 16,
        (version >> 8) & 0xff,
        version & 0xff
    );
    let have = |found: bool| if found { "yes" } else { "no" };
    let decoders: Vec<String> = DECODERS
        .iter()
        .map(|n| format!("{n}: {}", have(ffmpeg::decoder::find_by_name(n).is_some())))
        .collect();
    let encoders: Vec<String> = ENCODERS
        .iter()
        .map(|n| format!("{n}: {}", have(ffmpeg::encoder::find_by_name(n).is_some())))
        .collect();
    let _ = writeln!(out, "  decoders: {}", decoders.join(", "));
    let _ = writeln!(out, "  encoders: {}", encoders.join(", "));
    // Every video encoder of this binary's FFmpeg: what --codec / sink.codec can name here
    // (an error about a missing encoder lists those of the output's container from this list).
    let _ = writeln!(
        out,
        "  video encoders in this build: {}",
        video_encoder_names(None).join(", ")
    );
    let _ = writeln!(out, "  hardware device types: {}", hardware_device_types().join(", "));
    let nvenc = match nvenc_usable("h264_nvenc") {
        Ok(()) => "usable".to_string(),
        Err(why) => format!("not usable ({why})"),
    };
    let _ = writeln!(out, "  NVENC (h264_nvenc): {nvenc}");
    let default_for = |container: &str, gpu: bool| {
        let candidates = default_encoders(container, gpu);
        let (default, _) = first_usable(&candidates, encoder_usable);
        default.unwrap_or("none: name one with --codec")
    };
    let _ = writeln!(
        out,
        "  default video encoder for .mp4/.mkv/.ts: {} ({} with --device cpu)",
        default_for("mp4", true),
        default_for("mp4", false)
    );
    let _ = writeln!(out, "  default video encoder for .webm: {}", default_for("webm", false));
    out.push_str(&cuda_report());
    out
}

fn hardware_device_types() -> Vec<String> {
    let mut names = Vec::new();
    let mut kind = ffmpeg::ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_NONE;
    loop {
        // SAFETY: iterating FFmpeg's static table of device types.
        kind = unsafe { ffmpeg::ffi::av_hwdevice_iterate_types(kind) };
        if kind == ffmpeg::ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_NONE {
            break;
        }
        // SAFETY: the returned name is a static C string (or null).
        let name = unsafe { ffmpeg::ffi::av_hwdevice_get_type_name(kind) };
        if !name.is_null() {
            // SAFETY: not null (checked above), and FFmpeg's device type names are static
            // NUL-terminated strings.
            names.push(unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned());
        }
    }
    if names.is_empty() {
        names.push("none".into());
    }
    names
}

#[cfg(not(feature = "cuda"))]
fn cuda_report() -> String {
    "CUDA: not compiled into this build\n--device auto would use: cpu\n".into()
}

#[cfg(feature = "cuda")]
fn cuda_report() -> String {
    use convstream_core::BorderMode;
    use convstream_core::{
        compile_kernels, cuda_devices, cuda_driver_version, nvrtc_available, nvrtc_version, open_cuda_device,
        DeviceInfo, Variant,
    };
    let mut out = String::new();
    let count = match cuda_devices() {
        Ok(count) => count,
        Err(e) => {
            let _ = writeln!(out, "CUDA: unavailable: {e}");
            let version = nvrtc_available().then(nvrtc_version);
            let _ = writeln!(out, "{}", nvrtc_line(version, false));
            let _ = writeln!(out, "--device auto would use: cpu");
            return out;
        }
    };
    match cuda_driver_version() {
        Ok((major, minor)) => {
            let _ = writeln!(out, "CUDA driver: {major}.{minor}, {count} device(s)");
        }
        Err(e) => {
            let _ = writeln!(out, "CUDA driver: {e}");
        }
    }
    // probe() succeeded, so NVRTC loaded.
    let _ = writeln!(out, "{}", nvrtc_line(Some(nvrtc_version()), true));
    let mut usable = None;
    for ordinal in 0..count {
        let info = open_cuda_device(ordinal).and_then(|context| DeviceInfo::read(&context, ordinal));
        match info {
            Ok(info) => {
                let _ = writeln!(
                    out,
                    "cuda:{ordinal}: {}, compute capability {}.{}, {:.1} GiB ({:.1} GiB free), {} SMs at {} MHz (FP32 peak {:.1} TFLOP/s), {} copy engine(s), {} KiB shared memory per block",
                    info.name,
                    info.compute_capability.0,
                    info.compute_capability.1,
                    info.total_memory as f64 / (1u64 << 30) as f64,
                    info.free_memory as f64 / (1u64 << 30) as f64,
                    info.multiprocessors,
                    info.clock_khz / 1000,
                    info.fp32_peak() / 1e12,
                    info.copy_engines,
                    info.max_shared_per_block / 1024
                );
                let _ = writeln!(out, "  {}", nvdec_capacity(&info.name, count));
                let variant = Variant::new(
                    13,
                    13,
                    1,
                    BorderMode::Reflect,
                    info.max_shared_per_block,
                    convstream_core::KernelPath::Dense,
                    1920 * 1080,
                );
                let started = std::time::Instant::now();
                match compile_kernels(&variant, &info.arch()) {
                    Ok(_) => {
                        let _ = writeln!(
                            out,
                            "  kernels compile for {} ({:.0} ms for a 13x13 variant, cache included)",
                            info.arch(),
                            started.elapsed().as_secs_f64() * 1e3
                        );
                        usable.get_or_insert(ordinal);
                    }
                    Err(e) => {
                        let _ = writeln!(out, "  kernels do NOT compile for {}: {e}", info.arch());
                    }
                }
            }
            Err(e) => {
                let _ = writeln!(out, "cuda:{ordinal}: {e}");
            }
        }
    }
    let _ = writeln!(out, "{}", host_nvdec_seats());
    let _ = writeln!(
        out,
        "--device auto would use: {}",
        usable.map_or("cpu".to_string(), |n| format!("cuda:{n}"))
    );
    out.push_str(&nvdec_report());
    out
}

/// The NVRTC line: its version, or, when it cannot be loaded (`None`), that it is missing,
/// what needs it and how to get it (which `CUDA: unavailable` alone did not say). `gpu`:
/// whether a GPU is there to run what it compiles.
#[cfg(feature = "cuda")]
fn nvrtc_line(version: Option<Result<(i32, i32), convstream_core::EngineError>>, gpu: bool) -> String {
    match version {
        Some(Ok((major, minor))) if gpu => format!(
            "NVRTC: {major}.{minor}; kernel cache: {}",
            convstream_core::kernel_cache_dir().map_or("off".into(), |d| d.display().to_string())
        ),
        Some(Ok((major, minor))) => {
            format!("NVRTC: {major}.{minor} (kernels can compile, but there is no GPU to run them)")
        }
        Some(Err(e)) => format!("NVRTC: loaded, but does not answer: {e}"),
        None => NVRTC_MISSING.to_string(),
    }
}

#[cfg(feature = "cuda")]
const NVRTC_MISSING: &str = "NVRTC: missing (no libnvrtc.so, libnvrtc.so.13 or .12 could be loaded). The CUDA engine compiles its kernels with NVRTC when a pipeline starts, so without it --device auto runs on the CPU and --device cuda fails. Get it from NVIDIA's CUDA repository (apt install cuda-nvrtc-12-x, the version the driver supports) or from PyPI (pip install nvidia-cuda-nvrtc-cu12, as scripts/install-deps.sh does), then add the folder holding libnvrtc.so.12 to LD_LIBRARY_PATH.";

#[cfg(feature = "cuda")]
use convstream_core::{predicted_nvdec_pipelines, PIPELINES_PER_NVDEC_ENGINE};

/// How many NVDEC engines the GPU has and how many live pipelines that predicts before
/// anything ran; `gpus`: the host's GPUs, which share one NVDEC ceiling.
#[cfg(feature = "cuda")]
fn nvdec_capacity(gpu: &str, gpus: usize) -> String {
    let shared = match gpus {
        0 | 1 => "",
        _ => "; this host's GPUs share one NVDEC ceiling, so each may keep fewer with all decoding",
    };
    match convstream_core::decoder_engines(gpu) {
        Some(engines) => format!(
            "NVDEC engines: {} ({}); live 1080p25 H.264 pipelines with decoder = \"nvdec\" admitted before any \
             fell behind: up to {} ({PIPELINES_PER_NVDEC_ENGINE} per engine, what one such GPU alone keeps up \
             with){shared}; `serve` stops admitting at the first NVDEC pipeline behind its pace and keeps what it \
             learned",
            engines.count,
            engines.from,
            predicted_nvdec_pipelines(engines.count as usize),
        ),
        None => "NVDEC engines: unknown (NVML has no instance profile for this GPU and it is not in the published table); `convstream bench --suite scale --decoder nvdec` measures how many live pipelines it carries".into(),
    }
}

/// The host's NVDEC seats: every GPU's, which is what `serve` admits NVDEC pipelines to.
#[cfg(feature = "cuda")]
fn host_nvdec_seats() -> String {
    let inventory = convstream_core::gpu_inventory();
    let predicted: Vec<usize> = inventory.iter().filter_map(|gpu| gpu.nvdec_capacity).collect();
    if predicted.len() < inventory.len() || inventory.is_empty() {
        return "host NVDEC seats: unknown for some GPU (`convstream bench --suite scale --decoder nvdec --gpus all` measures them for `[server] nvdec_seats_file`)".into();
    }
    format!(
        "host NVDEC seats: up to {} on {} GPU(s) ({}, predicted; `serve` learns fewer if its NVDEC pipelines fall behind, and writes what it learned to `[server] nvdec_seats_file` when set); `convstream bench --suite scale --decoder nvdec --gpus all` measures what this host keeps up with beforehand",
        predicted.iter().sum::<usize>(),
        inventory.len(),
        predicted.iter().map(usize::to_string).collect::<Vec<_>>().join(" + ")
    )
}

/// What NVDEC on cuda:0 (where FFmpeg's cuvid decoders run) decodes, as the driver says:
/// what `decoder = "nvdec"` is checked against before a decoder is made.
#[cfg(feature = "cuda")]
fn nvdec_report() -> String {
    use convstream_core::{Chroma, NvdecCodec, NvdecProbe};
    let probe = convstream_core::CudaNvdecProbe::global();
    let mut lines = Vec::new();
    for codec in [
        NvdecCodec::H264,
        NvdecCodec::Hevc,
        NvdecCodec::Vp9,
        NvdecCodec::Av1,
        NvdecCodec::Mpeg4,
    ] {
        let mut taken = Vec::new();
        for chroma in [Chroma::Yuv420, Chroma::Yuv422, Chroma::Yuv444] {
            for bit_depth in [8, 10, 12] {
                match probe.capabilities(codec, chroma, bit_depth) {
                    Ok(caps) if caps.supported => taken.push(format!(
                        "{} {bit_depth}-bit up to {}x{}",
                        chroma.name(),
                        caps.max_width,
                        caps.max_height
                    )),
                    Ok(_) => {}
                    Err(e) => return format!("NVDEC: cannot be asked: {e}\n"),
                }
            }
        }
        let taken = if taken.is_empty() {
            "nothing".to_string()
        } else {
            taken.join(", ")
        };
        lines.push(format!("  {}: {taken}\n", codec.name()));
    }
    format!("NVDEC on cuda:0 decodes:\n{}", lines.concat())
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::*;

    #[test]
    fn a_missing_nvrtc_is_named_with_what_needs_it_and_how_to_get_it() {
        for gpu in [false, true] {
            let line = nvrtc_line(None, gpu);
            for told in [
                "NVRTC: missing",
                "compiles its kernels",
                "--device cuda fails",
                "pip install nvidia-cuda-nvrtc-cu12",
                "LD_LIBRARY_PATH",
            ] {
                assert!(line.contains(told), "`{told}` in: {line}");
            }
        }
        assert!(nvrtc_line(Some(Ok((12, 9))), false).starts_with("NVRTC: 12.9 (kernels can compile"));
        assert!(nvrtc_line(Some(Ok((13, 0))), true).starts_with("NVRTC: 13.0; kernel cache: "));
    }
}

//! Which video encoder an output gets when the config names none: H.264 wherever the FFmpeg
//! build can make it. libx264 first (the best quality per bit, where the build has it), then
//! NVENC (`h264_nvenc`) when the run may use a GPU and this host's GPU has an encoder (probed
//! once, quietly: H100 and H200 have none), then OpenH264, and MPEG-4 Part 2 last. Also the
//! video encoders this build has, which `doctor` lists and messages about a missing one name.

use ffmpeg_next as ffmpeg;
use std::sync::OnceLock;

use super::codecs::encoder_named;
use super::muxers::muxer_takes;
use super::startup::init;

/// The encoders tried, in order, when the config names none.
pub const DEFAULT_ENCODERS: &[&str] = &["libx264", "h264_nvenc", "libopenh264", "mpeg4"];

/// The encoders tried for a WebM output, which holds VP8, VP9 or AV1 only.
pub const WEBM_ENCODERS: &[&str] = &["libvpx-vp9"];

/// The encoders tried, in order, for a container when the config names none. NVENC only
/// where the run may use a GPU (`gpu`): a run on the CPU never opens the GPU to encode,
/// nor asks the driver whether it could.
pub fn default_encoders(container: &str, gpu: bool) -> Vec<&'static str> {
    let list = match container {
        "webm" => WEBM_ENCODERS,
        _ => DEFAULT_ENCODERS,
    };
    list.iter()
        .copied()
        .filter(|name| gpu || !name.ends_with("_nvenc"))
        .collect()
}

/// This build's video encoders, sorted by name; given a muxer, only those it can carry.
/// `convstream doctor` lists them all, and a message about an encoder the build lacks lists
/// the ones for the output's container: never another FFmpeg's (`ffmpeg -encoders` on the
/// host may list encoders this binary was built without).
pub fn video_encoder_names(muxer: Option<&ffmpeg::format::Output>) -> Vec<String> {
    init();
    let mut names = Vec::new();
    let mut cursor = std::ptr::null_mut();
    loop {
        // SAFETY: walks FFmpeg's static codec table; the cursor is FFmpeg's own state.
        let codec = unsafe { ffmpeg::ffi::av_codec_iterate(&mut cursor) };
        if codec.is_null() {
            break;
        }
        // SAFETY: a non-null entry of the static table.
        let codec = unsafe { ffmpeg::Codec::wrap(codec) };
        if codec.is_encoder() && codec.is_video() && muxer.is_none_or(|muxer| muxer_takes(muxer, codec.id())) {
            names.push(codec);
        }
    }
    let mut names: Vec<String> = names.into_iter().map(|codec| codec.name().to_string()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// [`video_encoder_names`] that open on this host: every software encoder, and the hardware
/// ones (NVENC, QSV, VAAPI, V4L2...) only where a small one opens here (asked once each per
/// process, quietly), so a message never offers an encoder the host cannot run.
pub fn usable_video_encoder_names(muxer: Option<&ffmpeg::format::Output>) -> Vec<String> {
    video_encoder_names(muxer)
        .into_iter()
        .filter(|name| encoder_named(name).is_some_and(|codec| !is_hardware(codec) || hardware_opens(name)))
        .collect()
}

/// Whether an encoder drives a device rather than the CPU (by FFmpeg's capability flags, and
/// by the wrappers' names for builds whose flags say nothing).
pub(crate) fn is_hardware(codec: ffmpeg::Codec) -> bool {
    const DEVICE_SUFFIXES: [&str; 9] = [
        "_nvenc",
        "_qsv",
        "_vaapi",
        "_v4l2m2m",
        "_omx",
        "_amf",
        "_mf",
        "_videotoolbox",
        "_vulkan",
    ];
    let flags = ffmpeg::ffi::AV_CODEC_CAP_HARDWARE | ffmpeg::ffi::AV_CODEC_CAP_HYBRID;
    // SAFETY: `codec` is an entry of FFmpeg's static codec table.
    let capabilities = unsafe { (*codec.as_ptr()).capabilities } as u32;
    capabilities & flags != 0 || DEVICE_SUFFIXES.iter().any(|suffix| codec.name().ends_with(suffix))
}

/// Whether the hardware encoder `name` opens here, asked once per process.
fn hardware_opens(name: &str) -> bool {
    if name.ends_with("_nvenc") {
        return nvenc_usable(name).is_ok();
    }
    static OPENS: OnceLock<std::sync::Mutex<std::collections::HashMap<String, bool>>> = OnceLock::new();
    let known = OPENS.get_or_init(Default::default);
    if let Some(&opens) = known.lock().unwrap_or_else(|e| e.into_inner()).get(name) {
        return opens;
    }
    let opens = open_tiny(name).is_ok();
    known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string(), opens);
    opens
}

/// Why `name` cannot encode an output into `muxer` (`None`: the container is unknown):
/// this build has no video encoder of that name. Lists the ones it has for the container.
pub fn missing_encoder(name: &str, muxer: Option<&ffmpeg::format::Output>) -> String {
    format!(
        "`{name}` is not a video encoder this convstream build has; {}",
        encoders_to_name(muxer)
    )
}

/// "for the mp4 container, these open here: a, b, c (`convstream doctor` lists them all)",
/// naming only encoders that open on this host, or what to do when it has none for the
/// container. Without a container to narrow the list by (the output's name says none), the
/// whole list would be a hundred names: `doctor` has them.
pub fn encoders_to_name(muxer: Option<&ffmpeg::format::Output>) -> String {
    let Some(muxer) = muxer else {
        return "`convstream doctor` lists the ones it has".to_string();
    };
    let names = usable_video_encoder_names(Some(muxer));
    match names.is_empty() {
        true => format!(
            "it has no video encoder the {} container takes: choose another container (.mkv takes most)",
            muxer.name()
        ),
        false => format!(
            "for the {} container, these open here: {} (`convstream doctor` lists them all)",
            muxer.name(),
            names.join(", ")
        ),
    }
}

/// The first of `candidates` that `usable` accepts, with why the ones before it were passed
/// over; `None` when none is.
pub fn first_usable<'a>(
    candidates: &[&'a str],
    usable: impl Fn(&str) -> Result<(), String>,
) -> (Option<&'a str>, Vec<String>) {
    let mut passed_over = Vec::new();
    for &name in candidates {
        match usable(name) {
            Ok(()) => return (Some(name), passed_over),
            Err(why) => passed_over.push(format!("{name}: {why}")),
        }
    }
    (None, passed_over)
}

/// Whether this FFmpeg build has the encoder `name` and, for NVENC, whether a GPU here
/// encodes with it.
pub fn encoder_usable(name: &str) -> Result<(), String> {
    if encoder_named(name).is_none_or(|c| !c.is_video()) {
        return Err("not in this FFmpeg build".into());
    }
    if name.ends_with("_nvenc") {
        return nvenc_usable(name);
    }
    Ok(())
}

/// Whether `name` (an NVENC encoder) opens here, asked once per process: a small encoder is
/// opened and closed. Fails quickly without a driver, and on GPUs without NVENC.
pub fn nvenc_usable(name: &str) -> Result<(), String> {
    static H264: OnceLock<Result<(), String>> = OnceLock::new();
    static HEVC: OnceLock<Result<(), String>> = OnceLock::new();
    let cell = if name == "hevc_nvenc" { &HEVC } else { &H264 };
    cell.get_or_init(|| open_tiny(name)).clone()
}

fn open_tiny(name: &str) -> Result<(), String> {
    init();
    let codec = encoder_named(name).ok_or("not in this FFmpeg build")?;
    let mut encoder = ffmpeg::codec::Context::new_with_codec(codec)
        .encoder()
        .video()
        .map_err(|e| e.to_string())?;
    encoder.set_width(256);
    encoder.set_height(144);
    encoder.set_format(ffmpeg::format::Pixel::YUV420P);
    encoder.set_time_base(ffmpeg::Rational::new(1, 25));
    super::log::clear_last_error();
    // Quietly: on a host without NVENC the probe's failure is its answer, given as the reason
    // (`doctor`, an output's "passed over"), not a warning on every run.
    super::log::quietly(|| encoder.open_as(codec).map(drop))
        .map_err(|e| super::log::with_ffmpeg_reason(format!("cannot open it: {e}")))
}

/// A bit rate for encoders that need one (OpenH264, NVENC) when the config sets none: about
/// 0.1 bit per pixel, at least 2 Mb/s (5.2 Mb/s for 1080p25, 21 Mb/s for 2160p25).
pub fn default_bit_rate(width: usize, height: usize, frames_per_second: f64) -> usize {
    let bits = width as f64 * height as f64 * frames_per_second.clamp(1.0, 240.0) * 0.1;
    (bits as usize).max(2_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_usable_encoder_wins_and_the_others_say_why_not() {
        let available = |name: &str| match name {
            "libx264" => Err("not in this FFmpeg build".to_string()),
            "h264_nvenc" => Err("no GPU encoder here".to_string()),
            _ => Ok(()),
        };
        let (chosen, passed_over) = first_usable(&default_encoders("mp4", true), available);
        assert_eq!(chosen, Some("libopenh264"));
        assert_eq!(
            passed_over,
            ["libx264: not in this FFmpeg build", "h264_nvenc: no GPU encoder here"]
        );
        let (chosen, _) = first_usable(DEFAULT_ENCODERS, |_| Ok(()));
        assert_eq!(chosen, Some("libx264"), "libx264 first where the build has it");
        let (chosen, passed_over) = first_usable(DEFAULT_ENCODERS, |_| Err("no".into()));
        assert_eq!((chosen, passed_over.len()), (None, 4));
    }

    #[test]
    fn a_run_on_the_cpu_has_no_nvenc_among_its_defaults() {
        for container in ["mp4", "matroska", "mpegts", "webm"] {
            let on_cpu = default_encoders(container, false);
            assert!(!on_cpu.is_empty(), "{container}");
            assert!(
                on_cpu.iter().all(|name| !name.contains("nvenc")),
                "{container}: {on_cpu:?}"
            );
        }
        assert_eq!(
            default_encoders("mp4", true),
            DEFAULT_ENCODERS,
            "all of them where a GPU may encode"
        );
    }

    /// Counts the warnings logged on the thread it is the default for.
    struct Warnings(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl tracing::Subscriber for Warnings {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            if *event.metadata().level() == tracing::Level::WARN {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn the_nvenc_probe_gives_ffmpegs_lines_as_its_reason_not_as_warnings() {
        let warnings = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // Not through `nvenc_usable`, whose answer another test may have asked for already.
        let answer = tracing::subscriber::with_default(Warnings(warnings.clone()), || open_tiny("hevc_nvenc"));
        if let Err(why) = &answer {
            // Without a driver (CI): "cannot open it: ... (FFmpeg: Cannot load libcuda.so.1)".
            assert!(why.starts_with("cannot open it"), "{why}");
        }
        assert_eq!(
            warnings.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the probe logged warnings: {answer:?}"
        );
    }

    #[test]
    fn default_bit_rates_scale_with_the_picture() {
        assert_eq!(default_bit_rate(1920, 1080, 25.0), 5_184_000);
        assert_eq!(default_bit_rate(3840, 2160, 25.0), 20_736_000);
        assert_eq!(default_bit_rate(320, 240, 30.0), 2_000_000, "never under 2 Mb/s");
    }

    #[test]
    fn nvenc_without_a_gpu_is_refused_quickly_and_never_panics() {
        // CI has no NVIDIA driver: the probe must answer (either way) without hanging.
        let started = std::time::Instant::now();
        let _ = nvenc_usable("h264_nvenc");
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(
            nvenc_usable("h264_nvenc"),
            nvenc_usable("h264_nvenc"),
            "asked once, same answer"
        );
    }
}

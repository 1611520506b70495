//! Which video encoder an output gets when the config names none: H.264 wherever the FFmpeg
//! build can make it. libx264 first (the best quality per bit, where the build has it), then
//! NVENC (`h264_nvenc`) when this host's GPU has an encoder (probed once: H100 and H200 have
//! none), then OpenH264 (in the portable build and the image), and MPEG-4 Part 2 last.

use ffmpeg_next as ffmpeg;
use std::sync::OnceLock;

use super::codecs::encoder_named;
use super::startup::init;

/// The encoders tried, in order, when the config names none.
pub const DEFAULT_ENCODERS: &[&str] = &["libx264", "h264_nvenc", "libopenh264", "mpeg4"];

/// The encoders tried for a WebM output, which holds VP8, VP9 or AV1 only.
pub const WEBM_ENCODERS: &[&str] = &["libvpx-vp9"];

/// The encoders tried, in order, for a container when the config names none.
pub fn default_encoders(container: &str) -> &'static [&'static str] {
    match container {
        "webm" => WEBM_ENCODERS,
        _ => DEFAULT_ENCODERS,
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
    encoder
        .open_as(codec)
        .map(drop)
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
        let (chosen, passed_over) = first_usable(DEFAULT_ENCODERS, available);
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

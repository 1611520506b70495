//! Codecs by name (FFmpeg's lookups, safe for any string), the encoders' lossless modes, and
//! the "try again" answer of FFmpeg's send and receive calls.

use ffmpeg_next as ffmpeg;

use super::startup::init;

/// Whether an FFmpeg error is "try again".
pub fn is_again(error: &ffmpeg::Error) -> bool {
    matches!(error, ffmpeg::Error::Other { errno } if *errno == ffmpeg::util::error::EAGAIN)
}

/// Encoders that can encode losslessly, with the options that make them do so (none for
/// those that are lossless by design). `None`: the encoder has no lossless mode.
pub fn lossless_options(encoder: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match encoder {
        "ffv1" | "huffyuv" | "ffvhuff" | "utvideo" | "rawvideo" | "png" | "magicyuv" | "wrapped_avframe" => &[],
        "libx264" | "libx264rgb" => &[("qp", "0")],
        "libx265" => &[("x265-params", "lossless=1")],
        "libvpx-vp9" => &[("lossless", "1")],
        _ => return None,
    })
}

/// The video encoder named `name`, if this FFmpeg build has it.
pub fn video_encoder(name: &str) -> Option<ffmpeg::Codec> {
    init();
    encoder_named(name).filter(|c| c.is_video())
}

/// The encoder FFmpeg names `name`, if any. (ffmpeg-next's own lookup panics on a name with
/// a NUL byte, which a config or an API body can hold.)
pub fn encoder_named(name: &str) -> Option<ffmpeg::Codec> {
    (!name.contains('\0'))
        .then(|| ffmpeg::encoder::find_by_name(name))
        .flatten()
}

/// The decoder FFmpeg names `name`, if any (see [`encoder_named`]).
pub fn decoder_named(name: &str) -> Option<ffmpeg::Codec> {
    (!name.contains('\0'))
        .then(|| ffmpeg::decoder::find_by_name(name))
        .flatten()
}

/// Why `--lossless` cannot be honoured with the encoder `name`.
pub fn lossless_unavailable(name: &str) -> String {
    format!(
        "the {name} encoder has no lossless mode; for lossless output use ffv1 (.mkv, .nut, .avi, .mov), libx264 or libx265 (qp 0 / lossless=1), or leave out the codec"
    )
}

//! Muxers: which one an output gets, which codecs it can hold, and why a lossless output
//! cannot go into a container.

use ffmpeg_next as ffmpeg;

use super::startup::init;

/// The muxer an output gets: the one named `format`, else the one FFmpeg guesses from the
/// URL's extension (as `avformat_alloc_output_context2` does). `None`: no such muxer.
pub fn guess_muxer(url: &str, format: Option<&str>) -> Option<ffmpeg::format::Output> {
    init();
    let name = std::ffi::CString::new(url).ok()?;
    let format = format.map(std::ffi::CString::new).transpose().ok()?;
    // SAFETY: valid C strings; the answer is a static muxer description or null.
    let muxer = unsafe {
        match &format {
            Some(short) => ffmpeg::ffi::av_guess_format(short.as_ptr(), std::ptr::null(), std::ptr::null()),
            None => ffmpeg::ffi::av_guess_format(std::ptr::null(), name.as_ptr(), std::ptr::null()),
        }
    };
    // SAFETY: a non-null static AVOutputFormat.
    (!muxer.is_null()).then(|| unsafe { ffmpeg::format::Output::wrap(muxer as *mut _) })
}

/// Video codecs the MPEG-TS muxer writes with a stream type players know; it has no codec
/// list of its own, and anything else would be written as private data no player reads.
const MPEGTS_VIDEO: &[ffmpeg::codec::Id] = &[
    ffmpeg::codec::Id::MPEG1VIDEO,
    ffmpeg::codec::Id::MPEG2VIDEO,
    ffmpeg::codec::Id::MPEG4,
    ffmpeg::codec::Id::H264,
    ffmpeg::codec::Id::HEVC,
    ffmpeg::codec::Id::CAVS,
    ffmpeg::codec::Id::DIRAC,
    ffmpeg::codec::Id::VC1,
    ffmpeg::codec::Id::AV1,
];

/// Codecs FFmpeg 5.1's MP4 muxer lists but refuses at the header unless told to be
/// experimental ("flac in MP4 support is experimental"): a copied stream of them is left
/// out rather than failing the output.
const MP4_EXPERIMENTAL: &[ffmpeg::codec::Id] = &[
    ffmpeg::codec::Id::FLAC,
    ffmpeg::codec::Id::OPUS,
    ffmpeg::codec::Id::TRUEHD,
];

/// Whether the muxer can hold `id`. Muxers without a codec list answer "unknown": MPEG-TS
/// takes the video codecs of `MPEGTS_VIDEO`; the others the kind of stream they have a
/// default codec for.
pub fn muxer_takes(muxer: &ffmpeg::format::Output, id: ffmpeg::codec::Id) -> bool {
    if muxer.name() == "mp4" && MP4_EXPERIMENTAL.contains(&id) {
        return false;
    }
    // SAFETY: querying a static muxer description with a codec id; reading its fields.
    unsafe {
        let muxer_ptr = muxer.as_ptr();
        match ffmpeg::ffi::avformat_query_codec(muxer_ptr, id.into(), ffmpeg::ffi::FF_COMPLIANCE_NORMAL) {
            1 => true,
            0 => false,
            _ => {
                let kind = ffmpeg::ffi::avcodec_get_type(id.into());
                if muxer.name() == "mpegts" && kind == ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_VIDEO {
                    return MPEGTS_VIDEO.contains(&id);
                }
                let default = match kind {
                    ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_VIDEO => (*muxer_ptr).video_codec,
                    ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_AUDIO => (*muxer_ptr).audio_codec,
                    ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_SUBTITLE => (*muxer_ptr).subtitle_codec,
                    _ => ffmpeg::ffi::AVCodecID::AV_CODEC_ID_NONE,
                };
                default != ffmpeg::ffi::AVCodecID::AV_CODEC_ID_NONE
            }
        }
    }
}

/// Why `--lossless` without a codec (FFV1) cannot go into `container`.
pub fn ffv1_unavailable(container: &str) -> String {
    // The containers of this FFmpeg build that take ffv1 (mov does only as an experiment).
    let takers: Vec<&str> = [("mkv", "matroska"), ("nut", "nut"), ("avi", "avi"), ("mov", "mov")]
        .into_iter()
        .filter(|(_, muxer)| guess_muxer("", Some(muxer)).is_some_and(|m| muxer_takes(&m, ffmpeg::codec::Id::FFV1)))
        .map(|(extension, _)| extension)
        .collect();
    let write = match takers.split_last() {
        Some((last, [])) => format!("write .{last}"),
        Some((last, rest)) => format!(
            "write {} or .{last}",
            rest.iter().map(|e| format!(".{e}")).collect::<Vec<_>>().join(", ")
        ),
        None => "no container of this FFmpeg build takes it".to_string(),
    };
    format!(
        "lossless output uses ffv1, which the {container} container cannot carry; {write}, or name an encoder with a lossless mode that {container} takes (e.g. --codec libx264)"
    )
}

//! Which encoder and pixel format an output gets: the one asked for, or the first default
//! the container takes; the frames' own format where the encoder takes it, else the nearest.

use ffmpeg::codec;
use ffmpeg::format::Pixel;
use ffmpeg_next as ffmpeg;

use crate::ffmpeg::encoders::{default_encoders, encoder_usable, encoders_to_name, first_usable, missing_encoder};
use crate::ffmpeg::{
    encoder_named, ffmpeg_format, ffv1_unavailable, lossless_options, lossless_unavailable, muxer_takes,
};
use convstream_config::SinkConfig;
use convstream_core::{PixelFormat, PixelLayout};

/// Pixel formats the YUV4MPEG2 muxer writes: planar YUV at 8 to 16 bits (`C420p10` and
/// the like above 8) and grey at 8, 9, 10, 12 and 16.
fn y4m_formats() -> Vec<Pixel> {
    PixelFormat::all()
        .filter(|f| match f.layout() {
            PixelLayout::Yuv420 | PixelLayout::Yuv422 | PixelLayout::Yuv444 => true,
            PixelLayout::Gray => f.bits() != 14,
            _ => false,
        })
        .map(ffmpeg_format)
        .collect()
}

/// Whether the output's container can hold `id` (see [`muxer_takes`]).
pub(crate) fn container_accepts(output: &ffmpeg::format::context::Output, id: codec::Id) -> bool {
    muxer_takes(&output.format(), id)
}

/// The encoder for `config`'s output. `gpu`: whether the run may use a GPU, and so NVENC
/// among the defaults (see [`default_encoders`]).
pub(super) fn choose_codec(
    config: &SinkConfig,
    output: &ffmpeg::format::context::Output,
    gpu: bool,
) -> Result<ffmpeg::Codec, String> {
    let container = output.format().name().to_string();
    let by_name = |name: &str| encoder_named(name).filter(|c| c.is_video());
    if container == "yuv4mpegpipe" {
        return by_name("wrapped_avframe")
            .ok_or_else(|| "this FFmpeg build lacks the wrapped_avframe encoder YUV4MPEG2 needs".into());
    }
    if container == "rawvideo" {
        return by_name("rawvideo").ok_or_else(|| "this FFmpeg build lacks the rawvideo encoder".into());
    }
    if let Some(name) = &config.codec {
        let codec = by_name(name).ok_or_else(|| missing_encoder(name, Some(&output.format())))?;
        if !container_accepts(output, codec.id()) {
            return Err(format!("the {container} container cannot hold {name} video"));
        }
        if config.lossless && lossless_options(name).is_none() {
            return Err(lossless_unavailable(name));
        }
        return Ok(codec);
    }
    if config.lossless {
        let codec = by_name("ffv1").ok_or("lossless output needs the ffv1 encoder, which this FFmpeg build lacks")?;
        if !container_accepts(output, codec.id()) {
            return Err(ffv1_unavailable(&container));
        }
        return Ok(codec);
    }
    let candidates = default_encoders(&container, gpu);
    let (chosen, passed_over) = first_usable(&candidates, |name| {
        encoder_usable(name)?;
        match by_name(name) {
            Some(codec) if container_accepts(output, codec.id()) => Ok(()),
            _ => Err(format!("the {container} container cannot hold it")),
        }
    });
    let codec = chosen.and_then(by_name).ok_or_else(|| {
        format!(
            "no default video encoder ({}) fits the {container} container here ({}); name one with --codec (sink.codec in a config): {}",
            candidates.join(", "),
            passed_over.join("; "),
            encoders_to_name(Some(&output.format())),
        )
    })?;
    if passed_over.is_empty() {
        tracing::info!(output = %config.url, "video encoder: {} (the default)", codec.name());
    } else {
        tracing::info!(output = %config.url, "video encoder: {} (passed over: {})", codec.name(), passed_over.join("; "));
    }
    Ok(codec)
}

/// The pixel format to encode in: the frames' own when the encoder takes it, else the
/// nearest one it takes: the stream's depth first (`stream_bits`; then deeper, then
/// shallower), and at each depth the frames' own kind of layout before 4:2:0.
pub(super) fn choose_format(codec: &ffmpeg::Codec, container: &str, frames: PixelFormat, stream_bits: u8) -> Pixel {
    let wanted = ffmpeg_format(frames);
    let supported: Vec<Pixel> = if container == "yuv4mpegpipe" {
        y4m_formats()
    } else {
        codec
            .video()
            .ok()
            .and_then(|v| v.formats().map(|f| f.collect()))
            .unwrap_or_default()
    };
    if supported.is_empty() || supported.contains(&wanted) {
        return wanted;
    }
    let layouts: &[PixelLayout] = match frames.layout() {
        PixelLayout::Rgb | PixelLayout::Bgr | PixelLayout::Gbr => &[
            PixelLayout::Gbr,
            PixelLayout::Rgb,
            PixelLayout::Bgr,
            PixelLayout::Yuv444,
        ],
        PixelLayout::Yuv444 => &[PixelLayout::Yuv444],
        PixelLayout::Yuv422 => &[PixelLayout::Yuv422],
        PixelLayout::Gray => &[PixelLayout::Gray],
        PixelLayout::Yuv420 | PixelLayout::SemiPlanar420 => &[PixelLayout::SemiPlanar420],
    };
    let bits = stream_bits.clamp(8, frames.bits());
    let mut depths: Vec<u8> = (bits..=16).collect();
    depths.extend((8..bits).rev());
    depths
        .into_iter()
        .flat_map(|depth| {
            layouts
                .iter()
                .chain(&[PixelLayout::Yuv420])
                .filter_map(move |&layout| PixelFormat::new(layout, depth))
        })
        .map(ffmpeg_format)
        .find(|p| supported.contains(p))
        .unwrap_or(supported[0])
}

/// Significant bits per sample of an FFmpeg pixel format (8 if it cannot be told).
pub(super) fn bits_of(pixel: Pixel) -> u8 {
    // SAFETY: a descriptor from av_pix_fmt_desc_get is static; reading its first component.
    pixel
        .descriptor()
        .map_or(8, |desc| unsafe { (*desc.as_ptr()).comp[0].depth } as u8)
}

/// FFmpeg's name of a pixel format (`yuv420p10le`).
pub(super) fn pixel_name(pixel: Pixel) -> &'static str {
    pixel.descriptor().map_or("unknown", |desc| desc.name())
}

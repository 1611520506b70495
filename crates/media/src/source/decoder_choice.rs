//! Which FFmpeg decoder a source's `decoder` setting means: FFmpeg's software choice (a
//! software AV1 decoder, never FFmpeg's hardware-only `av1`), NVDEC once the driver says it
//! decodes the stream, or a decoder by name.
//!
//! NVDEC comes two ways. FFmpeg's own decoder of the codec with NVDEC as its hardware
//! accelerator (`h264` + `h264_nvdec`: FFmpeg parses, NVDEC decodes) is used when the
//! pipeline's GPU context is shared with the decoder; NVIDIA's `*_cuvid` decoders, which
//! parse with NVIDIA's own parser, otherwise. On a host of several GPUs the `*_cuvid` decoders
//! share one ceiling of about 1,200 1080p frames/s across every GPU and process
//! (BENCHMARKS.md, "NVDEC's host-wide ceiling").

use ffmpeg::codec;
use ffmpeg_next as ffmpeg;
use std::sync::Arc;

use super::error::SourceError;
use super::nvdec::{self, NvdecProbe, StreamTraits};
use crate::config::SourceConfig;
use crate::ffmpeg::decoder_named;

/// The decoder a source's setting chose.
#[derive(Clone, Copy)]
pub(super) struct ChosenDecoder {
    /// The decoder opened without a GPU context to share: software, or NVDEC's `*_cuvid`
    /// (or, in a build without one, FFmpeg's own decoder, which then needs that context).
    pub codec: ffmpeg::Codec,
    /// Whether it decodes on NVDEC.
    pub hardware: bool,
    /// FFmpeg's own decoder of the codec, with NVDEC as its accelerator: used instead of
    /// `codec` when the decoder shares the pipeline's GPU context.
    pub accelerated: Option<ffmpeg::Codec>,
}

/// The decoder `config.decoder` names for a stream of `parameters`. NVDEC is first asked
/// whether it decodes the stream; when it does not, the error says why.
pub(super) fn choose_decoder(
    config: &SourceConfig,
    parameters: &codec::Parameters,
    nvdec_probe: &Arc<dyn NvdecProbe>,
) -> Result<ChosenDecoder, SourceError> {
    let url = &config.url;
    let decoder_error = |reason: String| SourceError::Decoder {
        url: url.clone(),
        reason,
    };
    let codec_id = parameters.id();
    let mut accelerated = None;
    let (codec, hardware) = match config.decoder.as_str() {
        "auto" | "software" => (
            software_decoder(codec_id, decoder_named).map_err(|reason| SourceError::Unusable {
                url: url.clone(),
                reason,
            })?,
            false,
        ),
        "nvdec" => {
            let name = format!("{}_cuvid", codec_id.name());
            accelerated = ffmpeg::decoder::find(codec_id).filter(|codec| decodes_on_nvdec(*codec));
            let found = decoder_named(&name).or(accelerated);
            if found.is_none() {
                let reason = match nvdec::codec_of(codec_id) {
                    None => format!("NVDEC has no decoder for {}", codec_id.name()),
                    Some(_) => format!("decoder = \"nvdec\" needs FFmpeg's {name} decoder, which this FFmpeg build lacks (build with scripts/build-portable.sh, or use decoder = \"software\")"),
                };
                return Err(SourceError::Unusable {
                    url: url.clone(),
                    reason,
                });
            }
            (found, true)
        }
        // FFmpeg's own av1 decoder, asked for by name, would fail every packet.
        "av1" => {
            return Err(SourceError::Unusable {
                url: url.clone(),
                reason: "FFmpeg's av1 decoder decodes only on hardware, which a software decode does not give it; use decoder = \"libdav1d\" or \"software\" (which picks it), or \"nvdec\"".into(),
            })
        }
        name => {
            let found = decoder_named(name);
            if found.is_none() {
                // A name the build does not know is the setting's fault, not the input's.
                return Err(SourceError::Unusable {
                    url: url.clone(),
                    reason: format!(
                        "this FFmpeg build has no decoder named `{}` (`ffmpeg -decoders` lists them; or use decoder = \"auto\")",
                        convstream_core::text::quoted(name)
                    ),
                });
            }
            (found, name.ends_with("_cuvid"))
        }
    };
    let codec = codec.ok_or_else(|| decoder_error(format!("this FFmpeg build cannot decode {}", codec_id.name())))?;
    if hardware {
        let traits = StreamTraits::of(parameters);
        nvdec::check(&traits, nvdec_probe.as_ref()).map_err(|reason| SourceError::Unusable {
            url: url.clone(),
            reason: format!("{reason}; use decoder = \"software\" (or \"auto\")"),
        })?;
    }
    Ok(ChosenDecoder {
        codec,
        hardware,
        accelerated,
    })
}

/// Whether FFmpeg's decoder `codec` can decode on NVDEC: it has an accelerator that outputs
/// CUDA frames on a CUDA device it is given (FFmpeg builds it only when configured with
/// `--enable-nvdec` and the codec's `*_nvdec` hwaccel).
pub(super) fn decodes_on_nvdec(codec: ffmpeg::Codec) -> bool {
    (0..)
        .map_while(|index| {
            // SAFETY: avcodec_get_hw_config reads the codec's static table and returns null
            // past its end.
            let config = unsafe { ffmpeg::ffi::avcodec_get_hw_config(codec.as_ptr(), index) };
            // SAFETY: a non-null entry points into that static table.
            (!config.is_null()).then(|| unsafe { *config })
        })
        .any(|config| {
            config.device_type == ffmpeg::ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_CUDA
                && config.pix_fmt == ffmpeg::ffi::AVPixelFormat::AV_PIX_FMT_CUDA
                && config.methods & ffmpeg::ffi::AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX as i32 != 0
        })
}

/// Software decoders of AV1, best first. FFmpeg's native `av1` decoder is not one: it
/// decodes only through a hardware accelerator, which a software decode does not give it,
/// so without these an AV1 stream would decode to nothing, packet after failed packet.
const SOFTWARE_AV1_DECODERS: [&str; 2] = ["libdav1d", "libaom-av1"];

/// The decoder `decoder = "software"` (or `auto` without NVDEC) uses for `id`, looked up
/// with `find` by name; an error when the build has none that decodes it in software.
fn software_decoder(
    id: codec::Id,
    find: impl Fn(&str) -> Option<ffmpeg::Codec>,
) -> Result<Option<ffmpeg::Codec>, String> {
    if id != codec::Id::AV1 {
        return Ok(ffmpeg::decoder::find(id));
    }
    SOFTWARE_AV1_DECODERS
        .iter()
        .find_map(|name| find(name))
        .map(Some)
        .ok_or_else(|| {
            "this FFmpeg build has no software AV1 decoder (libdav1d or libaom): FFmpeg's own av1 decoder \
             decodes only on hardware; use decoder = \"nvdec\" (--decoder nvdec) on a GPU that decodes AV1, \
             or a convstream built against an FFmpeg with libdav1d (Debian's, with `cargo build`)"
                .to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::nvdec::{Chroma, NvdecCaps, NvdecCodec, ProbeError};

    /// A driver that decodes everything.
    struct AnyStream;
    impl NvdecProbe for AnyStream {
        fn capabilities(&self, _: NvdecCodec, _: Chroma, _: u32) -> Result<NvdecCaps, ProbeError> {
            Ok(NvdecCaps {
                supported: true,
                min_width: 16,
                min_height: 16,
                max_width: 8192,
                max_height: 8192,
                max_macroblocks: u32::MAX,
            })
        }
    }

    /// The parameters of a 1080p 8-bit 4:2:0 H.264 stream.
    fn h264_1080p() -> codec::Parameters {
        let mut parameters = codec::Parameters::new();
        // SAFETY: plain fields of parameters this test owns.
        unsafe {
            let raw = &mut *parameters.as_mut_ptr();
            raw.codec_type = ffmpeg::ffi::AVMediaType::AVMEDIA_TYPE_VIDEO;
            raw.codec_id = ffmpeg::ffi::AVCodecID::AV_CODEC_ID_H264;
            raw.format = ffmpeg::ffi::AVPixelFormat::AV_PIX_FMT_YUV420P as i32;
            raw.width = 1920;
            raw.height = 1080;
        }
        parameters
    }

    fn chosen(decoder: &str) -> ChosenDecoder {
        let config = SourceConfig {
            decoder: decoder.into(),
            ..SourceConfig::from_url("camera.mp4")
        };
        let probe: Arc<dyn NvdecProbe> = Arc::new(AnyStream);
        match choose_decoder(&config, &h264_1080p(), &probe) {
            Ok(chosen) => chosen,
            Err(e) => panic!("decoder = {decoder:?} refused: {e}"),
        }
    }

    #[test]
    fn nvdec_takes_ffmpeg_own_decoder_with_its_accelerator_where_the_build_has_it() {
        crate::ffmpeg::init();
        let h264 = ffmpeg::decoder::find(codec::Id::H264).expect("FFmpeg decodes H.264");
        let png = ffmpeg::decoder::find(codec::Id::PNG).expect("FFmpeg decodes PNG");
        assert!(!decodes_on_nvdec(png), "PNG has no NVDEC accelerator");
        let nvdec = chosen("nvdec");
        assert!(nvdec.hardware);
        if decodes_on_nvdec(h264) {
            assert!(nvdec.accelerated == Some(h264), "h264 with its NVDEC accelerator");
        } else {
            assert!(nvdec.accelerated.is_none());
        }
        // Without a shared context the cuvid decoder opens, where the build has one.
        if decoder_named("h264_cuvid").is_some() {
            assert_eq!(nvdec.codec.name(), "h264_cuvid");
        }
        // A cuvid decoder named, and software, are taken as they are.
        if decoder_named("h264_cuvid").is_some() {
            let named = chosen("h264_cuvid");
            assert!(named.hardware && named.accelerated.is_none());
        }
        let software = chosen("software");
        assert!(!software.hardware && software.accelerated.is_none());
        assert_eq!(software.codec.name(), "h264");
    }

    #[test]
    fn av1_takes_a_software_decoder_or_is_refused_naming_the_fix() {
        let none = |_: &str| None;
        let Err(reason) = software_decoder(codec::Id::AV1, none) else {
            panic!("AV1 without libdav1d or libaom must be refused");
        };
        assert!(
            reason.contains("no software AV1 decoder") && reason.contains("libdav1d"),
            "{reason}"
        );
        assert!(reason.contains("nvdec"), "{reason}");
        // With libdav1d in the build (the system FFmpeg the tests link has it), it is chosen.
        if let Some(dav1d) = decoder_named("libdav1d") {
            let chosen = software_decoder(codec::Id::AV1, decoder_named).unwrap().unwrap();
            assert_eq!(chosen.name(), dav1d.name());
        }
        // Other codecs keep FFmpeg's choice.
        let h264 = software_decoder(codec::Id::H264, none).unwrap().unwrap();
        assert_eq!(h264.name(), "h264");
    }
}

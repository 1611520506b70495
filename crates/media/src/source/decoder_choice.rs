//! Which FFmpeg decoder a source's `decoder` setting means: FFmpeg's software choice (a
//! software AV1 decoder, never FFmpeg's hardware-only `av1`), NVDEC's `*_cuvid` decoder once
//! the driver says it decodes the stream, or a decoder by name.

use ffmpeg::codec;
use ffmpeg_next as ffmpeg;
use std::sync::Arc;

use super::error::SourceError;
use super::nvdec::{self, NvdecProbe, StreamTraits};
use crate::ffmpeg::decoder_named;
use convstream_config::SourceConfig;

/// The decoder `config.decoder` names for a stream of `parameters`, and whether it is
/// NVDEC's. NVDEC is first asked whether it decodes the stream; when it does not, the error
/// says why.
pub(super) fn choose_decoder(
    config: &SourceConfig,
    parameters: &codec::Parameters,
    nvdec_probe: &Arc<dyn NvdecProbe>,
) -> Result<(ffmpeg::Codec, bool), SourceError> {
    let url = &config.url;
    let decoder_error = |reason: String| SourceError::Decoder {
        url: url.clone(),
        reason,
    };
    let codec_id = parameters.id();
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
            let found = decoder_named(&name);
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
                        convstream_core::quoted(name)
                    ),
                });
            }
            if let Some(found) = found.filter(|found| found.id() != codec_id) {
                // `-c:v mpeg4 -i h264.mkv`: the decoder named cannot take this stream.
                return Err(SourceError::Unusable {
                    url: url.clone(),
                    reason: format!(
                        "the {} decoder decodes {}, but this input's video is {}; name a decoder of {} \
                         (decoder = \"{}\"), or leave the decoder out (\"auto\")",
                        found.name(),
                        found.id().name(),
                        codec_id.name(),
                        codec_id.name(),
                        ffmpeg::decoder::find(codec_id).map_or_else(|| codec_id.name().to_string(), |c| c.name().to_string())
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
    Ok((codec, hardware))
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

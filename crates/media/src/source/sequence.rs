//! Where an H.264 or HEVC stream starts a new sequence (another size, chroma format or bit
//! depth), read from the parameter sets its keyframes carry with FFmpeg's own parser.
//!
//! FFmpeg's cuvid wrapper reconfigures NVDEC in place on such a change, and on FFmpeg 5.1
//! that goes wrong: a larger size fails outright, and a smaller size or another bit depth
//! turns the pictures still queued for display into garbage (measured on an H100: the five
//! frames before the change came out with a mean error of 95 levels). Seeing the change
//! first lets the source finish the old decoder (every queued frame comes out right) and
//! start a fresh one at the keyframe, as NVIDIA's decoder guide advises.

use ffmpeg::{codec, Packet};
use ffmpeg_next as ffmpeg;

/// A coded sequence's size and FFmpeg pixel format number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sequence {
    pub width: i32,
    pub height: i32,
    pub format: i32,
}

/// FFmpeg's parser for the stream's codec, fed only keyframes.
pub(super) struct SequenceWatch {
    parser: *mut ffmpeg::ffi::AVCodecParserContext,
    context: *mut ffmpeg::ffi::AVCodecContext,
    /// The sequence the decoder is decoding now.
    current: Option<Sequence>,
}

// SAFETY: the parser and context are owned by this value alone and used only through
// `&mut self`, so moving it to another thread (the source's) is sound.
unsafe impl Send for SequenceWatch {}

impl SequenceWatch {
    /// A watch for H.264 and HEVC streams; `None` for other codecs (or if FFmpeg lacks the
    /// parser), which then rely on the decoder's own handling.
    pub(super) fn new(parameters: &codec::Parameters) -> Option<SequenceWatch> {
        let id = parameters.id();
        if !matches!(id, codec::Id::H264 | codec::Id::HEVC) {
            return None;
        }
        // SAFETY: plain FFmpeg allocations, each checked; the context gets a copy of the
        // stream's parameters (extradata included, which the parser reads for avcC/hvcC).
        unsafe {
            let parser = ffmpeg::ffi::av_parser_init(ffmpeg::ffi::AVCodecID::from(id) as i32);
            if parser.is_null() {
                return None;
            }
            // Each packet is one whole picture: parse it at once instead of waiting for the next.
            (*parser).flags |= ffmpeg::ffi::PARSER_FLAG_COMPLETE_FRAMES;
            let mut context = ffmpeg::ffi::avcodec_alloc_context3(std::ptr::null());
            if context.is_null() || ffmpeg::ffi::avcodec_parameters_to_context(context, parameters.as_ptr()) < 0 {
                ffmpeg::ffi::avcodec_free_context(&mut context);
                ffmpeg::ffi::av_parser_close(parser);
                return None;
            }
            Some(SequenceWatch {
                parser,
                context,
                current: None,
            })
        }
    }

    /// The sequence a keyframe starts, when its parameter sets say.
    fn sequence_of(&mut self, packet: &Packet) -> Option<Sequence> {
        let data = packet.data()?;
        let mut out: *mut u8 = std::ptr::null_mut();
        let mut out_size = 0;
        // SAFETY: the parser and context are valid; FFmpeg packets are padded as the parser
        // requires; the output pointer only refers into the parser's buffer and is not kept.
        let parser = unsafe {
            ffmpeg::ffi::av_parser_parse2(
                self.parser,
                self.context,
                &mut out,
                &mut out_size,
                data.as_ptr(),
                data.len() as i32,
                ffmpeg::ffi::AV_NOPTS_VALUE,
                ffmpeg::ffi::AV_NOPTS_VALUE,
                -1,
            );
            &*self.parser
        };
        (parser.width > 0 && parser.height > 0 && parser.format >= 0).then_some(Sequence {
            width: parser.width,
            height: parser.height,
            format: parser.format,
        })
    }

    /// For a keyframe: the new sequence it starts, when it is not the one being decoded.
    /// The first keyframe only sets the current sequence.
    pub(super) fn change_at(&mut self, packet: &Packet) -> Option<Sequence> {
        if !packet.is_key() {
            return None;
        }
        let sequence = self.sequence_of(packet)?;
        let previous = self.current.replace(sequence);
        previous.filter(|&old| old != sequence).map(|_| sequence)
    }
}

impl Drop for SequenceWatch {
    fn drop(&mut self) {
        // SAFETY: both were allocated in `new` and are freed once, here.
        unsafe {
            ffmpeg::ffi::av_parser_close(self.parser);
            ffmpeg::ffi::avcodec_free_context(&mut self.context);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The video packets of an H.264 MPEG-TS made by the ffmpeg CLI, and its stream's parameters.
    fn packets_of(path: &std::path::Path) -> (codec::Parameters, Vec<Packet>) {
        let mut input = ffmpeg::format::input(path).expect("the clip opens");
        let stream = input
            .streams()
            .best(ffmpeg::media::Type::Video)
            .expect("a video stream");
        let (index, parameters) = (stream.index(), stream.parameters());
        let packets = input
            .packets()
            .filter(|(stream, _)| stream.index() == index)
            .map(|(_, packet)| packet)
            .collect();
        (parameters, packets)
    }

    fn clip(dir: &std::path::Path, name: &str, size: &str, pix_fmt: &str, profile: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        let status = std::process::Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i"])
            .arg(format!("testsrc2=size={size}:rate=25"))
            .args([
                "-frames:v",
                "10",
                "-pix_fmt",
                pix_fmt,
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
            ])
            .args(["-g", "5", "-profile:v", profile, "-f", "mpegts"])
            .arg(&path)
            .status()
            .expect("ffmpeg runs");
        assert!(status.success());
        path
    }

    #[test]
    fn a_change_of_size_or_chroma_is_seen_at_its_keyframe() {
        crate::ffmpeg::init();
        let dir = tempfile::tempdir().unwrap();
        let small = clip(dir.path(), "small.ts", "320x240", "yuv420p", "high");
        let large = clip(dir.path(), "large.ts", "640x480", "yuv420p", "high");
        let full = clip(dir.path(), "full.ts", "640x480", "yuv444p", "high444");
        let (parameters, mut packets) = packets_of(&small);
        let mut watch = SequenceWatch::new(&parameters).expect("H.264 is watched");
        packets.extend(packets_of(&large).1);
        packets.extend(packets_of(&full).1);
        let changes: Vec<(usize, Sequence)> = packets
            .iter()
            .enumerate()
            .filter_map(|(index, packet)| watch.change_at(packet).map(|change| (index, change)))
            .collect();
        let yuv420p = ffmpeg::ffi::AVPixelFormat::AV_PIX_FMT_YUV420P as i32;
        let yuv444p = ffmpeg::ffi::AVPixelFormat::AV_PIX_FMT_YUV444P as i32;
        assert_eq!(
            changes,
            vec![
                (
                    10,
                    Sequence {
                        width: 640,
                        height: 480,
                        format: yuv420p
                    }
                ),
                (
                    20,
                    Sequence {
                        width: 640,
                        height: 480,
                        format: yuv444p
                    }
                ),
            ],
            "keyframes every 5 pictures, changes at the 11th and 21st"
        );
    }
}

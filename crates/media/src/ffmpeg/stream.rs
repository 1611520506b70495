//! What the source tells the sink about its streams: the video's geometry, timing and
//! colour before the first frame, the other streams it copies, and their packets on the way.

use ffmpeg::{codec, media, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::hdr::HdrMetadata;
use convstream_core::PixelFormat;

/// Colour description carried from input to output.
#[derive(Debug, Clone, Copy)]
pub struct ColorInfo {
    /// Limited (TV) or full (PC) range.
    pub range: ffmpeg::color::Range,
    /// The matrix from RGB to YUV (BT.709, BT.2020, ...).
    pub space: ffmpeg::color::Space,
    /// The colour primaries.
    pub primaries: ffmpeg::color::Primaries,
    /// The transfer characteristic (BT.709, PQ, HLG, ...).
    pub transfer: ffmpeg::color::TransferCharacteristic,
}

/// A non-video input stream the sink may copy.
#[derive(Clone)]
pub struct PassthroughStream {
    /// Its index among the input's streams.
    pub index: usize,
    /// Audio or subtitles.
    pub medium: media::Type,
    /// Its codec parameters, copied to the output stream.
    pub parameters: codec::Parameters,
    /// The time base its packets' timestamps count in.
    pub time_base: Rational,
}

/// What the sink and engine need to know about the video before the first frame.
#[derive(Clone)]
pub struct SourceInfo {
    /// The input as configured.
    pub url: String,
    /// The pictures' width, in pixels.
    pub width: usize,
    /// The pictures' height, in pixels.
    pub height: usize,
    /// The format frames leave the source in.
    pub format: PixelFormat,
    /// Bits per sample of the coded stream (or of `--depth`): what the output is written at
    /// when the encoder takes it. Frames can be deeper (NVDEC gives 12-bit HEVC as P016).
    pub stream_bits: u8,
    /// The time base the video's timestamps count in.
    pub time_base: Rational,
    /// Frames per second (25 when the input does not say).
    pub frame_rate: Rational,
    /// The pictures' sample aspect ratio (0/1 when unknown).
    pub aspect_ratio: Rational,
    /// The video's colour description.
    pub color: ColorInfo,
    /// Frame count when the container says or the duration implies it.
    pub expected_frames: Option<u64>,
    /// The FFmpeg decoder's name (`h264`, `hevc_cuvid`, ...).
    pub decoder: String,
    /// The audio and subtitle streams the sink may copy.
    pub passthrough: Vec<PassthroughStream>,
    /// Mastering display and content light level, from the stream or its first picture.
    pub hdr: HdrMetadata,
    /// Frames arrive at their own pace (a live input, or `realtime` pacing): encoders are
    /// set up for latency rather than for the last bit of compression.
    pub real_time: bool,
}

impl SourceInfo {
    /// The copied streams' indices and codecs: what a reconnected input must match for
    /// its packets to go on to the same output streams.
    pub fn stream_signature(&self) -> Vec<(usize, codec::Id)> {
        self.passthrough.iter().map(|s| (s.index, s.parameters.id())).collect()
    }
}

/// A non-video packet on its way to the sink, tagged with its input stream.
pub struct PassthroughPacket {
    /// The index of the input stream it was read from.
    pub stream: usize,
    /// The packet, its timestamps in that stream's time base.
    pub packet: Packet,
}

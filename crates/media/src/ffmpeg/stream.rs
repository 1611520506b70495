//! What the source tells the sink about its streams: the video's geometry, timing and
//! colour before the first frame, the other streams it copies, and their packets on the way.

use ffmpeg::{codec, media, Packet, Rational};
use ffmpeg_next as ffmpeg;

use super::hdr::HdrMetadata;
use convstream_core::frame::PixelFormat;

/// Colour description carried from input to output.
#[derive(Debug, Clone, Copy)]
pub struct ColorInfo {
    pub range: ffmpeg::color::Range,
    pub space: ffmpeg::color::Space,
    pub primaries: ffmpeg::color::Primaries,
    pub transfer: ffmpeg::color::TransferCharacteristic,
}

/// A non-video input stream the sink may copy.
#[derive(Clone)]
pub struct PassthroughStream {
    pub index: usize,
    pub medium: media::Type,
    pub parameters: codec::Parameters,
    pub time_base: Rational,
}

/// What the sink and engine need to know about the video before the first frame.
#[derive(Clone)]
pub struct SourceInfo {
    pub url: String,
    pub width: usize,
    pub height: usize,
    /// The format frames leave the source in.
    pub format: PixelFormat,
    /// Bits per sample of the coded stream (or of `--depth`): what the output is written at
    /// when the encoder takes it. Frames can be deeper (NVDEC gives 12-bit HEVC as P016).
    pub stream_bits: u8,
    pub time_base: Rational,
    pub frame_rate: Rational,
    pub aspect_ratio: Rational,
    pub color: ColorInfo,
    /// Frame count when the container says or the duration implies it.
    pub expected_frames: Option<u64>,
    pub decoder: String,
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
    pub stream: usize,
    pub packet: Packet,
}

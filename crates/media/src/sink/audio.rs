//! An input's audio encoded again (`sink.audio_codec`, FFmpeg's `-c:a aac -b:a 128k -ar
//! 48000 -ac 2`) instead of copied: its packets decoded, resampled and cut into the
//! encoder's frame size by FFmpeg's own filters (`aresample`, `aformat`), then encoded.

use ffmpeg::packet::Mut as _;
use ffmpeg::{codec, filter, format, Dictionary, Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::collections::BTreeMap;
use std::ffi::CStr;

use crate::ffmpeg::{is_again, PassthroughStream};

/// One audio stream's decoder, filters and encoder.
pub(super) struct AudioTranscoder {
    decoder: ffmpeg::decoder::Audio,
    graph: filter::Graph,
    encoder: ffmpeg::encoder::Audio,
    /// The input packets' time base.
    in_time_base: Rational,
    /// What `av_rescale_delta` keeps between decoded frames: their timestamps are taken to
    /// samples as FFmpeg's command line takes them, without drifting by rounding.
    rescale_last: i64,
    /// Packets and frames skipped because they could not be decoded or filtered.
    skipped: u64,
}

// SAFETY: the codec contexts and the graph have no thread affinity; the sink uses them from
// its one thread.
unsafe impl Send for AudioTranscoder {}

/// A layout's name as FFmpeg writes it (`stereo`, `5.1`).
fn layout_name(layout: ffmpeg::ChannelLayout, channels: i32) -> String {
    let mut buffer = [0 as std::ffi::c_char; 64];
    // SAFETY: the buffer's size is given; the function NUL-terminates what it writes.
    unsafe {
        ffmpeg::ffi::av_get_channel_layout_string(buffer.as_mut_ptr(), buffer.len() as i32, channels, layout.bits());
        CStr::from_ptr(buffer.as_ptr()).to_string_lossy().into_owned()
    }
}

impl AudioTranscoder {
    /// Sets up `codec_name` for `input`, with `options` as FFmpeg's `-KEY:a VALUE` (`b`,
    /// `ar`, `ac`, and the encoder's own); `global_header` when the container wants one.
    pub(super) fn new(
        input: &PassthroughStream,
        codec_name: &str,
        options: &BTreeMap<String, String>,
        global_header: bool,
    ) -> Result<AudioTranscoder, String> {
        let codec = ffmpeg::encoder::find_by_name(codec_name)
            .filter(|c| c.is_encoder() && c.medium() == ffmpeg::media::Type::Audio)
            .ok_or_else(|| {
                format!("sink.audio_codec `{codec_name}`: no audio encoder of that name in this FFmpeg build")
            })?;
        let mut decoder = codec::Context::from_parameters(input.parameters.clone())
            .and_then(|c| c.decoder().audio())
            .map_err(|e| format!("cannot decode audio stream #{}: {e}", input.index))?;
        // SAFETY: a decoder context not yet used; one field is written.
        unsafe { (*decoder.as_mut_ptr()).pkt_timebase = input.time_base.into() };
        let whole = |key: &str| -> Result<Option<i32>, String> {
            options
                .get(key)
                .map(|v| {
                    v.trim()
                        .parse::<i32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("-{key} {v:?}: a whole number above 0"))
                })
                .transpose()
        };
        let in_channels = i32::from(decoder.channels()).max(1);
        let in_layout = match decoder.channel_layout().bits() {
            0 => ffmpeg::ChannelLayout::default(in_channels),
            _ => decoder.channel_layout(),
        };
        let rate = whole("ar")?.unwrap_or(decoder.rate() as i32);
        let channels = whole("ac")?.unwrap_or(in_channels);
        let layout = match channels == in_channels {
            true => in_layout,
            false => ffmpeg::ChannelLayout::default(channels),
        };
        let audio = codec.audio().map_err(|e| format!("-c:a {codec_name}: {e}"))?;
        // Every sample format the encoder takes: the filters pick the one nearest the
        // decoded audio's, as FFmpeg's command line lets them (FLAC from float audio: s32).
        let formats: Vec<String> = audio
            .formats()
            .map(|formats| formats.map(|f| f.name().to_string()).collect())
            .unwrap_or_else(|| vec!["fltp".to_string()]);
        let out = (formats.join("|"), rate, layout_name(layout, channels));
        let mut graph = Self::graph(&decoder, in_layout, in_channels, &out)?;
        let mut encoder = codec::Context::new_with_codec(codec)
            .encoder()
            .audio()
            .map_err(|e| format!("-c:a {codec_name}: {e}"))?;
        encoder.set_rate(rate);
        encoder.set_channel_layout(layout);
        encoder.set_channels(channels);
        encoder.set_format(Self::negotiated_format(&mut graph));
        encoder.set_time_base(Rational::new(1, rate));
        if global_header {
            encoder.set_flags(codec::Flags::GLOBAL_HEADER);
        }
        let mut dictionary = Dictionary::new();
        for (key, value) in options.iter().filter(|(k, _)| !matches!(k.as_str(), "ar" | "ac")) {
            dictionary.set(key, value);
        }
        let encoder = encoder
            .open_with(dictionary)
            .map_err(|e| format!("-c:a {codec_name} cannot open ({e}) with {options:?}"))?;
        Self::cut_to_frame_size(&mut graph, &encoder);
        Ok(AudioTranscoder {
            decoder,
            graph,
            encoder,
            in_time_base: input.time_base,
            rescale_last: ffmpeg::ffi::AV_NOPTS_VALUE,
            skipped: 0,
        })
    }

    /// `abuffer` -> `aresample` -> `aformat` -> `abuffersink`, to `out`: the sample formats
    /// (`|`-separated), rate and layout name.
    fn graph(
        decoder: &ffmpeg::decoder::Audio,
        in_layout: ffmpeg::ChannelLayout,
        in_channels: i32,
        out: &(String, i32, String),
    ) -> Result<filter::Graph, String> {
        let sample_name = |f: format::Sample| f.name().to_string();
        let mut graph = filter::Graph::new();
        let args = format!(
            "time_base=1/{}:sample_rate={}:sample_fmt={}:channel_layout={}",
            decoder.rate(),
            decoder.rate(),
            sample_name(decoder.format()),
            layout_name(in_layout, in_channels)
        );
        let (formats, rate, layout) = out;
        let chain =
            format!("aresample={rate},aformat=sample_fmts={formats}:sample_rates={rate}:channel_layouts={layout}");
        let made = (|| -> Result<(), ffmpeg::Error> {
            let abuffer = filter::find("abuffer").ok_or(ffmpeg::Error::FilterNotFound)?;
            let sink = filter::find("abuffersink").ok_or(ffmpeg::Error::FilterNotFound)?;
            graph.add(&abuffer, "in", &args)?;
            graph.add(&sink, "out", "")?;
            graph.output("in", 0)?.input("out", 0)?.parse(&chain)?;
            graph.validate()
        })();
        made.map_err(|e| format!("cannot resample the audio ({chain}): {e}"))?;
        Ok(graph)
    }

    /// The sample format the graph's sink gives (its `aformat` chose one of the encoder's).
    fn negotiated_format(graph: &mut filter::Graph) -> format::Sample {
        let sink = graph.get("out").map(|mut sink| {
            // SAFETY: a configured graph's sink context; the call reads its input link.
            unsafe { ffmpeg::ffi::av_buffersink_get_format(sink.as_mut_ptr()) }
        });
        // SAFETY: the value is a sample format FFmpeg negotiated (or none).
        sink.map_or(format::Sample::None, |f| unsafe {
            format::Sample::from(std::mem::transmute::<i32, ffmpeg::ffi::AVSampleFormat>(f))
        })
    }

    /// The sink cuts frames to the encoder's size, for encoders that take no other.
    fn cut_to_frame_size(graph: &mut filter::Graph, encoder: &ffmpeg::encoder::Audio) {
        let variable = encoder.codec().is_some_and(|c| {
            c.capabilities()
                .contains(codec::capabilities::Capabilities::VARIABLE_FRAME_SIZE)
        });
        if encoder.frame_size() > 0 && !variable {
            if let Some(mut sink) = graph.get("out") {
                sink.sink().set_frame_size(encoder.frame_size());
            }
        }
    }

    /// The encoder's parameters, for the output stream.
    pub(super) fn parameters(&self) -> codec::Parameters {
        codec::Parameters::from(&self.encoder)
    }

    /// The time base of the packets it makes.
    pub(super) fn time_base(&self) -> Rational {
        self.encoder.time_base()
    }

    /// Counts a packet or frame left out (a corrupt packet, a frame whose rate or layout
    /// changed mid-stream, which the resampling graph was not built for), said in the log the
    /// first time and every hundredth: the video and the rest of the audio go on, as
    /// FFmpeg's command line goes on.
    fn skip(&mut self, what: &str, error: &ffmpeg::Error) {
        self.skipped += 1;
        if self.skipped == 1 || self.skipped.is_multiple_of(100) {
            tracing::warn!("audio {what} skipped ({error}); {} so far", self.skipped);
        }
    }

    /// Decodes `packet` (`None`: the end) and returns every encoded packet ready. A packet
    /// that does not decode, or a frame the filters refuse, is skipped (see [`Self::skip`]);
    /// only the encoder's and the graph's own failures are errors.
    pub(super) fn transcode(&mut self, packet: Option<&Packet>) -> Result<Vec<Packet>, ffmpeg::Error> {
        let sent = match packet {
            Some(packet) => self.decoder.send_packet(packet),
            None => self.decoder.send_eof(),
        };
        if let Err(error) = sent {
            if !is_again(&error) && error != ffmpeg::Error::Eof {
                self.skip("packet", &error);
            }
        }
        let mut decoded = ffmpeg::frame::Audio::empty();
        loop {
            match self.decoder.receive_frame(&mut decoded) {
                Ok(()) => {
                    let samples = Rational::new(1, self.decoder.rate() as i32);
                    let count = decoded.samples() as i32;
                    let last = &mut self.rescale_last;
                    let pts = decoded.timestamp().or(decoded.pts()).map(|pts| {
                        // SAFETY: the call computes with its arguments and updates `last`.
                        unsafe {
                            ffmpeg::ffi::av_rescale_delta(
                                self.in_time_base.into(),
                                pts,
                                samples.into(),
                                count,
                                last,
                                samples.into(),
                            )
                        }
                    });
                    decoded.set_pts(pts);
                    if let Err(error) = self.input_filter()?.source().add(&decoded) {
                        self.skip("frame", &error);
                    }
                }
                Err(ffmpeg::Error::Eof) => {
                    self.input_filter()?.source().flush()?;
                    break;
                }
                Err(e) if is_again(&e) => break,
                Err(e) => {
                    self.skip("packet", &e);
                    break;
                }
            }
        }
        let mut packets = Vec::new();
        let mut filtered = ffmpeg::frame::Audio::empty();
        loop {
            let mut sink = self.graph.get("out").ok_or(ffmpeg::Error::Bug)?;
            match sink.sink().frame(&mut filtered) {
                Ok(()) => self.encoder.send_frame(&filtered)?,
                Err(ffmpeg::Error::Eof) => {
                    self.encoder.send_eof()?;
                    break;
                }
                Err(e) if is_again(&e) => break,
                Err(e) => return Err(e),
            }
            self.receive(&mut packets)?;
        }
        self.receive(&mut packets)?;
        Ok(packets)
    }

    fn input_filter(&mut self) -> Result<filter::Context, ffmpeg::Error> {
        self.graph.get("in").ok_or(ffmpeg::Error::Bug)
    }

    fn receive(&mut self, packets: &mut Vec<Packet>) -> Result<(), ffmpeg::Error> {
        loop {
            let mut packet = Packet::empty();
            match self.encoder.receive_packet(&mut packet) {
                Ok(()) => packets.push(packet),
                Err(ffmpeg::Error::Eof) => return Ok(()),
                Err(e) if is_again(&e) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// Writes one packet of encoded audio. An empty one is written too: the FLAC encoder's last
/// packet holds no audio, only the final STREAMINFO (its MD5 and sizes) as side data, which
/// FFmpeg's command line hands to the muxer to rewrite the header with; ffmpeg-next's
/// `write_interleaved` refuses empty packets as invalid data.
pub(super) fn write_audio_packet(
    output: &mut format::context::Output,
    packet: &mut Packet,
) -> Result<(), ffmpeg::Error> {
    // SAFETY: a context whose header is written and a packet of one of its streams; the
    // muxer takes the packet's reference and leaves the packet blank.
    match unsafe { ffmpeg::ffi::av_interleaved_write_frame(output.as_mut_ptr(), packet.as_mut_ptr()) } {
        0.. => Ok(()),
        error => Err(ffmpeg::Error::from(error)),
    }
}

//! Output: encodes filtered frames and muxes them with the copied audio into a file, pipe
//! or URL through FFmpeg, or discards them (`null`, for benchmarks).

mod encoder;

use crossbeam_channel::{select, Receiver};
use ffmpeg::{codec, Rational};
use ffmpeg_next as ffmpeg;
use std::collections::HashMap;
use std::time::Instant;

use crate::config::SinkConfig;
use crate::frame::Frame;
use crate::media as glue;
use crate::source::{PassthroughPacket, SourceInfo};
use crate::stats::Counters;

pub use encoder::VideoEncoder;

#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("cannot open output {url}: {reason}")]
    Open { url: String, reason: String },
    #[error("output {url}: {reason}")]
    Encoder { url: String, reason: String },
    #[error("writing {url} failed: {reason}")]
    Write { url: String, reason: String },
}

/// How the sink ended when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkOutcome {
    Finished,
    /// The reader of a pipe went away; a normal end for `convstream ... | head`.
    OutputClosed,
}

/// An opened output, header written, ready for frames.
pub enum Sink {
    Null,
    Muxer(Box<Muxer>),
}

/// An FFmpeg muxer with the video encoder and the copied streams.
pub struct Muxer {
    url: String,
    output: ffmpeg::format::context::Output,
    video: VideoEncoder,
    video_index: usize,
    /// Input stream index -> (output stream index, input time base).
    copied: HashMap<usize, (usize, Rational)>,
    /// The last decoding time written per copied output stream.
    last_copied_dts: HashMap<usize, i64>,
}

/// The FFmpeg name of a sink URL (`-` is stdout).
fn ffmpeg_url(url: &str) -> &str {
    if url == "-" {
        "pipe:1"
    } else {
        url
    }
}

impl Sink {
    /// Opens the output, sets up the encoder for the source's video and the streams to copy,
    /// and writes the header.
    pub fn open(config: &SinkConfig, source: &SourceInfo) -> Result<Sink, SinkError> {
        glue::init();
        if config.url == "null" {
            return Ok(Sink::Null);
        }
        let url = config.url.clone();
        let open_error = |reason: String| SinkError::Open {
            url: url.clone(),
            reason,
        };
        let format = config
            .format
            .clone()
            .or_else(|| (url == "-").then(|| "yuv4mpegpipe".to_string()));
        let mut output = match &format {
            Some(name) => ffmpeg::format::output_as(ffmpeg_url(&url), name),
            None => ffmpeg::format::output(ffmpeg_url(&url)),
        }
        .map_err(|e| {
            let unknown_container = matches!(e, ffmpeg::Error::MuxerNotFound)
                || matches!(e, ffmpeg::Error::Other { errno } if errno == ffmpeg::util::error::EINVAL);
            match (&format, unknown_container) {
                (None, true) => open_error(
                    "cannot tell the container from the name; use a known extension (.mp4 .mkv .mov .ts .avi .nut .y4m) or set the output format (--format / sink.format)".into(),
                ),
                (Some(name), true) => open_error(format!("`{name}` is not an output format this FFmpeg build has")),
                (_, false) => open_error(e.to_string()),
            }
        })?;
        let video = VideoEncoder::new(config, source, &output).map_err(|reason| SinkError::Encoder {
            url: url.clone(),
            reason,
        })?;
        let mut stream = output
            .add_stream(video.codec())
            .map_err(|e| open_error(format!("cannot add the video stream: {e}")))?;
        stream.set_parameters(video.parameters());
        stream.set_time_base(video.time_base());
        stream.set_avg_frame_rate(source.frame_rate);
        if source.aspect_ratio.numerator() > 0 {
            // SAFETY: a plain field of the stream just added. Muxers such as YUV4MPEG2 read
            // the stream's value rather than the codec parameters'.
            unsafe {
                (*stream.as_mut_ptr()).sample_aspect_ratio = source.aspect_ratio.into();
            }
        }
        let video_index = stream.index();
        let copied = add_copied_streams(&mut output, config, source);
        output
            .write_header()
            .map_err(|e| open_error(format!("cannot write the header: {e}")))?;
        Ok(Sink::Muxer(Box::new(Muxer {
            url,
            output,
            video,
            video_index,
            copied,
            last_copied_dts: HashMap::new(),
        })))
    }

    /// Whether the output copies any non-video stream (so wants passthrough packets).
    pub fn copies_packets(&self) -> bool {
        matches!(self, Sink::Muxer(muxer) if !muxer.copied.is_empty())
    }

    /// Writes frames and copied packets as they come until both channels close.
    pub fn run(
        self,
        frames: &Receiver<Frame>,
        packets: &Receiver<PassthroughPacket>,
        counters: &Counters,
        on_frame: &dyn Fn(),
    ) -> Result<SinkOutcome, SinkError> {
        match self {
            Sink::Null => {
                for frame in frames.iter() {
                    if let Some(decoded_at) = frame.timeline.decoded {
                        Counters::observe(&counters.stages.end_to_end, decoded_at.elapsed());
                    }
                    drop(frame);
                    Counters::add(&counters.frames_written, 1);
                    on_frame();
                }
                Ok(SinkOutcome::Finished)
            }
            Sink::Muxer(muxer) => muxer.run(frames, packets, counters, on_frame),
        }
    }
}

/// Adds a stream for every audio/subtitle input stream the container can hold.
fn add_copied_streams(
    output: &mut ffmpeg::format::context::Output,
    config: &SinkConfig,
    source: &SourceInfo,
) -> HashMap<usize, (usize, Rational)> {
    let mut copied = HashMap::new();
    if !config.audio {
        return copied;
    }
    let container = output.format();
    for input in &source.passthrough {
        let id = input.parameters.id();
        let supported = encoder::container_accepts(output, id);
        if !supported {
            tracing::warn!(output = %config.url, "the {} container cannot hold {:?} stream #{} ({}); it is left out", container.name(), input.medium, input.index, id.name());
            continue;
        }
        let Ok(mut stream) = output.add_stream(ffmpeg::encoder::find(codec::Id::None)) else {
            continue;
        };
        stream.set_parameters(input.parameters.clone());
        // SAFETY: the stream was just created; a zero tag lets the muxer choose its own.
        unsafe {
            (*(*stream.as_mut_ptr()).codecpar).codec_tag = 0;
        }
        stream.set_time_base(input.time_base);
        copied.insert(input.index, (stream.index(), input.time_base));
    }
    copied
}

fn write_error(url: &str, error: ffmpeg::Error) -> Result<SinkOutcome, SinkError> {
    match error {
        ffmpeg::Error::Other { errno } if errno == libc_epipe() => Ok(SinkOutcome::OutputClosed),
        other => Err(SinkError::Write {
            url: url.to_string(),
            reason: other.to_string(),
        }),
    }
}

const fn libc_epipe() -> i32 {
    32 // EPIPE on Linux
}

impl Muxer {
    fn run(
        mut self,
        frames: &Receiver<Frame>,
        packets: &Receiver<PassthroughPacket>,
        counters: &Counters,
        on_frame: &dyn Fn(),
    ) -> Result<SinkOutcome, SinkError> {
        let mut frames_open = true;
        let mut packets_open = true;
        while frames_open || packets_open {
            let result = if frames_open && packets_open {
                select! {
                    recv(frames) -> frame => match frame {
                        Ok(frame) => self.write_frame(&frame, counters, on_frame),
                        Err(_) => { frames_open = false; Ok(()) }
                    },
                    recv(packets) -> packet => match packet {
                        Ok(packet) => self.write_copied(packet, counters),
                        Err(_) => { packets_open = false; Ok(()) }
                    },
                }
            } else if frames_open {
                match frames.recv() {
                    Ok(frame) => self.write_frame(&frame, counters, on_frame),
                    Err(_) => {
                        frames_open = false;
                        Ok(())
                    }
                }
            } else {
                match packets.recv() {
                    Ok(packet) => self.write_copied(packet, counters),
                    Err(_) => {
                        packets_open = false;
                        Ok(())
                    }
                }
            };
            if let Err(error) = result {
                return write_error(&self.url, error);
            }
        }
        let started = Instant::now();
        let finished = self.finish(counters);
        Counters::add_time(&counters.sink_busy_ns, started.elapsed());
        match finished {
            Ok(()) => Ok(SinkOutcome::Finished),
            Err(error) => write_error(&self.url, error),
        }
    }

    fn write_frame(&mut self, frame: &Frame, counters: &Counters, on_frame: &dyn Fn()) -> Result<(), ffmpeg::Error> {
        let started = Instant::now();
        self.video.send(frame)?;
        self.write_encoded(counters)?;
        let spent = started.elapsed();
        Counters::add_time(&counters.sink_busy_ns, spent);
        Counters::observe(&counters.stages.encode, spent);
        if let Some(decoded_at) = frame.timeline.decoded {
            Counters::observe(&counters.stages.end_to_end, decoded_at.elapsed());
        }
        Counters::add(&counters.frames_written, 1);
        on_frame();
        Ok(())
    }

    fn write_encoded(&mut self, counters: &Counters) -> Result<(), ffmpeg::Error> {
        let out_time_base = self
            .output
            .stream(self.video_index)
            .map(|s| s.time_base())
            .unwrap_or(self.video.time_base());
        while let Some(mut packet) = self.video.receive()? {
            packet.set_stream(self.video_index);
            packet.rescale_ts(self.video.time_base(), out_time_base);
            Counters::add(&counters.bytes_out, packet.size() as u64);
            packet.write_interleaved(&mut self.output)?;
        }
        Ok(())
    }

    fn write_copied(&mut self, item: PassthroughPacket, counters: &Counters) -> Result<(), ffmpeg::Error> {
        let Some(&(index, in_time_base)) = self.copied.get(&item.stream) else {
            return Ok(());
        };
        let out_time_base = self.output.stream(index).map(|s| s.time_base()).unwrap_or(in_time_base);
        let mut packet = item.packet;
        packet.set_stream(index);
        packet.rescale_ts(in_time_base, out_time_base);
        packet.set_position(-1);
        if let Some(dts) = packet.dts() {
            // Muxers refuse a stream going back in time (a live input that lost packets or
            // restarted): such a packet is skipped rather than ending the output.
            if self.last_copied_dts.get(&index).is_some_and(|&last| dts <= last) {
                tracing::debug!(output = %self.url, "copied packet of stream {index} skipped: its time goes back");
                return Ok(());
            }
            self.last_copied_dts.insert(index, dts);
        }
        Counters::add(&counters.bytes_out, packet.size() as u64);
        packet.write_interleaved(&mut self.output)?;
        Counters::add(&counters.packets_passed_through, 1);
        Ok(())
    }

    /// Flushes the encoder and writes the trailer so the file plays.
    fn finish(&mut self, counters: &Counters) -> Result<(), ffmpeg::Error> {
        self.video.send_eof()?;
        self.write_encoded(counters)?;
        self.output.write_trailer()
    }
}

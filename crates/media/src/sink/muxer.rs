//! The encoded output ([`Muxer`]): an FFmpeg muxer with the video encoder and the copied streams,
//! writing a file, stdout (YUV4MPEG2 unless a format is set) or a URL, flushed as it goes
//! where the container allows, so that a crash leaves a readable file.

use ffmpeg::{codec, Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::audio::AudioTranscoder;
use super::container::header_options;
use super::contract::{OutputOptions, Sink, SinkError};
use super::encoder::{self, VideoEncoder};
use super::output_io::{OutputIo, OutputIoError};
use crate::ffmpeg::{PassthroughPacket, SourceInfo};
use crate::stats::Counters;
use convstream_config::{container_of_scheme, OutputTarget, SinkConfig};
use convstream_core::Frame;

/// Streamable outputs are flushed to the file this often (when something was written), so
/// a process killed outright loses at most about this much.
const FLUSH_INTERVAL: Duration = Duration::from_millis(500);

/// Containers whose every flushed byte is readable after a crash: their muxer's buffered
/// data is pushed out (a Matroska cluster closed, a TS packet completed) at each flush.
const STREAMABLE: &[&str] = &["matroska", "webm", "mpegts", "nut", "yuv4mpegpipe", "rawvideo"];

/// An FFmpeg muxer with the video encoder and the copied streams.
pub struct Muxer {
    url: String,
    /// Declared before `io`: the format context goes first, then the I/O it used.
    output: ffmpeg::format::context::Output,
    io: OutputIo,
    /// Flush the muxer and the file every [`FLUSH_INTERVAL`] (crash durability).
    flushes: bool,
    /// Whether the muxer takes `av_write_frame(NULL)` to push out what it buffers.
    muxer_flushes: bool,
    last_flush: Instant,
    unflushed: bool,
    video: VideoEncoder,
    video_index: usize,
    /// Input stream index -> (output stream index, input time base).
    copied: HashMap<usize, (usize, Rational)>,
    /// The audio streams encoded again, by input stream index.
    transcoders: HashMap<usize, AudioTranscoder>,
    /// The last decoding time written per copied output stream.
    last_copied_dts: HashMap<usize, i64>,
    /// Keep the output when no frame was written to it (`run --allow-empty`).
    keep_empty: bool,
}

/// The FFmpeg name of a sink URL (`-` is stdout).
fn ffmpeg_url(url: &str) -> &str {
    if url == "-" {
        "pipe:1"
    } else {
        url
    }
}

impl Muxer {
    /// Opens the output, sets up the encoder for the source's video and the streams to copy,
    /// and writes the header. Nothing is created or truncated before the encoder and the
    /// muxer are ready: a local file is written under a temporary name and named (by
    /// `how.when_exists`) once its header is written.
    pub fn open(config: &SinkConfig, source: &SourceInfo, how: &OutputOptions) -> Result<Muxer, SinkError> {
        let target = OutputTarget::of(&config.url);
        let url = config.url.clone();
        let mut output = output_context(config)?;
        let video = video_encoder(config, source, &output, how.gpu)?;
        let video_index = add_video_stream(&mut output, &video, source, &url)?;
        let (copied, transcoders) =
            add_copied_streams(&mut output, config, source).map_err(|reason| SinkError::Unsuitable {
                url: url.clone(),
                reason,
            })?;
        let container = output.format().name().to_string();
        let mut io = OutputIo::attach(
            &mut output,
            &url,
            &target,
            how.when_exists,
            &how.guard,
            how.stop.clone(),
        )
        .map_err(|error| output_error(&url, error))?;
        let fragmented = match write_header(&mut output, config, how, &container) {
            Ok(fragmented) => fragmented,
            Err(e) => {
                io.detach(&mut output);
                return Err(e);
            }
        };
        let path = match io.publish(&mut output) {
            Ok(path) => path,
            Err(error) => {
                io.detach(&mut output);
                return Err(output_error(&url, error));
            }
        };
        if let Some(path) = path.as_ref().filter(|_| io.renamed) {
            tracing::warn!(output = %url, "{url} exists and is kept; this run writes {}", path.display());
        }
        let flushes = io.is_file_like() || target == OutputTarget::Url;
        let flushes = flushes && (STREAMABLE.contains(&container.as_str()) || fragmented);
        // SAFETY: `output` is a valid format context whose muxer was chosen when it was
        // allocated, so `oformat` points at FFmpeg's static muxer description; only read.
        let muxer_flags = unsafe { (*(*output.as_ptr()).oformat).flags };
        let muxer_flushes = muxer_flags & ffmpeg::ffi::AVFMT_ALLOW_FLUSH as std::ffi::c_int != 0;
        Ok(Muxer {
            url,
            output,
            io,
            flushes,
            muxer_flushes,
            last_flush: Instant::now(),
            unflushed: false,
            video,
            video_index,
            copied,
            transcoders,
            last_copied_dts: HashMap::new(),
            keep_empty: how.keep_empty,
        })
    }
}

/// The error of an output whose I/O could not be opened or its file named.
fn output_error(url: &str, error: OutputIoError) -> SinkError {
    SinkError::Output {
        url: url.to_string(),
        error,
    }
}

/// The output's format context, its muxer the one the config names, else YUV4MPEG2 for
/// stdout, else the one of the URL's scheme, else FFmpeg's guess from the name.
fn output_context(config: &SinkConfig) -> Result<ffmpeg::format::context::Output, SinkError> {
    let url = &config.url;
    let open_error = |reason: String| SinkError::Open {
        url: url.clone(),
        reason,
    };
    let format = config
        .format
        .clone()
        .or_else(|| (url == "-").then(|| "yuv4mpegpipe".to_string()))
        .or_else(|| container_of_scheme(url).map(str::to_string));
    allocate_output(ffmpeg_url(url), format.as_deref()).map_err(|e| {
        let unknown_container = matches!(e, ffmpeg::Error::MuxerNotFound)
            || matches!(e, ffmpeg::Error::Other { errno } if errno == ffmpeg::util::error::EINVAL);
        match (&format, unknown_container) {
            (None, true) => open_error(
                "cannot tell the container from the name; use a known extension (.mp4 .mkv .webm .mov .ts .avi .nut .y4m) or set the output format (--format, sink.format in a config)".into(),
            ),
            (Some(name), true) => open_error(format!("`{name}` is not an output format this FFmpeg build has")),
            (_, false) => open_error(e.to_string()),
        }
    })
}

/// The video encoder for the source's frames, checked against what YUV4MPEG2 can write.
fn video_encoder(
    config: &SinkConfig,
    source: &SourceInfo,
    output: &ffmpeg::format::context::Output,
    gpu: bool,
) -> Result<VideoEncoder, SinkError> {
    let url = &config.url;
    let video = VideoEncoder::new(config, source, output, gpu).map_err(|e| match e.unsuitable_input {
        true => SinkError::Unsuitable {
            url: url.clone(),
            reason: e.reason,
        },
        false => SinkError::Encoder {
            url: url.clone(),
            reason: e.reason,
        },
    })?;
    if output.format().name() == "yuv4mpegpipe" {
        if let Some(reason) = y4m_unwritable(&video.parameters()) {
            return Err(SinkError::Unsuitable {
                url: url.clone(),
                reason,
            });
        }
    }
    Ok(video)
}

/// Adds the video stream with the encoder's parameters, the source's HDR metadata, frame
/// rate and aspect ratio; returns its index.
fn add_video_stream(
    output: &mut ffmpeg::format::context::Output,
    video: &VideoEncoder,
    source: &SourceInfo,
    url: &str,
) -> Result<usize, SinkError> {
    let open_error = |reason: String| SinkError::Open {
        url: url.to_string(),
        reason,
    };
    let mut stream = output
        .add_stream(video.codec())
        .map_err(|e| open_error(format!("cannot add the video stream: {e}")))?;
    stream.set_parameters(video.parameters());
    stream.set_time_base(video.time_base());
    // Mastering display and light level: Matroska and MP4 write them in their headers.
    source
        .hdr
        .attach_to(&mut stream)
        .map_err(|e| open_error(format!("cannot attach the HDR metadata: {e}")))?;
    stream.set_avg_frame_rate(source.frame_rate);
    if source.aspect_ratio.numerator() > 0 {
        // SAFETY: a plain field of the stream just added. Muxers such as YUV4MPEG2 read
        // the stream's value rather than the codec parameters'.
        unsafe {
            (*stream.as_mut_ptr()).sample_aspect_ratio = source.aspect_ratio.into();
        }
    }
    Ok(stream.index())
}

/// Writes the header with the container's options (the user's muxer options, fragmented
/// MP4 where asked or where the output cannot seek back); every option the muxer did not
/// take is the user's error. Returns whether the output is a fragmented MP4. On an error
/// the caller detaches the I/O.
fn write_header(
    output: &mut ffmpeg::format::context::Output,
    config: &SinkConfig,
    how: &OutputOptions,
    container: &str,
) -> Result<bool, SinkError> {
    let url = &config.url;
    if container == "yuv4mpegpipe" {
        // FFmpeg 5.1 calls y4m's 9- to 16-bit colour spaces (C420p10 and the like)
        // unofficial and refuses them unless told; x264, dav1d and FFmpeg itself read them.
        // SAFETY: a plain field of the output context, read when the header is written.
        unsafe {
            (*output.as_mut_ptr()).strict_std_compliance = ffmpeg::ffi::FF_COMPLIANCE_UNOFFICIAL;
        }
    }
    // SAFETY: `output` is a valid format context; `pb` is the I/O just attached (or null
    // for muxers that open their own, such as RTSP); plain fields are read.
    let seekable = unsafe {
        let pb = (*output.as_ptr()).pb;
        !pb.is_null() && (*pb).seekable != 0
    };
    let options = header_options(container, &config.muxer_options, seekable, how.fragment_mp4).map_err(|e| {
        SinkError::Unsuitable {
            url: url.clone(),
            reason: e.to_string(),
        }
    })?;
    // A fragmented MP4 is complete at each fragment: flushed as it goes, as Matroska is.
    let fragmented = options.get("movflags").is_some_and(|flags| flags.contains("frag_"));
    let unused = output
        .write_header_with(options)
        .map(|unused| {
            unused
                .iter()
                .map(|(key, _)| format!("`{}`", convstream_core::quoted(key)))
                .collect::<Vec<String>>()
        })
        .map_err(|e| match e {
            // The muxer refuses a value of an option the user gave (`movflags=+bogus`): the
            // request's fault, named with the options that may hold it.
            ffmpeg::Error::Other { errno } if errno == ffmpeg::util::error::EINVAL && !config.muxer_options.is_empty() => {
                SinkError::Unsuitable {
                    url: url.clone(),
                    reason: format!(
                        "the {container} muxer refuses the value of an option among {} ({e}; `ffmpeg -h muxer={container}` lists what each takes)",
                        config
                            .muxer_options
                            .keys()
                            .map(|key| format!("`{}`", convstream_core::quoted(key)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            e => SinkError::Open {
                url: url.clone(),
                reason: format!("cannot write the header: {e}"),
            },
        })?;
    if !unused.is_empty() {
        return Err(SinkError::Unsuitable {
            url: url.clone(),
            reason: format!(
                "the {container} muxer has no option {} (`ffmpeg -h muxer={container}` lists what it takes)",
                unused.join(", ")
            ),
        });
    }
    Ok(fragmented)
}

/// An output context for `url` with its muxer chosen, and no I/O opened yet.
fn allocate_output(url: &str, format: Option<&str>) -> Result<ffmpeg::format::context::Output, ffmpeg::Error> {
    let einval = ffmpeg::Error::Other {
        errno: ffmpeg::util::error::EINVAL,
    };
    let name = std::ffi::CString::new(url).map_err(|_| einval)?;
    let format = format.map(std::ffi::CString::new).transpose().map_err(|_| einval)?;
    let mut context = std::ptr::null_mut();
    // SAFETY: valid C strings; on success the context is ours and wrapped at once.
    unsafe {
        let result = ffmpeg::ffi::avformat_alloc_output_context2(
            &mut context,
            std::ptr::null_mut(),
            format.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
            name.as_ptr(),
        );
        if result < 0 || context.is_null() {
            return Err(ffmpeg::Error::from(result.min(-1)));
        }
        Ok(ffmpeg::format::context::Output::wrap(context))
    }
}

/// Adds a stream for every audio/subtitle input stream the container can hold; with
/// `audio_codec`, the audio streams are encoded again (see [`AudioTranscoder`]).
fn add_copied_streams(
    output: &mut ffmpeg::format::context::Output,
    config: &SinkConfig,
    source: &SourceInfo,
) -> Result<CopiedStreams, String> {
    let mut copied = HashMap::new();
    let mut transcoders = HashMap::new();
    if !config.audio {
        return Ok((copied, transcoders));
    }
    let global_header = output.format().flags().contains(ffmpeg::format::Flags::GLOBAL_HEADER);
    let audio_codec = config.audio_codec.as_deref().filter(|name| *name != "copy");
    let wanted = |medium| config.subtitles || medium != ffmpeg::media::Type::Subtitle;
    for input in source.passthrough.iter().filter(|input| wanted(input.medium)) {
        if let (Some(name), ffmpeg::media::Type::Audio) = (audio_codec, input.medium) {
            let transcoder = AudioTranscoder::new(input, name, &config.audio_options, global_header)?;
            let Ok(mut stream) = output.add_stream(ffmpeg::encoder::find(codec::Id::None)) else {
                continue;
            };
            stream.set_parameters(transcoder.parameters());
            stream.set_time_base(transcoder.time_base());
            copied.insert(input.index, (stream.index(), input.time_base));
            transcoders.insert(input.index, transcoder);
            continue;
        }
        let container = output.format();
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
    Ok((copied, transcoders))
}

/// The output streams of the copied input streams (by input index: output index and input
/// time base), and the audio encoded again, by input index.
type CopiedStreams = (HashMap<usize, (usize, Rational)>, HashMap<usize, AudioTranscoder>);

impl Sink for Muxer {
    fn path(&self) -> Option<PathBuf> {
        self.io.path.clone()
    }

    fn copies_packets(&self) -> bool {
        !self.copied.is_empty()
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn encoder(&self) -> Option<String> {
        Some(format!(
            "{} in {}",
            self.video.description(),
            self.output.format().name()
        ))
    }

    fn write_frame(&mut self, frame: Frame, counters: &Counters) -> Result<(), ffmpeg::Error> {
        self.unflushed = true;
        let started = Instant::now();
        self.video.send(frame)?;
        self.write_encoded(counters)?;
        let spent = started.elapsed();
        Counters::add_time(&counters.sink_busy_ns, spent);
        Counters::observe(&counters.stages.encode, spent);
        Ok(())
    }

    fn write_packet(&mut self, item: PassthroughPacket, counters: &Counters) -> Result<(), ffmpeg::Error> {
        self.unflushed = true;
        let Some(&(index, in_time_base)) = self.copied.get(&item.stream) else {
            return Ok(());
        };
        if let Some(transcoder) = self.transcoders.get_mut(&item.stream) {
            let encoded = transcoder.transcode(Some(&item.packet))?;
            let from = transcoder.time_base();
            return self.write_audio(index, from, encoded, counters);
        }
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

    fn flush_due_in(&self) -> Option<Duration> {
        (self.flushes && self.unflushed).then(|| FLUSH_INTERVAL.saturating_sub(self.last_flush.elapsed()))
    }

    /// Pushes what the muxer and the AVIO buffer hold into the file, at most every
    /// [`FLUSH_INTERVAL`], so that a killed process leaves every frame up to then readable.
    fn flush_if_due(&mut self) -> Result<(), ffmpeg::Error> {
        if !(self.flushes && self.unflushed && self.last_flush.elapsed() >= FLUSH_INTERVAL) {
            return Ok(());
        }
        self.last_flush = Instant::now();
        self.unflushed = false;
        // SAFETY: a context whose header is written; a NULL packet asks the muxer to flush.
        unsafe {
            let context = self.output.as_mut_ptr();
            if self.muxer_flushes {
                let result = ffmpeg::ffi::av_write_frame(context, std::ptr::null_mut());
                if result < 0 {
                    return Err(ffmpeg::Error::from(result));
                }
            }
            if !(*context).pb.is_null() {
                ffmpeg::ffi::avio_flush((*context).pb);
                let error = (*(*context).pb).error;
                if error < 0 {
                    return Err(ffmpeg::Error::from(error));
                }
            }
        }
        Ok(())
    }

    /// Flushes the encoder and writes the trailer so the file plays.
    fn finish(&mut self, counters: &Counters) -> Result<(), ffmpeg::Error> {
        self.video.send_eof()?;
        self.write_encoded(counters)?;
        // The audio's last packets: a failure there is reported, after the trailer is
        // written, so the file still plays.
        let mut audio = Ok(());
        let streams: Vec<usize> = self.transcoders.keys().copied().collect();
        for input in streams {
            let Some(&(index, _)) = self.copied.get(&input) else {
                continue;
            };
            let Some(transcoder) = self.transcoders.get_mut(&input) else {
                continue;
            };
            let from = transcoder.time_base();
            let flushed = transcoder
                .transcode(None)
                .and_then(|encoded| self.write_audio(index, from, encoded, counters));
            audio = audio.and(flushed);
        }
        // av_write_trailer may return a positive count (the fragmented MP4 muxer returns the
        // size of its last box); only a negative one is an error, which ffmpeg-next's
        // `write_trailer` does not tell apart.
        // SAFETY: a context whose header is written, owned by this muxer.
        let result = unsafe { ffmpeg::ffi::av_write_trailer(self.output.as_mut_ptr()) };
        match result {
            0.. => audio,
            error => Err(ffmpeg::Error::from(error)),
        }
    }

    fn complete(&mut self) -> Result<(), SinkError> {
        self.io.complete(&mut self.output).map_err(|error| SinkError::Finish {
            url: self.url.clone(),
            error,
        })
    }

    fn discard(&mut self) {
        self.io.discard(&mut self.output);
    }

    fn keeps_empty(&self) -> bool {
        self.keep_empty
    }
}

impl Muxer {
    /// Writes audio the sink encoded to output stream `index`.
    fn write_audio(
        &mut self,
        index: usize,
        from: Rational,
        packets: Vec<Packet>,
        counters: &Counters,
    ) -> Result<(), ffmpeg::Error> {
        let out_time_base = self.output.stream(index).map(|s| s.time_base()).unwrap_or(from);
        for mut packet in packets {
            packet.set_stream(index);
            packet.rescale_ts(from, out_time_base);
            Counters::add(&counters.bytes_out, packet.size() as u64);
            super::audio::write_audio_packet(&mut self.output, &mut packet)?;
        }
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
            if self.video.compresses() {
                Counters::add(&counters.video_bytes_out, packet.size() as u64);
            }
            packet.write_interleaved(&mut self.output)?;
        }
        Ok(())
    }
}

impl Drop for Muxer {
    fn drop(&mut self) {
        // Our AVIO context must leave the format context before FFmpeg would close it as its own.
        self.io.detach(&mut self.output);
    }
}

/// Why FFmpeg's YUV4MPEG2 muxer cannot write pictures with these parameters correctly, if
/// it cannot: at 9 to 16 bits with horizontally subsampled chroma (4:2:0, 4:2:2) and an odd
/// width, it writes each chroma row one byte short (it halves the row's bytes, rounding up,
/// instead of its samples: 7 bytes for a 4-sample, 8-byte row), and every reader then
/// reads a corrupt picture. Refused before anything is written.
fn y4m_unwritable(parameters: &ffmpeg::codec::Parameters) -> Option<String> {
    // SAFETY: plain fields of valid codec parameters, whose format the encoder set up from
    // FFmpeg's own list (a valid AVPixelFormat); av_pix_fmt_desc_get answers null for
    // AV_PIX_FMT_NONE.
    let (width, descriptor) = unsafe {
        let raw = *parameters.as_ptr();
        let format: ffmpeg::ffi::AVPixelFormat = std::mem::transmute(raw.format);
        (raw.width, ffmpeg::ffi::av_pix_fmt_desc_get(format).as_ref())
    };
    let descriptor = descriptor?;
    let high_depth = descriptor.comp[0].depth > 8;
    let subsampled = descriptor.log2_chroma_w > 0;
    (high_depth && subsampled && width % 2 == 1).then(|| {
        format!(
            "YUV4MPEG2 cannot hold this {}-bit picture of odd width {width}: FFmpeg's y4m muxer writes its chroma rows one byte short; write .nut or .mkv instead (rawvideo or ffv1 keep every sample), or make the width even",
            descriptor.comp[0].depth
        )
    })
}

//! Command-line flags laid over a config file (or over nothing, when only flags are given):
//! [`Overrides`].

use crate::error::ConfigError;
use crate::problem::{Problem, STANDALONE_PIPELINE};
use crate::schema::{ConfigFile, FilterConfig, MaskSelection, PipelineConfig, SinkConfig, SourceConfig};

use convstream_core::{BorderMode, PlaneSelection};

/// Flags of `convstream run` that change pipeline settings. `None` leaves the config's value.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `-i`: the input URL (source.url).
    pub input: Option<String>,
    /// The output URL (sink.url).
    pub output: Option<String>,
    /// `--input-format` (`-f` before `-i`): the demuxer (source.format).
    pub input_format: Option<String>,
    /// `--format` (`-f` before the output): the muxer (sink.format).
    pub output_format: Option<String>,
    /// `--mask`: a preset, a SPEC or a named mask (filter.mask).
    pub mask: Option<String>,
    /// `--planes`: which planes are filtered (filter.planes).
    pub planes: Option<PlaneSelection>,
    /// `--plane-mask PLANE=SPEC`, laid over filter.plane_masks.
    pub plane_masks: Vec<(String, String)>,
    /// `--border`: how the mask reads past the picture's edges (filter.border).
    pub border: Option<BorderMode>,
    /// `--ffmpeg-before CHAIN`: FFmpeg's filters before the engine (filter.ffmpeg_before).
    pub ffmpeg_before: Option<String>,
    /// `--ffmpeg-after CHAIN`: FFmpeg's filters after the engine (filter.ffmpeg_after).
    pub ffmpeg_after: Option<String>,
    /// One FFmpeg chain around the engine (filter.graph; Python's `vf=`).
    pub graph: Option<String>,
    /// `--device`: `auto`, `cpu`, `cuda` or `cuda:N` (filter.device).
    pub device: Option<String>,
    /// `--streams`: the CUDA engine's streams (filter.streams).
    pub streams: Option<usize>,
    /// `--frames-per-stream`: frames in flight per CUDA stream (filter.frames_per_stream).
    pub frames_per_stream: Option<usize>,
    /// `--decoder`: `auto`, `software`, `nvdec` or an FFmpeg decoder (source.decoder).
    pub decoder: Option<String>,
    /// `--codec` (`-c:v`): the video encoder (sink.codec).
    pub codec: Option<String>,
    /// `--lossless`: encode losslessly (sink.lossless).
    pub lossless: bool,
    /// Consent to replace existing output files (`-y`); applies to every pipeline that runs.
    pub overwrite: bool,
    /// Never replace an existing output file (`-n`), whatever the config says; with
    /// `overwrite` too, refused (as FFmpeg refuses `-y -n`).
    pub no_overwrite: bool,
    /// Encoder options (`--crf`, `--bitrate`, `--preset`, `--encoder-opt`), laid over sink.options.
    pub encoder_options: Vec<(String, String)>,
    /// `-an`: no audio or other copied streams.
    pub no_audio: bool,
    /// `-sn` (and `-map 0:v -map 0:a?`): no subtitle streams copied (sink.subtitles).
    pub no_subtitles: bool,
    /// `--ss`, `-t`, `--frames`: the part of the input filtered.
    pub start: Option<f64>,
    /// `-t`: seconds of the input filtered (source.duration).
    pub duration: Option<f64>,
    /// `--frames`: frames filtered at most (source.frames).
    pub frames: Option<u64>,
    /// `--depth`: bits per sample to filter and write at.
    pub depth: Option<u8>,
    /// `--decoder-threads` (`-threads` before `-i`): the decoder's threads, as source.threads.
    pub decoder_threads: Option<usize>,
    /// Demuxer and protocol options (`--input-opt`, raw video's `--size` and friends),
    /// laid over source.options.
    pub input_options: Vec<(String, String)>,
    /// `--muxer-opt` (`-movflags`), laid over sink.muxer_options.
    pub muxer_options: Vec<(String, String)>,
    /// `--audio-codec` (`-c:a`): the audio encoder (sink.audio_codec).
    pub audio_codec: Option<String>,
    /// `--audio-opt` (`-b:a`, `-ar`, `-ac`), laid over sink.audio_options.
    pub audio_options: Vec<(String, String)>,
    /// `--realtime` (`-re`): pace a file at its frame rate.
    pub realtime: bool,
    /// `--loop` (`-stream_loop -1`): start over at the end.
    pub looping: bool,
    /// `--loop-count N` (`-stream_loop N`): start over N times, then end (source.loop_count).
    pub loop_count: Option<u64>,
    /// `--copyts`: keep the input's timestamps.
    pub copyts: bool,
}

impl Overrides {
    fn changes_pipeline(&self) -> bool {
        self.input.is_some()
            || self.output.is_some()
            || self.input_format.is_some()
            || self.output_format.is_some()
            || self.mask.is_some()
            || self.planes.is_some()
            || !self.plane_masks.is_empty()
            || self.border.is_some()
            || self.ffmpeg_before.is_some()
            || self.ffmpeg_after.is_some()
            || self.graph.is_some()
            || self.device.is_some()
            || self.streams.is_some()
            || self.frames_per_stream.is_some()
            || self.decoder.is_some()
            || self.codec.is_some()
            || self.lossless
            || !self.encoder_options.is_empty()
            || self.no_audio
            || self.no_subtitles
            || self.start.is_some()
            || self.duration.is_some()
            || self.frames.is_some()
            || self.depth.is_some()
            || self.decoder_threads.is_some()
            || !self.input_options.is_empty()
            || !self.muxer_options.is_empty()
            || self.audio_codec.is_some()
            || !self.audio_options.is_empty()
            || self.realtime
            || self.looping
            || self.loop_count.is_some()
            || self.copyts
    }

    /// A config holding one pipeline made from flags alone; `--input` and `--output` are required.
    pub fn standalone(&self) -> Result<ConfigFile, ConfigError> {
        let mut missing = Vec::new();
        if self.input.is_none() {
            missing.push(Problem::general("--input is required without --config"));
        }
        if self.output.is_none() {
            missing.push(Problem::general("--output is required without --config"));
        }
        if !missing.is_empty() {
            return Err(ConfigError::Invalid(missing));
        }
        let mut config = ConfigFile {
            pipelines: vec![PipelineConfig {
                name: STANDALONE_PIPELINE.to_string(),
                source: SourceConfig::from_url(""),
                filter: FilterConfig::default(),
                sink: SinkConfig {
                    url: String::new(),
                    format: None,
                    codec: None,
                    lossless: false,
                    options: Default::default(),
                    muxer_options: Default::default(),
                    audio_codec: None,
                    audio_options: Default::default(),
                    audio: true,
                    subtitles: true,
                    overwrite: false,
                },
            }],
            ..ConfigFile::default()
        };
        self.apply(&mut config, None)?;
        Ok(config)
    }

    /// Keeps only the pipeline named `only` (if given) and lays the flags over the pipelines
    /// left. Flags that change a pipeline need a single pipeline to apply to.
    pub fn apply(&self, config: &mut ConfigFile, only: Option<&str>) -> Result<(), ConfigError> {
        if let Some(name) = only {
            let names: Vec<String> = config.pipelines.iter().map(|p| p.name.clone()).collect();
            config.pipelines.retain(|p| p.name == name);
            if config.pipelines.is_empty() {
                return Err(ConfigError::Invalid(vec![Problem::general(format!(
                    "--pipeline {name:?}: no such pipeline; the config has {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))]));
            }
        }
        if self.overwrite && self.no_overwrite {
            return Err(ConfigError::Invalid(vec![Problem::general(
                "-y (replace existing outputs) and -n (never replace them) contradict each other: give one",
            )]));
        }
        if self.overwrite || self.no_overwrite {
            for pipeline in &mut config.pipelines {
                pipeline.sink.overwrite = self.overwrite;
            }
        }
        if !self.changes_pipeline() {
            return Ok(());
        }
        if config.pipelines.len() != 1 {
            return Err(ConfigError::Invalid(vec![Problem::general(format!(
                "the config has {} pipelines; choose one with --pipeline NAME to apply command-line settings to it",
                config.pipelines.len()
            ))]));
        }
        let pipeline = &mut config.pipelines[0];
        let set = |target: &mut String, value: &Option<String>| {
            if let Some(v) = value {
                target.clone_from(v)
            }
        };
        set(&mut pipeline.source.url, &self.input);
        set(&mut pipeline.sink.url, &self.output);
        set(&mut pipeline.source.decoder, &self.decoder);
        self.apply_to_filter(&mut pipeline.filter);
        if self.input_format.is_some() {
            pipeline.source.format.clone_from(&self.input_format);
        }
        if self.output_format.is_some() {
            pipeline.sink.format.clone_from(&self.output_format);
        }
        if self.codec.is_some() {
            pipeline.sink.codec.clone_from(&self.codec);
        }
        pipeline.sink.lossless |= self.lossless;
        pipeline.sink.options.extend(self.encoder_options.iter().cloned());
        pipeline.source.options.extend(self.input_options.iter().cloned());
        pipeline.sink.muxer_options.extend(self.muxer_options.iter().cloned());
        if let Some(codec) = &self.audio_codec {
            pipeline.sink.audio_codec = Some(codec.clone());
        }
        pipeline.sink.audio_options.extend(self.audio_options.iter().cloned());
        pipeline.source.realtime |= self.realtime;
        pipeline.source.looping |= self.looping || self.loop_count.is_some();
        pipeline.source.loop_count = self.loop_count.or(pipeline.source.loop_count);
        pipeline.source.copyts |= self.copyts;
        if self.no_audio {
            pipeline.sink.audio = false;
        }
        if self.no_subtitles {
            pipeline.sink.subtitles = false;
        }
        pipeline.source.start = self.start.or(pipeline.source.start);
        pipeline.source.duration = self.duration.or(pipeline.source.duration);
        pipeline.source.frames = self.frames.or(pipeline.source.frames);
        pipeline.source.depth = self.depth.or(pipeline.source.depth);
        pipeline.source.threads = self.decoder_threads.unwrap_or(pipeline.source.threads);
        Ok(())
    }

    /// Lays the flags that choose the filter (`--mask`, `--planes`, `--plane-mask`,
    /// `--border`, `--ffmpeg-before`, `--ffmpeg-after`, `--device`, `--streams`,
    /// `--frames-per-stream`) over `filter`.
    pub fn apply_to_filter(&self, filter: &mut FilterConfig) {
        if let Some(device) = &self.device {
            filter.device.clone_from(device);
        }
        if let Some(mask) = &self.mask {
            filter.mask = MaskSelection::Named(mask.clone());
        }
        if let Some(planes) = self.planes {
            filter.planes = planes;
        }
        for (plane, spec) in &self.plane_masks {
            filter
                .plane_masks
                .insert(plane.clone(), MaskSelection::Named(spec.clone()));
        }
        if let Some(border) = self.border {
            filter.border = border;
        }
        if let Some(chain) = &self.ffmpeg_before {
            filter.ffmpeg_before = Some(chain.clone());
        }
        if let Some(graph) = &self.graph {
            filter.graph = Some(graph.clone());
        }
        if let Some(chain) = &self.ffmpeg_after {
            filter.ffmpeg_after = Some(chain.clone());
        }
        if let Some(streams) = self.streams {
            filter.streams = streams;
        }
        if let Some(frames) = self.frames_per_stream {
            filter.frames_per_stream = frames;
        }
    }
}

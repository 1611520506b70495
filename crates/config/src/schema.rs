//! The shape of the TOML file ([`ConfigFile`] and its sections), field by field, with
//! defaults.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

use convstream_core::GpuTuning;
use convstream_core::MaskParams;
use convstream_core::{BorderMode, PlaneSelection};

/// A whole config file: `[log]`, `[server]`, `[masks.NAME]` and the `[[pipeline]]`s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// How the command line and `serve` log.
    #[serde(default)]
    pub log: LogConfig,
    /// The HTTP API and process settings of `convstream serve`.
    #[serde(default)]
    pub server: ServerConfig,
    /// Named masks that pipelines select with `mask = "NAME"`.
    #[serde(default)]
    pub masks: BTreeMap<String, MaskParams>,
    /// The pipelines, in the file's order (`[[pipeline]]`).
    #[serde(default, rename = "pipeline")]
    pub pipelines: Vec<PipelineConfig>,
}

/// `[log]`: what is logged and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// A tracing filter such as `info` or `convstream=debug`; `RUST_LOG` overrides it.
    pub level: Option<String>,
    /// Lines for people or JSON objects.
    #[serde(default)]
    pub format: LogFormat,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
/// How log lines are written.
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Text for people (`pretty`).
    #[default]
    Pretty,
    /// One JSON object per event (`json`).
    Json,
}

/// `[server]`: the HTTP API and process settings of `convstream serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Where the HTTP API listens. Loopback by default: binding elsewhere is a choice.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The name of an environment variable holding a bearer token that every endpoint
    /// but /healthz then requires.
    pub token_env: Option<String>,
    /// Seconds a stop waits for pipelines to drain and finalise their outputs.
    #[serde(default = "default_shutdown_timeout")]
    pub shutdown_timeout: f64,
    /// Reload when the config file changes (SIGHUP always reloads).
    #[serde(default = "default_true")]
    pub watch: bool,
    /// The only folder API requests may take mask files from (links resolved); unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask_dir: Option<PathBuf>,
    /// Folders API-created pipelines may read and write files under; empty: API pipelines
    /// use URLs only. Config-file pipelines are not limited by it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_paths: Vec<PathBuf>,
    /// `Origin` values (`http://host:port`) whose requests are served; any other Origin,
    /// that is a request made by a web page elsewhere, is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// `Host` values served besides the listen address and its localhost forms (`name` or
    /// `name:port`), e.g. the name a proxy forwards; any other Host is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Serve the API on an address other than loopback without `token_env`: anyone who
    /// reaches the address then drives the pipelines. Off: such a `serve` refuses to start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_no_token: bool,
    /// Let API pipelines read files with demuxers that take any bytes as pictures
    /// (`rawvideo`, `bin`, `tty`, `data`, `v210`, ...). Off: any file under `allow_paths`
    /// would come back as a snapshot's pixels, so the API refuses them; the config file may
    /// always use them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_raw_sources: bool,
    /// The most pipelines `serve` holds at once, the config's and the API's together (a
    /// finished API pipeline counts until it is deleted); a POST beyond it gets 429.
    #[serde(default = "default_max_pipelines")]
    pub max_pipelines: usize,
    /// Megabytes of page-locked host memory the frame pools of every pipeline may hold
    /// together; a pool past it lends ordinary memory (a staged copy per frame). Unset: a
    /// quarter of the host's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_memory_mb: Option<usize>,
    /// NVDEC pipelines each GPU seats, as measured on this host (`convstream bench --suite
    /// scale`, or `scripts/gpu-check.sh host-fill`): replaces the prediction from the GPU's NVDEC
    /// engines (what one such GPU alone sustains at 1080p25 H.264) and what admission learns
    /// from pipelines falling behind. Unset: the seats learned, measured or predicted
    /// (`convstream doctor` shows the prediction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvdec_seats_per_gpu: Option<usize>,
    /// NVDEC seats measured per GPU model (`nvdec-seats.toml`, which `convstream bench
    /// --suite scale --decoder nvdec` writes; relative to the config file's folder): each GPU
    /// of a model the file names seats that many, the others keep the prediction. A file not
    /// there yet is nothing measured; `serve` writes the seats it learns into it then, or
    /// into one it wrote before, never into another. `nvdec_seats_per_gpu` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvdec_seats_file: Option<PathBuf>,
    /// How many pipelines may be starting at once (input opening, decoder and engine made,
    /// first frames through); the others wait their turn, so a full host's start does not
    /// starve every pipeline at once. Unset: half the host's cores, at least 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_at_once: Option<usize>,
    /// Run only this replica's share of the pipelines: `"auto"` (the index from a
    /// StatefulSet pod's hostname `name-N`, the count from `shards` or `CONVSTREAM_SHARDS`)
    /// or `"INDEX/COUNT"`. Unset: every pipeline. See [`super::shard_spec`]; the placement itself is the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// How many replicas share the pipelines, for `shard = "auto"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<usize>,
    /// The operator console at `/` (a page in the binary; its data requests need the token
    /// like any other). Unset: on when listening on loopback, off elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console: Option<bool>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: default_listen(),
            token_env: None,
            shutdown_timeout: default_shutdown_timeout(),
            watch: true,
            mask_dir: None,
            allow_paths: Vec::new(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            insecure_no_token: false,
            allow_raw_sources: false,
            max_pipelines: default_max_pipelines(),
            pinned_memory_mb: None,
            nvdec_seats_per_gpu: None,
            nvdec_seats_file: None,
            starting_at_once: None,
            shard: None,
            shards: None,
            console: None,
        }
    }
}

fn default_listen() -> String {
    "127.0.0.1:8686".to_string()
}

/// `[server] max_pipelines` when the config says nothing: above what a large host runs (its
/// NVDEC pipelines, plus the software ones its cores decode), so only an explicit value
/// refuses a config for what the host really carries.
fn default_max_pipelines() -> usize {
    1024
}

fn default_shutdown_timeout() -> f64 {
    10.0
}

/// One `[[pipeline]]`: its name, input, filter and output, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// The pipeline's name, unique in the config; it names its threads, logs and metrics.
    pub name: String,
    /// `[pipeline.source]`: the input.
    pub source: SourceConfig,
    /// `[pipeline.filter]`: the mask and the engine.
    #[serde(default)]
    pub filter: FilterConfig,
    /// `[pipeline.sink]`: the output.
    pub sink: SinkConfig,
}

/// `[pipeline.source]`: the input and how it is read and decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// A path, `-` for stdin, or any URL the FFmpeg build opens.
    pub url: String,
    /// Force a demuxer (`-f` in ffmpeg), e.g. `mpegts` for a UDP stream.
    pub format: Option<String>,
    /// `auto` (software, frame-threaded), `software`, `nvdec`, or an FFmpeg decoder name.
    #[serde(default = "default_decoder")]
    pub decoder: String,
    /// Decoder threads; 0 lets FFmpeg choose.
    #[serde(default)]
    pub threads: usize,
    /// Start over at the end of the input.
    #[serde(default, rename = "loop")]
    pub looping: bool,
    /// With `loop`: start over this many times, then end (FFmpeg's `-stream_loop N`: the
    /// input plays N + 1 times); unset: for ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_count: Option<u64>,
    /// Pace reading at the stream's frame rate (for testing live setups with files).
    #[serde(default)]
    pub realtime: bool,
    /// A live input reconnects after errors and when it ends. By default, URLs with a
    /// network scheme (`udp://`, `rtsp://`, `srt://`, ...) are live; files and pipes are not.
    pub live: Option<bool>,
    /// What to do when the filter or the sink falls behind: `none` blocks reading (the
    /// input buffers), `oldest` drops the oldest decoded frame waiting (counted).
    #[serde(default)]
    pub drop: DropPolicy,
    /// Seconds without any data after which a live input counts as lost and reconnects.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: f64,
    /// Backoff between reconnection attempts of a live input.
    #[serde(default)]
    pub reconnect: ReconnectConfig,
    /// Demuxer and protocol options, as `ffmpeg -KEY VALUE` before `-i` sets them:
    /// `rtsp_transport = "tcp"`, or `video_size`, `pixel_format` and `framerate` for raw video.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
    /// Seconds into the input to start at (`ffmpeg -ss` before `-i`): the input is sought to
    /// the keyframe before it, and frames earlier than it are decoded and dropped. Output
    /// timestamps start at 0 there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<f64>,
    /// Seconds of input to filter from `start` (`ffmpeg -t`); a looped file repeats that part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// The most frames to filter (`ffmpeg -frames:v`), counted over loops too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u64>,
    /// Bits per sample to filter and write at (8, 9, 10, 12, 14 or 16): decoded pictures
    /// are converted to it. Unset: the input's own depth, kept to the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u8>,
    /// Keep the input's timestamps (`ffmpeg -copyts`). Off, as in FFmpeg, the output starts
    /// at 0: an input's start offset (MPEG-TS starts its clock at 1.4 s) is taken off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copyts: bool,
}

impl SourceConfig {
    /// A source for `url` with every other field at its default.
    pub fn from_url(url: &str) -> SourceConfig {
        SourceConfig {
            url: url.to_string(),
            format: None,
            decoder: default_decoder(),
            threads: 0,
            looping: false,
            loop_count: None,
            realtime: false,
            live: None,
            drop: DropPolicy::default(),
            idle_timeout: default_idle_timeout(),
            reconnect: ReconnectConfig::default(),
            options: BTreeMap::new(),
            start: None,
            duration: None,
            frames: None,
            depth: None,
            copyts: false,
        }
    }

    /// Whether the input reconnects: `live` when set, else whether the URL names a network protocol.
    pub fn is_live(&self) -> bool {
        self.live.unwrap_or_else(|| match self.url.split_once("://") {
            Some((scheme, _)) => scheme != "file" && !scheme.is_empty(),
            None => false,
        })
    }
}

fn default_idle_timeout() -> f64 {
    10.0
}

/// `source.drop`: what a source does when the filter falls behind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DropPolicy {
    /// Block the source while the queue is full.
    #[default]
    None,
    /// Drop the oldest decoded frame waiting for the filter.
    Oldest,
}

/// `source.reconnect`: how a live input is opened again after it fails or goes quiet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconnectConfig {
    /// Seconds before the first attempt; each failure doubles it.
    #[serde(default = "default_reconnect_initial")]
    pub initial: f64,
    /// The most seconds between attempts.
    #[serde(default = "default_reconnect_max")]
    pub max: f64,
}

impl Default for ReconnectConfig {
    fn default() -> Self {
        ReconnectConfig {
            initial: default_reconnect_initial(),
            max: default_reconnect_max(),
        }
    }
}

fn default_reconnect_initial() -> f64 {
    0.5
}

fn default_reconnect_max() -> f64 {
    30.0
}

fn default_decoder() -> String {
    "auto".to_string()
}

/// `[pipeline.filter]`: the mask, the planes it filters, the border and the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterConfig {
    /// The mask: a preset SPEC, a `[masks.NAME]`, or an inline table.
    #[serde(default)]
    pub mask: MaskSelection,
    /// Which planes are filtered (`all`, `luma` or `chroma`); the others pass unchanged.
    #[serde(default)]
    pub planes: PlaneSelection,
    /// A mask per plane, over `mask`: `{ y = "edge", uv = "neutral" }`; keys y, u, v, uv
    /// (both chroma planes), r, g, b; values as `mask` takes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plane_masks: BTreeMap<String, MaskSelection>,
    /// How the mask reads past the picture's edges.
    #[serde(default)]
    pub border: BorderMode,
    /// FFmpeg's own filters run on the decoded pictures before the engine, as a libavfilter
    /// chain (`scale=640:-2,crop=320:240`): what the engine filters is what they give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ffmpeg_before: Option<String>,
    /// FFmpeg's own filters run on the engine's pictures before they are encoded, as a
    /// libavfilter chain (`format=gray`, `fps=10`): the output is what they give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ffmpeg_after: Option<String>,
    /// One FFmpeg filter chain (`scale=1280:-2,convolution=...,format=gray`) in place of
    /// `ffmpeg_before` and `ffmpeg_after`: FFmpeg's filters before its convolution stage run
    /// before the engine, those after it after. The stage is the graph's run of
    /// `convolution`, `sobel`, `prewitt`, `roberts` (then `mask`, `plane_masks`, `planes`
    /// and `border` are left out), or `null@mask`, where `mask` and the rest run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<String>,
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    #[serde(default = "default_device")]
    pub device: String,
    /// CUDA streams, 1..=16: frames on different streams overlap their copies and kernels.
    #[serde(default = "default_streams")]
    pub streams: usize,
    /// Frames queued on each stream at once, 1..=4: the next frame's work is already
    /// queued when one finishes, so the GPU does not wait for the host between frames.
    #[serde(default = "default_frames_per_stream")]
    pub frames_per_stream: usize,
    /// Most frames kept in page-locked memory for the GPU to copy directly (unset: every
    /// frame the pipeline can hold; 0: none, every frame is staged through the lanes' own
    /// buffers). Caps the pinned memory of a pipeline on a host short of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_frames: Option<usize>,
    /// `[pipeline.filter.gpu]`: the CUDA engine's spin-wait and kernel tilings (tuning
    /// knobs, measured with `convstream bench`; the defaults suit every GPU measured).
    #[serde(default, skip_serializing_if = "GpuTuning::is_default")]
    pub gpu: GpuTuning,
}

impl Default for FilterConfig {
    fn default() -> Self {
        FilterConfig {
            mask: MaskSelection::default(),
            planes: PlaneSelection::default(),
            plane_masks: BTreeMap::new(),
            border: BorderMode::default(),
            ffmpeg_before: None,
            ffmpeg_after: None,
            graph: None,
            device: default_device(),
            streams: default_streams(),
            frames_per_stream: default_frames_per_stream(),
            pinned_frames: None,
            gpu: GpuTuning::default(),
        }
    }
}

fn default_device() -> String {
    "auto".to_string()
}

fn default_streams() -> usize {
    4
}

fn default_frames_per_stream() -> usize {
    convstream_core::DEFAULT_FRAMES_PER_STREAM
}

/// `mask = "SPEC or NAME"` or an inline table of mask keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MaskSelection {
    /// A preset SPEC (`gaussian:size=5`) or the name of a `[masks.NAME]` table.
    Named(String),
    /// A table of mask keys, written in place.
    Inline(MaskParams),
}

impl Default for MaskSelection {
    fn default() -> Self {
        MaskSelection::Named("identity".to_string())
    }
}

/// Deserialised by hand so that a bad inline table gets the table's own error
/// ("unknown field `sigmaa`, expected one of ...") instead of "no variant matched".
impl<'de> Deserialize<'de> for MaskSelection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        match value {
            toml::Value::String(s) => Ok(MaskSelection::Named(s)),
            toml::Value::Table(table) => MaskParams::deserialize(table)
                .map(MaskSelection::Inline)
                .map_err(|e| serde::de::Error::custom(format!("in the mask table: {}", e.message()))),
            other => {
                let kind = other.type_str();
                let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                Err(serde::de::Error::custom(format!(
                    "mask must be a string (a preset SPEC or the name of a [masks.NAME] table) or a table of mask keys, not {article} {kind}"
                )))
            }
        }
    }
}

/// `[pipeline.sink]`: the output, its container and its encoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkConfig {
    /// A path, `-` for stdout (YUV4MPEG2), `null` to discard, or a URL.
    pub url: String,
    /// Force a muxer (`-f` in ffmpeg): `mpegts`, `yuv4mpegpipe`, `matroska`, ...
    pub format: Option<String>,
    /// Video encoder name; by default one suited to the container.
    pub codec: Option<String>,
    /// Prefer a lossless encoder (ffv1) where the container takes it.
    #[serde(default)]
    pub lossless: bool,
    /// Encoder options, as `ffmpeg -OPTION VALUE` would set them (`b = "8M"`, `crf = "18"`,
    /// `preset = "slow"`, `qscale = "2"`); an option the encoder does not take is an error.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Muxer options, as `ffmpeg -KEY VALUE` before the output sets them (`movflags =
    /// "+faststart"`); an option the muxer does not take is an error.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub muxer_options: BTreeMap<String, String>,
    /// The audio encoder (`aac`, `libopus`, as `ffmpeg -c:a`); unset or `copy`: the audio
    /// is copied as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_codec: Option<String>,
    /// The audio encoder's options, as `ffmpeg -KEY:a VALUE`: `b` (bit rate, `128k`), `ar`
    /// (sample rate), `ac` (channels), or the encoder's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audio_options: BTreeMap<String, String>,
    /// Copy audio and other non-video streams when the container can hold them.
    #[serde(default = "default_true")]
    pub audio: bool,
    /// Copy subtitle streams beside the audio (false: `ffmpeg -sn`, or `-map 0:v -map 0:a?`,
    /// which maps no subtitles).
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub subtitles: bool,
    /// Consent to replace a file already at `url` (`run -y`). Without it `run` refuses, and
    /// `serve` keeps the file and writes the next free name beside it.
    #[serde(default)]
    pub overwrite: bool,
}

fn default_true() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

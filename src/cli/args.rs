//! The flags of every subcommand, declared with clap; the handlers that act on them are
//! in the modules beside this one.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use super::values::{
    border_parser, parse_key_value, parse_log_format, parse_mask_size, parse_plane_size, parse_spin_us, parse_time,
    planes_parser,
};
use convstream_config::LogFormat;
use convstream_core::{BorderMode, PlaneSelection};

#[derive(Parser)]
#[command(
    name = "convstream",
    version,
    about = "Real-time 2D convolution filtering of video on NVIDIA GPUs (CPU reference engine included)"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Filter a video: one pipeline from flags, or the pipelines of a config file.
    Run(Box<RunArgs>),
    /// Run every pipeline of a config as a service, with an HTTP API, metrics and reload.
    Serve {
        /// The config file: its pipelines, [server] and [masks.*]; reloaded when it changes.
        #[arg(long)]
        config: PathBuf,
        /// Address and port of the HTTP API (overrides server.listen; default 127.0.0.1:8686).
        #[arg(long)]
        listen: Option<String>,
        /// Run only this replica's share of the pipelines: INDEX/COUNT (such as 1/3), or
        /// auto (the index from a StatefulSet hostname name-N, the count from
        /// server.shards or CONVSTREAM_SHARDS). Overrides server.shard.
        #[arg(long, value_name = "INDEX/COUNT|auto")]
        shard: Option<String>,
    },
    /// Validate a config file and print every problem at once.
    Check {
        /// The config file to check.
        #[arg(long)]
        config: PathBuf,
        /// Also print which of COUNT shards runs each pipeline (default: server.shards, if set).
        #[arg(long, value_name = "COUNT")]
        shards: Option<usize>,
    },
    /// List the mask presets, or print the exact matrix a SPEC gives.
    Masks {
        #[command(subcommand)]
        action: Option<MasksAction>,
    },
    /// Report FFmpeg codecs, the CUDA driver, GPUs, NVRTC and what --device auto would use.
    Doctor,
    /// Measure kernels, copies, lane overlap and end-to-end speed; writes results.json,
    /// results.md, SVG plots and a Chrome trace.
    Bench(Box<BenchArgs>),
    /// The kernel pack: GPU kernels compiled ahead of time (by NVRTC, no GPU needed) that a
    /// run loads instead of compiling them on first use.
    Kernels {
        #[command(subcommand)]
        action: KernelsAction,
    },
    /// Generate a sample clip and filter it through the built-in default config.
    Demo {
        /// Folder for the sample and the filtered output.
        #[arg(long, default_value = "convstream-demo")]
        dir: PathBuf,
        /// auto, cpu, cuda or cuda:N.
        #[arg(long)]
        device: Option<String>,
    },
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Which measurements to run.
    #[arg(long, value_enum, default_value = "all")]
    pub(crate) suite: convstream_bench::Suite,
    /// auto, cpu, cuda or cuda:N.
    #[arg(long, default_value = "auto")]
    pub(crate) device: String,
    /// A video file for the e2e suite (one is generated when absent).
    #[arg(long)]
    pub(crate) input: Option<PathBuf>,
    /// Few sizes and repetitions: a smoke test, not a speed claim.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Folder for the results.
    #[arg(long, default_value = "bench-results")]
    pub(crate) out: PathBuf,
    /// Kernel suite: these mask sizes only (odd, comma-separated), e.g. to profile one case.
    #[arg(long, value_delimiter = ',', value_parser = parse_mask_size)]
    pub(crate) mask_sizes: Option<Vec<usize>>,
    /// Kernel suite: these bits per sample only (comma-separated; 8 and 16 by default).
    #[arg(long, value_name = "BITS,...", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(8..=16))]
    pub(crate) depths: Option<Vec<u8>>,
    /// Kernel suite on the GPU: these plane sizes only, e.g. `3840x2160` (comma-separated).
    #[arg(long, value_name = "WxH,...", value_delimiter = ',', value_parser = parse_plane_size)]
    pub(crate) plane_sizes: Option<Vec<(usize, usize)>>,
    /// Kernel suite: interleaved channels per pixel of the timed planes (3: a channels-last
    /// RGB image, each channel filtered on its own).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub(crate) channels: u8,
    /// Microseconds the GPU completion thread polls a lane before blocking (0 blocks at
    /// once; as filter.gpu.spin_us in a config).
    #[arg(long, default_value_t = convstream_core::DEFAULT_SPIN_US, value_parser = parse_spin_us)]
    pub(crate) spin_us: u64,
    /// The dense kernel's tiling, BLOCK_XxBLOCK_YxPXxPY (e.g. 32x8x8x4), instead of the
    /// measured policy's (as filter.gpu.dense_tiling).
    #[arg(long)]
    pub(crate) dense_tiling: Option<convstream_core::TileShape>,
    /// The separable kernel's tiling, BLOCK_XxBLOCK_YxPXxPY (as filter.gpu.separable_tiling).
    #[arg(long)]
    pub(crate) separable_tiling: Option<convstream_core::TileShape>,
    /// Scale suite: ramp this decoder only (software or nvdec); default both on a GPU,
    /// software on the CPU.
    #[arg(long)]
    pub(crate) decoder: Option<String>,
    /// Scale suite: fill these GPUs at once (`all`, or ordinals such as `0,1`), each with a
    /// step's pipelines, as a full host runs; with `--decoder nvdec` this writes the seats
    /// each GPU model kept (`nvdec-seats.toml`, for `[server] nvdec_seats_file`).
    #[arg(long, value_name = "all|N,...")]
    pub(crate) gpus: Option<String>,
    /// Scale suite: run these pipeline counts (comma-separated) instead of the ramp
    /// 1, 2, 4, 8, 16, 24, 32, 48, 64, 80, ...
    #[arg(long, value_delimiter = ',')]
    pub(crate) pipelines: Option<Vec<usize>>,
    /// Scale suite: the ramp stops at this many pipelines.
    #[arg(long, default_value_t = 256)]
    pub(crate) max_pipelines: usize,
    /// Scale suite: seconds each step is measured for, after a warm-up (default 10; 2 with --quick).
    #[arg(long)]
    pub(crate) scale_seconds: Option<f64>,
    /// E2e suite: FFmpeg's `ffmpeg` to time whole commands against (default: an `ffmpeg`
    /// beside this executable, else the first on PATH; without one that column is skipped).
    #[arg(long, value_name = "PATH")]
    pub(crate) ffmpeg: Option<PathBuf>,
    /// E2e suite: rounds of whole commands, FFmpeg's and convstream's alternating (medians
    /// reported, every round kept in results.json).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub(crate) rounds: u16,
}

#[derive(Subcommand)]
pub(crate) enum MasksAction {
    /// Print the matrix (after normalisation) a SPEC such as `gaussian:size=5` applies.
    Show {
        /// A mask SPEC: `name` or `name:key=value,...` (`convstream masks` lists the names).
        spec: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum KernelsAction {
    /// Compile the kernel catalogue for each architecture into one pack file (NVRTC must be
    /// loadable; no GPU is needed).
    Build {
        /// Architectures, comma-separated or repeated (default: sm_80,sm_90,sm_100,sm_120).
        #[arg(long = "arch", value_delimiter = ',', value_name = "sm_XY")]
        archs: Vec<String>,
        /// The pack to write (convstream-kernels.pack beside the binary is where runs look).
        #[arg(long)]
        out: PathBuf,
        /// NVRTC compiles at once (default: the cores there are).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Print what a pack holds and whether this build would use it (default: the pack runs find).
    Show {
        /// A pack file.
        pack: Option<PathBuf>,
        /// Print instead what this build packs: its kernel source's hash and each catalogue
        /// kernel's NVRTC options (build scripts key their cached packs on it).
        #[arg(long, conflicts_with = "pack")]
        catalogue: bool,
    },
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// Input: a path, `-` for stdin, or a URL FFmpeg opens.
    #[arg(long, short)]
    pub(crate) input: Option<String>,
    /// Output: a path, `-` for stdout (YUV4MPEG2), `null`, or a URL.
    #[arg(long, short)]
    pub(crate) output: Option<String>,
    /// The output, written last as in FFmpeg (`run -i in.mp4 out.mkv`), instead of --output.
    #[arg(value_name = "OUTPUT", conflicts_with = "output")]
    pub(crate) output_file: Option<String>,
    /// Mask SPEC (`gaussian:size=13,sigma=2.5`, `custom:matrix=[[1,2,1],[2,4,2],[1,2,1]]`)
    /// or the name of a [masks.NAME] table; `convstream masks` lists the presets.
    #[arg(long, value_name = "SPEC")]
    pub(crate) mask: Option<String>,
    /// Which planes the mask filters (the others are copied): all, luma (Y) or chroma (U and V).
    #[arg(long, value_parser = planes_parser())]
    pub(crate) planes: Option<PlaneSelection>,
    /// A mask for one plane, over --mask: PLANE=SPEC with PLANE y, u, v, uv (both chroma
    /// planes), r, g or b (repeatable), e.g. --plane-mask y=edge --plane-mask uv=neutral.
    #[arg(long = "plane-mask", value_name = "PLANE=SPEC", value_parser = parse_key_value)]
    pub(crate) plane_masks: Vec<(String, String)>,
    /// How pixels beyond the picture's edges are taken (SciPy's modes; default reflect).
    #[arg(long, value_parser = border_parser())]
    pub(crate) border: Option<BorderMode>,
    /// FFmpeg's own filters run before the mask, as a libavfilter chain (scale=640:-2,crop=...);
    /// the part of a -vf chain before its convolution filters goes here.
    #[arg(long = "ffmpeg-before", value_name = "CHAIN")]
    pub(crate) ffmpeg_before: Option<String>,
    /// FFmpeg's own filters run after the mask, before encoding (format=gray, fps=10); the
    /// part of a -vf chain after its convolution filters goes here.
    #[arg(long = "ffmpeg-after", value_name = "CHAIN")]
    pub(crate) ffmpeg_after: Option<String>,
    /// auto (CUDA if a usable GPU is present, else CPU), cpu, cuda or cuda:N.
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// CUDA streams, 1..=16.
    #[arg(long)]
    pub(crate) streams: Option<usize>,
    /// Frames queued on each CUDA stream at once, 1..=4.
    #[arg(long)]
    pub(crate) frames_per_stream: Option<usize>,
    /// auto, software, nvdec or an FFmpeg decoder name.
    #[arg(long)]
    pub(crate) decoder: Option<String>,
    /// Threads of a software decoder, 0 for FFmpeg's choice (as source.threads; `-threads N`
    /// before `-i` works too).
    #[arg(long, value_name = "N")]
    pub(crate) decoder_threads: Option<usize>,
    /// Output container (FFmpeg muxer name), when the output name does not tell.
    #[arg(long)]
    pub(crate) format: Option<String>,
    /// Input container (FFmpeg demuxer name), e.g. mpegts for a UDP stream.
    #[arg(long)]
    pub(crate) input_format: Option<String>,
    /// Video encoder (FFmpeg name).
    #[arg(long)]
    pub(crate) codec: Option<String>,
    /// Encode losslessly: ffv1 by default, or the lossless mode of the --codec named; an
    /// output that cannot be lossless is an error.
    #[arg(long)]
    pub(crate) lossless: bool,
    /// Constant rate factor, as `ffmpeg -crf` (lower is better quality; libx264 default 23).
    #[arg(long, value_name = "N")]
    pub(crate) crf: Option<String>,
    /// Target video bitrate, as `ffmpeg -b:v` (e.g. 8M, 2500k).
    #[arg(long, value_name = "RATE")]
    pub(crate) bitrate: Option<String>,
    /// Encoder preset, as `ffmpeg -preset` (e.g. medium, slow; p1..p7 for NVENC).
    #[arg(long, value_name = "NAME")]
    pub(crate) preset: Option<String>,
    /// An encoder option, as `ffmpeg -KEY VALUE` sets it (repeatable; as sink.options).
    #[arg(long = "encoder-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) encoder_opts: Vec<(String, String)>,
    /// Leave audio and other non-video streams out (`-an` works too).
    #[arg(long)]
    pub(crate) no_audio: bool,
    /// Leave subtitle streams out, copy the audio (`-sn` works too, and `-map 0:v -map 0:a?`
    /// maps no subtitles).
    #[arg(long)]
    pub(crate) no_subtitles: bool,
    /// Start this far into the input, as `ffmpeg -ss` before `-i`: FFmpeg's time syntax,
    /// seconds (90, 1.5, 1s, 500ms) or [HH:]MM:SS[.frac].
    #[arg(long, value_name = "TIME", value_parser = parse_time, allow_negative_numbers = true)]
    pub(crate) ss: Option<f64>,
    /// Filter this much of the input, as `ffmpeg -t`: seconds (1.5, 1s, 500ms) or [HH:]MM:SS[.frac].
    #[arg(long, short = 't', value_name = "TIME", value_parser = parse_time, allow_negative_numbers = true)]
    pub(crate) duration: Option<f64>,
    /// Filter at most this many frames, as `ffmpeg -frames:v`.
    #[arg(long, value_name = "N")]
    pub(crate) frames: Option<u64>,
    /// Bits per sample to filter and write at: 8, 9, 10, 12, 14 or 16 (as source.depth).
    /// By default the input's depth is kept; an encoder that cannot take it gets a
    /// converted copy, with a warning.
    #[arg(long, value_name = "BITS")]
    pub(crate) depth: Option<u8>,
    /// A demuxer or protocol option, as `ffmpeg -KEY VALUE` before `-i` sets it (repeatable;
    /// as source.options), e.g. rtsp_transport=tcp.
    #[arg(long = "input-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) input_opts: Vec<(String, String)>,
    /// Raw input: the picture size, e.g. 1920x1080 (with --input-format rawvideo).
    #[arg(long, value_name = "WxH")]
    pub(crate) size: Option<String>,
    /// Raw input: the pixel format, e.g. yuv420p, nv12, gray, rgb24.
    #[arg(long, value_name = "FMT")]
    pub(crate) pix_fmt: Option<String>,
    /// Raw input: the frame rate, e.g. 25 or 30000/1001.
    #[arg(long, value_name = "RATE")]
    pub(crate) framerate: Option<String>,
    /// The audio encoder (aac, libopus, ... as `-c:a`; sink.audio_codec): the audio is decoded,
    /// resampled and encoded again instead of copied.
    #[arg(long = "audio-codec", value_name = "NAME")]
    pub(crate) audio_codec: Option<String>,
    /// An audio encoder option, as `-KEY:a VALUE` (repeatable; sink.audio_options): b=128k
    /// (`-b:a`), ar=48000 (`-ar`), ac=2 (`-ac`).
    #[arg(long = "audio-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) audio_opts: Vec<(String, String)>,
    /// The output's picture size (WxH, or a name such as hd720), as FFmpeg's -s after -i: a
    /// scale filter after every other.
    #[arg(long = "output-size", value_name = "WxH")]
    pub(crate) output_size: Option<String>,
    /// The output's pixel format, as FFmpeg's -pix_fmt after -i: a format filter after every
    /// other.
    #[arg(long = "output-pix-fmt", value_name = "FMT")]
    pub(crate) output_pix_fmt: Option<String>,
    /// The output's constant frame rate, as FFmpeg's -r after -i: an fps filter after every
    /// other (frames repeated or dropped).
    #[arg(long = "output-framerate", value_name = "RATE")]
    pub(crate) output_framerate: Option<String>,
    /// A muxer option, as `ffmpeg -KEY VALUE` before the output sets it (repeatable; as
    /// sink.muxer_options), e.g. movflags=+faststart (`-movflags +faststart` works too). An
    /// MP4 to a pipe or a URL is fragmented (frag_keyframe+empty_moov) without asking.
    #[arg(long = "muxer-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) muxer_opts: Vec<(String, String)>,
    /// Read a file at its frame rate, as a live source would send it (`-re`; source.realtime).
    #[arg(long)]
    pub(crate) realtime: bool,
    /// Start over at the end of the input, for ever (`-stream_loop -1`; source.loop); bound
    /// it with -t or --frames.
    #[arg(long = "loop")]
    pub(crate) looping: bool,
    /// Start over at the end of the input N times, then end: the input plays N + 1 times
    /// (`-stream_loop N`; source.loop_count).
    #[arg(long = "loop-count", value_name = "N")]
    pub(crate) loop_count: Option<u64>,
    /// Keep the input's timestamps (`-copyts`; source.copyts). Without it the output starts
    /// at 0, as FFmpeg's does.
    #[arg(long)]
    pub(crate) copyts: bool,
    /// A run that writes no frame is a success, and its empty output is kept (by default it
    /// is an error, exit 1, as when --ss is past the input's end, and the output is not
    /// written: an existing file stays as it was).
    #[arg(long)]
    pub(crate) allow_empty: bool,
    /// Replace output files that exist already (without it, an existing output is an error).
    #[arg(long, short = 'y')]
    pub(crate) overwrite: bool,
    /// Never replace an output file, even where the config allows it (FFmpeg's `-n`); with
    /// -y too, refused.
    #[arg(long, conflicts_with = "overwrite")]
    pub(crate) no_overwrite: bool,
    /// Config file; without pipeline flags, every pipeline in it runs.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Run only this pipeline of the config.
    #[arg(long)]
    pub(crate) pipeline: Option<String>,
    /// Log lines as text (pretty) or as JSON objects, one a line (as log.format); with json,
    /// what encoder libraries print themselves is logged as JSON too.
    #[arg(long, value_name = "pretty|json", value_parser = parse_log_format)]
    pub(crate) log_format: Option<LogFormat>,
    /// The least severe log lines shown: error, warn, info, debug or trace (as log.level;
    /// FFmpeg's `-loglevel` and `-v` names work too).
    #[arg(long, value_name = "LEVEL")]
    pub(crate) log_level: Option<String>,
    /// Show a progress bar (on a terminal only; default on).
    #[arg(long, overrides_with = "no_progress")]
    pub(crate) progress: bool,
    /// Show no progress bar.
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// Write the run summary as JSON to this file.
    #[arg(long)]
    pub(crate) stats_json: Option<PathBuf>,
    /// Write a Chrome trace (Perfetto, chrome://tracing) of every frame's engine stages: GPU
    /// copies and kernels per CUDA stream, or the CPU engine's filtering.
    #[arg(long)]
    pub(crate) trace: Option<PathBuf>,
}

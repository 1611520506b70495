//! The `convstream` command line: parses arguments, sets up logging and signals, calls
//! into the library and maps errors to exit codes (0 ok, 1 runtime failure, 2 usage or
//! configuration error).
//!
//! One job at some length (about 670 lines): the flags of every subcommand are declared
//! here, with clap, next to the code that maps them onto the library.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use convstream::config::{ConfigError, ConfigFile, LogConfig, LogFormat, Overrides, Settings};
use convstream::filter::{BorderMode, PlaneSelection};
use convstream::mask::{Mask, MaskParams, PRESETS};
use convstream::pipeline::{run_all, OutputPolicy, RunOptions};

#[derive(Parser)]
#[command(
    name = "convstream",
    version,
    about = "Real-time 2D convolution filtering of video on NVIDIA GPUs (CPU reference engine included)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    },
    /// Validate a config file and print every problem at once.
    Check {
        /// The config file to check.
        #[arg(long)]
        config: PathBuf,
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
struct BenchArgs {
    /// Which measurements to run.
    #[arg(long, value_enum, default_value = "all")]
    suite: convstream::bench::Suite,
    /// auto, cpu, cuda or cuda:N.
    #[arg(long, default_value = "auto")]
    device: String,
    /// A video file for the e2e suite (one is generated when absent).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Few sizes and repetitions: a smoke test, not a speed claim.
    #[arg(long)]
    quick: bool,
    /// Folder for the results.
    #[arg(long, default_value = "bench-results")]
    out: PathBuf,
    /// Kernel suite: these mask sizes only (odd, comma-separated), e.g. to profile one case.
    #[arg(long, value_delimiter = ',', value_parser = parse_mask_size)]
    mask_sizes: Option<Vec<usize>>,
    /// Kernel suite: these bits per sample only (comma-separated; 8 and 16 by default).
    #[arg(long, value_name = "BITS,...", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(8..=16))]
    depths: Option<Vec<u8>>,
    /// Kernel suite on the GPU: these plane sizes only, e.g. `3840x2160` (comma-separated).
    #[arg(long, value_name = "WxH,...", value_delimiter = ',', value_parser = parse_plane_size)]
    plane_sizes: Option<Vec<(usize, usize)>>,
    /// Microseconds the GPU completion thread polls a lane before blocking (0 blocks at
    /// once; as filter.gpu.spin_us in a config).
    #[arg(long, default_value_t = convstream::engine::DEFAULT_SPIN_US, value_parser = parse_spin_us)]
    spin_us: u64,
    /// The dense kernel's tiling, BLOCK_XxBLOCK_YxPXxPY (e.g. 32x8x8x4), instead of the
    /// measured policy's (as filter.gpu.dense_tiling).
    #[arg(long)]
    dense_tiling: Option<convstream::engine::TileShape>,
    /// The separable kernel's tiling, BLOCK_XxBLOCK_YxPXxPY (as filter.gpu.separable_tiling).
    #[arg(long)]
    separable_tiling: Option<convstream::engine::TileShape>,
    /// Scale suite: ramp this decoder only (software or nvdec); default both on a GPU,
    /// software on the CPU.
    #[arg(long)]
    decoder: Option<String>,
    /// Scale suite: run these pipeline counts (comma-separated) instead of the ramp
    /// 1, 2, 4, 8, 16, 24, 32, 48, 64, 80, ...
    #[arg(long, value_delimiter = ',')]
    pipelines: Option<Vec<usize>>,
    /// Scale suite: the ramp stops at this many pipelines.
    #[arg(long, default_value_t = 256)]
    max_pipelines: usize,
    /// Scale suite: seconds each step is measured for, after a warm-up (default 10; 2 with --quick).
    #[arg(long)]
    scale_seconds: Option<f64>,
}

/// `KEY=VALUE`, for options passed on to FFmpeg.
fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// A time as FFmpeg writes durations: seconds (`90`, `1.5`) or `[HH:]MM:SS[.frac]`.
fn parse_time(text: &str) -> Result<f64, String> {
    let bad = || format!("`{text}` is not a time; use seconds (90, 1.5) or [HH:]MM:SS[.frac] (1:30, 00:01:30.5)");
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(bad());
    }
    let (last, whole) = parts.split_last().ok_or_else(bad)?;
    let seconds: f64 = last.parse().map_err(|_| bad())?;
    let mut total = 0u64;
    for part in whole {
        total = total * 60 + part.parse::<u64>().map_err(|_| bad())?;
    }
    let value = total as f64 * 60.0 + seconds;
    if !value.is_finite() || value < 0.0 || (!whole.is_empty() && !(0.0..60.0).contains(&seconds)) {
        return Err(bad());
    }
    Ok(value)
}

fn parse_mask_size(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(size) if size % 2 == 1 && size <= 63 => Ok(size),
        _ => Err(format!("{text} is not an odd mask size in 1..=63")),
    }
}

fn parse_spin_us(text: &str) -> Result<u64, String> {
    let max = convstream::engine::MAX_SPIN_US;
    match text.parse::<u64>() {
        Ok(micros) if micros <= max => Ok(micros),
        _ => Err(format!("{text} is not a number of microseconds in 0..={max}")),
    }
}

fn parse_plane_size(text: &str) -> Result<(usize, usize), String> {
    let parsed = text
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<usize>().ok()?, h.parse::<usize>().ok()?)));
    match parsed {
        Some((w, h)) if w > 0 && h > 0 && w <= 16384 && h <= 16384 => Ok((w, h)),
        _ => Err(format!("{text} is not a plane size such as 3840x2160")),
    }
}

#[derive(Subcommand)]
enum MasksAction {
    /// Print the matrix (after normalisation) a SPEC such as `gaussian:size=5` applies.
    Show {
        /// A mask SPEC: `name` or `name:key=value,...` (`convstream masks` lists the names).
        spec: String,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Input: a path, `-` for stdin, or a URL FFmpeg opens.
    #[arg(long, short)]
    input: Option<String>,
    /// Output: a path, `-` for stdout (YUV4MPEG2), `null`, or a URL.
    #[arg(long, short)]
    output: Option<String>,
    /// Mask SPEC (`gaussian:size=13,sigma=2.5`, `custom:matrix=[[1,2,1],[2,4,2],[1,2,1]]`)
    /// or the name of a [masks.NAME] table; `convstream masks` lists the presets.
    #[arg(long, value_name = "SPEC")]
    mask: Option<String>,
    /// Which planes the mask filters (the others are copied): all, luma (Y) or chroma (U and V).
    #[arg(long, value_enum)]
    planes: Option<PlaneSelection>,
    /// A mask for one plane, over --mask: PLANE=SPEC with PLANE y, u, v, uv (both chroma
    /// planes), r, g or b (repeatable), e.g. --plane-mask y=edge --plane-mask uv=neutral.
    #[arg(long = "plane-mask", value_name = "PLANE=SPEC", value_parser = parse_key_value)]
    plane_masks: Vec<(String, String)>,
    /// How pixels beyond the picture's edges are taken (SciPy's modes; default reflect).
    #[arg(long, value_enum)]
    border: Option<BorderMode>,
    /// auto (CUDA if a usable GPU is present, else CPU), cpu, cuda or cuda:N.
    #[arg(long)]
    device: Option<String>,
    /// CUDA streams, 1..=16.
    #[arg(long)]
    streams: Option<usize>,
    /// Frames queued on each CUDA stream at once, 1..=4.
    #[arg(long)]
    frames_per_stream: Option<usize>,
    /// auto, software, nvdec or an FFmpeg decoder name.
    #[arg(long)]
    decoder: Option<String>,
    /// Output container (FFmpeg muxer name), when the output name does not tell.
    #[arg(long)]
    format: Option<String>,
    /// Input container (FFmpeg demuxer name), e.g. mpegts for a UDP stream.
    #[arg(long)]
    input_format: Option<String>,
    /// Video encoder (FFmpeg name).
    #[arg(long)]
    codec: Option<String>,
    /// Encode losslessly: ffv1 by default, or the lossless mode of the --codec named; an
    /// output that cannot be lossless is an error.
    #[arg(long)]
    lossless: bool,
    /// Constant rate factor, as `ffmpeg -crf` (lower is better quality; libx264 default 23).
    #[arg(long, value_name = "N")]
    crf: Option<String>,
    /// Target video bitrate, as `ffmpeg -b:v` (e.g. 8M, 2500k).
    #[arg(long, value_name = "RATE")]
    bitrate: Option<String>,
    /// Encoder preset, as `ffmpeg -preset` (e.g. medium, slow; p1..p7 for NVENC).
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// An encoder option, as `ffmpeg -KEY VALUE` sets it (repeatable; as sink.options).
    #[arg(long = "encoder-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    encoder_opts: Vec<(String, String)>,
    /// Leave audio and other non-video streams out (`-an` works too).
    #[arg(long)]
    no_audio: bool,
    /// Start this far into the input, as `ffmpeg -ss` before `-i`: seconds or [HH:]MM:SS[.frac].
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    ss: Option<f64>,
    /// Filter this much of the input, as `ffmpeg -t`: seconds or [HH:]MM:SS[.frac].
    #[arg(long, short = 't', value_name = "TIME", value_parser = parse_time)]
    duration: Option<f64>,
    /// Filter at most this many frames, as `ffmpeg -frames:v`.
    #[arg(long, value_name = "N")]
    frames: Option<u64>,
    /// Bits per sample to filter and write at: 8, 9, 10, 12, 14 or 16 (as source.depth).
    /// By default the input's depth is kept; an encoder that cannot take it gets a
    /// converted copy, with a warning.
    #[arg(long, value_name = "BITS")]
    depth: Option<u8>,
    /// A demuxer or protocol option, as `ffmpeg -KEY VALUE` before `-i` sets it (repeatable;
    /// as source.options), e.g. rtsp_transport=tcp.
    #[arg(long = "input-opt", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    input_opts: Vec<(String, String)>,
    /// Raw input: the picture size, e.g. 1920x1080 (with --input-format rawvideo).
    #[arg(long, value_name = "WxH")]
    size: Option<String>,
    /// Raw input: the pixel format, e.g. yuv420p, nv12, gray, rgb24.
    #[arg(long, value_name = "FMT")]
    pix_fmt: Option<String>,
    /// Raw input: the frame rate, e.g. 25 or 30000/1001.
    #[arg(long, value_name = "RATE")]
    framerate: Option<String>,
    /// Replace output files that exist already (without it, an existing output is an error).
    #[arg(long, short = 'y')]
    overwrite: bool,
    /// Config file; without pipeline flags, every pipeline in it runs.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Run only this pipeline of the config.
    #[arg(long)]
    pipeline: Option<String>,
    /// Show a progress bar (on a terminal only; default on).
    #[arg(long, overrides_with = "no_progress")]
    progress: bool,
    /// Show no progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Write the run summary as JSON to this file.
    #[arg(long)]
    stats_json: Option<PathBuf>,
    /// Write a Chrome trace (Perfetto, chrome://tracing) of every frame's engine stages: GPU
    /// copies and kernels per CUDA stream, or the CPU engine's filtering.
    #[arg(long)]
    trace: Option<PathBuf>,
}

/// An error with its exit code.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure { code: 1, error }
    }
}

fn usage(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: 2,
        error: error.into(),
    }
}

fn main() -> ExitCode {
    guard_standard_streams();
    let cli = Cli::parse_from(std::env::args_os().map(ffmpeg_spellings));
    match try_main(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, error }) => {
            let message = format!("{error:#}");
            eprintln!("error: {}", convstream::text::redact_credentials(&message));
            ExitCode::from(code)
        }
    }
}

/// Process-wide settings that keep output failures visible. SIGXFSZ is ignored, so a write
/// past `ulimit -f` fails with EFBIG and is reported, instead of killing the process without
/// a word. A closed stdout (`>&-`) is recorded, so `-o -` is refused instead of writing
/// into the /dev/null the runtime put in its place.
fn guard_standard_streams() {
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Rust's runtime has already put /dev/null, opened read-write, in place of a closed
    // standard stream; a shell's `>/dev/null` opens it write-only. Read-write /dev/null on
    // stdout is taken for a closed stdout (a deliberate `1<>/dev/null` reads the same).
    // SAFETY: fcntl and fstat on descriptor 1 with a zeroed stat to fill.
    let closed = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        let mode = libc::fcntl(1, libc::F_GETFL);
        mode == -1
            || (mode & libc::O_ACCMODE == libc::O_RDWR
                && libc::fstat(1, &mut stat) == 0
                && stat.st_mode & libc::S_IFMT == libc::S_IFCHR
                && stat.st_rdev == libc::makedev(1, 3))
    };
    if closed {
        convstream::sink::mark_stdout_closed();
    }
}

/// FFmpeg's single-dash spellings that users type by habit, read as the long flags.
fn ffmpeg_spellings(arg: std::ffi::OsString) -> std::ffi::OsString {
    match arg.to_str() {
        Some("-an") => "--no-audio".into(),
        Some("-ss") => "--ss".into(),
        _ => arg,
    }
}

fn try_main(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => run(*args),
        Command::Check { config } => check(&config),
        Command::Serve { config, listen } => serve(config, listen),
        Command::Masks { action: None } => list_masks(),
        Command::Masks {
            action: Some(MasksAction::Show { spec }),
        } => show_mask(&spec),
        Command::Demo { dir, device } => demo(&dir, device),
        Command::Doctor => print_out(&convstream::doctor::report()),
        Command::Bench(args) => bench(*args),
    }
}

fn init_logging(log: &LogConfig) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(log.level.as_deref().unwrap_or("info")))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // URL credentials (`rtsp://user:pass@...`) never reach a log, whoever quotes the URL.
        .with_writer(|| convstream::text::RedactingWriter(std::io::stderr()))
        .with_target(false)
        // Colour codes only for a terminal: logs piped to a file or a test stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match log.format {
        LogFormat::Json => builder.json().try_init(),
        // Timestamps to the millisecond, as a log read later (or beside FFmpeg's) needs.
        LogFormat::Pretty => builder
            .compact()
            .with_timer(tracing_subscriber::fmt::time::ChronoUtc::new("%H:%M:%S%.3f".into()))
            .try_init(),
    };
}

/// SIGINT/SIGTERM set the stop flag (drain and finalise); a second one exits at once.
/// SIGHUP (a closed terminal, or a habit from `serve`) is logged and ignored: its default
/// action would kill the run and lose the output.
fn install_signal_handlers() -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone())
            .context("installing signal handlers")?;
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let mut hangups = signal_hook::iterator::Signals::new([SIGHUP]).context("installing signal handlers")?;
    std::thread::Builder::new()
        .name("sighup".into())
        .spawn(move || {
            for _ in hangups.forever() {
                tracing::warn!("SIGHUP ignored: run has nothing to reload (SIGINT or SIGTERM stop it)");
            }
        })
        .context("installing signal handlers")?;
    Ok(stop)
}

fn config_failure(error: ConfigError) -> Failure {
    usage(anyhow::Error::new(error))
}

fn load_settings(args: &RunArgs) -> Result<Settings, Failure> {
    let overrides = Overrides {
        input: args.input.clone(),
        output: args.output.clone(),
        input_format: args.input_format.clone(),
        output_format: args.format.clone(),
        mask: args.mask.clone(),
        planes: args.planes,
        plane_masks: args.plane_masks.clone(),
        border: args.border,
        device: args.device.clone(),
        streams: args.streams,
        frames_per_stream: args.frames_per_stream,
        decoder: args.decoder.clone(),
        codec: args.codec.clone(),
        lossless: args.lossless,
        overwrite: args.overwrite,
        encoder_options: encoder_options(args),
        no_audio: args.no_audio,
        start: args.ss,
        duration: args.duration,
        frames: args.frames,
        depth: args.depth,
        input_options: input_options(args),
    };
    let (file, base_dir) = match &args.config {
        Some(path) => {
            let mut file = ConfigFile::load(path).map_err(config_failure)?;
            overrides
                .apply(&mut file, args.pipeline.as_deref())
                .map_err(config_failure)?;
            (file, path.parent().map(Path::to_path_buf))
        }
        None => {
            if args.pipeline.is_some() {
                return Err(usage(anyhow::anyhow!("--pipeline needs --config")));
            }
            (overrides.standalone().map_err(config_failure)?, None)
        }
    };
    let settings = file.validate(base_dir.as_deref()).map_err(config_failure)?;
    // Before anything opens: an existing output is kept unless replacing it was asked for.
    convstream::config::refuse_existing_outputs(&settings.pipelines).map_err(config_failure)?;
    Ok(settings)
}

/// The encoder options the flags set, in the order given (later ones win).
fn encoder_options(args: &RunArgs) -> Vec<(String, String)> {
    let named = [("crf", &args.crf), ("b", &args.bitrate), ("preset", &args.preset)];
    options_of(named, &args.encoder_opts)
}

/// The demuxer options the flags set: raw video's geometry, then `--input-opt`s.
fn input_options(args: &RunArgs) -> Vec<(String, String)> {
    let raw = [
        ("video_size", &args.size),
        ("pixel_format", &args.pix_fmt),
        ("framerate", &args.framerate),
    ];
    options_of(raw, &args.input_opts)
}

/// FFmpeg options from flags of their own (those given) followed by `KEY=VALUE` ones.
fn options_of<const N: usize>(
    named: [(&str, &Option<String>); N],
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    named
        .into_iter()
        .filter_map(|(key, value)| value.as_ref().map(|v| (key.to_string(), v.clone())))
        .chain(extra.iter().cloned())
        .collect()
}

fn serve(config_path: PathBuf, listen: Option<String>) -> Result<(), Failure> {
    use convstream::server::{ServeError, ServeOptions};
    let file = ConfigFile::load(&config_path).map_err(config_failure)?;
    let settings = file.validate(config_path.parent()).map_err(config_failure)?;
    init_logging(&settings.log);
    convstream::server::serve(file, ServeOptions { config_path, listen }).map_err(|e| match e {
        ServeError::Config(e) => config_failure(e),
        ServeError::MissingToken(_) | ServeError::NoToken(_) => usage(e),
        other => anyhow::Error::new(other).into(),
    })
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let settings = load_settings(&args)?;
    // The side outputs are checked as outputs are, before anything runs.
    let pipelines: Vec<_> = settings.pipelines.iter().map(|p| p.config.clone()).collect();
    let side_outputs = [("--stats-json", &args.stats_json), ("--trace", &args.trace)];
    let problems: Vec<String> = side_outputs
        .into_iter()
        .filter_map(|(flag, path)| path.as_deref().map(|path| (flag, path)))
        .flat_map(|(flag, path)| convstream::config::side_output_problems(flag, path, &pipelines, args.overwrite))
        .collect();
    if !problems.is_empty() {
        return Err(config_failure(ConfigError::Invalid(problems)));
    }
    init_logging(&settings.log);
    run_settings(&settings, !args.no_progress, args.stats_json.as_deref(), args.trace)
}

fn run_settings(
    settings: &Settings,
    progress: bool,
    stats_json: Option<&Path>,
    trace: Option<PathBuf>,
) -> Result<(), Failure> {
    let stop = install_signal_handlers()?;
    let results = run_all(
        &settings.pipelines,
        &RunOptions {
            stop,
            progress,
            trace,
            stage_times: false,
            outputs: OutputPolicy::Command,
            io_grace: std::time::Duration::try_from_secs_f64(settings.server.shutdown_timeout / 2.0)
                .unwrap_or(std::time::Duration::MAX),
            protected: Vec::new(),
        },
    );
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    // Exit 2 when every failure is a usage error (the input could never be read as asked).
    let mut all_usage = true;
    for result in results {
        match result {
            Ok(report) => {
                print_summary(&report, settings.log.format);
                reports.push(report);
            }
            // Stopped by a signal before its input opened: the user's wish, not a failure.
            Err(e) if e.is_stop() => match settings.log.format {
                LogFormat::Pretty => eprintln!("{e}"),
                LogFormat::Json => tracing::info!("{e}"),
            },
            Err(e) => {
                all_usage &= e.is_usage();
                failures.push(e.to_string());
            }
        }
    }
    if let Some(path) = stats_json {
        let json = serde_json::json!({ "pipelines": reports, "failures": failures });
        let text = serde_json::to_string_pretty(&json).context("encoding the stats")?;
        std::fs::write(path, text).with_context(|| format!("writing stats to {}", path.display()))?;
    }
    match failures.len() {
        0 => Ok(()),
        _ if all_usage => Err(usage(anyhow::anyhow!("{}", failures.join("\n")))),
        _ => Err(anyhow::anyhow!("{}", failures.join("\n")).into()),
    }
}

/// The run's summary on stderr: a line of text, or with JSON logs one JSON event like
/// every other line, the summary's numbers as fields.
fn print_summary(report: &convstream::stats::PipelineReport, format: LogFormat) {
    match format {
        LogFormat::Pretty => eprintln!("{}", convstream::text::redact_credentials(&report.summary())),
        LogFormat::Json => tracing::info!(
            pipeline = %report.pipeline,
            summary = true,
            frames_in = report.frames_in,
            frames_out = report.frames_out,
            frames_dropped = report.frames_dropped,
            seconds = report.seconds,
            fps = report.fps,
            engine = %report.engine,
            mask = %report.mask,
            output_encoder = report.output_encoder.as_deref().unwrap_or(""),
            output_kbps = report.output_kbps.unwrap_or(0.0),
            "{}",
            report.summary()
        ),
    }
}

/// Writes to stdout; a reader that went away (`convstream masks | head`) is a normal end.
fn print_out(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to stdout").into())
        }
        _ => Ok(()),
    }
}

fn check(path: &Path) -> Result<(), Failure> {
    let file = ConfigFile::load(path).map_err(config_failure)?;
    let settings = file.validate(path.parent()).map_err(config_failure)?;
    let mut text = format!("{}: ok, {} pipeline(s)\n", path.display(), settings.pipelines.len());
    for pipeline in &settings.pipelines {
        text.push_str(&format!("  {}\n", pipeline.describe()));
    }
    print_out(&text)
}

fn list_masks() -> Result<(), Failure> {
    let mut text =
        String::from("Presets (SPEC: name or name:key=value,...; every mask also takes divisor, normalize, bias):\n");
    for preset in PRESETS {
        let keys = if preset.keys.is_empty() {
            "-".to_string()
        } else {
            preset.keys.join(", ")
        };
        text.push_str(&format!(
            "  {:<12} keys: {:<22} {}\n",
            preset.name, keys, preset.summary
        ));
    }
    text.push_str("Show the exact matrix with: convstream masks show SPEC\n");
    print_out(&text)
}

fn show_mask(spec: &str) -> Result<(), Failure> {
    let mask = MaskParams::parse_spec(spec)
        .and_then(|p| Mask::build(&p, None))
        .map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(|e| format!("mask {spec:?}: {e}")).collect();
            usage(anyhow::anyhow!("{}", lines.join("\n")))
        })?;
    print_out(&format!("{mask}\n"))
}

fn bench(args: BenchArgs) -> Result<(), Failure> {
    init_logging(&LogConfig::default());
    let device = convstream::engine::DeviceChoice::parse(&args.device).ok_or_else(|| {
        usage(anyhow::anyhow!(
            "--device {}: use auto, cpu, cuda or cuda:N",
            args.device
        ))
    })?;
    let options = convstream::bench::BenchOptions {
        suite: args.suite,
        device,
        input: args.input,
        quick: args.quick,
        out: args.out,
        mask_sizes: args.mask_sizes,
        planes: args.plane_sizes,
        depths: args.depths,
        tuning: convstream::engine::GpuTuning {
            spin_us: args.spin_us,
            dense_tiling: args.dense_tiling,
            separable_tiling: args.separable_tiling,
        },
        decoder: args.decoder,
        pipelines: args.pipelines,
        max_pipelines: args.max_pipelines,
        scale_seconds: args.scale_seconds,
    };
    let report = convstream::bench::run(&options).map_err(anyhow::Error::new)?;
    let written = convstream::bench::write_outputs(&report, &options.out).map_err(anyhow::Error::new)?;
    let mut text = convstream::bench::report::markdown(&report);
    text.push_str("Written:\n");
    for path in written {
        text.push_str(&format!("  {}\n", path.display()));
    }
    print_out(&text)
}

fn demo(dir: &Path, device: Option<String>) -> Result<(), Failure> {
    let mut file = ConfigFile::builtin_default();
    let sample = dir.join("sample.mp4");
    let output = dir.join("filtered.mp4");
    let overrides = Overrides {
        input: Some(sample.display().to_string()),
        output: Some(output.display().to_string()),
        device,
        // The demo writes into its own folder: running it again replaces its own result.
        overwrite: true,
        ..Overrides::default()
    };
    overrides.apply(&mut file, None).map_err(config_failure)?;
    let settings = file.validate(None).map_err(config_failure)?;
    init_logging(&settings.log);
    if !sample.exists() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        tracing::info!("generating the sample clip {}", sample.display());
        convstream::sample::generate(&sample, Default::default()).map_err(anyhow::Error::msg)?;
    }
    run_settings(&settings, true, None, None)?;
    print_out(&format!("filtered video written to {}\n", output.display()))
}

//! Whole commands timed as a user runs them, for the e2e suite: FFmpeg's CLI decoding a clip to
//! nothing, and `convstream run` filtering it to the null sink, each a subprocess timed from
//! spawn to exit (start-up included) and killed past a bound, in alternating rounds; their
//! steady-state rates are read from their own output (FFmpeg's `-benchmark` line, convstream's
//! `--stats-json`). Each run's output is kept in the output folder's `cli-runs/`. Over 500
//! lines with its tests: finding, running and reading the two programs is one job.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::results::{CliComparison, CliMeasure, CliRound};
use convstream_core::DeviceChoice;

/// What the whole-command comparison needs, found once per run.
pub(super) struct CliPrograms {
    /// FFmpeg's `ffmpeg` and its version line, or why there is none.
    pub ffmpeg: Result<(PathBuf, String), String>,
    /// This executable, which `convstream run` is run as.
    pub convstream: Result<PathBuf, String>,
    pub rounds: usize,
    /// Where each run's output (and convstream's stats) is kept.
    pub logs: PathBuf,
}

impl CliPrograms {
    /// Finds FFmpeg (`given`, else an `ffmpeg` beside this executable, else on `PATH`) and
    /// this executable.
    pub fn find(given: Option<&Path>, rounds: usize, out: &Path) -> CliPrograms {
        let convstream = std::env::current_exe().map_err(|e| format!("cannot tell this executable's path: {e}"));
        let logs = out.join("cli-runs");
        let ffmpeg = find_ffmpeg(given, convstream.as_ref().ok().map(PathBuf::as_path))
            .and_then(|path| ffmpeg_version(&path, &logs).map(|version| (path, version)));
        CliPrograms {
            ffmpeg,
            convstream,
            rounds: rounds.max(1),
            logs,
        }
    }
}

/// One clip, one decoder: what both commands are run with.
pub(super) struct CliCase<'a> {
    pub clip: &'a Path,
    /// `software` or `nvdec`, as the e2e suite names them.
    pub decoder: &'a str,
    pub device: DeviceChoice,
    pub mask: &'a str,
    /// A run past this is killed (a hang must not stall the bench).
    pub bound: Duration,
}

/// Runs FFmpeg's decode-only command and `convstream run` in `programs.rounds` rounds,
/// alternating which goes first, and returns the medians, every round, and the ratios.
/// What could not run is added to `skipped`, never left out silently.
pub(super) fn compare(programs: &CliPrograms, case: &CliCase, skipped: &mut Vec<String>) -> CliComparison {
    let label = format!(
        "e2e {} with the {} decoder",
        case.clip
            .file_name()
            .map_or_else(|| case.clip.display().to_string(), |n| n.to_string_lossy().into_owned()),
        case.decoder
    );
    if let Err(e) = std::fs::create_dir_all(&programs.logs) {
        skipped.push(format!(
            "{label}, whole commands: cannot create {}: {e}",
            programs.logs.display()
        ));
        return CliComparison::default();
    }
    let ffmpeg = match &programs.ffmpeg {
        Ok((path, _)) => match ffmpeg_args(case) {
            Ok(args) => Some(Program::Ffmpeg(path, args)),
            Err(e) => {
                skipped.push(format!("{label}, FFmpeg CLI column: {e}"));
                None
            }
        },
        Err(e) => {
            skipped.push(format!("{label}, FFmpeg CLI column: {e}"));
            None
        }
    };
    let convstream = match &programs.convstream {
        Ok(path) => Some(Program::Convstream(path, convstream_args(case))),
        Err(e) => {
            skipped.push(format!("{label}, convstream CLI column: {e}"));
            None
        }
    };
    let stem = format!(
        "{}-{}",
        case.clip
            .file_stem()
            .map_or_else(|| "clip".into(), |s| s.to_string_lossy().into_owned()),
        case.decoder
    );
    let mut ffmpeg_rounds = Vec::new();
    let mut convstream_rounds = Vec::new();
    for round in 0..programs.rounds {
        let mut order = [(&ffmpeg, &mut ffmpeg_rounds), (&convstream, &mut convstream_rounds)];
        if round % 2 == 1 {
            order.reverse();
        }
        for (program, rounds) in order {
            if let Some(program) = program {
                let run = program.run(
                    case,
                    &programs.logs.join(format!("{stem}-{}-{round}", program.name())),
                    round,
                );
                if let Some(note) = &run.note {
                    skipped.push(format!("{label}, {} round {round}: {note}", program.name()));
                }
                rounds.push(run);
            }
        }
    }
    let ffmpeg = ffmpeg.map(|p| measure(p.command_line(), ffmpeg_rounds));
    let convstream = convstream.map(|p| measure(p.command_line(), convstream_rounds));
    let ratio = |of: fn(&CliMeasure) -> Option<f64>| match (&convstream, &ffmpeg) {
        (Some(c), Some(f)) => Some(of(c)? / of(f)?),
        _ => None,
    };
    CliComparison {
        ffmpeg_version: programs
            .ffmpeg
            .as_ref()
            .ok()
            .map(|(path, version)| format!("{version} ({})", path.display())),
        wall_ratio: ratio(|m| m.wall_fps),
        steady_ratio: ratio(|m| m.steady_fps),
        ffmpeg,
        convstream,
    }
}

/// The medians of the rounds that gave each figure.
fn measure(command: String, rounds: Vec<CliRound>) -> CliMeasure {
    let median_of = |of: fn(&CliRound) -> Option<f64>| median(rounds.iter().filter_map(of).collect());
    CliMeasure {
        command,
        wall_seconds: median_of(|r| r.wall_seconds),
        wall_fps: median_of(|r| r.wall_fps),
        steady_fps: median_of(|r| r.steady_fps),
        rounds,
    }
}

/// The middle value (the mean of the two middle ones for an even count); `None` for none.
pub(super) fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[mid]),
        _ => Some((values[mid - 1] + values[mid]) / 2.0),
    }
}

enum Program<'a> {
    Ffmpeg(&'a Path, Vec<String>),
    Convstream(&'a Path, Vec<String>),
}

impl Program<'_> {
    fn name(&self) -> &'static str {
        match self {
            Program::Ffmpeg(..) => "ffmpeg",
            Program::Convstream(..) => "convstream",
        }
    }

    fn parts(&self) -> (&Path, &[String]) {
        match self {
            Program::Ffmpeg(path, args) | Program::Convstream(path, args) => (path, args),
        }
    }

    /// The command line as it is run (`STATS` stands for each round's stats file).
    fn command_line(&self) -> String {
        let (path, args) = self.parts();
        std::iter::once(path.display().to_string())
            .chain(args.iter().map(|a| shell_word(a)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// One timed run; `log` names its output's file (`.log`) and convstream's stats (`.json`).
    fn run(&self, case: &CliCase, log: &Path, round: usize) -> CliRound {
        let (path, args) = self.parts();
        let stats = log.with_extension("json");
        let mut command = Command::new(path);
        let mut previous = "";
        for arg in args {
            match previous {
                "--stats-json" => command.arg(&stats),
                _ => command.arg(arg),
            };
            previous = arg;
        }
        // A stale file would pass for this run's figures.
        let _ = std::fs::remove_file(&stats);
        let mut result = CliRound {
            round,
            ..CliRound::default()
        };
        let finished = match run_timed(&mut command, &log.with_extension("log"), case.bound) {
            Ok(finished) => finished,
            Err(e) => {
                result.note = Some(e);
                return result;
            }
        };
        if !finished.status.success() {
            result.note = Some(format!("{} ({})", finished.status, last_lines(&finished.output, 3)));
            return result;
        }
        result.wall_seconds = Some(finished.wall_seconds);
        let figures = match self {
            Program::Ffmpeg(..) => ffmpeg_figures(&finished.output),
            Program::Convstream(..) => convstream_figures(&stats),
        };
        match figures {
            Ok((0, _)) => result.note = Some("no frame decoded".into()),
            Ok((frames, steady_fps)) => {
                result.frames = Some(frames);
                result.wall_fps = Some(frames as f64 / finished.wall_seconds);
                result.steady_fps = Some(steady_fps);
            }
            Err(e) => result.note = Some(e),
        }
        result
    }
}

/// What the command line shows for the stats file, which is each round's own.
const STATS: &str = "STATS";

/// `ffmpeg -hide_banner -nostdin -benchmark [-c:v CODEC_cuvid] -i CLIP -map 0:v -f null -`.
fn ffmpeg_args(case: &CliCase) -> Result<Vec<String>, String> {
    let mut args: Vec<String> = ["-hide_banner", "-nostdin", "-benchmark"].map(String::from).into();
    match case.decoder {
        "software" => {}
        "nvdec" => args.extend(["-c:v".into(), cuvid_decoder(case.clip)?]),
        other => args.extend(["-c:v".into(), other.into()]),
    }
    args.extend(["-i".into(), case.clip.display().to_string()]);
    args.extend(["-map", "0:v", "-f", "null", "-"].map(String::from));
    Ok(args)
}

/// `convstream run` with the in-process filtered run's settings, its stats to [`STATS`].
fn convstream_args(case: &CliCase) -> Vec<String> {
    let device = match case.device {
        DeviceChoice::Cpu => "cpu".to_string(),
        DeviceChoice::Cuda(n) => format!("cuda:{n}"),
        DeviceChoice::AnyCuda => "cuda".into(),
        DeviceChoice::Auto => "auto".into(),
    };
    let mut args: Vec<String> = ["run", "--no-progress", "--stats-json", STATS, "-i"]
        .map(String::from)
        .into();
    args.push(case.clip.display().to_string());
    args.extend(
        [
            "-o", "null", "--mask", case.mask, "--planes", "all", "--border", "reflect",
        ]
        .map(String::from),
    );
    args.extend(["--streams", "4", "--device", &device, "--decoder", case.decoder].map(String::from));
    args
}

/// FFmpeg's NVDEC decoder for the clip's codec (`h264_cuvid` for H.264).
fn cuvid_decoder(clip: &Path) -> Result<String, String> {
    convstream_media::init_ffmpeg();
    let input = ffmpeg_next::format::input(&clip).map_err(|e| format!("{}: {e}", clip.display()))?;
    let stream = input
        .streams()
        .best(ffmpeg_next::media::Type::Video)
        .ok_or_else(|| format!("{}: no video stream", clip.display()))?;
    Ok(format!("{}_cuvid", stream.parameters().id().name()))
}

/// A word as a shell reads it back (quoted when it holds anything but plain characters).
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A finished subprocess.
struct Finished {
    status: ExitStatus,
    wall_seconds: f64,
    /// What it wrote to stdout and stderr.
    output: String,
}

/// Runs `command` with stdin closed and its stdout and stderr into `log`, timed from spawn to
/// exit; kills it past `bound`.
fn run_timed(command: &mut Command, log: &Path, bound: Duration) -> Result<Finished, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let stderr = File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let stdout = stderr
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
    command.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("cannot start {program}: {e}"))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > bound => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} killed after {:.0} s, the bound for this clip (its output: {})",
                    bound.as_secs_f64(),
                    log.display()
                ));
            }
            // A millisecond's poll: far below the shortest run timed (a tenth of a second).
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("waiting for {program}: {e}"));
            }
        }
    };
    let wall_seconds = started.elapsed().as_secs_f64();
    let output = std::fs::read(log).map_err(|e| format!("reading {}: {e}", log.display()))?;
    Ok(Finished {
        status,
        wall_seconds,
        output: String::from_utf8_lossy(&output).into_owned(),
    })
}

/// The last `count` non-empty lines of `text`, joined by " | ".
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines[lines.len().saturating_sub(count)..].join(" | ")
}

/// The explicit path, or an `ffmpeg` beside `exe`, or the first on `PATH`.
fn find_ffmpeg(given: Option<&Path>, exe: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = given {
        return match is_executable(path) {
            true => Ok(path.to_path_buf()),
            false => Err(format!("--ffmpeg {}: no executable file there", path.display())),
        };
    }
    let beside = exe.and_then(Path::parent).map(|dir| dir.join("ffmpeg"));
    let on_path = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("ffmpeg"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    beside
        .into_iter()
        .chain(on_path)
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            "no ffmpeg beside this executable or on PATH (name one with --ffmpeg PATH; scripts/build-portable.sh ffmpeg-cli builds it)".into()
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `ffmpeg -version`'s first line; an error when the program does not run as FFmpeg. Its
/// output is kept in `logs`.
fn ffmpeg_version(path: &Path, logs: &Path) -> Result<String, String> {
    std::fs::create_dir_all(logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let mut command = Command::new(path);
    command.args(["-hide_banner", "-version"]);
    let finished = run_timed(&mut command, &logs.join("ffmpeg-version.log"), Duration::from_secs(30))?;
    let first = finished.output.lines().next().unwrap_or("").trim().to_string();
    if finished.status.success() && first.starts_with("ffmpeg version") {
        Ok(first)
    } else {
        Err(format!(
            "{} is not FFmpeg's ffmpeg (`-version` gave {} and {first:?})",
            path.display(),
            finished.status
        ))
    }
}

/// FFmpeg's frames (its last `frame=`) and frames over its `-benchmark` `rtime=`.
fn ffmpeg_figures(stderr: &str) -> Result<(u64, f64), String> {
    let frames = last_value(stderr, "frame=")
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or("FFmpeg's output has no `frame=` count, so no rate could be given")?;
    let rtime = last_value(stderr, "rtime=")
        .and_then(|v| v.strip_suffix('s').unwrap_or(v).parse::<f64>().ok())
        .filter(|t| t.is_finite() && *t > 0.0)
        .ok_or("FFmpeg's `-benchmark` line (`bench: ... rtime=Ns`) was not found or did not parse")?;
    Ok((frames, frames as f64 / rtime))
}

/// The value after the last `key` that starts a word (FFmpeg pads values with spaces and
/// rewrites its stats line with carriage returns).
fn last_value<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let at = text
        .match_indices(key)
        .filter(|(at, _)| {
            text[..*at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        })
        .map(|(at, _)| at)
        .last()?;
    text[at + key.len()..].trim_start_matches(' ').split_whitespace().next()
}

/// convstream's frames written and its steady rate, from its `--stats-json` file.
fn convstream_figures(stats: &Path) -> Result<(u64, f64), String> {
    let text = std::fs::read_to_string(stats).map_err(|e| format!("reading {}: {e}", stats.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not convstream's stats: {e}", stats.display()))?;
    let pipeline = &json["pipelines"][0];
    let frames = pipeline["frames_out"].as_u64();
    let fps = pipeline["fps"].as_f64().filter(|f| f.is_finite() && *f > 0.0);
    match (frames, fps) {
        (Some(frames), Some(fps)) => Ok((frames, fps)),
        _ => Err(format!(
            "{}: no pipeline with frames_out and fps (failures: {})",
            stats.display(),
            json["failures"]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FFMPEG_TAIL: &str = "Output #0, null, to 'pipe:':\n  Stream #0:0: Video: wrapped_avframe\n\
        frame=    1 fps=0.0 q=-0.0 size=N/A time=00:00:00.03 bitrate=N/A speed=23.3x    \r\
        frame=   30 fps=0.0 q=-0.0 Lsize=N/A time=00:00:01.00 bitrate=N/A speed=85.3x    \n\
        video:14kB audio:0kB subtitle:0kB other streams:0kB global headers:0kB muxing overhead: unknown\n\
        bench: utime=0.004s stime=0.004s rtime=0.012s\nbench: maxrss=58472kB\n";

    #[test]
    fn ffmpeg_figures_read_the_last_frame_count_and_rtime() {
        let (frames, fps) = ffmpeg_figures(FFMPEG_TAIL).unwrap();
        assert_eq!(frames, 30);
        assert!((fps - 2500.0).abs() < 1e-6, "{fps}");
    }

    #[test]
    fn ffmpeg_output_without_its_figures_says_which_is_missing() {
        let no_bench = FFMPEG_TAIL.replace("rtime=0.012s", "");
        assert!(ffmpeg_figures(&no_bench).unwrap_err().contains("-benchmark"));
        let zero = FFMPEG_TAIL.replace("rtime=0.012s", "rtime=0.000s");
        assert!(ffmpeg_figures(&zero).unwrap_err().contains("rtime"));
        assert!(ffmpeg_figures("keyframe=12\n").unwrap_err().contains("frame="));
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![f64::NAN]), None);
        assert_eq!(median(Vec::new()), None);
    }

    #[test]
    fn a_missing_ffmpeg_is_named() {
        let e = find_ffmpeg(Some(Path::new("/nonexistent/ffmpeg")), None).unwrap_err();
        assert!(e.contains("--ffmpeg /nonexistent/ffmpeg"), "{e}");
    }

    #[test]
    fn a_run_past_its_bound_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sleep");
        command.arg("30");
        let started = Instant::now();
        let Err(e) = run_timed(&mut command, &dir.path().join("sleep.log"), Duration::from_millis(200)) else {
            panic!("sleep 30 finished within 0.2 s");
        };
        assert!(e.contains("killed after"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_program_that_is_not_ffmpeg_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = ffmpeg_version(Path::new("/bin/true"), dir.path()).unwrap_err();
        assert!(e.contains("is not FFmpeg's ffmpeg"), "{e}");
    }

    #[test]
    fn command_lines_read_back_in_a_shell() {
        assert_eq!(shell_word("edge:size=13,sigma=2"), "edge:size=13,sigma=2");
        assert_eq!(shell_word("a b'c"), r"'a b'\''c'");
    }
}

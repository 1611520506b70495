//! Helpers shared by the integration tests: making real clips with the `ffmpeg` CLI,
//! running the `convstream` binary, probing and decoding results with `ffprobe`/`ffmpeg`,
//! and reading YUV4MPEG2.

#![allow(dead_code)] // each test file uses a different part

pub mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub fn convstream() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_convstream"));
    // Logs in plain text whatever the caller's environment says.
    command.env_remove("RUST_LOG").env("NO_COLOR", "1");
    command
}

/// `convstream ARGS` started in `dir` with no stdin and its stderr piped, for tests that
/// signal or wait on it while it runs.
pub fn spawn_in(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    convstream()
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the convstream binary starts")
}

/// Runs `convstream ARGS` in `dir` with no input, failing the test if it is not over
/// within `limit` (a hang fails instead of blocking CI).
pub fn run_bounded(dir: &Path, args: &[&str], limit: std::time::Duration) -> Run {
    let mut child = convstream()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("convstream starts");
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().expect("waits").is_some() {
            return child.wait_with_output().expect("output").into();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "convstream {args:?} still ran after {limit:?}:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A finished run of the binary, with its output as text.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).to_string()
    }

    /// Asserts exit status 0 and no panic.
    pub fn success(self) -> Run {
        assert_eq!(self.code, Some(0), "convstream failed:\n{}", self.stderr);
        self.assert_no_panic();
        self
    }

    pub fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"),
            "convstream panicked:\n{}",
            self.stderr
        );
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).to_string(),
        }
    }
}

/// Runs `convstream ARGS` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    convstream()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("convstream starts")
        .into()
}

/// `convstream run --device cpu --no-progress ARGS` in `dir`: the CPU engine, no progress bar.
pub fn run_on_cpu(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["run", "--device", "cpu", "--no-progress"];
    all.extend_from_slice(args);
    run_in(dir, &all)
}

pub fn run(args: &[&str]) -> Run {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// Runs `ffmpeg -y ARGS` quietly and insists that it works.
pub fn ffmpeg(dir: &Path, args: &[&str]) {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("ffmpeg is installed");
    assert!(
        output.status.success(),
        "ffmpeg {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The kinds of clip the tests make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clip {
    /// H.264 (libx264) + AAC in MP4.
    H264Mp4,
    /// MPEG-4 Part 2 + AAC in MP4.
    Mpeg4Mp4,
    /// FFV1 (lossless) + FLAC in Matroska.
    Ffv1Mkv,
    /// Uncompressed YUV4MPEG2 (no audio).
    Y4m,
    /// MPEG-2 video + MP2 audio in MPEG-TS, a key frame every 5 frames.
    Mpeg2Ts,
    /// H.264 + MP2 in MPEG-TS.
    H264Ts,
}

/// Makes `name` in `dir`: `frames` frames of `testsrc2` at 25 fps, `width` x `height`
/// yuv420p, with a sine tone where the container takes audio.
pub fn make_clip(dir: &Path, name: &str, clip: Clip, width: u32, height: u32, frames: u32) -> PathBuf {
    make_clip_as(dir, name, clip, width, height, frames, "yuv420p")
}

/// [`make_clip`] in another pixel format. Any size works: the test pattern is scaled to it
/// (`testsrc2` itself rounds odd sizes down).
pub fn make_clip_as(
    dir: &Path,
    name: &str,
    clip: Clip,
    width: u32,
    height: u32,
    frames: u32,
    pix_fmt: &str,
) -> PathBuf {
    let video = format!("testsrc2=size={}x{}:rate=25", width + width % 2, height + height % 2);
    let scale = format!("scale={width}:{height}");
    let seconds = format!("{}", frames as f64 / 25.0);
    let frames_arg = frames.to_string();
    let mut args: Vec<&str> = vec!["-f", "lavfi", "-i", &video];
    if clip != Clip::Y4m {
        args.extend(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]);
        args.extend(["-t", &seconds]);
    }
    args.extend(["-vf", &scale, "-frames:v", &frames_arg, "-pix_fmt", pix_fmt]);
    match clip {
        Clip::H264Mp4 => args.extend(["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"]),
        Clip::Mpeg4Mp4 => args.extend(["-c:v", "mpeg4", "-q:v", "3", "-c:a", "aac"]),
        Clip::Ffv1Mkv => args.extend(["-c:v", "ffv1", "-c:a", "flac"]),
        Clip::Y4m => {}
        Clip::Mpeg2Ts => args.extend(["-c:v", "mpeg2video", "-q:v", "3", "-g", "5", "-c:a", "mp2"]),
        Clip::H264Ts => args.extend(["-c:v", "libx264", "-preset", "ultrafast", "-g", "5", "-c:a", "mp2"]),
    }
    args.push(name);
    ffmpeg(dir, &args);
    dir.join(name)
}

fn ffprobe_json(path: &Path, args: &[&str]) -> serde_json::Value {
    let output = Command::new("ffprobe")
        .args(["-v", "error", "-of", "json"])
        .args(args)
        .arg(path)
        .output()
        .expect("ffprobe is installed");
    assert!(
        output.status.success(),
        "ffprobe {} failed:\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("ffprobe writes JSON")
}

/// The decoded frames of `stream` (`v`, `a`, `v:0`) of `path`, one row each as FFmpeg's
/// `-f framemd5` prints them (stream, timestamps, size, MD5), its `#` header rows left out.
pub fn framemd5(dir: &Path, path: &str, stream: &str) -> Vec<String> {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-i", path])
        .args(["-map", &format!("0:{stream}"), "-f", "framemd5", "-"])
        .current_dir(dir)
        .output()
        .expect("ffmpeg is installed");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|row| !row.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Presentation times of the video frames of a stream copy of `input` into `container`
/// (what the muxer makes of the input's timestamps), for comparing with an output.
pub fn remuxed_video_pts(dir: &Path, input: &Path, container: &str) -> Vec<String> {
    let name = format!("reference-remux.{container}");
    ffmpeg(dir, &["-i", input.to_str().unwrap(), "-map", "0", "-c", "copy", &name]);
    video_pts(&dir.join(name))
}

/// Presentation times of the video frames, as ffprobe prints them.
pub fn video_pts(path: &Path) -> Vec<String> {
    let json = ffprobe_json(path, &["-select_streams", "v:0", "-show_entries", "frame=pts_time"]);
    json["frames"]
        .as_array()
        .map(|frames| {
            frames
                .iter()
                .map(|f| f["pts_time"].as_str().unwrap_or("N/A").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `codec_type` of every stream (`video`, `audio`, ...).
pub fn stream_types(path: &Path) -> Vec<String> {
    streams(path)
        .iter()
        .map(|s| s["codec_type"].as_str().unwrap_or("").to_string())
        .collect()
}

pub fn streams(path: &Path) -> Vec<serde_json::Value> {
    let json = ffprobe_json(path, &["-show_streams"]);
    json["streams"].as_array().cloned().unwrap_or_default()
}

/// The first video stream's description.
pub fn video_stream(path: &Path) -> serde_json::Value {
    streams(path)
        .into_iter()
        .find(|s| s["codec_type"] == "video")
        .unwrap_or_else(|| panic!("{} has no video stream", path.display()))
}

/// Decodes the video of `path` to raw `pix_fmt` bytes, every frame back to back.
pub fn decode_raw(path: &Path, pix_fmt: &str) -> Vec<u8> {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-i"])
        .arg(path)
        // Every decoded frame once: no frames duplicated or dropped to fit a frame rate.
        .args([
            "-map",
            "0:v:0",
            "-fps_mode",
            "passthrough",
            "-f",
            "rawvideo",
            "-pix_fmt",
            pix_fmt,
            "-",
        ])
        .output()
        .expect("ffmpeg is installed");
    assert!(
        output.status.success(),
        "decoding {} failed:\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// A hash of the audio packets' data (stream-copied, not decoded): equal when the audio
/// was passed through untouched.
pub fn audio_packets_md5(path: &Path) -> String {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-map", "0:a:0", "-c", "copy", "-f", "md5", "-"])
        .output()
        .expect("ffmpeg is installed");
    assert!(
        output.status.success(),
        "hashing the audio of {} failed:\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// One YUV4MPEG2 stream: the header fields and each frame's planes.
#[derive(Debug)]
pub struct Y4m {
    pub width: usize,
    pub height: usize,
    pub colorspace: String,
    pub header: String,
    /// 1, or 2 for the 9- to 16-bit colour spaces (`C420p10`, `Cmono12`...: little-endian words).
    pub sample_bytes: usize,
    /// frames[i][plane] is a tightly packed plane.
    pub frames: Vec<Vec<Vec<u8>>>,
}

impl Y4m {
    /// Parses a whole YUV4MPEG2 stream (4:2:0, 4:2:2, 4:4:4 or mono, 8 to 16 bits).
    pub fn parse(bytes: &[u8]) -> Y4m {
        let line_end = |from: usize| {
            bytes[from..]
                .iter()
                .position(|b| *b == b'\n')
                .map(|p| from + p)
                .expect("a y4m line ends with a newline")
        };
        let end = line_end(0);
        let header = String::from_utf8(bytes[..end].to_vec()).expect("an ASCII header");
        let mut fields = header.split(' ');
        assert_eq!(fields.next(), Some("YUV4MPEG2"), "not YUV4MPEG2: {header}");
        let (mut width, mut height, mut colorspace) = (0usize, 0usize, "420jpeg".to_string());
        for field in fields {
            let (tag, value) = field.split_at(1);
            match tag {
                "W" => width = value.parse().unwrap(),
                "H" => height = value.parse().unwrap(),
                "C" => colorspace = value.to_string(),
                _ => {}
            }
        }
        let (cw, ch) = match colorspace.as_str() {
            c if c.starts_with("420") => (width.div_ceil(2), height.div_ceil(2)),
            c if c.starts_with("422") => (width.div_ceil(2), height),
            c if c.starts_with("444") => (width, height),
            c if c.starts_with("mono") => (0, 0),
            other => panic!("y4m colour space {other} is not handled by the test"),
        };
        // `420p10`, `mono12`: a depth after the subsampling's name (`420paldv` is 8-bit).
        let depth = colorspace
            .strip_prefix("mono")
            .or_else(|| colorspace.get(3..).and_then(|rest| rest.strip_prefix('p')))
            .and_then(|digits| digits.parse::<u32>().ok());
        let sample_bytes = if depth.is_some_and(|bits| bits > 8) { 2 } else { 1 };
        let sizes: Vec<usize> = if cw == 0 {
            vec![width * height * sample_bytes]
        } else {
            vec![
                width * height * sample_bytes,
                cw * ch * sample_bytes,
                cw * ch * sample_bytes,
            ]
        };
        let mut frames = Vec::new();
        let mut at = end + 1;
        while at < bytes.len() {
            let end = line_end(at);
            assert!(bytes[at..end].starts_with(b"FRAME"), "a FRAME marker at byte {at}");
            at = end + 1;
            let mut planes = Vec::new();
            for size in &sizes {
                planes.push(bytes[at..at + size].to_vec());
                at += size;
            }
            frames.push(planes);
        }
        Y4m {
            width,
            height,
            colorspace,
            header,
            sample_bytes,
            frames,
        }
    }

    pub fn read(path: &Path) -> Y4m {
        Y4m::parse(&std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display())))
    }

    /// Plane sizes (width, height) in the order frames hold them.
    pub fn plane_sizes(&self) -> Vec<(usize, usize)> {
        let (w, h) = (self.width, self.height);
        match &self.colorspace[..3] {
            "420" => vec![(w, h), (w.div_ceil(2), h.div_ceil(2)), (w.div_ceil(2), h.div_ceil(2))],
            "422" => vec![(w, h), (w.div_ceil(2), h), (w.div_ceil(2), h)],
            "444" => vec![(w, h); 3],
            _ => vec![(w, h)],
        }
    }
}

/// A tightly packed one-channel plane holding `data`.
pub fn plane_of(data: &[u8], width: usize, height: usize) -> convstream_core::Plane {
    convstream_core::Plane {
        depth: convstream_core::SampleDepth::EIGHT,
        width,
        height,
        channels: 1,
        stride: width,
        data: data.to_vec().into(),
    }
}

/// The stats `--stats-json` wrote for the first pipeline.
pub fn stats(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("stats are JSON");
    json["pipelines"][0].clone()
}

/// Video frames FFmpeg can decode from a file that may have been cut short (a killed writer).
pub fn readable_frames(path: &Path) -> usize {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "quiet", "-nostdin", "-i"])
        .arg(path)
        .args(["-map", "0:v:0", "-f", "framecrc", "-"])
        .output()
        .expect("ffmpeg is installed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count()
}

/// Makes a named pipe at `path`.
pub fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Opens a named pipe for reading without waiting for a writer, and never reads it: the
/// writer fills the pipe and then blocks (a stalled reader).
pub fn idle_reader(path: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap()
}

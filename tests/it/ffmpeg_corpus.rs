//! The corpus of FFmpeg command lines (`tests/it/data/ffmpeg_corpus.txt`): every line is run
//! by Debian's `ffmpeg` and by `convstream run` with the same words, on small lossless inputs
//! made once, and their outputs compared: the streams written (kind, video codec, start
//! time), the decoded video frames with their timestamps byte for byte (`-f framemd5`) or
//! within the bound the line states (the bound docs/ffmpeg.md gives for that filter), copied audio by its
//! packets and encoded audio by its decoded samples; `-f null -` by the frames filtered. A
//! line marked `refused:` is one FFmpeg runs and convstream refuses, naming the option and
//! what to do instead, with the text it must say.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{make_clip, make_clip_as, Clip};
use convstream_testkit::tempdir;

/// The corpus must not silently shrink below this many lines.
const AT_LEAST: usize = 80;

/// What a line of the corpus expects of convstream.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// FFmpeg's frames byte for byte.
    Exact,
    /// Decoded samples within this many levels of FFmpeg's (timestamps still exact).
    Within(u32),
    /// Refused (exit 2) with this text in its error; FFmpeg runs the line.
    Refused(String),
    /// FFmpeg's output of these other words, the documented equivalent (`-r 10` is FFmpeg's
    /// `fps=10` filter in convstream), byte for byte.
    As(Vec<String>),
    /// The same pictures byte for byte, their timestamps and the streams' start times apart
    /// for the reason given (a difference of design, listed in docs/ffmpeg.md).
    TimingDiffers(String),
}

/// One command line of the corpus.
#[derive(Debug)]
struct Line {
    number: usize,
    words: Vec<String>,
    expect: Expect,
}

impl Line {
    fn text(&self) -> String {
        self.words.join(" ")
    }

    /// The value after the last `-flag` among `flags`, as FFmpeg takes the last one given.
    fn value_of(&self, flags: &[&str]) -> Option<&str> {
        self.words
            .windows(2)
            .rev()
            .find(|pair| flags.contains(&pair[0].as_str()))
            .map(|pair| pair[1].as_str())
    }
}

/// Splits a line into words as a POSIX shell does: single quotes keep everything, double
/// quotes keep everything but `\"` and `\\`, a backslash outside quotes escapes one character.
fn shell_words(text: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => word.extend(['\\', c]),
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Reads the corpus: one command line a row (the words after `ffmpeg`), optionally followed
/// by ` => within N` or ` => refused: TEXT`; `#` starts a comment row.
fn corpus() -> Vec<Line> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/data/ffmpeg_corpus.txt");
    let text = std::fs::read_to_string(&path).expect("the corpus is there");
    let mut lines = Vec::new();
    for (at, row) in text.lines().enumerate() {
        let row = row.trim();
        if row.is_empty() || row.starts_with('#') {
            continue;
        }
        let (command, expect) = match row.split_once(" => ") {
            None => (row, Expect::Exact),
            Some((command, expect)) => {
                let expect = expect.trim();
                let expect = if let Some(levels) = expect.strip_prefix("within ") {
                    let levels = levels.split_whitespace().next().unwrap_or_default();
                    Expect::Within(levels.parse().unwrap_or_else(|_| panic!("row {}: {expect}", at + 1)))
                } else if let Some(said) = expect.strip_prefix("refused: ") {
                    Expect::Refused(said.to_string())
                } else if let Some(words) = expect.strip_prefix("as: ") {
                    Expect::As(shell_words(words).unwrap_or_else(|e| panic!("row {}: {e}", at + 1)))
                } else if let Some(why) = expect.strip_prefix("timing differs: ") {
                    Expect::TimingDiffers(why.to_string())
                } else {
                    panic!(
                        "row {}: `{expect}` is not `within N`, `refused: TEXT`, `as: WORDS` or `timing differs: WHY`",
                        at + 1
                    )
                };
                (command, expect)
            }
        };
        let words = shell_words(command).unwrap_or_else(|e| panic!("row {}: {e}", at + 1));
        lines.push(Line {
            number: at + 1,
            words,
            expect,
        });
    }
    lines
}

/// The inputs the lines name, made once: FFV1 + FLAC (yuv420p, 10-bit, odd-sized 4:4:4), a
/// file with subtitles beside its audio, and lossless H.264 + AAC in MP4 (whose audio
/// starts before its video).
fn make_inputs(dir: &Path) {
    make_clip(dir, "in.mkv", Clip::Ffv1Mkv, 96, 64, 12);
    make_clip_as(dir, "in10.mkv", Clip::Ffv1Mkv, 96, 64, 8, "yuv420p10le");
    make_clip_as(dir, "odd444.mkv", Clip::Ffv1Mkv, 97, 61, 6, "yuv444p");
    std::fs::write(
        dir.join("subs.srt"),
        "1\n00:00:00,000 --> 00:00:00,300\nhello\n\n2\n00:00:00,300 --> 00:00:00,480\nworld\n",
    )
    .expect("writes the subtitles");
    common::ffmpeg(
        dir,
        &[
            "-i", "in.mkv", "-i", "subs.srt", "-map", "0", "-map", "1", "-c", "copy", "-c:s", "srt", "subs.mkv",
        ],
    );
    common::ffmpeg(
        dir,
        &[
            "-i",
            "in.mkv",
            "-c:v",
            "libx264",
            "-qp",
            "0",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "in.mp4",
        ],
    );
}

/// What comparing one line found: what was compared, or how it differed.
type Outcome = Result<String, String>;

/// Each stream's kind, codec (video's; audio's where `-c:a` names one) and start time. Where
/// `-c:a` names no codec, FFmpeg encodes the audio with the container's default encoder and
/// convstream copies it: the encoder's priming delay (Vorbis: 3 ms, AAC: 21 ms) moves the
/// video's start in FFmpeg's output and not in convstream's, so start times are compared
/// where the audio is treated alike.
fn stream_rows(line: &Line, path: &Path) -> Vec<String> {
    let audio_named = line.value_of(&["-c:a", "-acodec", "-codec:a"]).is_some();
    let timing_differs = matches!(line.expect, Expect::TimingDiffers(_));
    let alike = (audio_named || line.words.iter().any(|w| w == "-an")) && !timing_differs;
    common::streams(path)
        .iter()
        .map(|s| {
            let kind = s["codec_type"].as_str().unwrap_or("?");
            let codec = match kind {
                "video" => s["codec_name"].as_str().unwrap_or("?"),
                "audio" if audio_named => s["codec_name"].as_str().unwrap_or("?"),
                _ => "",
            };
            match alike {
                true => format!("{kind} {codec} start {}", s["start_time"].as_str().unwrap_or("N/A")),
                false => format!("{kind} {codec}"),
            }
        })
        .collect()
}

/// The decoded video's timestamps (framemd5 without size and hash) and its raw samples.
fn frames_and_samples(dir: &Path, name: &str) -> (Vec<String>, Vec<u8>, bool) {
    let times = common::framemd5(dir, name, "v")
        .iter()
        .map(|row| row.split(',').take(4).collect::<Vec<_>>().join(","))
        .collect();
    let pix_fmt = common::video_stream(&dir.join(name))["pix_fmt"]
        .as_str()
        .unwrap_or("yuv420p")
        .to_string();
    let wide = !matches!(
        pix_fmt.as_str(),
        "yuv420p" | "yuv422p" | "yuv444p" | "gray" | "yuvj420p"
    );
    (times, common::decode_raw(&dir.join(name), &pix_fmt), wide)
}

/// The largest difference between two sample buffers (16-bit little-endian where `wide`).
fn largest_difference(a: &[u8], b: &[u8], wide: bool) -> u32 {
    if wide {
        let samples = |bytes: &[u8]| -> Vec<i32> {
            bytes
                .chunks_exact(2)
                .map(|pair| i32::from(u16::from_le_bytes([pair[0], pair[1]])))
                .collect()
        };
        let (a, b) = (samples(a), samples(b));
        a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0)
    } else {
        a.iter()
            .zip(b)
            .map(|(x, y)| u32::from(x.abs_diff(*y)))
            .max()
            .unwrap_or(0)
    }
}

/// The video compared: framemd5 rows equal, or timestamps equal and samples within `levels`.
fn compare_video(dir: &Path, theirs: &str, ours: &str, expect: &Expect) -> Outcome {
    let (expected, got) = (common::framemd5(dir, theirs, "v"), common::framemd5(dir, ours, "v"));
    if expected.is_empty() {
        return Err("FFmpeg wrote no video frame".into());
    }
    match expect {
        Expect::Within(levels) => {
            let (their_times, their_samples, wide) = frames_and_samples(dir, theirs);
            let (our_times, our_samples, _) = frames_and_samples(dir, ours);
            if their_times != our_times || their_samples.len() != our_samples.len() {
                return Err(format!(
                    "frames or timestamps differ:\nffmpeg:\n{}\nconvstream:\n{}",
                    expected.join("\n"),
                    got.join("\n")
                ));
            }
            let largest = largest_difference(&their_samples, &our_samples, wide);
            if largest > *levels {
                return Err(format!("samples {largest} levels apart, the bound is {levels}"));
            }
            Ok(format!(
                "{} frames, timestamps equal, samples within {largest} of {levels} levels",
                expected.len()
            ))
        }
        Expect::TimingDiffers(why) => {
            let hashes = |rows: &[String]| -> Vec<String> {
                rows.iter()
                    .filter_map(|row| row.rsplit(',').next().map(str::to_string))
                    .collect()
            };
            match hashes(&expected) == hashes(&got) {
                true => Ok(format!(
                    "{} pictures byte for byte, timing apart: {why}",
                    expected.len()
                )),
                false => Err(format!(
                    "pictures differ:\nffmpeg:\n{}\nconvstream:\n{}",
                    expected.join("\n"),
                    got.join("\n")
                )),
            }
        }
        _ if expected == got => Ok(format!("{} frames byte for byte", expected.len())),
        _ => Err(format!(
            "frames differ:\nffmpeg:\n{}\nconvstream:\n{}",
            expected.join("\n"),
            got.join("\n")
        )),
    }
}

/// The audio compared: packets where it is copied, decoded samples where it is encoded again.
fn compare_audio(dir: &Path, line: &Line, theirs: &str, ours: &str) -> Outcome {
    if let Expect::TimingDiffers(why) = &line.expect {
        return Ok(format!("audio not compared: {why}"));
    }
    let Some(codec) = line.value_of(&["-c:a", "-acodec", "-codec:a"]) else {
        return Ok("audio not compared (FFmpeg encodes it with the container's default, convstream copies it)".into());
    };
    if codec == "copy" {
        let (expected, got) = (
            common::audio_packets_md5(&dir.join(theirs)),
            common::audio_packets_md5(&dir.join(ours)),
        );
        return if expected == got {
            Ok("audio packets equal".into())
        } else {
            Err(format!("copied audio differs: {expected} against {got}"))
        };
    }
    let hashes = |name: &str| -> Vec<String> {
        common::framemd5(dir, name, "a")
            .iter()
            .filter_map(|row| row.rsplit(',').next().map(|h| h.trim().to_string()))
            .collect()
    };
    let (expected, got) = (hashes(theirs), hashes(ours));
    if expected.is_empty() {
        return Err("FFmpeg wrote no audio".into());
    }
    if expected == got {
        Ok(format!("{} {codec} audio frames' samples equal", expected.len()))
    } else {
        Err(format!(
            "{codec} audio differs: {} frames against {}",
            expected.len(),
            got.len()
        ))
    }
}

/// The frames FFmpeg's last progress report counts (`frame=  12`).
fn ffmpeg_frames(stderr: &str) -> Option<u64> {
    let at = stderr.rfind("frame=")?;
    stderr[at + 6..].split_whitespace().next()?.parse().ok()
}

/// Runs `line` through both and compares what they wrote.
fn check_line(dir: &Path, line: &Line) -> Outcome {
    let output = line.words.last().cloned().unwrap_or_default();
    let rename = |side: &str| -> Vec<String> {
        let mut words = match (&line.expect, side) {
            (Expect::As(words), "ffmpeg") => words.clone(),
            _ => line.words.clone(),
        };
        if output != "-" {
            *words.last_mut().expect("a word") = format!("{side}{}-{output}", line.number);
        }
        words
    };
    let (ffmpeg_words, our_words) = (rename("ffmpeg"), rename("convstream"));
    let ffmpeg = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-y"])
        .args(&ffmpeg_words)
        .current_dir(dir)
        .output()
        .expect("ffmpeg is installed");
    let ffmpeg_said = String::from_utf8_lossy(&ffmpeg.stderr).to_string();
    if !ffmpeg.status.success() {
        return Err(format!("FFmpeg itself fails the line:\n{ffmpeg_said}"));
    }
    let mut args = vec!["run", "--device", "cpu", "--no-progress"];
    args.extend(our_words.iter().map(String::as_str));
    let run = common::run_bounded(dir, &args, Duration::from_secs(120));
    run.assert_no_panic();
    if let Expect::Refused(said) = &line.expect {
        let written = output != "-" && dir.join(our_words.last().expect("a word")).exists();
        return match (run.code, run.stderr.contains(said.as_str()), written) {
            (Some(2), true, false) => Ok(format!("refused as expected: {said}")),
            _ => Err(format!(
                "expected a refusal (exit 2) saying `{said}`, got {:?}:\n{}",
                run.code, run.stderr
            )),
        };
    }
    if run.code != Some(0) {
        return Err(format!("convstream exits {:?}:\n{}", run.code, run.stderr));
    }
    if output == "-" {
        let frames = ffmpeg_frames(&ffmpeg_said).ok_or_else(|| format!("no frame count in:\n{ffmpeg_said}"))?;
        return if run.stderr.contains(&format!(" frames in, {frames} out")) {
            Ok(format!("null output, {frames} frames filtered"))
        } else {
            Err(format!("FFmpeg filtered {frames} frames; convstream:\n{}", run.stderr))
        };
    }
    let (theirs, ours) = (ffmpeg_words.last().expect("a word"), our_words.last().expect("a word"));
    let (expected, got) = (stream_rows(line, &dir.join(theirs)), stream_rows(line, &dir.join(ours)));
    if expected != got {
        return Err(format!("streams differ:\nffmpeg: {expected:?}\nconvstream: {got:?}"));
    }
    let video = compare_video(dir, theirs, ours, &line.expect)?;
    let has_audio = expected.iter().any(|row| row.starts_with("audio"));
    let audio = if has_audio {
        compare_audio(dir, line, theirs, ours)?
    } else {
        "no audio".into()
    };
    Ok(format!(
        "{} streams equal ({}); {video}; {audio}",
        expected.len(),
        expected.join(", ")
    ))
}

/// `ffmpeg_graphs`' command lines as whole lines, so the corpus counts only new ones.
fn graphs_lines() -> HashSet<Vec<String>> {
    crate::ffmpeg_graphs::COMMAND_LINES
        .iter()
        .map(|words| {
            let mut line: Vec<String> = ["-i", "in.mkv"].iter().map(|w| w.to_string()).collect();
            line.extend(words.iter().map(|w| w.to_string()));
            line.extend(["-c:v", "ffv1", "out.mkv"].iter().map(|w| w.to_string()));
            line
        })
        .collect()
}

#[test]
fn ffmpeg_command_line_corpus_gives_ffmpegs_output() {
    let lines = corpus();
    let mut seen = graphs_lines();
    for line in &lines {
        assert!(
            seen.insert(line.words.clone()),
            "row {}: said before: {}",
            line.number,
            line.text()
        );
    }
    assert!(
        lines.len() >= AT_LEAST,
        "the corpus has {} lines, at least {AT_LEAST} expected",
        lines.len()
    );
    let dir = tempdir();
    make_inputs(dir.path());
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(line) = lines.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let outcome = check_line(dir.path(), line);
                    results
                        .lock()
                        .expect("results")
                        .push((line.number, line.text(), outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(number, _, _)| *number);
    let mut report = Vec::new();
    for (number, text, outcome) in &results {
        match outcome {
            Ok(what) => report.push(format!("ok   row {number}: {text}\n       {what}")),
            Err(why) => report.push(format!("FAIL row {number}: {text}\n       {why}")),
        }
    }
    let failed = results.iter().filter(|(_, _, outcome)| outcome.is_err()).count();
    let refusals = lines
        .iter()
        .filter(|line| matches!(line.expect, Expect::Refused(_)))
        .count();
    let bounded = lines
        .iter()
        .filter(|line| matches!(line.expect, Expect::Within(_)))
        .count();
    let equivalent = lines.iter().filter(|line| matches!(line.expect, Expect::As(_))).count();
    let timing = lines
        .iter()
        .filter(|line| matches!(line.expect, Expect::TimingDiffers(_)))
        .count();
    report.push(format!(
        "ffmpeg corpus: {} command lines ({} byte for byte, {equivalent} as FFmpeg's equivalent line, {timing} with the pictures equal and the timing apart, {bounded} within a stated bound, {refusals} refusals) against Debian's ffmpeg in {:.1} s: {failed} failed",
        lines.len(),
        lines.len() - bounded - refusals - equivalent - timing,
        started.elapsed().as_secs_f64()
    ));
    let report = report.join("\n");
    println!("{report}");
    // Kept for CI's log (scripts/test.sh prints its last line): what each line compared.
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffmpeg-corpus.txt");
    std::fs::write(&kept, format!("{report}\n")).expect("the report is written");
    assert_eq!(failed, 0, "{report}");
}

//! Every example of README.md and of the user guide (docs/*.md), run as it is written, and its
//! stated result checked.
//!
//! The shell blocks (```sh) are read example by example (a command with its continuation
//! lines, the comments just above it, and just below it a `# {...}` line, the answer it states,
//! or `# > ` lines, text its output holds). Each runs with `bash -c` in a folder with what the examples name (`in.mp4`, a
//! generated clip with sound), with the plugin installed by the README's own command, under a
//! virtual display (Xvfb) for `autovideosink`, against local peers where the example reaches
//! the network: an RTSP camera (`examples/rtsp-serve.py`) and a UDP sender for `serve`'s
//! pipeline `cam1`, queried by the `curl` lines; `convstream` commands run with the binary the
//! same `cargo test` built, and a file they write must hold frames. `docker` lines are run by
//! scripts/image-check.sh (with Podman), which this test checks. A kind of command this file does
//! not know fails the test, so a new example cannot go unrun. The TOML blocks and the files in
//! config/ must pass `convstream check`, and every flag of a ```text synopsis must be in the
//! command's `--help`.
//!
//! One job, kept whole: reading the README's examples and the stage they run on (clips,
//! servers, a display) are one harness; a split would part each kind of example from the
//! stage it needs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{convstream_binary, ffmpeg};
use convstream_testkit::y4m::read_y4m;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// One command of a shell block.
#[derive(Debug)]
struct Example {
    /// The document it is in (`README.md`, `docs/service.md`), for messages.
    file: String,
    /// Where it starts in that document (1-based), for messages.
    line: usize,
    /// The comment lines just above it, without `# `.
    description: String,
    /// The command as written, continuation lines included (and any variable set just
    /// before it in the same paragraph).
    script: String,
    /// The answer a `# {...}` line just below it states.
    stated: Option<String>,
    /// Lines its output holds, as `# > ` lines just below it state them.
    expected: Vec<String>,
}

impl Example {
    /// Where it is, for messages: `docs/service.md line 120`.
    fn at(&self) -> String {
        format!("{} line {}", self.file, self.line)
    }

    fn program(&self) -> &str {
        self.script
            .lines()
            .map(str::trim)
            .find(|line| !is_assignment(line))
            .and_then(|line| line.split_whitespace().next())
            .unwrap_or("")
    }
}

/// The fenced blocks of `text` whose info string is `language`, with their first line number.
fn blocks(text: &str, language: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_end() == format!("```{language}") => current = Some((index + 2, String::new())),
            Some(_) if line.starts_with("```") => found.extend(current.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    found
}

/// README.md and the guide's pages (docs/*.md), each with its path from the repository's root.
fn documents() -> Vec<(String, String)> {
    let root = repo_root();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    std::iter::once(root.join("README.md"))
        .chain(pages)
        .map(|path| {
            let name = path.strip_prefix(&root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// The examples of a document's shell blocks.
fn shell_examples(file: &str, readme: &str) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    for (first_line, body) in blocks(readme, "sh") {
        let mut description = Vec::new();
        let mut assignments = String::new();
        let mut lines = body.lines().enumerate().peekable();
        while let Some((offset, line)) = lines.next() {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                description.clear();
                assignments.clear();
            } else if let Some(comment) = trimmed.strip_prefix('#') {
                let comment = comment.trim();
                let states_an_answer = comment.starts_with('{') || comment.starts_with('[');
                let states_output = comment.starts_with('>');
                match examples.last_mut() {
                    Some(last) if states_an_answer && last.stated.is_none() && description.is_empty() => {
                        last.stated = Some(comment.to_string())
                    }
                    Some(last) if states_output && description.is_empty() => {
                        last.expected.push(comment[1..].trim().to_string())
                    }
                    _ => description.push(comment.to_string()),
                }
            } else if is_assignment(trimmed) {
                assignments.push_str(line);
                assignments.push('\n');
            } else {
                let mut script = assignments.clone();
                script.push_str(line);
                let mut continued = line.trim_end().ends_with('\\');
                while continued {
                    let Some((_, next)) = lines.next() else { break };
                    script.push('\n');
                    script.push_str(next);
                    continued = next.trim_end().ends_with('\\');
                }
                examples.push(Example {
                    file: file.to_string(),
                    line: first_line + offset,
                    description: description.join(" "),
                    script,
                    stated: None,
                    expected: Vec::new(),
                });
                description.clear();
            }
        }
    }
    examples
}

/// `NAME=value  # comment`: a shell variable the next command uses.
fn is_assignment(line: &str) -> bool {
    line.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
    })
}

/// A child process in a process group of its own, stopped with its children (SIGTERM, then
/// SIGKILL) when dropped: the servers the examples talk to.
struct Background(Child);

impl Background {
    fn spawn(command: &mut Command) -> Background {
        use std::os::unix::process::CommandExt;
        Background(command.process_group(0).spawn().unwrap())
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        Command::new("kill").args(["-TERM", "--", &group]).status().ok();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Command::new("kill").args(["-KILL", "--", &group]).status().ok();
        self.0.wait().ok();
    }
}

/// A virtual display for autovideosink: Xvfb on a display number no other server holds (no
/// socket, no lock file, no abstract socket in this network namespace, which a client tries
/// first and which may belong to a server this machine's file system does not show), ready
/// once a real X client has drawn on it (a loaded machine takes seconds).
fn start_display() -> (String, Background) {
    let first = 100 + std::process::id() % 800;
    let mut tried = Vec::new();
    for number in first..first + 20 {
        if display_taken(number) {
            continue;
        }
        let display = format!(":{number}");
        let log = std::env::temp_dir().join(format!("convstream-xvfb-{number}.log"));
        let mut xvfb = Background::spawn(
            Command::new("Xvfb")
                // -noreset: no server reset each time the last client leaves.
                .args([
                    display.as_str(),
                    "-screen",
                    "0",
                    "1280x720x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ])
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap()),
        );
        match display_ready(&display, &mut xvfb) {
            Ok(()) => return (display, xvfb),
            Err(why) => {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                tried.push(format!("{display}: {why}; Xvfb said: {}", said.trim()));
            }
        }
    }
    panic!(
        "no virtual display could be started (scripts/install-deps.sh installs xvfb):\n{}",
        tried.join("\n")
    );
}

/// Whether another X server holds display `number`.
fn display_taken(number: u32) -> bool {
    let socket = format!("/tmp/.X11-unix/X{number}");
    let abstract_sockets = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    Path::new(&socket).exists()
        || Path::new(&format!("/tmp/.X{number}-lock")).exists()
        || abstract_sockets
            .lines()
            .any(|line| line.ends_with(&format!(" @{socket}")))
}

/// Waits for `xvfb`'s socket, then draws one frame on `display` with `ximagesink` (what
/// `autovideosink` picks), the way the examples will.
fn display_ready(display: &str, xvfb: &mut Background) -> Result<(), String> {
    let number = display.trim_start_matches(':');
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{number}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        if xvfb.0.try_wait().is_ok_and(|status| status.is_some()) {
            return Err("Xvfb exited".into());
        }
        if Instant::now() > deadline {
            return Err("no socket after 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for _attempt in 0..3 {
        if xvfb.0.try_wait().is_ok_and(|status| status.is_some()) {
            return Err("Xvfb exited".into());
        }
        let probe = Command::new("timeout")
            .args(["-k", "5", "20", "gst-launch-1.0", "-q", "videotestsrc", "num-buffers=1"])
            .args(["!", "ximagesink"])
            .env("DISPLAY", display)
            .output()
            .unwrap();
        if probe.status.success() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    Err("ximagesink could not draw on it".into())
}

/// Where the examples run and what they are given.
struct Stage {
    dir: tempfile::TempDir,
    /// `XDG_DATA_HOME` for the plugin the README's install command puts there.
    data_home: PathBuf,
    /// The virtual display (its name and its Xvfb), made again if it stops answering.
    display: std::sync::Mutex<(String, Background)>,
    /// What happened to displays that stopped answering, for a failure's message.
    display_history: std::sync::Mutex<Vec<String>>,
}

impl Stage {
    fn new() -> Stage {
        let dir = tempfile::tempdir().unwrap();
        let data_home = dir.path().join("data-home");
        // `convstream` on the examples' PATH: the binary the same `cargo test` built.
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(convstream_binary(), dir.path().join("bin/convstream")).unwrap();
        Stage {
            dir,
            data_home,
            display: std::sync::Mutex::new(start_display()),
            display_history: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The display's name, once it has drawn a frame: a display that stopped answering
    /// (its Xvfb gone, or its socket) is replaced, and what became of it is kept for the
    /// message of any example that fails afterwards.
    fn display(&self) -> String {
        let mut display = self.display.lock().unwrap();
        let (name, xvfb) = &mut *display;
        if let Err(why) = display_ready(name, xvfb) {
            let number = name.trim_start_matches(':');
            let log = std::env::temp_dir().join(format!("convstream-xvfb-{number}.log"));
            let said = std::fs::read_to_string(log).unwrap_or_default();
            self.display_history.lock().unwrap().push(format!(
                "display {name} stopped answering ({why}); Xvfb said: {}",
                said.trim()
            ));
            *display = start_display();
        }
        display.0.clone()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `bash -c SCRIPT` in the stage folder with the stage's environment.
    fn command(&self, script: &str) -> Command {
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(script)
            .current_dir(self.path())
            .env("XDG_DATA_HOME", &self.data_home)
            .env("GST_REGISTRY", self.path().join("registry.bin"))
            .env(
                "DISPLAY",
                if script.contains("videosink") {
                    self.display()
                } else {
                    String::new()
                },
            )
            // `convstream` (see `Stage::new`), then Debian's Python, where python3-gi is (not a
            // version manager's).
            .env(
                "PATH",
                format!(
                    "{}:/usr/bin:{}",
                    self.path().join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            // The binary the same `cargo test` built, as `convstream`.
            .env("CONVSTREAM", convstream_binary());
        command
    }

    /// Runs `example` to its end (within `limit`) and returns its stdout; fails the test if
    /// it fails.
    fn run(&self, example: &Example, cwd: &Path, limit: Duration) -> String {
        let mut child = self
            .command(&example.script)
            .current_dir(cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let output = child.wait_with_output().unwrap();
                assert!(
                    status.success(),
                    "{}: `{}` failed ({status}):\n{}\n{}\n{}",
                    example.at(),
                    example.script,
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr),
                    self.display_history.lock().unwrap().join("\n")
                );
                return String::from_utf8_lossy(&output.stdout).into_owned();
            }
            if Instant::now() > deadline {
                child.kill().ok();
                panic!("{}: `{}` ran past {limit:?}", example.at(), example.script);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `in.mp4`: 2 s of a moving 640x360 picture with a tone, as a user's file would have.
fn make_input(dir: &Path) {
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=640x360:rate=25",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=48000",
        "-t",
        "2",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-c:a",
        "aac",
        dir.join("in.mp4").to_str().unwrap(),
    ]);
}

/// Video frames of `path`, as FFmpeg counts them.
fn frame_count(path: &Path) -> usize {
    let output = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-count_frames",
            "-show_entries",
            "stream=nb_read_frames",
            "-of",
            "csv=p=0",
        ])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().parse().unwrap_or(0)
}

/// `location=NAME` of a `filesink` in `script`.
fn filesink_location(script: &str) -> Option<String> {
    let at = script.find("filesink location=")?;
    script[at + "filesink location=".len()..]
        .split_whitespace()
        .next()
        .map(str::to_string)
}

/// Whether `actual` is the answer `stated` shows: the same keys, the same text and flags,
/// numbers where it shows numbers (a frame number differs from run to run).
fn same_shape(stated: &serde_json::Value, actual: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (stated, actual) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, value)| b.get(key).is_some_and(|other| same_shape(value, other)))
        }
        (Value::Number(_), Value::Number(_)) => true,
        // A list of records (a history's points): as many as there are by now, each with the
        // keys the example shows and, key by key, a value of the shape one of the shown records
        // has there. A point's state and its p99 vary on their own: a starting pipeline has no
        // latency yet, nor has a running one whose input paused for an interval on a loaded
        // machine.
        (Value::Array(a), Value::Array(b)) if a.first().is_some_and(Value::is_object) => {
            !b.is_empty() && b.iter().all(|item| record_of_shown_shape(a, item))
        }
        (a, b) => a == b,
    }
}

/// Whether `item` is a record with the keys of the `shown` ones, each value of the shape of
/// the value some shown record has under that key.
fn record_of_shown_shape(shown: &[serde_json::Value], item: &serde_json::Value) -> bool {
    let (Some(first), Some(item)) = (shown[0].as_object(), item.as_object()) else {
        return false;
    };
    item.len() == first.len()
        && item.iter().all(|(key, value)| {
            shown
                .iter()
                .filter_map(|record| record.get(key))
                .any(|seen| same_shape(seen, value))
        })
}

/// Waits until `url` answers (any HTTP status) or `limit` passes.
fn wait_for_http(url: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let status = Command::new("curl").args(["-s", "-o", "/dev/null", url]).status();
        if status.is_ok_and(|s| s.success()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{url} did not answer within {limit:?}");
}

/// Waits until `pipeline` of the server on 8686 is `running`.
fn wait_until_running(pipeline: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut last = String::new();
    while Instant::now() < deadline {
        let output = Command::new("curl")
            .args(["-s", &format!("localhost:8686/pipelines/{pipeline}")])
            .output()
            .unwrap();
        last = String::from_utf8_lossy(&output.stdout).into_owned();
        if last.contains("\"state\":\"running\"") {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("pipeline {pipeline} is not running after {limit:?}: {last}");
}

/// The shell examples of the README and the guide, each run as written.
#[test]
fn every_shell_example_of_the_readme_runs_as_written() {
    common::init();
    let root = repo_root();
    let examples: Vec<Example> = documents()
        .iter()
        .flat_map(|(file, text)| shell_examples(file, text))
        .collect();
    assert!(examples.len() >= 20, "the examples: {examples:#?}");
    let stage = Stage::new();
    make_input(stage.path());
    let mut serve: Option<(Background, Background)> = None;
    let mut ran = Vec::new();
    for example in &examples {
        let program = example.program().to_string();
        let began = Instant::now();
        match program.as_str() {
            // The command that runs this test.
            "scripts/test.sh" => continue,
            "scripts/demo.sh" => {
                let out = stage.run(example, &root, Duration::from_secs(900));
                let result = root.join("convstream-demo/filtered.mp4");
                assert!(out.contains("filtered.mp4") && frame_count(&result) > 0, "demo: {out}");
            }
            "scripts/install-gst-plugin.sh" => {
                let out = stage.run(example, &root, Duration::from_secs(900));
                assert!(out.contains("found"), "install-gst-plugin.sh: {out}");
                assert!(stage
                    .data_home
                    .join("gstreamer-1.0/plugins/libgstconvstream.so")
                    .exists());
            }
            "gst-inspect-1.0" => {
                let out = stage.run(example, stage.path(), Duration::from_secs(60));
                assert!(
                    out.contains("convstreamfilter") && out.contains("cuda-device-id"),
                    "{out}"
                );
            }
            "gst-launch-1.0" => check_gst_launch(&stage, example),
            "python3" if example.script.contains("examples/rtsp-serve.py") => check_rtsp_relay(&stage, example, &root),
            "curl" => {
                if serve.is_none() {
                    serve = Some(start_serve(&stage));
                }
                check_curl(&stage, example);
            }
            "convstream" => check_convstream(&stage, example),
            "docker" => {
                check_docker_is_run_by_the_image_check(example, &root);
                ran.push(format!("{}: docker (run by scripts/image-check.sh)", example.at()));
                continue;
            }
            other => panic!(
                "{}: `{other}` is a kind of example gst/tests/readme.rs does not run yet; teach it",
                example.at()
            ),
        }
        // How long each took, printed as it ends so that a failure's output shows the way there.
        let line = format!("{}: {} ({:.1} s)", example.at(), program, began.elapsed().as_secs_f64());
        println!("ran {line}");
        ran.push(line);
    }
    // The pipeline the POST example made: stopped, and its file (made by this test) removed.
    if serve.is_some() {
        Command::new("curl")
            .args(["-s", "-X", "DELETE", "localhost:8686/pipelines/cam2"])
            .output()
            .ok();
        std::fs::remove_file("/data/out/cam2.ts").ok();
    }
    println!("{} examples ran:\n  {}", ran.len(), ran.join("\n  "));
}

/// A `convstream` example: it ends well, its output holds the lines the example states (`# > `
/// lines), and a file `run` writes holds frames: every frame of `in.mp4` unless the example
/// cuts it.
fn check_convstream(stage: &Stage, example: &Example) {
    let out = stage.run(example, stage.path(), Duration::from_secs(300));
    let spaced = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    for line in &example.expected {
        assert!(
            spaced(&out).contains(&spaced(line)),
            "{}: the output does not hold `{line}`:\n{out}",
            example.at()
        );
    }
    let Some(written) = written_file(&example.script) else {
        return;
    };
    let frames = frame_count(&stage.path().join(&written));
    assert!(frames > 0, "{}: {written} holds no frames", example.at());
    let cut = ["--frames", "-frames", "-t ", "--duration", "--ss", "-ss"];
    if example.script.contains("-i in.mp4") && !cut.iter().any(|flag| example.script.contains(flag)) {
        assert_eq!(
            frames,
            frame_count(&stage.path().join("in.mp4")),
            "{}: every frame of in.mp4 is in {written}",
            example.at()
        );
    }
}

/// The file a `convstream run` example writes: `-o FILE`, or its last word when that names a
/// file; none for `-` (stdout) or the `null` output.
fn written_file(script: &str) -> Option<String> {
    let words: Vec<&str> = script.split_whitespace().collect();
    if words.get(1) != Some(&"run") {
        return None;
    }
    let named = words
        .windows(2)
        .find(|pair| pair[0] == "-o" || pair[0] == "--output")
        .map(|pair| pair[1]);
    let last = words
        .last()
        .copied()
        .filter(|word| word.contains('.') && !word.starts_with('-'));
    named
        .or(last)
        .filter(|word| *word != "-" && *word != "null")
        .map(|word| word.trim_matches('"').to_string())
}

/// A `docker` example cannot run here (no Docker, no GPU): scripts/image-check.sh, which CI
/// runs, runs the README's `docker run` lines with Podman against the image it built from the
/// same Dockerfile. This checks that the example is where that script reads it.
fn check_docker_is_run_by_the_image_check(example: &Example, root: &Path) {
    let check = std::fs::read_to_string(root.join("scripts/image-check.sh")).unwrap();
    assert!(
        check.contains("the README's Docker example"),
        "{}: scripts/image-check.sh no longer runs the README's Docker example",
        example.at()
    );
    assert_eq!(
        example.file,
        "README.md",
        "{}: scripts/image-check.sh runs the Docker examples of README.md's Docker section only",
        example.at()
    );
    let program_line = example.script.lines().last().unwrap_or("");
    assert!(
        program_line.starts_with("docker build -t convstream ") || program_line.starts_with("docker run "),
        "{}: scripts/image-check.sh runs `docker build -t convstream .` and `docker run` lines",
        example.at()
    );
}

/// A gst-launch example: it ends well; a file it writes is there, all of it; an example that
/// says it writes exactly what a `convstream run` writes does.
fn check_gst_launch(stage: &Stage, example: &Example) {
    stage.run(example, stage.path(), Duration::from_secs(300));
    let Some(location) = filesink_location(&example.script) else {
        return;
    };
    let written = stage.path().join(&location);
    assert!(written.exists(), "{}: {location} was not written", example.at());
    if location.ends_with(".mp4") {
        assert_eq!(
            frame_count(&written),
            frame_count(&stage.path().join("in.mp4")),
            "{}: every frame of in.mp4 is in {location}",
            example.at()
        );
    }
    // "Exactly what `convstream run FLAGS` writes": the same source into y4menc without the
    // element, through convstream run with those flags, frame for frame.
    if let Some(run_flags) = example
        .description
        .split_once("Exactly what `convstream run ")
        .and_then(|(_, rest)| rest.split_once("` writes"))
        .map(|(flags, _)| flags.to_string())
    {
        let element_start = example.script.find("convstreamfilter").unwrap();
        let element_end = element_start + example.script[element_start..].find("! ").unwrap() + 2;
        let unfiltered = format!("{}{}", &example.script[..element_start], &example.script[element_end..])
            .replace(&format!("location={location}"), "location=unfiltered.y4m");
        let output = stage.command(&unfiltered).output().unwrap();
        assert!(
            output.status.success(),
            "{unfiltered}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let output = stage
            .command(&format!(
                "\"$CONVSTREAM\" run --no-progress {run_flags} -i unfiltered.y4m -o run.y4m"
            ))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "convstream run {run_flags}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let (element, run) = (
            read_y4m(&written).frames,
            read_y4m(&stage.path().join("run.y4m")).frames,
        );
        assert!(!element.is_empty(), "{}: no frames", example.at());
        assert!(
            element == run,
            "{}: the element's frames are not those of convstream run {run_flags}",
            example.at()
        );
    }
}

/// The RTSP example: a camera on 127.0.0.1:8555 (the same script serving a live test
/// picture), the example relaying it sharpened on 8554, and a client that decodes frames of
/// the relayed stream.
fn check_rtsp_relay(stage: &Stage, example: &Example, root: &Path) {
    let camera = Background::spawn(
        stage
            .command(
                "python3 examples/rtsp-serve.py --port 8555 --path /camera \
                 \"( videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=25/1 ! \
                 x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 ! rtph264pay name=pay0 pt=96 )\"",
            )
            .current_dir(root)
            .stdout(Stdio::null()),
    );
    let relay = Background::spawn(stage.command(&example.script).current_dir(root).stdout(Stdio::null()));
    // Both servers listening (a first run scans GStreamer's plugins, seconds on a loaded
    // machine); a relay's media is made when the first client comes, connecting to the
    // camera then, so a client that comes too early is tried again.
    wait_for_port(8555, Duration::from_secs(60));
    wait_for_port(8554, Duration::from_secs(60));
    let mut errors = String::new();
    for _attempt in 0..3 {
        let client = stage
            .command(
                "timeout -k 5 60 gst-launch-1.0 -q rtspsrc location=rtsp://127.0.0.1:8554/sharpened latency=100 ! \
                 rtph264depay ! h264parse ! avdec_h264 ! video/x-raw,width=320,height=240 ! fakesink num-buffers=50",
            )
            .output()
            .unwrap();
        if client.status.success() {
            drop((relay, camera));
            return;
        }
        errors.push_str(&String::from_utf8_lossy(&client.stderr));
        std::thread::sleep(Duration::from_secs(2));
    }
    panic!(
        "{}: no frames from the relayed stream in 3 tries: {errors}",
        example.at()
    );
}

/// Waits until something listens on 127.0.0.1:`port`, or panics after `limit`.
fn wait_for_port(port: u16, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("nothing listens on 127.0.0.1:{port} after {limit:?}");
}

/// `serve` as the curl examples assume it: pipeline `cam1` running (fed by a UDP sender) and
/// `[server] allow_paths = ["/data/out"]`, on localhost:8686.
fn start_serve(stage: &Stage) -> (Background, Background) {
    let out = Path::new("/data/out");
    std::fs::create_dir_all(out).unwrap_or_else(|e| panic!("the curl examples write under /data/out: {e}"));
    assert!(
        !out.join("cam2.ts").exists(),
        "/data/out/cam2.ts exists: the README's POST example would be refused; move it away"
    );
    let config = stage.path().join("serve.toml");
    std::fs::write(
        &config,
        r#"[server]
listen = "127.0.0.1:8686"
allow_paths = ["/data/out"]

[[pipeline]]
name = "cam1"
[pipeline.source]
url = "udp://127.0.0.1:5001"
format = "mpegts"
[pipeline.filter]
mask = "sharpen"
device = "cpu"
[pipeline.sink]
url = "null"
"#,
    )
    .unwrap();
    let server = Background::spawn(
        stage
            .command("exec \"$CONVSTREAM\" serve --config serve.toml")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let sender = Background::spawn(Command::new("ffmpeg").args([
        "-hide_banner",
        "-loglevel",
        "error",
        "-nostdin",
        "-re",
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=25",
        // Longer than the whole test on a slow machine: the later examples read the history
        // of a pipeline whose input still flows. Dropping `Background` ends it.
        "-t",
        "7200",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-f",
        "mpegts",
        "udp://127.0.0.1:5001?pkt_size=1316",
    ]));
    wait_for_http("http://localhost:8686/healthz", Duration::from_secs(30));
    wait_until_running("cam1", Duration::from_secs(60));
    (server, sender)
}

/// A curl example against `serve`: it succeeds, and its answer is what the README states.
fn check_curl(stage: &Stage, example: &Example) {
    let answer = stage.run(example, stage.path(), Duration::from_secs(60));
    let parsed: serde_json::Value = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("{}: the answer is not JSON ({e}): {answer}", example.at()));
    assert!(
        parsed.get("error").is_none(),
        "{}: `{}` answered an error: {answer}",
        example.at(),
        example.script
    );
    if let Some(stated) = &example.stated {
        let stated: serde_json::Value = serde_json::from_str(stated)
            .unwrap_or_else(|e| panic!("{}: the stated answer is not JSON ({e})", example.at()));
        assert!(
            same_shape(&stated, &parsed),
            "{}: the example states {stated}, the server answered {parsed}",
            example.at()
        );
    }
}

/// The configuration blocks of the README and the guide, and the files in config/, pass
/// `convstream check`.
#[test]
fn every_config_example_passes_check() {
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    let mut configs: Vec<PathBuf> = Vec::new();
    for (file, text) in documents() {
        for (line, body) in blocks(&text, "toml") {
            let path = dir.path().join(format!("{}-line-{line}.toml", file.replace('/', "-")));
            std::fs::write(&path, body).unwrap();
            configs.push(path);
        }
    }
    assert!(
        configs.len() >= 2,
        "the README and the guide have configuration examples"
    );
    configs.push(root.join("config/default.toml"));
    for entry in std::fs::read_dir(root.join("config/examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            configs.push(path);
        }
    }
    for config in &configs {
        let output = Command::new(convstream_binary())
            .arg("check")
            .arg("--config")
            .arg(config)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            config.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    println!("{} configuration examples pass check", configs.len());
}

#[test]
fn the_readme_is_read_example_by_example() {
    let text = "```sh\n# one\nfoo a \\\n  b\n# {\"x\": 1}\n\n# two\nA=1   # the URL\nbar $A\n```\n";
    let examples = shell_examples("README.md", text);
    assert_eq!(examples.len(), 2, "{examples:#?}");
    assert_eq!(examples[1].at(), "README.md line 9");
    let with_output = shell_examples(
        "docs/x.md",
        "```sh\nconvstream masks show box\n# > box (3x3)\n# > sum: 1\n```\n",
    );
    assert_eq!(with_output[0].expected, ["box (3x3)", "sum: 1"]);
    assert_eq!(with_output[0].stated, None);
    assert_eq!(
        written_file("convstream run -i in.mp4 -o a.mp4 --mask box"),
        Some("a.mp4".into())
    );
    assert_eq!(
        written_file("convstream run -i in.mp4 -vf \"sobel\" -y b.mkv"),
        Some("b.mkv".into())
    );
    assert_eq!(written_file("convstream run -i in.mp4 -vf sobel -f null -"), None);
    assert_eq!(written_file("convstream check --config a.toml"), None);
    assert_eq!(examples[0].description, "one");
    assert_eq!(examples[0].script, "foo a \\\n  b");
    assert_eq!(examples[0].stated.as_deref(), Some("{\"x\": 1}"));
    assert_eq!(examples[1].script, "A=1   # the URL\nbar $A");
    assert_eq!(examples[1].program(), "bar");
    assert!(same_shape(
        &serde_json::json!({"a": 1, "b": "x"}),
        &serde_json::json!({"a": 7, "b": "x"})
    ));
    assert!(!same_shape(
        &serde_json::json!({"a": 1, "b": "x"}),
        &serde_json::json!({"a": 7, "b": "y"})
    ));
    // A history: each point's values, key by key, of a shape some shown point has there.
    let shown = serde_json::json!({"points": [
        {"p99": null, "state": "starting"},
        {"p99": 1.8, "state": "running"}
    ]});
    let paused = serde_json::json!({"points": [{"p99": null, "state": "running"}]});
    assert!(same_shape(&shown, &paused));
    let stopped = serde_json::json!({"points": [{"p99": 2.0, "state": "stopped"}]});
    assert!(!same_shape(&shown, &stopped));
    let extra = serde_json::json!({"points": [{"p99": 2.0, "state": "running", "x": 1}]});
    assert!(!same_shape(&shown, &extra));
    let renamed = serde_json::json!({"points": [{"p95": 2.0, "state": "running"}]});
    assert!(!same_shape(&shown, &renamed));
    assert!(!same_shape(&shown, &serde_json::json!({"points": []})));
}

/// Every flag a ```text synopsis names (`convstream run --input IN [--mask SPEC] ...`, its
/// continuation lines indented) is one that command's `--help` lists, and every GPU check a
/// `scripts/gpu-check.sh CHECK` line names is one that `scripts/gpu-check.sh help` lists (the
/// checks themselves need a GPU host).
#[test]
fn every_synopsis_flag_is_in_the_commands_help() {
    let checks = Command::new("bash")
        .args(["scripts/gpu-check.sh", "help"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let checks = String::from_utf8_lossy(&checks.stdout).into_owned();
    let mut checked = 0;
    for (file, text) in documents() {
        for (first_line, body) in blocks(&text, "text") {
            let mut subcommand: Option<String> = None;
            for (offset, line) in body.lines().enumerate() {
                let line = line.split(" # ").next().unwrap_or("");
                if let Some(rest) = line.strip_prefix("scripts/gpu-check.sh ") {
                    let check = rest.split_whitespace().next().unwrap_or("");
                    assert!(
                        check == "help" || checks.lines().any(|l| l.split_whitespace().next() == Some(check)),
                        "{file} line {}: `{check}` is not a check `scripts/gpu-check.sh help` lists:\n{checks}",
                        first_line + offset
                    );
                    checked += 1;
                    continue;
                }
                if let Some(rest) = line.strip_prefix("convstream ") {
                    subcommand = rest
                        .split_whitespace()
                        .next()
                        .filter(|word| !word.starts_with('-'))
                        .map(str::to_string);
                } else if !line.starts_with(' ') {
                    subcommand = None;
                }
                let mut help_args: Vec<&str> = subcommand.iter().map(String::as_str).collect();
                help_args.push("--help");
                let help = Command::new(convstream_binary()).args(&help_args).output().unwrap();
                let help = String::from_utf8_lossy(&help.stdout);
                for flag in line
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .filter(|word| word.starts_with("--") && word.len() > 2)
                {
                    assert!(
                        help.contains(flag),
                        "{file} line {}: `{flag}` is not in `convstream {}`",
                        first_line + offset,
                        help_args.join(" ")
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 40, "the synopses name {checked} flags");
}

//! Checks that keep outputs from destroying data, before anything is opened: an output
//! that is one of the inputs (by any name: `./v.ts`, a symlink, a hard link), two
//! pipelines writing one file, and (for `run`) an existing file replaced without consent.

use convstream_core::quoted;
use std::path::{Component, Path, PathBuf};

use crate::error::ConfigError;
use crate::problem::{Place, Problem};
use crate::schema::PipelineConfig;
use crate::settings::PipelineSettings;

/// Where a sink URL writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    /// `null`: frames are discarded.
    Discard,
    /// `-`: standard output.
    Stdout,
    /// A local path (also `file:PATH`).
    File(PathBuf),
    /// A URL another FFmpeg protocol writes (`udp://`, `pipe:1`, ...).
    Url,
}

impl OutputTarget {
    /// What a sink's `url` names: `null`, `-`, a URL with a protocol, else a local path.
    pub fn of(url: &str) -> OutputTarget {
        match url {
            "null" => return OutputTarget::Discard,
            "-" => return OutputTarget::Stdout,
            _ => {}
        }
        if let Some(path) = url.strip_prefix("file:") {
            return OutputTarget::File(PathBuf::from(path.strip_prefix("//").unwrap_or(path)));
        }
        if has_protocol(url) {
            OutputTarget::Url
        } else {
            OutputTarget::File(PathBuf::from(url))
        }
    }
}

/// The muxer a URL's scheme implies, as FFmpeg's own tools use for it: `rtsp://` the RTSP
/// muxer, `rtmp://` FLV, `udp://`, `srt://`, `tcp://` and `rist://` MPEG-TS. `None` for
/// anything else (a file name's extension tells FFmpeg then).
pub fn container_of_scheme(url: &str) -> Option<&'static str> {
    let (scheme, _) = url.split_once("://")?;
    match scheme.to_ascii_lowercase().as_str() {
        "rtsp" | "rtsps" => Some("rtsp"),
        "rtmp" | "rtmps" | "rtmpt" | "rtmpe" | "rtmpts" | "rtmpte" => Some("flv"),
        "udp" | "srt" | "tcp" | "rist" => Some("mpegts"),
        _ => None,
    }
}

/// Whether FFmpeg reads `url` through a protocol other than a local file: `scheme://...`,
/// or `name:...` for its few schemes without slashes (`pipe:1`, `tcp:`, ...). A single
/// letter before the colon is not taken for a scheme.
fn has_protocol(url: &str) -> bool {
    match url.split_once(':') {
        Some((scheme, rest)) => {
            let scheme_like = scheme.len() > 1
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            scheme_like && (rest.starts_with("//") || matches!(scheme, "pipe" | "fd" | "tcp" | "udp" | "unix"))
        }
        None => false,
    }
}

/// The same value for every name of one file: its device and inode when it exists, else its
/// absolute path with `.`, `..` and symlinked folders resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileIdentity {
    /// An existing file.
    Inode {
        /// The file system's device number.
        device: u64,
        /// The file's inode number on that device.
        inode: u64,
    },
    /// A file that does not exist (yet): its resolved absolute path.
    Path(PathBuf),
}

impl FileIdentity {
    /// The identity of the file `path` names (links followed).
    pub fn of(path: &Path) -> FileIdentity {
        use std::os::unix::fs::MetadataExt;
        if let Ok(meta) = std::fs::metadata(path) {
            return FileIdentity::Inode {
                device: meta.dev(),
                inode: meta.ino(),
            };
        }
        FileIdentity::Path(resolved_path(path))
    }

    /// The file standard input or output is redirected to, when it is a regular file.
    fn of_std_stream(fd: u32) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(format!("/proc/self/fd/{fd}")).ok()?;
        meta.is_file().then(|| FileIdentity::Inode {
            device: meta.dev(),
            inode: meta.ino(),
        })
    }
}

/// The absolute path of `path` with `.`, `..` and symlinked folders resolved (the file
/// itself need not exist).
pub fn resolved_path(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let normal = normalise(&absolute);
    match (normal.parent(), normal.file_name()) {
        (Some(parent), Some(name)) => parent.canonicalize().map(|p| p.join(name)).unwrap_or(normal),
        _ => normal,
    }
}

/// One name for the place a sink URL writes, whatever way the URL spells it.
pub fn output_key(url: &str) -> String {
    match OutputTarget::of(url) {
        OutputTarget::File(path) => resolved_path(&path).display().to_string(),
        _ => url.to_string(),
    }
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The file standard input (0), output (1) or another inherited descriptor is, for FFmpeg's
/// `pipe:N` and `fd:` (no number: 0 for reading, 1 for writing).
fn descriptor_identity(rest: &str, default: u32) -> Option<FileIdentity> {
    let digits = rest.trim_start_matches("//");
    let fd = if digits.is_empty() {
        default
    } else {
        digits.parse().ok()?
    };
    FileIdentity::of_std_stream(fd)
}

/// Every local file a source URL reads: the file itself (or stdin redirected from one), and
/// through FFmpeg's wrapping protocols the files they wrap: `concat:a|b`, `subfile,,...,:PATH`,
/// `cache:URL`, `async:URL`, `crypto:URL`, `pipe:0`/`fd:` (stdin or another descriptor).
/// Without them `-i concat:v.ts -o v.ts -y` replaced its own input.
fn input_identities(url: &str) -> Vec<FileIdentity> {
    let url = url.trim();
    if url.is_empty() {
        return Vec::new(); // reported as empty elsewhere
    }
    if url == "-" {
        return FileIdentity::of_std_stream(0).into_iter().collect();
    }
    if url.starts_with("subfile,") {
        // subfile,,start,N,end,M,,:PATH: what follows the first `:` is the wrapped URL.
        return url
            .split_once(':')
            .map(|(_, inner)| input_identities(inner))
            .unwrap_or_default();
    }
    if let Some((scheme, rest)) = url.split_once(':') {
        match scheme.to_ascii_lowercase().as_str() {
            "concat" | "concatf" => {
                let rest = rest.strip_prefix("//").unwrap_or(rest);
                if scheme.eq_ignore_ascii_case("concatf") {
                    // A file listing the parts, one a line: the list and every part it names.
                    let mut found = input_identities(rest);
                    if let Ok(list) = std::fs::read_to_string(rest) {
                        found.extend(list.lines().flat_map(input_identities));
                    }
                    return found;
                }
                return rest.split('|').flat_map(input_identities).collect();
            }
            "cache" | "async" | "crypto" | "crypto+file" => {
                return input_identities(rest.strip_prefix("//").unwrap_or(rest));
            }
            "pipe" | "fd" => return descriptor_identity(rest, 0).into_iter().collect(),
            _ => {}
        }
    }
    match OutputTarget::of(url) {
        OutputTarget::File(path) => vec![FileIdentity::of(&path)],
        _ => Vec::new(),
    }
}

/// Every local file a source reads: [`input_identities`] of its URL and, when the concat
/// demuxer reads it (`format = "concat"`, or a file that opens with `ffconcat version`,
/// which FFmpeg picks by itself), every file its list names. Without them
/// `--input-format concat -i list.txt -o v.ts -y` replaced a file the list named.
fn source_identities(source: &crate::schema::SourceConfig) -> Vec<FileIdentity> {
    let mut found = input_identities(&source.url);
    let OutputTarget::File(list) = OutputTarget::of(source.url.trim()) else {
        return found;
    };
    let asked = source
        .format
        .as_deref()
        .is_some_and(|f| f.eq_ignore_ascii_case("concat"));
    // Only a list is read whole: a video's first megabyte, read and looked through for every
    // pipeline of a full host, took `serve` seconds before it answered at all.
    if !asked && !read_start(&list, SIGNATURE_BYTES).is_some_and(|head| is_concat_signature(&head)) {
        return found;
    }
    let Some(text) = read_start(&list, LIST_BYTES) else {
        return found;
    };
    if asked || is_concat_signature(&text) {
        let folder = list.parent().map(Path::to_path_buf).unwrap_or_default();
        found.extend(concat_list_files(&text).iter().flat_map(|named| {
            // The demuxer reads a relative name beside the list, not the working folder.
            let path = Path::new(named);
            match path.is_relative() && !has_protocol(named) {
                true => input_identities(&folder.join(path).to_string_lossy()),
                false => input_identities(named),
            }
        }));
    }
    found
}

/// How much of a concat list is read: the demuxer itself reads no list longer than this is
/// worth checking (one that is, is checked as far).
const LIST_BYTES: u64 = 1 << 20;
/// How much of a file is read to see whether it is a concat list at all.
const SIGNATURE_BYTES: u64 = 4096;

/// Whether `text` opens as the concat demuxer's lists do (FFmpeg picks the demuxer by it).
fn is_concat_signature(text: &str) -> bool {
    text.trim_start().starts_with("ffconcat version")
}

/// The first `bytes` of a local file, if it is a regular one, as text.
fn read_start(path: &Path, bytes: u64) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Never open a FIFO or a device to look: opening a FIFO with no writer would block the
    // check (and a stop) for as long as none comes. O_NONBLOCK covers a swap after the look.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut start = Vec::new();
    file.take(bytes).read_to_end(&mut start).ok()?;
    Some(String::from_utf8_lossy(&start).into_owned())
}

/// The names in a concat list's `file` lines, unquoted as the demuxer does (`'it'\''s.ts'`).
fn concat_list_files(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("file"))
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .map(|rest| unquote(rest.trim()))
        .filter(|name| !name.is_empty())
        .collect()
}

/// A concat list's token: single quotes keep what they hold, a backslash the next character.
fn unquote(token: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => quoted = !quoted,
            '\\' if !quoted => out.extend(chars.next()),
            c if c.is_whitespace() && !quoted => break,
            c => out.push(c),
        }
    }
    out
}

/// The file a sink URL writes, if it writes one (or stdout, `pipe:N` or `fd:` redirected to one).
fn output_identity(url: &str) -> Option<FileIdentity> {
    if url.trim().is_empty() {
        return None; // reported as empty elsewhere
    }
    if let Some((scheme, rest)) = url.split_once(':') {
        if matches!(scheme.to_ascii_lowercase().as_str(), "pipe" | "fd") {
            return descriptor_identity(rest, 1);
        }
    }
    match OutputTarget::of(url) {
        OutputTarget::File(path) => Some(FileIdentity::of(&path)),
        OutputTarget::Stdout => FileIdentity::of_std_stream(1),
        _ => None,
    }
}

/// Why a side output (`--stats-json`, `--trace`) may not be written at `path`: it is an input
/// or an output of one of `pipelines` (under any name), or it exists and `overwrite` is off.
/// Side outputs are outputs: they keep the same promises.
pub fn side_output_problems(flag: &str, path: &Path, pipelines: &[PipelineConfig], overwrite: bool) -> Vec<Problem> {
    let identity = FileIdentity::of(path);
    let shown = quoted(&path.to_string_lossy());
    let mut problems = Vec::new();
    for pipeline in pipelines {
        if source_identities(&pipeline.source).contains(&identity) {
            problems.push(Problem::general(format!(
                "{flag} `{shown}` is the input of pipeline {:?} (source.url `{}`); writing it would destroy that input; choose another file",
                pipeline.name,
                quoted(&pipeline.source.url)
            )));
        }
        if output_identity(&pipeline.sink.url).as_ref() == Some(&identity) {
            problems.push(Problem::general(format!(
                "{flag} `{shown}` is the output of pipeline {:?} (sink.url `{}`); choose another file",
                pipeline.name,
                quoted(&pipeline.sink.url)
            )));
        }
    }
    if problems.is_empty() && !overwrite && std::fs::symlink_metadata(path).is_ok() {
        problems.push(Problem::general(format!(
            "{flag} `{shown}` exists; it is kept: pass -y / --overwrite to replace it, or choose another file"
        )));
    }
    problems
}

/// Every sink that would write the config file itself (under any name: a link, a hard
/// link), one problem each: `run --config cfg.toml` with `overwrite = true` replaced it.
pub fn config_file_problems(config: &Path, pipelines: &[PipelineConfig]) -> Vec<Problem> {
    let identity = FileIdentity::of(config);
    pipelines
        .iter()
        .filter(|pipeline| output_identity(&pipeline.sink.url).as_ref() == Some(&identity))
        .map(|pipeline| {
            Problem::setting(
                "sink.url",
                format!(
                    "`{}` is the config file itself; writing it would destroy the config; choose another output",
                    quoted(&pipeline.sink.url)
                ),
            )
            .at(Place::Pipeline(pipeline.name.clone()))
        })
        .collect()
}

/// Every output that would overwrite an input or another pipeline's output, one problem
/// each, naming both pipelines.
pub fn check_outputs(pipelines: &[PipelineConfig]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let inputs: Vec<(&PipelineConfig, Vec<FileIdentity>)> =
        pipelines.iter().map(|p| (p, source_identities(&p.source))).collect();
    let mut outputs: Vec<(&PipelineConfig, FileIdentity)> = Vec::new();
    let mut stdout_writer: Option<&PipelineConfig> = None;
    for pipeline in pipelines {
        let url = &pipeline.sink.url;
        if url == "-" {
            if let Some(first) = stdout_writer {
                problems.push(
                    Problem::setting(
                        "sink.url",
                        format!(
                            "`-`: pipeline {:?} writes to stdout already; their streams would be mixed into one; give each its own output",
                            first.name
                        ),
                    )
                    .at(Place::Pipeline(pipeline.name.clone())),
                );
            }
            stdout_writer.get_or_insert(pipeline);
        }
        let Some(identity) = output_identity(url) else { continue };
        for (reader, input) in &inputs {
            if input.contains(&identity) {
                let whose = if reader.name == pipeline.name {
                    "its input".to_string()
                } else {
                    format!("the input of pipeline {:?}", reader.name)
                };
                problems.push(
                    Problem::setting(
                        "sink.url",
                        format!(
                            "`{}` is the same file as {whose} (source.url `{}`); writing it would destroy that input; choose another output",
                            quoted(url),
                            quoted(&reader.source.url)
                        ),
                    )
                    .at(Place::Pipeline(pipeline.name.clone())),
                );
            }
        }
        if let Some((first, _)) = outputs.iter().find(|(_, other)| *other == identity) {
            problems.push(
                Problem::setting(
                    "sink.url",
                    format!(
                        "`{}` is the file pipeline {:?} writes (sink.url `{}`); one stream would be lost inside the other; give each its own output",
                        quoted(url),
                        first.name,
                        quoted(&first.sink.url)
                    ),
                )
                .at(Place::Pipeline(pipeline.name.clone())),
            );
        }
        outputs.push((pipeline, identity));
    }
    problems
}

/// Why `candidate` cannot start beside `running` (pipelines that are running now): its
/// output is one of their inputs or outputs, or its input is one of their outputs.
pub fn conflicts_with_running(candidate: &PipelineConfig, running: &[&PipelineConfig]) -> Option<String> {
    let mut all: Vec<PipelineConfig> = running.iter().map(|p| (*p).clone()).collect();
    // Problems among the running pipelines themselves are not the candidate's.
    let known = check_outputs(&all);
    all.push(candidate.clone());
    let new: Vec<String> = check_outputs(&all)
        .into_iter()
        .filter(|problem| !known.contains(problem))
        .map(|problem| problem.to_string())
        .collect();
    (!new.is_empty()).then(|| new.join("; "))
}

/// What only FFmpeg can tell of a pipeline's output, before it opens: whether its container
/// and encoder exist in this build, and can carry and honour what the sink asks (the media
/// crate's `output_problems`). Validation calls it for every pipeline; a front end whose
/// outputs FFmpeg never opens passes [`NO_OUTPUT_CHECK`].
pub type OutputCheck = fn(&PipelineConfig) -> Vec<Problem>;

/// The [`OutputCheck`] of a front end that writes no files (the GStreamer element's, a
/// Python filter's): it finds nothing.
pub const NO_OUTPUT_CHECK: OutputCheck = |_| Vec::new();

/// The pipelines whose sink is a file that exists and that may not replace it: each front end
/// words the refusal in its own terms (`-y` for the CLI, `overwrite=True` for Python).
pub fn existing_outputs(pipelines: &[PipelineSettings]) -> Vec<&PipelineSettings> {
    pipelines
        .iter()
        .filter(|p| !p.sink.overwrite)
        .filter(|p| match OutputTarget::of(&p.sink.url) {
            OutputTarget::File(path) => std::fs::metadata(&path).is_ok_and(|m| m.is_file()),
            _ => false,
        })
        .collect()
}

/// `run` without `--overwrite`: every sink whose file exists is a problem (nothing is opened).
pub fn refuse_existing_outputs(pipelines: &[PipelineSettings]) -> Result<(), ConfigError> {
    let problems: Vec<Problem> = existing_outputs(pipelines)
        .into_iter()
        .map(|p| {
            Problem::setting(
                "sink.url",
                format!(
                    "`{}` exists; it is kept: pass -y / --overwrite (or set sink.overwrite = true) to replace it, or choose another name",
                    quoted(&p.sink.url)
                ),
            )
            .at(Place::Pipeline(p.name.clone()))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ConfigError::Invalid(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_told_apart() {
        assert_eq!(container_of_scheme("rtsp://host:8554/cam"), Some("rtsp"));
        assert_eq!(container_of_scheme("RTMP://host/live/key"), Some("flv"));
        assert_eq!(
            container_of_scheme("udp://239.0.0.1:1234?pkt_size=1316"),
            Some("mpegts")
        );
        assert_eq!(container_of_scheme("srt://host:9000"), Some("mpegts"));
        assert_eq!(container_of_scheme("out.mp4"), None);
        assert_eq!(container_of_scheme("http://host/out.mkv"), None, "the name tells");
        assert_eq!(OutputTarget::of("null"), OutputTarget::Discard);
        assert_eq!(OutputTarget::of("-"), OutputTarget::Stdout);
        assert_eq!(OutputTarget::of("udp://1.2.3.4:5"), OutputTarget::Url);
        assert_eq!(OutputTarget::of("pipe:1"), OutputTarget::Url);
        assert_eq!(OutputTarget::of("out.mkv"), OutputTarget::File("out.mkv".into()));
        assert_eq!(OutputTarget::of("file:a.ts"), OutputTarget::File("a.ts".into()));
        assert_eq!(OutputTarget::of("a:b.ts"), OutputTarget::File("a:b.ts".into()));
    }

    #[test]
    fn names_of_one_missing_file_are_equal() {
        let dir = tempfile::tempdir().unwrap();
        let a = FileIdentity::of(&dir.path().join("x.mkv"));
        let b = FileIdentity::of(&dir.path().join("sub/../x.mkv"));
        let c = FileIdentity::of(&dir.path().join("./x.mkv"));
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_ne!(a, FileIdentity::of(&dir.path().join("y.mkv")));
    }
}

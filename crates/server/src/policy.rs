//! What a pipeline started or changed through the API may touch. Config-file pipelines are
//! the operator's and are not limited; an API request is not trusted: its mask files come
//! only from `[server] mask_dir`, its media files only from under `[server] allow_paths`
//! (never the config file, never an existing file), and otherwise it uses network URLs.
//! Every path is checked after resolving links, and rewritten to the resolved path so that
//! what is opened is what was checked.
//!
//! One job at some length (about 630 lines): every rule an API-made pipeline is held to (files,
//! protocols, formats, options, hosts, masks) is checked here, in one place read whole.

use std::path::{Component, Path, PathBuf};

use convstream_config::{MaskSelection, PipelineConfig, ServerConfig};
use convstream_core::quoted;
use convstream_core::MaskParams;
use convstream_media::{FileId, SinkKind};

/// FFmpeg protocols that only reach the network: an API pipeline may use these freely.
const NETWORK_PROTOCOLS: &[&str] = &[
    "udp", "udplite", "rtp", "rtsp", "rtsps", "rtmp", "rtmps", "rtmpt", "rtmpts", "rtmpe", "rtmpte", "srt", "tcp",
    "tls", "http", "https", "mmsh", "mmst", "icecast",
];

/// Formats that open other files or read their own input as instructions (a list of
/// files, a filter graph, several outputs): an API pipeline may not force them.
const FORMATS_NAMING_FILES: &[&str] = &[
    "concat",
    "lavfi",
    "tee",
    "fifo",
    "segment",
    "ssegment",
    "stream_segment",
    "hls",
    "dash",
    "image2",
];

/// Demuxers an API pipeline's file may be read with: containers and elementary streams
/// that never open another file. FFmpeg picks a demuxer by the file's bytes, so without
/// this list an allowed file holding an HLS playlist, a concat script or an SDP would make
/// FFmpeg open the files (or hosts) it names; `format_whitelist` refuses them even when
/// probing picks them. Names as FFmpeg matches them (any one name of a demuxer).
const API_FILE_DEMUXERS: &[&str] = &[
    "matroska",
    "webm",
    "mov",
    "mp4",
    "mpegts",
    "mpeg",
    "mpegvideo",
    "avi",
    "flv",
    "nut",
    "yuv4mpegpipe",
    "h264",
    "hevc",
    "m4v",
    "ivf",
    "obu",
    "ogg",
    "mxf",
    "asf",
    "dv",
];

/// Demuxers that read any file's bytes as pictures (or as text drawn into pictures): through
/// the API, a file under `allow_paths` read with one would come back as a snapshot's pixels.
/// Refused, as a `source.format` and by `format_whitelist`, unless `[server]
/// allow_raw_sources` is on. FFmpeg's names: raw video (`rawvideo`, `v210`, `v210x`, `bitpacked`)
/// and the binary-text ones (`bin`, `tty`, `data`, `idf`, `adf`, `xbin`).
const RAW_BYTE_DEMUXERS: &[&str] = &[
    "rawvideo",
    "v210",
    "v210x",
    "bitpacked",
    "bin",
    "tty",
    "data",
    "idf",
    "adf",
    "xbin",
];

/// Muxers an API pipeline may write with: containers whose bytes no demuxer reads as a
/// list of other files. Raw output (`rawvideo`, by `.yuv`) would let a request write any
/// bytes it likes, an HLS playlist or concat script for a later reader among them, and
/// playlists and segment muxers name files of their own.
const API_MUXERS: &[&str] = &[
    "matroska",
    "webm",
    "mp4",
    "mov",
    "mpegts",
    "nut",
    "avi",
    "flv",
    "yuv4mpegpipe",
    "ivf",
    "ogg",
    "mxf",
    "h264",
    "hevc",
];

/// The protocols a network source's scheme needs, and nothing else: FFmpeg's nested opens
/// (a playlist's segments, an RTSP session's RTP streams, a redirect) inherit the list, so
/// a server's answer cannot make FFmpeg read a local file.
fn network_protocols_for(scheme: &str) -> &'static str {
    match scheme {
        "udp" | "udplite" => "udp,udplite",
        "rtp" => "rtp,udp",
        "rtsp" | "rtsps" => "rtsp,rtsps,rtp,udp,tcp,tls",
        "rtmp" | "rtmps" | "rtmpt" | "rtmpts" | "rtmpe" | "rtmpte" => {
            "rtmp,rtmps,rtmpt,rtmpts,rtmpe,rtmpte,tcp,tls,http,https"
        }
        "srt" => "srt",
        "tcp" => "tcp",
        "tls" => "tls,tcp",
        "mmsh" => "mmsh,http,tcp",
        "mmst" => "mmst,tcp",
        // http, https, icecast and anything else this list grows to: web protocols only.
        _ => "http,https,tcp,tls",
    }
}

/// The audio encoder options API pipelines may set: bit rate, sample rate, channels.
const API_AUDIO_OPTIONS: &[&str] = &["b", "ar", "ac"];

/// Encoder options an API pipeline may set: rate control and the like. Others (some name
/// files, such as x264's `stats` or `x264-params`) only from the config file.
const API_ENCODER_OPTIONS: &[&str] = &[
    "b",
    "maxrate",
    "minrate",
    "bufsize",
    "crf",
    "qp",
    "q",
    "qscale",
    "qmin",
    "qmax",
    "g",
    "bf",
    "refs",
    "preset",
    "tune",
    "profile",
    "level",
    "keyint_min",
    "sc_threshold",
    "threads",
    "cpu-used",
    "deadline",
    "speed",
];

/// Encoder and decoder threads an API pipeline may ask for: a request may not make the
/// service start hundreds of threads (the config file may, up to its own range).
const API_MAX_THREADS: u64 = 16;

/// Demuxer and protocol options an API pipeline may set: transport, timing and raw-video
/// geometry. Others (some open files or widen what a playlist may read, such as
/// `allowed_extensions`, `safe` or `protocol_whitelist`) only from the config file.
const API_SOURCE_OPTIONS: &[&str] = &[
    "rtsp_transport",
    "rtsp_flags",
    "timeout",
    "stimeout",
    "rw_timeout",
    "buffer_size",
    "fifo_size",
    "overrun_nonfatal",
    "max_delay",
    "reorder_queue_size",
    "analyzeduration",
    "probesize",
    "fflags",
    "latency",
    "video_size",
    "pixel_format",
    "framerate",
];

/// The characters FFmpeg reads as a protocol name before a `:`.
fn is_scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
}

/// What a source or sink URL opens, as FFmpeg decides it.
#[derive(Debug, PartialEq)]
enum Target<'a> {
    /// `-`: the service's own stdin or stdout.
    Stdio,
    /// The `null` sink.
    Null,
    /// A local path (no protocol, or `file:`).
    File(&'a str),
    /// Another protocol, lower-cased.
    Protocol(String),
}

fn target_of(url: &str, is_sink: bool) -> Target<'_> {
    if url == "-" {
        return Target::Stdio;
    }
    if is_sink && SinkKind::of(url) == SinkKind::Null {
        return Target::Null;
    }
    // As FFmpeg's url_find_protocol: a run of scheme characters then `:` names a protocol
    // (`subfile,` is its one exception); anything else is a file.
    let scheme_len = url.find(|c: char| !is_scheme_char(c)).unwrap_or(url.len());
    if url.starts_with("subfile,") && url.contains(':') {
        return Target::Protocol("subfile".into());
    }
    if scheme_len > 0 && url[scheme_len..].starts_with(':') {
        let scheme = url[..scheme_len].to_ascii_lowercase();
        if scheme == "file" {
            return Target::File(&url[scheme_len + 1..]);
        }
        return Target::Protocol(scheme);
    }
    Target::File(url)
}

/// The local path a source or sink URL opens, if it is a file (as FFmpeg reads the URL).
pub(crate) fn local_path(url: &str, is_sink: bool) -> Option<&Path> {
    match target_of(url, is_sink) {
        Target::File(path) => Some(Path::new(path)),
        _ => None,
    }
}

/// Whether `path` (absolute) stays inside `root` (absolute) by its components alone.
fn lexically_inside(path: &Path, root: &Path) -> bool {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !normal.pop() {
                    return false;
                }
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal.starts_with(root)
}

/// An API pipeline's FFmpeg filter chains and audio options: FFmpeg's own filters run on the
/// chain's text and may name files to read or write (`drawtext=textfile=`, `metadata=file=`,
/// `sendcmd=f=`), opened as soon as the chain is built, which validation does; like source
/// and encoder options, chains are the config file's alone, refused before anything builds
/// them; a `filter.graph` may name only the filters that open nothing
/// ([`api_graph_problem`](crate::graph_policy::api_graph_problem)). Audio options: bit
/// rate, sample rate and channels only.
fn ffmpeg_chain_and_audio_problems(pipeline: &PipelineConfig, problems: &mut Vec<String>) {
    for key in pipeline.sink.audio_options.keys() {
        if !API_AUDIO_OPTIONS.contains(&key.as_str()) {
            problems.push(format!(
                "sink.audio_options: `{}` cannot be set through the API (only in the config file); allowed here: {}",
                quoted(key),
                API_AUDIO_OPTIONS.join(", ")
            ));
        }
    }
    let chains = [
        ("filter.ffmpeg_before", &pipeline.filter.ffmpeg_before),
        ("filter.ffmpeg_after", &pipeline.filter.ffmpeg_after),
    ];
    for (field, chain) in chains {
        if chain.is_some() {
            problems.push(format!(
                "{field}: FFmpeg filter chains can open files, so only the config file may give one (API pipelines take mask, planes, border, plane_masks, and filter.graph of FFmpeg's filters that open nothing)"
            ));
        }
    }
    if let Some(problem) = pipeline
        .filter
        .graph
        .as_deref()
        .and_then(crate::graph_policy::api_graph_problem)
    {
        problems.push(problem);
    }
}

/// The limits API requests are held to, resolved once at start.
#[derive(Debug, Clone)]
pub struct ApiPolicy {
    /// `[server] mask_dir`, links resolved.
    mask_dir: Option<PathBuf>,
    /// `[server] allow_paths`, links resolved.
    allow_paths: Vec<PathBuf>,
    /// The config file, links resolved: never read or written through the API.
    config_file: Option<PathBuf>,
    /// Where relative media paths resolve from (the service's working directory).
    working_dir: PathBuf,
    /// `[server] allow_raw_sources`: whether API sources may use [`RAW_BYTE_DEMUXERS`].
    allow_raw_sources: bool,
}

impl ApiPolicy {
    /// Resolves the configured folders (relative ones from the config file's folder).
    /// A folder that cannot be resolved allows nothing.
    pub fn new(server: &ServerConfig, config_path: &Path) -> ApiPolicy {
        let base_dir = config_path.parent();
        let resolve = |dir: &Path| ServerConfig::resolve_folder(dir, base_dir).canonicalize().ok();
        ApiPolicy {
            mask_dir: server.mask_dir.as_deref().and_then(resolve),
            allow_paths: server.allow_paths.iter().filter_map(|dir| resolve(dir)).collect(),
            config_file: config_path.canonicalize().ok(),
            working_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            allow_raw_sources: server.allow_raw_sources,
        }
    }

    /// The same limits, with relative media paths resolved from `dir` instead of the
    /// service's working directory.
    pub fn with_working_dir(self, dir: &Path) -> ApiPolicy {
        ApiPolicy {
            working_dir: dir.to_path_buf(),
            ..self
        }
    }

    /// Checks a pipeline from an API request, rewriting its files to their resolved paths.
    /// Returns every problem, each with its place.
    pub fn check_pipeline(&self, pipeline: &mut PipelineConfig) -> Vec<String> {
        let mut problems = Vec::new();
        let source = &mut pipeline.source;
        match self.media(&source.url, false, false) {
            Ok(Some(resolved)) => source.url = resolved,
            Ok(None) => {}
            Err(problem) => problems.push(format!("source.url: {problem}")),
        }
        if let Some(format) = &source.format {
            format_problem("source.format", format, &mut problems);
            if !self.allow_raw_sources && RAW_BYTE_DEMUXERS.contains(&format.to_ascii_lowercase().as_str()) {
                problems.push(format!(
                    "source.format: `{}` reads any file's bytes as pictures, so API pipelines may use it only with [server] allow_raw_sources = true",
                    quoted(format)
                ));
            }
        }
        for key in source.options.keys() {
            if !API_SOURCE_OPTIONS.contains(&key.as_str()) {
                problems.push(format!(
                    "source.options: `{}` cannot be set through the API (only in the config file); allowed here: {}",
                    quoted(key),
                    API_SOURCE_OPTIONS.join(", ")
                ));
            }
        }
        if source.threads as u64 > API_MAX_THREADS {
            problems.push(format!(
                "source.threads: {} is more than the API allows; allowed 0..={API_MAX_THREADS} (more only in the config file)",
                source.threads
            ));
        }
        // What FFmpeg may open for this source, bound into the open itself (and inherited
        // by every open it makes on the source's behalf).
        let (protocols, formats) = match target_of(&source.url, false) {
            Target::Protocol(scheme) => (network_protocols_for(&scheme).to_string(), None),
            _ => {
                let raw: &[&str] = if self.allow_raw_sources { RAW_BYTE_DEMUXERS } else { &[] };
                ("file".to_string(), Some([API_FILE_DEMUXERS, raw].concat().join(",")))
            }
        };
        source.options.insert("protocol_whitelist".into(), protocols);
        if let Some(formats) = formats {
            source.options.insert("format_whitelist".into(), formats);
        }
        let sink = &mut pipeline.sink;
        match self.media(&sink.url, true, sink.overwrite) {
            Ok(Some(resolved)) => sink.url = resolved,
            Ok(None) => {}
            Err(problem) => problems.push(format!("sink.url: {problem}")),
        }
        if let Some(format) = &sink.format {
            format_problem("sink.format", format, &mut problems);
        }
        if let Some(threads) = sink.options.get("threads") {
            if threads
                .trim()
                .parse::<u64>()
                .map_or(threads != "auto", |n| n > API_MAX_THREADS)
            {
                problems.push(format!(
                    "sink.options.threads: `{}` is more than the API allows; allowed 0..={API_MAX_THREADS} or \"auto\" (more only in the config file)",
                    quoted(threads)
                ));
            }
        }
        if SinkKind::of(&sink.url) != SinkKind::Null {
            if let Some(muxer) = convstream_media::guess_muxer(&sink.url, sink.format.as_deref()) {
                let name = muxer.name().to_string();
                if !name.split(',').any(|one| API_MUXERS.contains(&one)) {
                    problems.push(format!(
                        "sink: the `{}` muxer writes raw bytes or names other files, so only the config file may use it; API pipelines write {}",
                        quoted(&name),
                        API_MUXERS.join(", ")
                    ));
                }
            }
        }
        for key in sink.options.keys() {
            if !API_ENCODER_OPTIONS.contains(&key.as_str()) {
                problems.push(format!(
                    "sink.options: `{}` cannot be set through the API (only in the config file); allowed here: {}",
                    quoted(key),
                    API_ENCODER_OPTIONS.join(", ")
                ));
            }
        }
        ffmpeg_chain_and_audio_problems(pipeline, &mut problems);
        if let Err(problem) = self.check_mask(&mut pipeline.filter.mask) {
            problems.push(format!("filter.mask: {problem}"));
        }
        for (key, mask) in &mut pipeline.filter.plane_masks {
            if let Err(problem) = self.check_mask(mask) {
                problems.push(format!("filter.plane_masks.{}: {problem}", quoted(key)));
            }
        }
        problems
    }

    /// Checks a mask from an API request: presets, named masks of the config and inline
    /// matrices pass; a mask file must resolve inside `[server] mask_dir`, and is rewritten
    /// to its resolved path.
    pub fn check_mask(&self, mask: &mut MaskSelection) -> Result<(), String> {
        let params = match mask {
            MaskSelection::Inline(params) => params.clone(),
            MaskSelection::Named(spec) => match MaskParams::parse_spec(spec) {
                Ok(params) => params,
                // Not a SPEC: validation reports it, and nothing is read.
                Err(_) => return Ok(()),
            },
        };
        let Some(file) = &params.file else {
            return Ok(());
        };
        let resolved = self.mask_file(file)?;
        *mask = MaskSelection::Inline(MaskParams {
            file: Some(resolved),
            ..params
        });
        Ok(())
    }

    fn mask_file(&self, file: &Path) -> Result<PathBuf, String> {
        let shown = quoted(&file.to_string_lossy());
        let Some(dir) = &self.mask_dir else {
            return Err(format!(
                "mask file `{shown}`: the API takes presets and inline matrices; mask files only from [server] mask_dir, which is not set"
            ));
        };
        let refused = || {
            format!(
                "mask file `{shown}` is not a file inside [server] mask_dir ({}); give its name within that folder",
                dir.display()
            )
        };
        let candidate = dir.join(file);
        // Nothing outside the folder is looked at, not even whether it exists.
        if !lexically_inside(&candidate, dir) {
            return Err(refused());
        }
        let resolved = candidate.canonicalize().map_err(|_| refused())?;
        if !resolved.starts_with(dir) {
            return Err(refused());
        }
        Ok(resolved)
    }

    /// Checks a source or sink URL. `Ok(Some(path))`: a file, to be opened by this resolved
    /// path; `Ok(None)`: a URL that reaches only the network (or the null sink).
    /// `overwrite`: the sink's consent to replace an existing file.
    fn media(&self, url: &str, is_sink: bool, overwrite: bool) -> Result<Option<String>, String> {
        let shown = quoted(url);
        match target_of(url, is_sink) {
            Target::Null => Ok(None),
            Target::Stdio => Err(format!(
                "`-` is the service's own {}; API pipelines cannot use it",
                if is_sink { "stdout" } else { "stdin" }
            )),
            Target::Protocol(scheme) if NETWORK_PROTOCOLS.contains(&scheme.as_str()) => Ok(None),
            Target::Protocol(scheme) => Err(format!(
                "`{}:` is not a network protocol; API pipelines use network URLs ({}) or files under [server] allow_paths",
                quoted(&scheme),
                NETWORK_PROTOCOLS.join(", ")
            )),
            Target::File(path) => self.media_file(Path::new(path), is_sink, overwrite).map(Some),
        }
        .map_err(|problem| format!("`{shown}`: {problem}"))
    }

    fn media_file(&self, path: &Path, is_sink: bool, overwrite: bool) -> Result<String, String> {
        if self.allow_paths.is_empty() {
            return Err("API pipelines cannot use files: [server] allow_paths is empty (use a network URL)".into());
        }
        let refused = || {
            let roots: Vec<String> = self.allow_paths.iter().map(|p| p.display().to_string()).collect();
            format!("not under [server] allow_paths ({})", roots.join(", "))
        };
        let absolute = self.working_dir.join(path);
        if !self.allow_paths.iter().any(|root| lexically_inside(&absolute, root)) {
            return Err(refused());
        }
        let resolved = if is_sink {
            // The output need not exist (and must not, unless it is a pipe): resolve its folder.
            let name = match absolute.components().next_back() {
                Some(Component::Normal(name)) => name.to_owned(),
                _ => return Err("not a file name".into()),
            };
            let folder = absolute.parent().ok_or_else(refused)?;
            folder.canonicalize().map_err(|_| refused())?.join(name)
        } else {
            absolute
                .canonicalize()
                .map_err(|_| "no such file under [server] allow_paths".to_string())?
        };
        if !self.allow_paths.iter().any(|root| resolved.starts_with(root)) {
            return Err(refused());
        }
        if self.config_file.as_deref() == Some(resolved.as_path()) {
            return Err("that is the service's config file".into());
        }
        if is_sink && !overwrite {
            if let Ok(existing) = std::fs::symlink_metadata(&resolved) {
                let is_pipe = {
                    use std::os::unix::fs::FileTypeExt;
                    existing.file_type().is_fifo()
                };
                if !is_pipe {
                    return Err(
                        "exists already; an API pipeline replaces a file only with sink.overwrite = true".into(),
                    );
                }
            }
        }
        if is_sink && std::fs::symlink_metadata(&resolved).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(
                "is a symbolic link; an API pipeline never writes through a link (give the name of a new file)".into(),
            );
        }
        // By device and inode too: a hard link to the config file has a name of its own.
        let config = self.config_file.as_deref().and_then(FileId::at);
        if config.is_some() && FileId::at(&resolved) == config {
            return Err("that is the service's config file (the same device and inode)".into());
        }
        Ok(resolved.to_string_lossy().into_owned())
    }
}

fn format_problem(place: &str, format: &str, problems: &mut Vec<String>) {
    if FORMATS_NAMING_FILES.contains(&format.to_ascii_lowercase().as_str()) {
        problems.push(format!(
            "{place}: `{}` opens other files or outputs, so only the config file may use it",
            quoted(format)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_classified_as_ffmpeg_does() {
        assert_eq!(target_of("-", false), Target::Stdio);
        assert_eq!(target_of("null", true), Target::Null);
        assert_eq!(target_of("null", false), Target::File("null"));
        assert_eq!(target_of("in.mp4", false), Target::File("in.mp4"));
        assert_eq!(target_of("/etc/shadow", false), Target::File("/etc/shadow"));
        assert_eq!(target_of("file:/etc/shadow", false), Target::File("/etc/shadow"));
        assert_eq!(target_of("FILE:x", false), Target::File("x"));
        assert_eq!(target_of("udp://0.0.0.0:5000", false), Target::Protocol("udp".into()));
        assert_eq!(target_of("concat:a|b", false), Target::Protocol("concat".into()));
        assert_eq!(
            target_of("subfile,,start,0,end,9,,:/etc/passwd", false),
            Target::Protocol("subfile".into())
        );
        assert_eq!(target_of("movie=/etc/passwd", false), Target::File("movie=/etc/passwd"));
    }

    fn pipeline(source: &str) -> PipelineConfig {
        toml::from_str(&format!(
            "name = \"p\"\nsource = {{ url = \"{source}\" }}\nsink = {{ url = \"null\" }}\n"
        ))
        .expect("a pipeline table")
    }

    #[test]
    fn api_sources_are_opened_with_whitelists_that_bind_nested_opens() {
        let dir = std::env::temp_dir().join(format!("convstream-policy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        std::fs::write(dir.join("clip.ts"), b"x").expect("a file");
        let server = ServerConfig {
            allow_paths: vec![dir.clone()],
            ..ServerConfig::default()
        };
        let policy = ApiPolicy::new(&server, Path::new("/nonexistent/config.toml"));
        for (url, protocols, formats) in [
            ("udp://127.0.0.1:5000", "udp,udplite", false),
            ("rtsp://cam/stream", "rtsp,rtsps,rtp,udp,tcp,tls", false),
            ("https://example.org/live.m3u8", "http,https,tcp,tls", false),
            ("srt://host:9000", "srt", false),
        ] {
            let mut p = pipeline(url);
            assert_eq!(policy.check_pipeline(&mut p), Vec::<String>::new(), "{url}");
            assert_eq!(
                p.source.options.get("protocol_whitelist").map(String::as_str),
                Some(protocols),
                "{url}"
            );
            assert_eq!(p.source.options.contains_key("format_whitelist"), formats, "{url}");
        }
        let mut p = pipeline(&dir.join("clip.ts").display().to_string());
        assert_eq!(policy.check_pipeline(&mut p), Vec::<String>::new());
        assert_eq!(
            p.source.options.get("protocol_whitelist").map(String::as_str),
            Some("file")
        );
        let formats = p.source.options.get("format_whitelist").cloned().unwrap_or_default();
        assert!(
            formats.contains("mpegts") && formats.contains("yuv4mpegpipe"),
            "{formats}"
        );
        for opener in ["hls", "concat", "sdp", "image2", "lavfi"] {
            assert!(!formats.split(',').any(|f| f == opener), "{opener} in {formats}");
        }
        // Raw-byte demuxers: neither forced nor probed, unless the operator allows them.
        for raw in RAW_BYTE_DEMUXERS {
            assert!(!formats.split(',').any(|f| f == *raw), "{raw} in {formats}");
        }
        let mut forced = pipeline(&dir.join("clip.ts").display().to_string());
        forced.source.format = Some("rawvideo".into());
        assert_eq!(policy.check_pipeline(&mut forced).len(), 1);
        let allowing = ApiPolicy::new(
            &ServerConfig {
                allow_raw_sources: true,
                ..server
            },
            Path::new("/nonexistent/config.toml"),
        );
        let mut forced = pipeline(&dir.join("clip.ts").display().to_string());
        forced.source.format = Some("rawvideo".into());
        assert_eq!(allowing.check_pipeline(&mut forced), Vec::<String>::new());
        let formats = forced
            .source
            .options
            .get("format_whitelist")
            .cloned()
            .unwrap_or_default();
        assert!(formats.split(',').any(|f| f == "rawvideo"), "{formats}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn api_pipelines_take_no_ffmpeg_chains_and_only_allowed_audio_options() {
        let policy = ApiPolicy::new(&ServerConfig::default(), Path::new("/nonexistent/config.toml"));
        let mut p = pipeline("udp://127.0.0.1:5000");
        p.filter.ffmpeg_before = Some("drawtext=textfile=/etc/shadow".into());
        p.filter.ffmpeg_after = Some("metadata=mode=print:file=/tmp/x".into());
        p.sink.audio_codec = Some("aac".into());
        p.sink.audio_options.insert("b".into(), "128k".into());
        p.sink.audio_options.insert("dump_extra".into(), "1".into());
        let problems = policy.check_pipeline(&mut p);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems
            .iter()
            .any(|p| p.starts_with("filter.ffmpeg_before: FFmpeg filter chains")));
        assert!(problems
            .iter()
            .any(|p| p.starts_with("filter.ffmpeg_after: FFmpeg filter chains")));
        assert!(problems
            .iter()
            .any(|p| p.starts_with("sink.audio_options: `dump_extra`")));
        assert!(
            !problems.iter().any(|p| p.contains("shadow")),
            "the chain's text is not repeated"
        );
    }

    #[test]
    fn paths_are_inside_a_root_only_when_dot_dot_does_not_leave_it() {
        let root = Path::new("/srv/masks");
        assert!(lexically_inside(Path::new("/srv/masks/a.txt"), root));
        assert!(lexically_inside(Path::new("/srv/masks/x/../a.txt"), root));
        assert!(!lexically_inside(Path::new("/srv/masks/../secret"), root));
        assert!(!lexically_inside(Path::new("/etc/shadow"), root));
        assert!(!lexically_inside(Path::new("/srv/masksx/a"), root));
    }
}

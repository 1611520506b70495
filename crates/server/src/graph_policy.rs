//! Which FFmpeg filters an API pipeline's `filter.graph` may name: those that touch no file,
//! device or network ([`API_GRAPH_FILTERS`]). FFmpeg opens what a filter's options name as
//! soon as the graph is built (`movie=`, `drawtext=textfile=`, `metadata=file=`), which
//! validation does, so the names are read here from the text alone, the way libavfilter's
//! parser splits it, before anything builds the graph.

/// FFmpeg's filters an API graph may use: geometry, pixel formats, timing, colour and the
/// convolution family, none of which opens anything. Every other name is refused.
pub(crate) const API_GRAPH_FILTERS: &[&str] = &[
    "null",
    "copy",
    "scale",
    "format",
    "fps",
    "crop",
    "pad",
    "setsar",
    "setdar",
    "setpts",
    "settb",
    "trim",
    "transpose",
    "hflip",
    "vflip",
    "rotate",
    "gblur",
    "boxblur",
    "unsharp",
    "convolution",
    "sobel",
    "prewitt",
    "roberts",
    "eq",
    "hue",
    "colorchannelmixer",
    "lut",
    "lutyuv",
    "lutrgb",
    "negate",
    "edgedetect",
    "median",
    "hqdn3d",
];

/// The problem of an API graph, if any: the first filter it names that is not in
/// [`API_GRAPH_FILTERS`], or a text whose filters cannot be told apart. The text is never
/// repeated beyond the filter's name.
pub(crate) fn api_graph_problem(graph: &str) -> Option<String> {
    let names = match filter_names(graph) {
        Ok(names) => names,
        Err(reason) => return Some(format!("filter.graph: {reason}")),
    };
    let refused = names.iter().find(|name| !API_GRAPH_FILTERS.contains(&name.as_str()))?;
    let shown: String = refused.chars().take(40).flat_map(char::escape_default).collect();
    Some(format!(
        "filter.graph: FFmpeg's `{shown}` cannot run in an API pipeline (only in the config file): filters of the API may open no file, device or network; allowed here: {}",
        API_GRAPH_FILTERS.join(", ")
    ))
}

/// The filter names of `graph`, as libavfilter's parser reads them: link labels (`[in]`)
/// skipped, each name up to `=`, `,`, `;` or `[` and its arguments up to `[`, `]`, `,` or
/// `;`, where a backslash outside quotes escapes the next character and `'...'` quotes
/// everything up to the next `'`. The instance name (`scale@a`) is set aside.
fn filter_names(graph: &str) -> Result<Vec<String>, String> {
    let mut rest = graph;
    let mut names = Vec::new();
    loop {
        rest = skip_labels(rest)?;
        let (name, after) = token(rest, &['=', ',', ';', '[']);
        rest = after;
        if let Some(args) = rest.strip_prefix('=') {
            rest = token(args, &['[', ']', ',', ';']).1;
        }
        let name = name.split('@').next().unwrap_or_default().to_string();
        if name.is_empty() {
            return Err("a filter without a name; write the graph as `a,b,c`".into());
        }
        names.push(name);
        rest = skip_labels(rest)?;
        match rest.chars().next() {
            None => return Ok(names),
            Some(',' | ';') => rest = &rest[1..],
            Some(other) => return Err(format!("`{}` where a filter should end", other.escape_default())),
        }
    }
}

/// `text` past any `[label]`s and the spaces around them.
fn skip_labels(text: &str) -> Result<&str, String> {
    let mut text = text.trim_start();
    while let Some(label) = text.strip_prefix('[') {
        let Some(end) = label.find(']') else {
            return Err("a link label without its `]`".into());
        };
        text = label[end + 1..].trim_start();
    }
    Ok(text)
}

/// FFmpeg's `av_get_token`: the text up to the first of `stops` outside quotes and escapes,
/// unescaped and unquoted, trailing spaces trimmed; and what follows.
fn token<'a>(text: &'a str, stops: &[char]) -> (String, &'a str) {
    let mut out = String::new();
    let mut chars = text.trim_start().char_indices().peekable();
    let start = text.len() - text.trim_start().len();
    let mut kept = 0;
    while let Some((at, c)) = chars.next() {
        match c {
            _ if stops.contains(&c) => {
                out.truncate(kept);
                return (out, &text[start + at..]);
            }
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
                kept = out.len();
            }
            '\'' => {
                for (_, quoted) in chars.by_ref() {
                    if quoted == '\'' {
                        break;
                    }
                    out.push(quoted);
                }
                kept = out.len();
            }
            _ => {
                out.push(c);
                if !c.is_whitespace() {
                    kept = out.len();
                }
            }
        }
    }
    out.truncate(kept);
    (out, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_ffmpeg_reads_them() {
        let names = filter_names("[in] scale=1280:-2 , convolution='1 2 1 2 4 2 1 2 1':0rdiv=1/16,format=gray [out]");
        assert_eq!(names.unwrap(), ["scale", "convolution", "format"]);
        assert_eq!(filter_names("null@mask;sobel@e").unwrap(), ["null", "sobel"]);
        // A backslash escapes outside quotes only: here the quote ends after `a\`, and FFmpeg
        // reads `movie` as the next filter.
        assert_eq!(filter_names(r"scale='a\',movie=x").unwrap(), ["scale", "movie"]);
        assert_eq!(filter_names(r"scale=w=1\,movie").unwrap(), ["scale"]);
        assert_eq!(filter_names(r"mo\vie=x").unwrap(), ["movie"]);
        assert!(filter_names("scale,,sobel").is_err());
        assert!(filter_names("[in scale").is_err());
    }

    #[test]
    fn filters_that_open_files_are_refused_by_name() {
        assert_eq!(
            api_graph_problem("scale=1280:-2,convolution=0m=1 2 1 2 4 2 1 2 1,format=gray"),
            None
        );
        assert_eq!(api_graph_problem("scale=64:-2,null@mask,format=gray"), None);
        for (graph, named) in [
            ("movie=/etc/passwd,scale=64:-2", "movie"),
            ("scale=64:-2,drawtext=textfile=/etc/shadow", "drawtext"),
            (r"scale='a\',movie=/etc/shadow", "movie"),
            ("sobel,metadata=mode=print:file=/tmp/x", "metadata"),
            ("sendcmd=f=/tmp/cmds,sobel", "sendcmd"),
            ("'movie'=/etc/passwd", "movie"),
        ] {
            let problem = api_graph_problem(graph).expect(graph);
            assert!(
                problem.starts_with(&format!("filter.graph: FFmpeg's `{named}` cannot run")),
                "{problem}"
            );
            assert!(!problem.contains("/etc") && !problem.contains("/tmp"), "{problem}");
        }
    }
}

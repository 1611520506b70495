//! A `-vf` / `-filter_complex` text read by libavfilter itself (`avfilter_graph_parse2`), so
//! that its syntax, escaping, option names, defaults and ranges are FFmpeg's: the chain's
//! filters in order, each with the text it was written as and every option's value as the
//! initialised filter holds it (`av_opt_get`).

use ffmpeg_next as ffmpeg;
use std::ffi::{c_char, CStr, CString};
use std::ptr;

use ffmpeg::ffi::{
    av_free, av_opt_get, av_opt_next, avfilter_graph_alloc, avfilter_graph_free, avfilter_graph_parse2,
    avfilter_inout_free, AVFilterContext, AVFilterInOut, AVOptionType,
};

use crate::ffmpeg::log;

/// One filter of a chain, as libavfilter made it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainFilter {
    /// The filter's name (`scale`, `convolution`), whatever instance name it was given.
    pub name: String,
    /// The filter as written in the chain (`scale=640:-2`), for a graph of its own.
    pub text: String,
    /// Every option the filter has, by its full name, with the value it holds after
    /// FFmpeg read the text: the typed value, or FFmpeg's default.
    pub options: Vec<(String, String)>,
}

impl ChainFilter {
    /// The value of option `name`, as FFmpeg holds it.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Why a filter graph's text was refused: FFmpeg's own reason, or the shape convstream does
/// not run, with the option it was given to.
#[derive(Debug, thiserror::Error)]
#[error("{option}: {reason}")]
pub struct ChainError {
    /// The option the text came with (`-vf`, `-filter_complex`, `filter.vf`).
    pub option: String,
    /// What is wrong and what to do.
    pub reason: String,
}

/// Reads `text` with libavfilter: one chain from the one video input to the one output, its
/// filters in order. `option` names where the text came from, for messages.
pub fn parse_chain(option: &str, text: &str) -> Result<Vec<ChainFilter>, ChainError> {
    let refuse = |reason: String| ChainError {
        option: option.to_string(),
        reason,
    };
    let Ok(spec) = CString::new(text) else {
        return Err(refuse("the filter graph holds a NUL character".into()));
    };
    let graph = Graph::parse(&spec).map_err(refuse)?;
    let texts = filter_texts(text);
    let filters = graph.chain().map_err(refuse)?;
    if filters.len() != texts.len() {
        return Err(refuse(format!(
            "convstream reads the chain as {} filters where FFmpeg made {}: write it as one chain `a,b,c` (one input, one output)",
            texts.len(),
            filters.len()
        )));
    }
    filters
        .into_iter()
        .zip(texts)
        .map(|((name, options), text)| {
            let written = filter_name(&text);
            if written != name {
                return Err(refuse(format!(
                    "convstream reads `{written}` where FFmpeg made `{name}`: write the chain as `a,b,c` without link labels inside"
                )));
            }
            Ok(ChainFilter { name, text, options })
        })
        .collect()
}

/// A filter's options by name, with their values.
type Options = Vec<(String, String)>;

/// A parsed libavfilter graph, freed when dropped.
struct Graph {
    graph: *mut ffmpeg::ffi::AVFilterGraph,
    inputs: *mut AVFilterInOut,
    outputs: *mut AVFilterInOut,
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or was allocated by libavfilter for this graph, and is
        // freed once here.
        unsafe {
            avfilter_inout_free(&mut self.inputs);
            avfilter_inout_free(&mut self.outputs);
            avfilter_graph_free(&mut self.graph);
        }
    }
}

impl Graph {
    /// `avfilter_graph_parse2`: every filter created and initialised from its options (the
    /// ranges checked), the open pads left for the caller. FFmpeg's complaint is the reason.
    fn parse(spec: &CStr) -> Result<Graph, String> {
        // SAFETY: a fresh graph; null means out of memory.
        let graph = unsafe { avfilter_graph_alloc() };
        if graph.is_null() {
            return Err("out of memory for a filter graph".into());
        }
        // FFmpeg's complaint (the option and its range) comes through its log.
        crate::ffmpeg::init();
        let mut parsed = Graph {
            graph,
            inputs: ptr::null_mut(),
            outputs: ptr::null_mut(),
        };
        // SAFETY: the graph is valid, the text NUL-terminated; the open pads are returned in
        // the two lists, which `Drop` frees.
        let (code, first_error) = log::first_error_during(|| unsafe {
            avfilter_graph_parse2(parsed.graph, spec.as_ptr(), &mut parsed.inputs, &mut parsed.outputs)
        });
        if code < 0 {
            let reason = first_error.unwrap_or_else(|| ffmpeg::Error::from(code).to_string());
            return Err(format!("FFmpeg refuses the filter graph: {reason}"));
        }
        Ok(parsed)
    }

    /// The filters from the open input to the open output, each with its options; refused
    /// unless the graph is one chain with one video input and one output.
    fn chain(&self) -> Result<Vec<(String, Options)>, String> {
        // SAFETY: the lists and the graph are libavfilter's, valid while `self` lives.
        unsafe {
            let (inputs, outputs) = (count(self.inputs), count(self.outputs));
            if inputs != 1 || outputs != 1 {
                return Err(format!(
                    "the graph has {inputs} open inputs and {outputs} open outputs; convstream runs one chain from the input's video to one output"
                ));
            }
            let total = (*self.graph).nb_filters as usize;
            let mut filters = Vec::with_capacity(total);
            let mut at: *mut AVFilterContext = (*self.inputs).filter_ctx;
            while !at.is_null() && filters.len() < total {
                let name = text_of((*(*at).filter).name);
                if (*at).nb_inputs != 1 || (*at).nb_outputs != 1 {
                    return Err(format!(
                        "`{name}` has {} inputs and {} outputs; convstream runs a chain of filters with one input and one output each",
                        (*at).nb_inputs,
                        (*at).nb_outputs
                    ));
                }
                filters.push((name, options_of(at)));
                let link = *(*at).outputs;
                at = if link.is_null() { ptr::null_mut() } else { (*link).dst };
            }
            if filters.len() != total {
                return Err("the graph is not one chain: write it as `a,b,c`".into());
            }
            Ok(filters)
        }
    }
}

/// How many entries a list of open pads has.
///
/// # Safety
/// `list` is null or a valid list from libavfilter.
unsafe fn count(mut list: *const AVFilterInOut) -> usize {
    let mut n = 0;
    while !list.is_null() {
        n += 1;
        // SAFETY: per the function's contract.
        list = unsafe { (*list).next };
    }
    n
}

/// # Safety
/// `text` is null or a NUL-terminated string.
unsafe fn text_of(text: *const c_char) -> String {
    match text.is_null() {
        true => String::new(),
        // SAFETY: per the function's contract.
        false => unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned(),
    }
}

/// Every option of an initialised filter with the value it holds (constants left out).
///
/// # Safety
/// `filter` is a valid, initialised filter context.
unsafe fn options_of(filter: *mut AVFilterContext) -> Options {
    let mut options = Vec::new();
    // SAFETY: per the function's contract: `priv` is the filter's option struct, walked with
    // its own class's table; it starts with that class only where the filter has one.
    unsafe {
        let object = (*filter).priv_;
        if object.is_null() || (*filter).filter.is_null() || (*(*filter).filter).priv_class.is_null() {
            return options;
        }
        let mut option = av_opt_next(object, ptr::null());
        while !option.is_null() {
            if (*option).type_ != AVOptionType::AV_OPT_TYPE_CONST && !(*option).name.is_null() {
                let mut value: *mut u8 = ptr::null_mut();
                if av_opt_get(object, (*option).name, 0, &mut value) >= 0 && !value.is_null() {
                    options.push((text_of((*option).name), text_of(value as *const c_char)));
                    av_free(value.cast());
                }
            }
            option = av_opt_next(object, option);
        }
    }
    options
}

/// The chain's filters as written, split at the commas FFmpeg splits at (outside quotes and
/// backslash escapes), with the link labels at its ends (`[0:v]`, `[out]`) taken off.
fn filter_texts(text: &str) -> Vec<String> {
    let (mut parts, mut current, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in text.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    let unlabelled = |part: &str| {
        let mut part = part.trim();
        while let Some(rest) = part
            .strip_prefix('[')
            .and_then(|p| p.split_once(']').map(|(_, r)| r.trim_start()))
        {
            part = rest;
        }
        while part.ends_with(']') {
            match part.rfind('[') {
                Some(open) => part = part[..open].trim_end(),
                None => break,
            }
        }
        part.to_string()
    };
    parts.iter().map(|part| unlabelled(part)).collect()
}

/// How many filters a chain (`a,b,c`) has, as FFmpeg splits it.
pub(crate) fn filter_count(text: &str) -> usize {
    filter_texts(text).len()
}

/// The filter's name as written: before `=` and any `@instance` name.
fn filter_name(text: &str) -> &str {
    let name = text.split_once('=').map_or(text, |(name, _)| name);
    name.split('@').next().unwrap_or(name).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_read_with_ffmpegs_defaults() {
        let chain = parse_chain("-vf", "scale=640:-2, sobel=scale=2").expect("parsed");
        let names: Vec<&str> = chain.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["scale", "sobel"]);
        assert_eq!(chain[0].text, "scale=640:-2");
        assert_eq!(chain[1].option("scale"), Some("2.000000"));
        assert_eq!(chain[1].option("planes"), Some("15"));
        assert_eq!(chain[1].option("delta"), Some("0.000000"));
    }

    #[test]
    fn labels_at_the_ends_and_quotes_are_ffmpegs() {
        let chain = parse_chain("-filter_complex", "[0:v]convolution='1 2 1 2 4 2 1 2 1'[v]").expect("parsed");
        assert_eq!(chain[0].option("0m"), Some("1 2 1 2 4 2 1 2 1"));
        assert_eq!(chain[0].text, "convolution='1 2 1 2 4 2 1 2 1'");
    }

    #[test]
    fn ffmpeg_refuses_what_it_refuses() {
        for (text, says) in [
            ("gblur=sigma=-3", "sigma"),
            ("gblur=steps=100", "steps"),
            ("convolution=0rdiv=-1", "0rdiv"),
            (",sobel,", "refuses"),
            ("nosuchfilter", "nosuchfilter"),
        ] {
            let error = parse_chain("-vf", text).expect_err(text).to_string();
            assert!(error.starts_with("-vf: ") && error.contains(says), "{text}: {error}");
        }
        let error = parse_chain("-filter_complex", "[0:v]split[a][b]")
            .unwrap_err()
            .to_string();
        assert!(error.contains("open outputs"), "{error}");
    }

    #[test]
    fn texts_split_as_ffmpeg_splits() {
        assert_eq!(
            filter_texts(r"[in]drawtext=text='a,b':x=1,scale=2\,3[out]"),
            ["drawtext=text='a,b':x=1", r"scale=2\,3"]
        );
        assert_eq!(filter_name("sobel@edges=planes=1"), "sobel");
    }
}

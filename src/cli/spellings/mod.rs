//! FFmpeg's spellings of `run`'s flags, read as convstream's own before clap sees them.
//!
//! clap takes long flags with two dashes only, and FFmpeg users type `-c:v libx265`,
//! `-f mpegts`, `-frames:v 100`, `-re`. Each such word is rewritten to the long flag of the
//! same meaning (see [`SPELLINGS`]); as in FFmpeg, a spelling before an `-i` applies to the
//! input (`-f rawvideo -i -` is the input's format, `-c:v h264_cuvid -i` its decoder) and
//! one after the last `-i` to the output. Values are never rewritten: the word after a flag
//! that takes a value is passed on as it is. The rewrites are remembered so that clap's
//! errors name the flag as it was typed.
//!
//! Every other single-dash word is one FFmpeg option by its full name, never a cluster of
//! one-letter flags (`-hide_banner` is not `-h`): with its stream specifier (`-c:a copy`,
//! `-b:v`, `-frames:v:0`), a global option honoured (`-hide_banner`, `-nostdin`,
//! `-loglevel`/`-v`, `-stats`/`-nostats`, `-threads`, `-y`/`-n`), a `-vf` chain read into
//! masks (`convstream_media::split_graph`, as a config's `filter.graph`), a codec's or format's AVOption passed
//! on as FFmpeg passes it (`--encoder-opt`, `--muxer-opt`, `--input-opt`), or refused by its
//! name with what to use instead ([`ffmpeg_options`](super::ffmpeg_options)); every refusal
//! of a command line at once.

use std::ffi::OsString;

use convstream_config::{EngineStage, MASK_PLACEHOLDER};

/// Where an FFmpeg spelling applies, as FFmpeg decides it: by whether an input follows.
#[derive(Debug, Clone, Copy)]
enum Applies {
    /// The same flag wherever it stands.
    Always(&'static str),
    /// The first before an `-i`, the second after the last one (`None`: no such flag there).
    InputOrOutput(Option<&'static str>, Option<&'static str>),
}

/// FFmpeg's spellings and the flags they are. `-an`, `-ss`, `-t`, `-i` and `-y` are
/// convstream's own spellings too.
const SPELLINGS: &[(&str, Applies)] = &[
    ("-an", Applies::Always("--no-audio")),
    ("-sn", Applies::Always("--no-subtitles")),
    ("-ss", Applies::Always("--ss")),
    ("-re", Applies::Always("--realtime")),
    ("-copyts", Applies::Always("--copyts")),
    ("-frames:v", Applies::Always("--frames")),
    ("-vframes", Applies::Always("--frames")),
    ("-frames", Applies::Always("--frames")),
    ("-b", Applies::Always("--bitrate")),
    ("-b:v", Applies::Always("--bitrate")),
    ("-crf", Applies::Always("--crf")),
    ("-preset", Applies::Always("--preset")),
    ("-c:v", Applies::InputOrOutput(Some("--decoder"), Some("--codec"))),
    ("-codec:v", Applies::InputOrOutput(Some("--decoder"), Some("--codec"))),
    ("-vcodec", Applies::InputOrOutput(Some("--decoder"), Some("--codec"))),
    ("-f", Applies::InputOrOutput(Some("--input-format"), Some("--format"))),
    (
        "-pix_fmt",
        Applies::InputOrOutput(Some("--pix-fmt"), Some("--output-pix-fmt")),
    ),
    ("-video_size", Applies::InputOrOutput(Some("--size"), None)),
    ("-s", Applies::InputOrOutput(Some("--size"), Some("--output-size"))),
    (
        "-r",
        Applies::InputOrOutput(Some("--framerate"), Some("--output-framerate")),
    ),
    ("-framerate", Applies::InputOrOutput(Some("--framerate"), None)),
];

/// The command line with FFmpeg's spellings rewritten, and what was rewritten.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    pub(crate) args: Vec<OsString>,
    /// (as typed, the flag it became), in the order typed.
    pub(crate) typed: Vec<(String, String)>,
}

/// The spellings that have no convstream meaning where they stand, one problem a line. Each
/// problem quotes what was typed, so each is shown with its control characters escaped
/// (`-vf $'sobel\nFAKE ERROR'` cannot start a line of its own).
#[derive(Debug, thiserror::Error)]
#[error("{}", shown_one_a_line(.0))]
pub(crate) struct SpellingError(Vec<String>);

fn shown_one_a_line(problems: &[String]) -> String {
    let lines: Vec<_> = problems
        .iter()
        .map(|problem| convstream_core::escape_control(problem))
        .collect();
    lines.join("\n")
}

/// Rewrites the words of `convstream run ...` (the program's name first); other
/// subcommands are passed on untouched. `value_flags` are the flags of `run` that take a
/// value (the word after them is never rewritten). Every single-dash word is read as FFmpeg
/// reads it, as one option by its full name, never as a cluster of one-letter flags: rewritten
/// to convstream's flag of the same meaning, or refused by that name, every refusal at once.
pub(crate) fn rewrite(args: Vec<OsString>, value_flags: &[String]) -> Result<Rewritten, SpellingError> {
    let Some(run_at) = args.iter().position(|a| a == "run").filter(|&at| at == 1) else {
        return Ok(Rewritten {
            args,
            typed: Vec::new(),
        });
    };
    let takes_value = |word: &str| value_flags.iter().any(|flag| flag == word) || ffmpeg_takes_value(word);
    let is_input = |word: &str| word == "-i" || word == "--input" || word.starts_with("--input=");
    // Positions of the flags among the words (not values, not after `--`).
    let mut flag_at = vec![false; args.len()];
    let mut at = run_at + 1;
    while at < args.len() {
        let Some(word) = args[at].to_str() else {
            at += 1;
            continue;
        };
        if word == "--" {
            break;
        }
        if word.starts_with('-') && word.len() > 1 {
            flag_at[at] = true;
            if takes_value(word) {
                at += 1;
            }
        }
        at += 1;
    }
    let last_input = (0..args.len())
        .filter(|&at| flag_at[at] && args[at].to_str().is_some_and(is_input))
        .max();
    let line = LineContext::of(&args, &flag_at, last_input);
    let mut out = Rewritten::default();
    let mut problems = Vec::new();
    let mut at = 0;
    while at < args.len() {
        let word = args[at].clone();
        let typed = word.to_str().filter(|_| flag_at[at]).map(str::to_string);
        at += 1;
        let Some(typed) = typed else {
            out.args.push(word);
            continue;
        };
        let ffmpeg_word = typed.starts_with('-') && !typed.starts_with("--") && !OWN_SHORT.contains(&typed.as_str());
        if !ffmpeg_word {
            if typed == "-y" {
                // clap names it `--overwrite` (`-y` and `-n` together): said as typed.
                out.typed.push((typed.clone(), "--overwrite".into()));
            }
            out.args.push(word);
            continue;
        }
        let value = match ffmpeg_takes_value(&typed) {
            true => {
                let value = args.get(at).and_then(|v| v.to_str()).map(str::to_string);
                at += 1;
                match value {
                    Some(value) => Some(value),
                    // The flag it means, alone, so that clap says which value it takes
                    // (`a value is required for '-f <FORMAT>'`).
                    None => match spelling_flags(&typed, &typed, None, false) {
                        Ok(Some(flags)) if flags.len() == 1 => {
                            out.typed.push((typed.clone(), flags[0].clone()));
                            out.args.push(flags[0].clone().into());
                            continue;
                        }
                        _ => {
                            problems.push(format!("{typed} needs a value"));
                            continue;
                        }
                    },
                }
            }
            false => None,
        };
        let before_input = last_input.is_some_and(|input| at <= input);
        match ffmpeg_word_to_flags(&typed, value.as_deref(), before_input, &out.args, &line) {
            Ok(flags) => {
                if let Some(long) = flags.first() {
                    out.typed.push((typed.clone(), long.clone()));
                }
                out.args.extend(flags.into_iter().map(OsString::from));
            }
            Err(problem) => problems.push(problem),
        }
    }
    problems.extend(flags_that_repeat_the_filter_chain(&args, &flag_at, &out.typed));
    match problems.is_empty() {
        true => Ok(out),
        false => Err(SpellingError(problems)),
    }
}

/// What one FFmpeg word means can depend on others of the line: `-map 0:v` alone leaves the
/// audio out, beside `-map 0:a?` it does not; `-vsync cfr` needs `-r`.
#[derive(Debug, Default)]
struct LineContext {
    /// A `-map` names the input's audio (`0:a`, `0:a?`, `0:a:0`).
    audio_mapped: bool,
    /// `-r` is given after the last input: the output has a constant rate.
    output_rate: bool,
}

impl LineContext {
    fn of(args: &[OsString], flag_at: &[bool], last_input: Option<usize>) -> LineContext {
        let mut line = LineContext::default();
        for (at, word) in args.iter().enumerate().filter(|(at, _)| flag_at[*at]) {
            let value = args.get(at + 1).and_then(|v| v.to_str()).unwrap_or("");
            match word.to_str() {
                Some("-map") => line.audio_mapped |= value.starts_with("0:a"),
                Some("-r") if last_input.is_some_and(|input| at > input) => line.output_rate = true,
                _ => {}
            }
        }
        line
    }
}

/// convstream's own one-letter flags (`-i`, `-o`, `-t`, `-y`; clap's `-h`, `-V`), which FFmpeg
/// spells the same or has not.
const OWN_SHORT: &[&str] = &["-i", "-o", "-t", "-y", "-h", "-V"];

/// `-name:specifier` split: the name, and the stream type the specifier selects (`v` for
/// the video, `o` for any other type, `#` for a stream index or any other specifier).
fn split_specifier(word: &str) -> (&str, Option<char>) {
    let word = word.trim_start_matches('-');
    match word.split_once(':') {
        None => (word, None),
        Some((name, spec)) => {
            let kind = match spec.chars().next() {
                Some('v' | 'V') => 'v',
                Some('a' | 's' | 'd' | 't') => 'o',
                _ => '#',
            };
            (name, Some(kind))
        }
    }
}

/// Whether a single-dash word takes a value, as FFmpeg reads it.
fn ffmpeg_takes_value(word: &str) -> bool {
    if !word.starts_with('-') || word.starts_with("--") || OWN_SHORT.contains(&word) {
        return false;
    }
    let (name, _) = split_specifier(word);
    if SPELLINGS.iter().any(|(spelling, _)| *spelling == word) {
        return spelling_takes_value(word);
    }
    match super::ffmpeg_options::ffmpeg_option(name) {
        Some(value) => value,
        None => {
            matches!(
                name,
                "vf" | "filter_complex" | "lavfi" | "threads" | "map" | "movflags" | "stream_loop"
            ) || convstream_media::option_owner(name).is_some()
        }
    }
}

/// The flags one FFmpeg word (with its value) means to `run`, or why it is refused, naming it
/// as typed. `so_far`: the flags already written (a switch is given once).
fn ffmpeg_word_to_flags(
    typed: &str,
    value: Option<&str>,
    before_input: bool,
    so_far: &[OsString],
    line: &LineContext,
) -> Result<Vec<String>, String> {
    use convstream_media::{option_owner, OptionOwner};
    let value_text = value.unwrap_or("");
    let refuse = |why: &str| Err(format!("{typed}: {why}"));
    let once = |flag: &str| match so_far.iter().any(|f| f == flag) {
        true => Vec::new(),
        false => vec![flag.to_string()],
    };
    let (name, kind) = split_specifier(typed);
    // An audio stream's option (`-c:a`, `-b:a`, `-acodec`, `-ar`): the audio encoder's.
    let audio = typed.split_once(':').is_some_and(|(_, spec)| spec.starts_with('a'))
        || (kind.is_none() && matches!(name, "acodec" | "ab" | "ar" | "ac"));
    match (name, kind) {
        ("c" | "codec" | "acodec", _) if audio && !before_input && value_text != "copy" => {
            let known = ffmpeg_next::encoder::find_by_name(value_text)
                .is_some_and(|codec| codec.is_encoder() && codec.medium() == ffmpeg_next::media::Type::Audio);
            return match known {
                true => Ok(vec!["--audio-codec".into(), value_text.into()]),
                false => refuse("no audio encoder of that name in this FFmpeg build (`ffmpeg -encoders` lists them), or copy"),
            };
        }
        ("b" | "ab" | "ar" | "ac", _) if audio && !before_input => {
            let key = if name == "ab" { "b" } else { name };
            return Ok(vec!["--audio-opt".into(), format!("{key}={value_text}")]);
        }
        (_, Some('#')) => {
            return refuse("convstream resolves no stream index or other specifier before the input opens; use :v for the video (:a for audio)")
        }
        ("c" | "codec" | "acodec" | "scodec" | "dcodec", Some('o')) | ("acodec" | "scodec" | "dcodec", None) => {
            return match value_text {
                "copy" => Ok(Vec::new()),
                _ => refuse("convstream copies subtitles and data as they are: only `copy` (or -an to leave them out)"),
            }
        }
        (_, Some('o')) => return refuse(super::ffmpeg_options::refusal("af")),
        ("c" | "codec", None) if value_text == "copy" => return refuse("convstream encodes the video it filters; -c:a copy copies the rest"),
        ("c" | "codec", None) => return Ok(vec![if before_input { "--decoder" } else { "--codec" }.into(), value_text.into()]),
        ("vf" | "filter", _) | ("filter_complex" | "lavfi", None) => return filter_flags(typed, value_text),
        ("hide_banner" | "nostdin" | "stdin", None) => return Ok(Vec::new()),
        ("n", None) => return Ok(once("--no-overwrite")),
        ("stats", None) => return Ok(once("--progress")),
        ("nostats", None) => return Ok(once("--no-progress")),
        ("loglevel" | "v", None) => return log_level(typed, value_text).map(|level| vec!["--log-level".into(), level.into()]),
        ("threads", None) if before_input => return Ok(vec!["--decoder-threads".into(), value_text.into()]),
        ("vsync" | "fps_mode", None) => {
            return match value_text {
                // convstream passes every frame with its timestamp, as these do.
                "passthrough" | "0" | "vfr" | "2" | "auto" | "-1" | "drop" => Ok(Vec::new()),
                "cfr" | "1" if line.output_rate => Ok(Vec::new()),
                "cfr" | "1" => refuse("a constant rate needs one: give -r RATE after -i (frames are repeated or dropped to it)"),
                _ => refuse("takes passthrough, cfr, vfr, drop or auto (0, 1, 2, -1)"),
            }
        }
        // FFmpeg's fixed quantiser, which the encoder's `q` option is (see sink.options).
        ("q" | "qscale", None | Some('v')) => return Ok(vec!["--encoder-opt".into(), format!("q={value_text}")]),
        ("map", None) => {
            return match value_text {
                "0" => Ok(Vec::new()),
                // The video and the audio mapped, as FFmpeg maps them: no subtitles.
                "0:v" | "0:V" | "0:v:0" | "0:V:0" if line.audio_mapped => Ok(once("--no-subtitles")),
                "0:v" | "0:V" | "0:v:0" | "0:V:0" => Ok(once("--no-audio")),
                // The audio, copied beside the video (with a `?`: if there is any).
                "0:a" | "0:a?" | "0:a:0" | "0:a:0?" => Ok(once("--no-subtitles")),
                // -filter_complex's output, by its label: the one chain's (read with it), alone.
                label if label.starts_with('[') && label.ends_with(']') => Ok(once("--no-audio")),
                _ => refuse("convstream takes its one input's video (-map 0:v), its audio beside it (-map 0:a?), every stream (-map 0) or -filter_complex's output by its label"),
            }
        }
        _ => {}
    }
    let spelled = match kind {
        Some(_) => typed.to_string(),
        None => format!("-{name}"),
    };
    if let Some(flags) = spelling_flags(&spelled, typed, value, before_input)? {
        return Ok(flags);
    }
    if super::ffmpeg_options::ffmpeg_option(name).is_some() {
        return refuse(super::ffmpeg_options::refusal(name));
    }
    match (option_owner(name), before_input) {
        (Some(OptionOwner::Format), true) => Ok(vec!["--input-opt".into(), format!("{name}={value_text}")]),
        (Some(OptionOwner::Codec), false) => Ok(vec!["--encoder-opt".into(), format!("{name}={value_text}")]),
        (Some(OptionOwner::Format), false) => Ok(vec!["--muxer-opt".into(), format!("{name}={value_text}")]),
        (Some(OptionOwner::Codec), true) => refuse("a decoder's option; convstream's decoders take FFmpeg's defaults"),
        (None, _) => refuse("no option of FFmpeg's (nor of this build's codecs and formats) or of convstream's; `convstream run --help` lists convstream's"),
    }
}

/// The flags of [`SPELLINGS`], `-stream_loop` and `-movflags`; `None` when `spelled` is none.
fn spelling_flags(
    spelled: &str,
    typed: &str,
    value: Option<&str>,
    before_input: bool,
) -> Result<Option<Vec<String>>, String> {
    let value_text = value.unwrap_or("");
    let with_value = |long: &str| {
        let mut flags = vec![long.to_string()];
        flags.extend(value.map(str::to_string));
        flags
    };
    match spelled {
        "-stream_loop" => {
            return match value_text.trim().parse::<i64>() {
                Ok(-1) => Ok(Some(vec!["--loop".into()])),
                Ok(0) => Ok(Some(Vec::new())),
                Ok(times) if times > 0 => Ok(Some(vec!["--loop-count".into(), times.to_string()])),
                _ => Err(format!(
                    "-stream_loop `{}`: use N (start over N times: the input plays N + 1 times), -1 (for ever: --loop) or 0 (play once)",
                    convstream_core::quoted(value_text)
                )),
            }
        }
        "-movflags" => return Ok(Some(vec!["--muxer-opt".into(), format!("movflags={value_text}")])),
        _ => {}
    }
    let Some((_, applies)) = SPELLINGS
        .iter()
        .find(|(spelling, _)| *spelling == spelled || spelled.strip_suffix(":0").is_some_and(|s| s == *spelling))
    else {
        return Ok(None);
    };
    let long = match *applies {
        Applies::Always(long) => Some(long),
        Applies::InputOrOutput(input, output) => match before_input {
            true => input,
            false => output,
        },
    };
    if long == Some("--output-framerate") {
        // Before logging starts: said on the terminal as the other command-line warnings are.
        eprintln!(
            "warning: {}",
            convstream_core::for_display(&format!(
                "{typed} {value_text}: frames are repeated or dropped as FFmpeg's fps filter does (`-vf fps={value_text}`); ffmpeg's own -r can choose other frames, a frame apart"
            ))
        );
    }
    match long {
        Some("--codec") if value_text == "copy" => Err(format!(
            "{typed} copy: the video is filtered, so it is encoded again; name an encoder (libx264, as \
             `convstream doctor` lists them) or leave {typed} out for the container's default"
        )),
        Some(long) => Ok(Some(with_value(long))),
        None => Err(format!(
            "{typed} applies to the input only: put it before -i (as in FFmpeg); for the output's {} use {}",
            if spelled == "-framerate" { "frame rate" } else { "size" },
            if spelled == "-framerate" { "-r" } else { "-s" }
        )),
    }
}

/// The flags typed beside `-vf` that say again what its chain says (the masks, the planes,
/// the border), each refused by the name the user typed: `-vf` becomes those flags, so clap
/// would otherwise call the user's own flag a repeated `-vf`.
fn flags_that_repeat_the_filter_chain(args: &[OsString], flag_at: &[bool], typed: &[(String, String)]) -> Vec<String> {
    let Some((chain_flag, _)) = typed.iter().find(|(_, became)| became == "--mask") else {
        return Vec::new();
    };
    let said_by_the_chain = [
        "--mask",
        "--plane-mask",
        "--planes",
        "--border",
        "--ffmpeg-before",
        "--ffmpeg-after",
    ];
    args.iter()
        .zip(flag_at)
        .filter(|(_, &is_flag)| is_flag)
        .filter_map(|(word, _)| word.to_str())
        .filter_map(|word| {
            let flag = word.split_once('=').map_or(word, |(flag, _)| flag);
            said_by_the_chain.contains(&flag).then(|| {
                format!("{flag} cannot be given with {chain_flag}: the filter chain says the masks, planes and border; give one or the other")
            })
        })
        .collect()
}

/// `-vf CHAIN`: a mask per plane and the border, from FFmpeg's convolution filters, and
/// FFmpeg's other filters before and after them, split as a config's `filter.graph` is.
fn filter_flags(typed: &str, chain: &str) -> Result<Vec<String>, String> {
    let stages = convstream_media::split_graph(typed, chain)?;
    for warning in &stages.warnings {
        // Before logging starts: said on the terminal as the other command-line warnings are.
        // One line: the warning may quote what was typed.
        eprintln!("warning: {}", convstream_core::for_display(warning));
    }
    let mut flags = vec!["--mask".to_string(), "identity".to_string()];
    match stages.engine {
        EngineStage::Filters { plane_masks, border } => {
            for (plane, spec) in plane_masks {
                flags.push("--plane-mask".into());
                flags.push(format!("{plane}={spec}"));
            }
            if let Some(border) = border {
                flags.push("--border".into());
                flags.push(border.into());
            }
        }
        EngineStage::Absent => {}
        EngineStage::Mask => {
            return Err(format!(
                "{typed}: `{MASK_PLACEHOLDER}` marks where a config's filter.mask runs; on the command line write the convolution filter in the chain, or give --mask with --ffmpeg-before and --ffmpeg-after"
            ))
        }
    }
    for (flag, chain) in [("--ffmpeg-before", stages.before), ("--ffmpeg-after", stages.after)] {
        if let Some(chain) = chain {
            flags.push(flag.into());
            flags.push(chain);
        }
    }
    Ok(flags)
}

/// FFmpeg's log level (a name or number, with `+`/`repeat+` flags) as convstream's.
fn log_level(typed: &str, value: &str) -> Result<&'static str, String> {
    let level = value.rsplit('+').next().unwrap_or(value);
    Ok(match level {
        "quiet" | "-8" | "panic" | "0" | "fatal" | "8" | "error" | "16" => "error",
        "warning" | "24" => "warn",
        "info" | "32" => "info",
        "verbose" | "40" | "debug" | "48" => "debug",
        "trace" | "56" => "trace",
        _ => {
            return Err(format!(
                "{typed} {value:?}: a level is quiet, panic, fatal, error, warning, info, verbose, debug or trace"
            ))
        }
    })
}

/// Whether an FFmpeg spelling takes a value (every one but the switches).
fn spelling_takes_value(spelling: &str) -> bool {
    !matches!(spelling, "-an" | "-sn" | "-re" | "-copyts")
}

/// clap's error text with each rewritten flag named as the user typed it:
/// `'--frames <N>'` becomes `'-frames:v <N>'`.
pub(crate) fn as_typed(message: &str, typed: &[(String, String)]) -> String {
    let mut text = message.to_string();
    for (spelling, long) in typed {
        for end in [" ", "'", "="] {
            let from = format!("'{long}{end}");
            let to = format!("'{spelling}{}", if end == "=" { " " } else { end });
            text = text.replace(&from, &to);
        }
    }
    text
}

#[cfg(test)]
mod tests;

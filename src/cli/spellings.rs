//! FFmpeg's spellings of `run`'s flags, read as convstream's own before clap sees them.
//!
//! clap takes long flags with two dashes only, and FFmpeg users type `-c:v libx265`,
//! `-f mpegts`, `-frames:v 100`, `-re`. Each such word is rewritten to the long flag of the
//! same meaning (see [`SPELLINGS`]); as in FFmpeg, a spelling before an `-i` applies to the
//! input (`-f rawvideo -i -` is the input's format, `-c:v h264_cuvid -i` its decoder) and
//! one after the last `-i` to the output. Values are never rewritten: the word after a flag
//! that takes a value is passed on as it is. The rewrites are remembered so that clap's
//! errors name the flag as it was typed.

use std::ffi::OsString;

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
    ("-ss", Applies::Always("--ss")),
    ("-re", Applies::Always("--realtime")),
    ("-copyts", Applies::Always("--copyts")),
    ("-frames:v", Applies::Always("--frames")),
    ("-vframes", Applies::Always("--frames")),
    ("-b:v", Applies::Always("--bitrate")),
    ("-crf", Applies::Always("--crf")),
    ("-preset", Applies::Always("--preset")),
    ("-c:v", Applies::InputOrOutput(Some("--decoder"), Some("--codec"))),
    ("-codec:v", Applies::InputOrOutput(Some("--decoder"), Some("--codec"))),
    ("-vcodec", Applies::InputOrOutput(Some("--decoder"), Some("--codec"))),
    ("-f", Applies::InputOrOutput(Some("--input-format"), Some("--format"))),
    ("-pix_fmt", Applies::InputOrOutput(Some("--pix-fmt"), None)),
    ("-video_size", Applies::InputOrOutput(Some("--size"), None)),
    ("-s", Applies::InputOrOutput(Some("--size"), None)),
    ("-r", Applies::InputOrOutput(Some("--framerate"), None)),
    ("-framerate", Applies::InputOrOutput(Some("--framerate"), None)),
];

/// The command line with FFmpeg's spellings rewritten, and what was rewritten.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    pub(crate) args: Vec<OsString>,
    /// (as typed, the flag it became), in the order typed.
    pub(crate) typed: Vec<(String, String)>,
}

/// A spelling that has no convstream meaning where it stands.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SpellingError(String);

/// Rewrites the words of `convstream run ...` (the program's name first); other
/// subcommands are passed on untouched. `value_flags` are the flags of `run` that take a
/// value (the word after them is never rewritten).
pub(crate) fn rewrite(args: Vec<OsString>, value_flags: &[String]) -> Result<Rewritten, SpellingError> {
    let Some(run_at) = args.iter().position(|a| a == "run").filter(|&at| at == 1) else {
        return Ok(Rewritten {
            args,
            typed: Vec::new(),
        });
    };
    let takes_value = |word: &str| value_flags.iter().any(|flag| flag == word);
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
            let value_follows = takes_value(word)
                || SPELLINGS
                    .iter()
                    .any(|(spelling, _)| *spelling == word && spelling_takes_value(spelling))
                || word == "-stream_loop"
                || word == "-movflags";
            if value_follows {
                at += 1;
            }
        }
        at += 1;
    }
    let last_input = (0..args.len())
        .filter(|&at| flag_at[at] && args[at].to_str().is_some_and(is_input))
        .max();
    let mut out = Rewritten::default();
    let mut at = 0;
    while at < args.len() {
        let word = args[at].clone();
        let typed = word.to_str().filter(|_| flag_at[at]).map(str::to_string);
        at += 1;
        let Some(typed) = typed else {
            out.args.push(word);
            continue;
        };
        let before_input = last_input.is_some_and(|input| at - 1 < input);
        match typed.as_str() {
            "-stream_loop" => {
                let count = args.get(at).and_then(|v| v.to_str()).unwrap_or("");
                at += 1;
                match count.trim().parse::<i64>() {
                    Ok(-1) => {
                        out.args.push("--loop".into());
                        out.typed.push((typed, "--loop".into()));
                    }
                    Ok(0) => {}
                    _ => {
                        return Err(SpellingError(format!(
                            "-stream_loop `{}`: use -1 (start over at the end, for ever: --loop) or 0 (play once); bound a loop with -t TIME or --frames N",
                            convstream_core::text::quoted(count)
                        )))
                    }
                }
            }
            "-movflags" => {
                let Some(value) = args.get(at).and_then(|v| v.to_str()) else {
                    return Err(SpellingError(
                        "-movflags needs a value, e.g. -movflags +faststart".to_string(),
                    ));
                };
                at += 1;
                out.args.push("--muxer-opt".into());
                out.args.push(format!("movflags={value}").into());
                out.typed.push((typed, "--muxer-opt".into()));
            }
            _ => match SPELLINGS.iter().find(|(spelling, _)| *spelling == typed) {
                Some((_, applies)) => {
                    let long = match *applies {
                        Applies::Always(long) => Some(long),
                        Applies::InputOrOutput(input, output) => match before_input {
                            true => input,
                            false => output,
                        },
                    };
                    let Some(long) = long else {
                        return Err(SpellingError(format!(
                            "{typed} applies to the input only: put it before -i (as in FFmpeg); convstream does not change the output's {}",
                            if typed == "-pix_fmt" { "pixel format" } else { "size or frame rate" }
                        )));
                    };
                    out.args.push(long.into());
                    out.typed.push((typed, long.to_string()));
                }
                None => out.args.push(word),
            },
        }
    }
    Ok(out)
}

/// Whether an FFmpeg spelling takes a value (every one but the switches).
fn spelling_takes_value(spelling: &str) -> bool {
    !matches!(spelling, "-an" | "-re" | "-copyts")
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
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    fn rewritten(line: &str) -> String {
        let value_flags: Vec<String> = ["-i", "-o", "--mask", "--output", "--codec", "-t"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let out = rewrite(words(line), &value_flags).expect("rewritten");
        out.args
            .iter()
            .map(|a| a.to_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn spellings_become_the_long_flags() {
        assert_eq!(
            rewritten("cs run -i in.mp4 -c:v libx265 -b:v 2M -frames:v 10 -an out.mkv"),
            "cs run -i in.mp4 --codec libx265 --bitrate 2M --frames 10 --no-audio out.mkv"
        );
        assert_eq!(
            rewritten("cs run -i a -vcodec mpeg4 -o b"),
            "cs run -i a --codec mpeg4 -o b"
        );
        assert_eq!(
            rewritten("cs run -re -stream_loop -1 -i a -o b"),
            "cs run --realtime --loop -i a -o b"
        );
        assert_eq!(rewritten("cs run -stream_loop 0 -i a -o b"), "cs run -i a -o b");
        assert_eq!(
            rewritten("cs run -i a -movflags +faststart -o b.mp4"),
            "cs run -i a --muxer-opt movflags=+faststart -o b.mp4"
        );
    }

    #[test]
    fn before_an_input_a_spelling_is_the_inputs() {
        assert_eq!(
            rewritten("cs run -f rawvideo -s 64x32 -pix_fmt gray -r 25 -i - -f nut -o out"),
            "cs run --input-format rawvideo --size 64x32 --pix-fmt gray --framerate 25 -i - --format nut -o out"
        );
        assert_eq!(
            rewritten("cs run -c:v h264 -i a -o b"),
            "cs run --decoder h264 -i a -o b"
        );
    }

    #[test]
    fn values_and_other_subcommands_are_left_alone() {
        assert_eq!(rewritten("cs run -i -f -o -an"), "cs run -i -f -o -an");
        assert_eq!(rewritten("cs run -i a -o b -- -f"), "cs run -i a -o b -- -f");
        assert_eq!(rewritten("cs check -f x"), "cs check -f x");
        assert_eq!(rewritten("cs run -t -1.5 -f mp4"), "cs run -t -1.5 --format mp4");
    }

    #[test]
    fn what_has_no_meaning_is_refused_by_name() {
        let none: Vec<String> = Vec::new();
        let error = rewrite(words("cs run -i a -stream_loop 3 -o b"), &none).unwrap_err();
        assert!(error.to_string().starts_with("-stream_loop `3`:"), "{error}");
        let error = rewrite(words("cs run -i a -pix_fmt gray -o b"), &none).unwrap_err();
        assert!(
            error.to_string().starts_with("-pix_fmt applies to the input only"),
            "{error}"
        );
    }

    #[test]
    fn clap_errors_name_the_flag_as_typed() {
        let typed = vec![("-frames:v".to_string(), "--frames".to_string())];
        assert_eq!(
            as_typed("invalid value 'x' for '--frames <N>': invalid digit", &typed),
            "invalid value 'x' for '-frames:v <N>': invalid digit"
        );
        assert_eq!(
            as_typed("the argument '--frames' cannot be used multiple times", &typed),
            "the argument '-frames:v' cannot be used multiple times"
        );
    }
}

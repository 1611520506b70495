//! The rewriting of FFmpeg's spellings, word by word, and every AVOption of FFmpeg's tables
//! passed on or refused by name.

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
        rewritten("cs run -stream_loop 2 -i a -o b"),
        "cs run --loop-count 2 -i a -o b"
    );
    assert_eq!(
        rewritten("cs run -i a -s 64x32 -pix_fmt gray -q:v 3 -vsync cfr -r 10 -o b"),
        "cs run -i a --output-size 64x32 --output-pix-fmt gray --encoder-opt q=3 --output-framerate 10 -o b"
    );
    assert_eq!(
        rewritten("cs run -i a -map 0:v:0 -map 0:a? -fps_mode passthrough -o b"),
        "cs run -i a --no-subtitles -o b"
    );
    assert_eq!(rewritten("cs run -i a -sn -o b"), "cs run -i a --no-subtitles -o b");
    assert_eq!(rewritten("cs run -i a -map 0:v -o b"), "cs run -i a --no-audio -o b");
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
    let error = rewrite(words("cs run -i a -stream_loop x -o b"), &none).unwrap_err();
    assert!(error.to_string().starts_with("-stream_loop `x`:"), "{error}");
    let error = rewrite(words("cs run -i a -video_size 64x32 -o b"), &none).unwrap_err();
    assert!(
        error.to_string().starts_with("-video_size applies to the input only"),
        "{error}"
    );
    let error = rewrite(words("cs run -i a -vsync cfr -o b"), &none).unwrap_err();
    assert!(error.to_string().contains("give -r RATE"), "{error}");
}

/// Every AVOption of FFmpeg 5.1's `ffmpeg -h full` (codecs', formats', protocols'), given
/// after `-i` as FFmpeg takes it: consumed with its value (passed on to the encoder or
/// the muxer, or read as convstream's flag of that name) or refused naming it.
#[test]
fn every_avoption_of_ffmpegs_tables_is_passed_on_or_refused_by_name() {
    let help = include_str!("../../../tests/it/data/ffmpeg-5.1-h-full.txt");
    let start = help.find("AVCodecContext AVOptions:").expect("the AVOptions part");
    let names: std::collections::BTreeSet<&str> = help[start..]
        .lines()
        .filter_map(|line| line.strip_prefix("  -"))
        .filter_map(|rest| rest.split_whitespace().next())
        // FFmpeg's command-line options come first, as in FFmpeg (`-y` is overwrite there
        // too); the integration tests walk those.
        .filter(|name| {
            crate::cli::ffmpeg_options::ffmpeg_option(name).is_none() && !OWN_SHORT.contains(&&*format!("-{name}"))
        })
        .collect();
    assert!(names.len() > 1000, "{} AVOptions", names.len());
    let value_flags: Vec<String> = ["-i", "-o", "-t"].iter().map(|s| s.to_string()).collect();
    let mut wrong = Vec::new();
    for name in names {
        let line = format!("cs run -i a -{name} 1 out");
        match rewrite(words(&line), &value_flags) {
            Ok(out) => {
                let consumed =
                    !out.args.iter().any(|a| *a == *format!("-{name}")) && out.args.last().is_some_and(|a| a == "out");
                if !consumed {
                    wrong.push(format!("-{name}: {:?}", out.args));
                }
            }
            Err(error) if error.to_string().contains(&format!("-{name}")) => {}
            Err(error) => wrong.push(format!("-{name}: {error}")),
        }
    }
    assert!(wrong.is_empty(), "{} AVOptions:\n{}", wrong.len(), wrong.join("\n"));
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

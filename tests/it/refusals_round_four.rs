//! What the command line and `check` refuse, and how they say it: `-y -n` together, every
//! user string escaped in an error (`-vf` and clap's own messages too), URL secrets in more
//! spellings hidden, the flag the user typed named, encoder options tried before anything
//! runs, `check` saying what `run` and `serve` refuse in one pass, a seats file's contents
//! never shown, a decoder that cannot take the stream a usage error, and output written into
//! a folder deleted meanwhile never a success; the service's answers hold no secret of any
//! spelling and no raw bidi control.

use std::path::Path;
use std::time::Duration;

use crate::common::{self, Clip};

/// A short H.264 clip in `dir`.
fn clip(dir: &Path) -> String {
    common::make_clip(dir, "in.mp4", Clip::H264Mp4, 160, 96, 10);
    "in.mp4".to_string()
}

#[test]
fn y_and_n_together_are_refused_and_the_existing_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let input = clip(dir.path());
    let output = dir.path().join("out.mkv");
    std::fs::write(&output, b"precious").unwrap();
    for flags in [["-y", "-n"], ["-n", "-y"]] {
        let run = common::run_on_cpu(dir.path(), &["-i", &input, flags[0], flags[1], "out.mkv"]);
        assert_eq!(run.code, Some(2), "{flags:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("'-n'") && run.stderr.contains("'-y'"),
            "{flags:?} names -y and -n as typed: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::read(&output).unwrap(),
            b"precious",
            "{flags:?} replaced the file"
        );
    }
    // -n alone keeps the file, even where a config would allow replacing it.
    let run = common::run_on_cpu(dir.path(), &["-i", &input, "-n", "out.mkv"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(std::fs::read(&output).unwrap(), b"precious");
}

#[test]
fn user_strings_in_errors_never_start_a_line_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let input = clip(dir.path());
    let forged = "FAKE ERROR line";
    for args in [
        vec!["-i", &input, "-vf", "sobel\nFAKE ERROR line", "out.mkv"],
        vec!["-i", &input, "--border", "x\nFAKE ERROR line", "out.mkv"],
        vec!["-i", &input, "-fo\nFAKE ERROR line", "1", "out.mkv"],
        vec!["-i", &input, "--mask", "gauss\u{202e}ian\nFAKE ERROR line", "out.mkv"],
    ] {
        let run = common::run_on_cpu(dir.path(), &args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(forged), "the value is quoted: {}", run.stderr);
        assert!(
            !run.stderr.lines().any(|line| line.starts_with(forged)),
            "{args:?}: a user string started a line:\n{}",
            run.stderr
        );
        assert!(!run.stderr.contains('\u{202e}'), "bidi control raw: {}", run.stderr);
    }
}

#[test]
fn url_secrets_in_fragments_parameters_paths_and_encoded_keys_are_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    // A protocol the build lacks is refused at once (not retried as a live input would be),
    // and the error quotes the input.
    for url in [
        "nosuch://127.0.0.1:9/v.m3u8#token=SECRET-1",
        "nosuch://127.0.0.1:9/v.m3u8?to%6Ben=SECRET-2",
        "nosuch://127.0.0.1:9/v.m3u8?Policy=SECRET-3&Signature=SECRET-4",
        "nosuch://127.0.0.1:9/live;passphrase=SECRET-5/v.ts",
        "nosuch://127.0.0.1:9/pass=SECRET-6/v.ts",
        "nosuch://127.0.0.1:9/\u{202e}v.ts",
    ] {
        let run = common::run_bounded(
            dir.path(),
            &["run", "--device", "cpu", "--no-progress", "-i", url, "out.mkv"],
            Duration::from_secs(60),
        );
        assert_ne!(run.code, Some(0), "{url}");
        assert!(
            run.stderr.contains("127.0.0.1:9"),
            "{url}: the input is named: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("SECRET"), "{url}: {}", run.stderr);
        assert!(
            !run.stderr.contains('\u{202e}'),
            "{url}: bidi control raw: {}",
            run.stderr
        );
    }
}

#[test]
fn refusals_name_the_flag_typed_the_range_broken_and_encoders_that_open_here() {
    let dir = tempfile::tempdir().unwrap();
    let input = clip(dir.path());
    let refused = |args: &[&str]| {
        let mut all = vec!["-y", "-i", input.as_str()];
        all.extend_from_slice(args);
        all.push("out.mkv");
        let run = common::run_on_cpu(dir.path(), &all);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(!dir.path().join("out.mkv").exists(), "{args:?} wrote its output");
        run.stderr
    };
    let said = refused(&["-vf", "sobel", "--mask", "gaussian"]);
    assert!(said.contains("--mask cannot be given with -vf"), "{said}");
    assert!(!said.contains("multiple times"), "{said}");

    let said = refused(&["-b:v", "1e30"]);
    assert!(
        said.contains("out of range") && said.contains("9223372036854775807"),
        "{said}"
    );
    assert!(!said.contains("has no option"), "{said}");
    let said = refused(&["-bf", "-5"]);
    assert!(
        said.contains("-5 is out of range") && said.contains("-1..=2147483647"),
        "{said}"
    );

    let said = refused(&["-c:v", "copy"]);
    assert!(said.contains("-c:v copy") && said.contains("encoded again"), "{said}");
    let said = refused(&["-c:v", "no-such-encoder"]);
    assert!(said.contains("libx264"), "{said}");
    // No GPU, no Intel or V4L2 device in CI: their encoders do not open here.
    for device_encoder in ["h264_nvenc", "h264_vaapi", "h264_qsv", "h264_v4l2m2m"] {
        assert!(!said.contains(device_encoder), "{device_encoder} offered: {said}");
    }
    // FFmpeg's largest unsharp runs, as FFmpeg runs it; one past it is refused with FFmpeg's words.
    let run = common::run_on_cpu(dir.path(), &["-y", "-i", &input, "-vf", "unsharp=13:13:1", "out.mkv"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let run = common::run_on_cpu(dir.path(), &["-y", "-i", &input, "-vf", "unsharp=23:23:1", "out.mkv"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("-vf: FFmpeg refuses the filter graph: luma or chroma or alpha matrix size too big"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_decoder_that_cannot_take_the_stream_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = clip(dir.path());
    let run = common::run_on_cpu(dir.path(), &["-c:v", "mpeg4", "-i", &input, "out.mkv"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("mpeg4") && run.stderr.contains("h264"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("out.mkv").exists());
}

/// `convstream check --config NAME` in `dir` holding `text`.
fn check(dir: &Path, text: &str) -> common::Run {
    std::fs::write(dir.join("c.toml"), text).unwrap();
    common::run_in(dir, &["check", "--config", "c.toml"])
}

#[test]
fn check_says_everything_run_and_serve_refuse_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    clip(dir.path());
    let pipeline = "[[pipeline]]\nname = \"a\"\nsource.url = \"in.mp4\"\n";

    // A [server] mistake: serve needs no pipeline, so none is asked for.
    let run = check(dir.path(), "[server]\nlisten = 3\n");
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("server.listen"), "{}", run.stderr);
    assert!(!run.stderr.contains("no [[pipeline]]"), "{}", run.stderr);

    // Everything at once: seats of 0, an API open without a token, an encoder's range and
    // value, a misspelt preset with an even size.
    let text = format!(
        "[server]\nnvdec_seats_per_gpu = 0\nlisten = \"0.0.0.0:8686\"\n{pipeline}\
         sink = {{ url = \"o.mkv\", options = {{ crf = \"70\", preset = \"turbo\" }} }}\n\
         filter.mask = {{ preset = \"gausian\", size = 4 }}\n"
    );
    let run = check(dir.path(), &text);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    for says in [
        "server.nvdec_seats_per_gpu: 0 is out of range",
        "server.listen: 0.0.0.0:8686 without a token",
        "sink.options.crf: 70 is out of range for libx264",
        "sink.options.preset: `turbo` is a value the libx264 encoder refuses",
        "unknown mask `gausian`",
        "size: 4 is even",
    ] {
        assert!(run.stderr.contains(says), "missing {says:?}:\n{}", run.stderr);
    }
    // What `run` then refuses is what `check` said.
    let run = common::run_in(dir.path(), &["run", "--config", "c.toml", "--device", "cpu"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("sink.options.crf"), "{}", run.stderr);
    // An option valid in another of the encoder's pixel formats (10-bit output from a 10-bit
    // input) is the output's to decide, not refused here.
    let text = format!("{pipeline}sink = {{ url = \"o.mkv\", options = {{ profile = \"high10\" }} }}\n");
    let run = check(dir.path(), &text);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // A token, loopback, or the explicit opt-in: serve takes it, so check does.
    let run = check(
        dir.path(),
        &format!("[server]\nlisten = \"0.0.0.0:8686\"\ninsecure_no_token = true\n{pipeline}sink.url = \"o.mkv\"\n"),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn a_seats_file_is_never_quoted_even_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = "HUNTER2-SECRET-A";
    let contents = [
        format!("seats_per_gpu = \"{secret}\"\n"),
        format!("[seats_per_gpu]\n\"NVIDIA H100\" = \"{secret}\"\n"),
        format!("{secret} = 1\n"),
        format!("[seats_per_gpu]\n\"{secret}\" = 0\n"),
        format!("root:{secret}:0:0\n"),
    ];
    for text in contents {
        std::fs::write(outside.path().join("seats.toml"), &text).unwrap();
        let link = dir.path().join("seats.toml");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(outside.path().join("seats.toml"), &link).unwrap();
        let run = check(dir.path(), "[server]\nnvdec_seats_file = \"seats.toml\"\n");
        assert_eq!(run.code, Some(2), "{text:?}: {}", run.stderr);
        assert!(run.stderr.contains("not a measured NVDEC seats file"), "{}", run.stderr);
        assert!(!run.stderr.contains(secret), "{text:?}: {}", run.stderr);
    }
}

#[test]
fn output_into_a_folder_deleted_meanwhile_is_never_a_success() {
    let dir = tempfile::tempdir().unwrap();
    common::make_clip(dir.path(), "in.mp4", Clip::H264Mp4, 160, 96, 75);
    let folder = dir.path().join("out");
    std::fs::create_dir(&folder).unwrap();
    // stdout redirected to a file in the folder (`> out/o.mkv`), paced so it runs 3 s.
    let child = common::convstream()
        .args([
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-re",
            "-i",
            "in.mp4",
            "-f",
            "matroska",
            "-",
        ])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(folder.join("o.mkv")).unwrap())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    std::fs::remove_dir_all(&folder).unwrap();
    let run: common::Run = child.wait_with_output().unwrap().into();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("removed while it was written"), "{}", run.stderr);
}

#[test]
fn the_service_shows_no_secret_of_any_spelling_and_no_raw_bidi_control() {
    use crate::common::server::Server;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A config pipeline whose path holds a secret; the API ones below hold the rest.
    std::fs::write(
        root.join("config.toml"),
        "[[pipeline]]\nname = \"pathcam\"\nsource = { url = \"rtsp://127.0.0.1:9/cam/pass=PATH-SECRET/s\", reconnect = { initial = 0.1, max = 0.2 } }\n\
         filter = { device = \"cpu\" }\nsink = { url = \"null\" }\n",
    )
    .unwrap();
    let serve = Server::start(root, &[]);
    let sources = [
        ("frag", "rtmp://127.0.0.1:9/live?x=1#token=FRAG-SECRET"),
        ("enc", "rtmp://127.0.0.1:9/live?to%6Ben=ENC-SECRET"),
        (
            "signed",
            "rtmp://127.0.0.1:9/live?Policy=POLICY-SECRET&Signature=SIG-SECRET",
        ),
        ("semi", "rtmp://127.0.0.1:9/live;passphrase=SEMI-SECRET"),
        ("bidi", "rtmp://127.0.0.1:9/live?x=\u{202e}gpj.exe\u{2066}"),
    ];
    let mut answers = Vec::new();
    for (name, url) in sources {
        let body = serde_json::json!({
            "name": name,
            "source": {"url": url, "reconnect": {"initial": 0.1, "max": 0.2}},
            "filter": {"device": "cpu"},
            "sink": {"url": "null"},
        })
        .to_string();
        let (status, answer) = serve.json("POST", "/pipelines", &body);
        assert_eq!(status, 201, "{name}: {answer}");
        answers.push(answer);
    }
    serve.wait_for("every input to fail and be logged", Duration::from_secs(30), || {
        let log = serve.log_text();
        log.matches("cannot open input").count() > sources.len()
    });
    let (_, listed) = serve.request("GET", "/pipelines", None);
    let (_, console) = serve.request("GET", "/console/status", None);
    let (code, log) = serve.terminate();
    assert_eq!(code, Some(0), "{log}");
    let answers = answers.join("\n");
    for (what, text) in [
        ("the POST answers", &answers),
        ("GET /pipelines", &listed),
        ("/console/status", &console),
        ("the log", &log),
    ] {
        assert!(!text.contains("SECRET"), "{what} shows a secret:\n{text}");
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{2066}'),
            "{what} holds a raw bidi control:\n{text}"
        );
    }
    assert!(
        listed.contains("u{202e}gpj.exe"),
        "the control is shown escaped: {listed}"
    );
}

//! The encoders a build has, as its messages give them: an encoder the build lacks is
//! refused with the ones this binary has for the output's container (those `convstream
//! doctor` lists), never with another FFmpeg's list; a run on the CPU says nothing of NVENC.

use std::path::Path;
use std::time::Duration;

use crate::common::{self, make_clip, Clip, Run};
use convstream_testkit::tempdir;

/// Runs `convstream ARGS` in `dir`, failing the test if it is not over within a minute.
fn bounded(dir: &Path, args: &[&str]) -> Run {
    common::run_bounded(dir, args, Duration::from_secs(60))
}

/// The video encoders `convstream doctor` says this build has.
fn doctor_encoders(dir: &Path) -> Vec<String> {
    let doctor = bounded(dir, &["doctor"]);
    let text = doctor.stdout_text();
    let line = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("video encoders in this build: "))
        .unwrap_or_else(|| panic!("doctor lists no video encoders:\n{text}\n{}", doctor.stderr));
    line.split(", ").map(str::to_string).collect()
}

/// The encoders a message lists after "for the CONTAINER container, these open here: ", up to " (".
fn listed_for(message: &str, container: &str) -> Vec<String> {
    let lead = format!("for the {container} container, these open here: ");
    let at = message
        .find(&lead)
        .unwrap_or_else(|| panic!("no list for {container}:\n{message}"));
    let rest = &message[at + lead.len()..];
    let list = rest.split(" (").next().unwrap_or(rest);
    list.split(", ").map(str::to_string).collect()
}

fn assert_lists_only_doctors(message: &str, container: &str, doctor: &[String]) {
    let listed = listed_for(message, container);
    assert!(!listed.is_empty(), "{message}");
    for name in &listed {
        assert!(
            doctor.contains(name),
            "{name} is listed but not in doctor's list:\n{message}"
        );
    }
    assert!(!message.contains("ffmpeg -encoders"), "{message}");
}

#[test]
fn an_encoder_the_build_lacks_is_refused_with_the_ones_it_has() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 2);
    let doctor = doctor_encoders(dir.path());
    assert!(doctor.iter().any(|name| name == "mpeg4"), "{doctor:?}");
    // No FFmpeg build has it: the message must come from this binary's own list.
    let run = bounded(
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "in.mkv",
            "-c:v",
            "libnonesuch",
            "out.mp4",
        ],
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`libnonesuch` is not a video encoder this convstream build has"),
        "{}",
        run.stderr
    );
    assert_lists_only_doctors(&run.stderr, "mp4", &doctor);
    assert!(listed_for(&run.stderr, "mp4").contains(&"mpeg4".to_string()));
    assert!(!dir.path().join("out.mp4").exists());

    // `check` says the same of a config.
    std::fs::write(
        dir.path().join("pipeline.toml"),
        "[[pipeline]]\nname = \"a\"\n[pipeline.source]\nurl = \"in.mkv\"\n[pipeline.filter]\nmask = \"box\"\n[pipeline.sink]\nurl = \"out.mkv\"\ncodec = \"libnonesuch\"\n",
    )
    .unwrap();
    let check = bounded(dir.path(), &["check", "--config", "pipeline.toml"]);
    assert_eq!(check.code, Some(2), "{}", check.stderr);
    let said = format!("{}{}", check.stdout_text(), check.stderr);
    assert_lists_only_doctors(&said, "matroska", &doctor);
}

#[test]
fn a_container_without_a_default_encoder_suggests_only_this_builds() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 2);
    let doctor = doctor_encoders(dir.path());
    // IVF holds VP8, VP9 and AV1 only, none of the H.264-first defaults.
    let run = bounded(
        dir.path(),
        &["run", "--device", "cpu", "--no-progress", "-i", "in.mkv", "out.ivf"],
    );
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("no default video encoder"), "{}", run.stderr);
    assert_lists_only_doctors(&run.stderr, "ivf", &doctor);
    // A run on the CPU neither tries NVENC nor speaks of it.
    assert!(!run.stderr.to_lowercase().contains("nvenc"), "{}", run.stderr);
}

#[test]
fn cpu_runs_say_nothing_of_nvenc() {
    let dir = tempdir();
    make_clip(dir.path(), "in.mkv", Clip::Ffv1Mkv, 32, 16, 3);
    for (device, output) in [(Some("cpu"), "cpu.mp4"), (Some("cpu"), "cpu.mkv"), (None, "auto.ts")] {
        let mut args = vec!["run", "--no-progress"];
        if let Some(device) = device {
            args.extend(["--device", device]);
        }
        args.extend(["-i", "in.mkv", output]);
        let run = bounded(dir.path(), &args);
        assert_eq!(run.code, Some(0), "{args:?}:\n{}", run.stderr);
        // With the default device only where this host has no GPU driver (CI): a GPU host may
        // encode with NVENC, and its probe is then part of the choice.
        if device.is_some() || !Path::new("/dev/nvidiactl").exists() {
            assert!(
                !run.stderr.to_lowercase().contains("nvenc"),
                "{args:?}:\n{}",
                run.stderr
            );
        }
    }
}

//! `convstream check` and `run` with careless and hostile configurations: numbers out of
//! range, a mask file that never ends, several type mistakes at once. Each is refused with
//! exit 2 and every problem named with its place, at once and without a panic.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Run;

fn check(dir: &Path, config: &str) -> Run {
    std::fs::write(dir.join("config.toml"), config).unwrap();
    bounded(dir, &["check", "--config", "config.toml"], Duration::from_secs(20))
}

/// Runs convstream, killing it if it outlives `limit` (the run then fails the test).
fn bounded(dir: &Path, args: &[&str], limit: Duration) -> Run {
    common::run_bounded(dir, args, limit)
}

fn assert_lists(run: &Run, wanted: &[&str]) {
    assert_eq!(run.code, Some(2), "a configuration error:\n{}", run.stderr);
    run.assert_no_panic();
    for problem in wanted {
        assert!(run.stderr.contains(problem), "missing {problem:?} in:\n{}", run.stderr);
    }
}

#[test]
fn numbers_out_of_range_are_refused_by_check_and_run_with_the_allowed_range() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[server]
shutdown_timeout = 1e20

[[pipeline]]
name = "cam1"
[pipeline.source]
url = "udp://127.0.0.1:9"
threads = 100000
idle_timeout = 1e20
reconnect = { initial = 1e20, max = 1e20 }
[pipeline.sink]
url = "null"
"#;
    let wanted = [
        "server.shutdown_timeout: 100000000000000000000 is out of range; allowed 0.001..=3600 seconds",
        "source.threads: 100000 is out of range; allowed 0..=64",
        "source.idle_timeout: 100000000000000000000 is out of range; allowed 0.001..=3600 seconds",
        "source.reconnect.initial: 100000000000000000000 is out of range",
        "source.reconnect.max: 100000000000000000000 is out of range",
    ];
    assert_lists(&check(dir.path(), config), &wanted);
    // run and serve validate the same way: exit 2, never a panic (101) or an allocation spiral.
    let run = bounded(dir.path(), &["run", "--config", "config.toml"], Duration::from_secs(20));
    assert_lists(&run, &wanted[1..]);
    let serve = bounded(
        dir.path(),
        &["serve", "--config", "config.toml", "--listen", "127.0.0.1:0"],
        Duration::from_secs(20),
    );
    assert_lists(&serve, &wanted);
}

#[test]
fn a_mask_file_that_is_a_device_or_too_large_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("huge.txt"), "1 ".repeat(300_000)).unwrap();
    let config = r#"
[masks.zero]
file = "/dev/zero"

[masks.huge]
file = "huge.txt"

[[pipeline]]
name = "cam1"
source = { url = "in.y4m" }
filter = { mask = { file = "/dev/urandom" } }
sink = { url = "null" }
"#;
    let started = Instant::now();
    let run = check(dir.path(), config);
    assert_lists(
        &run,
        &[
            "masks.zero: cannot read mask file /dev/zero: not a regular file",
            "masks.huge: cannot read mask file",
            "larger than 262144 bytes",
            "filter.mask: cannot read mask file /dev/urandom: not a regular file",
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[test]
fn check_lists_every_type_mistake_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[[pipeline]]
name = "cam1"
[pipeline.source]
url = "in.mp4"
[pipeline.filter]
planes = "y"
border = "reflct"
mask = "gaussian:size=4"
[pipeline.sink]
url = "out.mkv"
colour = "red"

[[pipeline]]
name = "cam2"
[pipeline.source]
format = "mpegts"
[pipeline.sink]
url = "out2.mkv"

[[pipeline]]
name = "bad name"
source = { url = "in3.mp4" }
filter = { streams = 99 }
sink = { url = "out3.mkv" }
"#;
    let run = check(dir.path(), config);
    assert_lists(
        &run,
        &[
            "pipeline \"cam1\": filter.planes: unknown variant `y`, expected one of `all`, `luma`, `chroma`",
            "pipeline \"cam1\": filter.border: unknown variant `reflct`",
            "pipeline \"cam1\": sink.colour: unknown field `colour`",
            "pipeline \"cam2\": source.url is missing",
            // Mask and range problems of what is well-formed, in the same pass.
            "pipeline \"cam1\": filter.mask: size: 4 is even",
            "pipeline #3: name `bad name` is not allowed",
            "pipeline #3: filter.streams: 99 is out of range",
        ],
    );
    assert!(run.stderr.contains("7 problems"), "{}", run.stderr);
}

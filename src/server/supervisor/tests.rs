//! Readiness: a live pipeline takes input before its sender's first frames; and a stop
//! before those frames is a stop, not a failure; a name stays taken while a stopped run's
//! thread still runs.

use std::time::Duration;

use super::lifecycle::Supervisor;
use convstream_media::config::ConfigFile;
use convstream_media::pipeline::PipelineState;

/// A supervisor running one pipeline, `name`, that reads a UDP port nothing sends to.
fn waiting_for_a_sender(out: &std::path::Path, name: &str) -> Supervisor {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    drop(socket);
    let text = format!(
        "[[pipeline]]
name = {name:?}
[pipeline.source]
url = \"udp://127.0.0.1:{port}\"
\
         format = \"mpegts\"
[pipeline.filter]
device = \"cpu\"
[pipeline.sink]
url = {:?}
",
        out.join(format!("{name}.ts")).display().to_string()
    );
    let supervisor = Supervisor::new(
        ConfigFile::parse(&text, "test", crate::log_filter::is_log_filter).unwrap(),
        None,
    );
    supervisor.start_configured().unwrap();
    supervisor
}

#[test]
fn a_server_whose_live_input_has_sent_nothing_is_ready() {
    // Nothing sends to this port: the pipeline stays starting, waiting for its input.
    let out = tempfile::tempdir().unwrap();
    let supervisor = waiting_for_a_sender(out.path(), "live");
    assert_eq!(supervisor.view("live").unwrap().state, PipelineState::Starting);
    assert!(supervisor.ready());
    assert!(supervisor.shutdown(Duration::from_secs(10)).is_empty());
}

#[test]
fn a_live_pipeline_removed_before_its_first_packet_is_stopped_without_an_error() {
    let out = tempfile::tempdir().unwrap();
    let supervisor = waiting_for_a_sender(out.path(), "live");
    // Long enough for FFmpeg to be inside its open, where the stop interrupts it.
    std::thread::sleep(Duration::from_millis(300));
    let (view, ended) = supervisor.remove("live", Duration::from_secs(10)).unwrap();
    assert!(ended);
    assert_eq!(view.state, PipelineState::Stopped, "{view:?}");
    assert_eq!(view.last_error, None, "a stop is not an error");
    assert!(!out.path().join("live.ts").exists(), "nothing was written");
}

/// How many threads of this process run pipeline `name` (named `NAME-run`).
fn run_threads(name: &str) -> usize {
    let wanted = format!("{name}-run");
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == wanted)
        .count()
}

#[test]
fn a_name_is_taken_until_the_threads_of_its_stopped_run_have_ended() {
    let out = tempfile::tempdir().unwrap();
    let supervisor = waiting_for_a_sender(out.path(), "held");
    std::thread::sleep(Duration::from_millis(300));
    // No time to end: the stop returns while the run's thread still runs.
    let (_, ended) = supervisor.stop("held", Duration::ZERO).unwrap();
    if !ended {
        let (_, ended) = supervisor.remove("held", Duration::ZERO).unwrap();
        if ended {
            assert_eq!(run_threads("held"), 0, "DELETE said the threads ended");
        } else {
            assert_eq!(supervisor.names(), ["held"], "kept listed while its threads run");
            let again = supervisor.config().pipelines[0].clone();
            match supervisor.add(again) {
                Err(super::SupervisorError::StillEnding(_)) => {}
                other => assert_eq!(run_threads("held"), 0, "a second run beside the first: {other:?}"),
            }
        }
    }
    if !supervisor.names().is_empty() {
        let (_, ended) = supervisor.remove("held", Duration::from_secs(10)).unwrap();
        assert!(ended);
    }
    assert_eq!(run_threads("held"), 0);
    assert!(supervisor.names().is_empty());
}

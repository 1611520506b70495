//! Readiness: a live pipeline takes input before its sender's first frames; and a stop
//! before those frames is a stop, not a failure.

use std::time::Duration;

use super::lifecycle::{takes_input, Supervisor};
use convstream_media::config::ConfigFile;
use convstream_media::pipeline::PipelineState;

#[test]
fn a_live_pipeline_is_ready_while_it_waits_for_its_sender() {
    assert!(takes_input(true, PipelineState::Starting));
    assert!(!takes_input(false, PipelineState::Starting));
    for state in PipelineState::ALL.into_iter().filter(|s| *s != PipelineState::Starting) {
        assert!(takes_input(true, state) && takes_input(false, state), "{state:?}");
    }
}

/// A supervisor running one pipeline, "live", that reads a UDP port nothing sends to.
fn waiting_for_a_sender(out: &std::path::Path) -> Supervisor {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    drop(socket);
    let text = format!(
        "[[pipeline]]
name = \"live\"
[pipeline.source]
url = \"udp://127.0.0.1:{port}\"
\
         format = \"mpegts\"
[pipeline.filter]
device = \"cpu\"
[pipeline.sink]
url = {:?}
",
        out.join("live.ts").display().to_string()
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
    let supervisor = waiting_for_a_sender(out.path());
    assert_eq!(supervisor.view("live").unwrap().state, PipelineState::Starting);
    assert!(supervisor.ready());
    assert!(supervisor.shutdown(Duration::from_secs(10)).is_empty());
}

#[test]
fn a_live_pipeline_removed_before_its_first_packet_is_stopped_without_an_error() {
    let out = tempfile::tempdir().unwrap();
    let supervisor = waiting_for_a_sender(out.path());
    // Long enough for FFmpeg to be inside its open, where the stop interrupts it.
    std::thread::sleep(Duration::from_millis(300));
    let (view, ended) = supervisor.remove("live", Duration::from_secs(10)).unwrap();
    assert!(ended);
    assert_eq!(view.state, PipelineState::Stopped, "{view:?}");
    assert_eq!(view.last_error, None, "a stop is not an error");
    assert!(!out.path().join("live.ts").exists(), "nothing was written");
}

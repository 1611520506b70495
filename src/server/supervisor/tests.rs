//! Readiness: a live pipeline takes input before its sender's first frames.

use super::*;

#[test]
fn a_live_pipeline_is_ready_while_it_waits_for_its_sender() {
    assert!(takes_input(true, PipelineState::Starting));
    assert!(!takes_input(false, PipelineState::Starting));
    for state in [
        PipelineState::Running,
        PipelineState::Stopping,
        PipelineState::Finished,
        PipelineState::Failed,
    ] {
        assert!(takes_input(true, state) && takes_input(false, state), "{state:?}");
    }
}

#[test]
fn a_server_whose_live_input_has_sent_nothing_is_ready() {
    // Nothing sends to this port: the pipeline stays starting, waiting for its input.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    drop(socket);
    let out = tempfile::tempdir().unwrap();
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
        out.path().join("live.ts").display().to_string()
    );
    let supervisor = Supervisor::new(ConfigFile::parse(&text, "test").unwrap(), None);
    supervisor.start_configured().unwrap();
    assert_eq!(supervisor.view("live").unwrap().state, PipelineState::Starting);
    assert!(supervisor.ready());
    assert!(supervisor.shutdown(Duration::from_secs(10)).is_empty());
}

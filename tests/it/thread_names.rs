//! Thread names say whose a thread is: the CPU workers every pipeline shares are
//! `cpu-worker-N`, whichever pipeline filtered first, and no thread keeps a pipeline's name
//! once DELETE says its threads have ended. Against a real `convstream serve`, CPU engine.

use std::time::Duration;

use crate::common::server::Server;
use crate::common::{make_clip, Clip};
use convstream_testkit::tempdir;

const PIPELINE: &str = r#"
[[pipeline]]
name = "ch4"
source = { url = "clip.y4m", loop = true, realtime = true }
filter = { mask = "gaussian:size=5", device = "cpu" }
sink = { url = "null" }
"#;

#[test]
fn shared_cpu_workers_have_neutral_names_and_no_thread_keeps_a_deleted_pipelines_name() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 320, 240, 25);
    std::fs::write(dir.path().join("config.toml"), PIPELINE).unwrap();
    let server = Server::start(dir.path(), &[]);
    server.wait_for("ch4 to filter", Duration::from_secs(30), || {
        server.counter("ch4", "frames_filtered") >= 10
    });
    let threads = server.threads();
    assert!(
        threads.iter().any(|t| t.starts_with("cpu-worker-")),
        "the shared CPU workers: {threads:?}"
    );

    let (status, body) = server.request("DELETE", "/pipelines/ch4", None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"threads_ended\":true"), "{body}");
    let threads = server.threads();
    let named_after_ch4: Vec<&String> = threads.iter().filter(|t| t.contains("ch4")).collect();
    assert!(
        named_after_ch4.is_empty(),
        "its threads ended, none is named after it: {threads:?}"
    );
    assert!(
        threads.iter().any(|t| t.starts_with("cpu-worker-")),
        "the shared workers outlive it: {threads:?}"
    );
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

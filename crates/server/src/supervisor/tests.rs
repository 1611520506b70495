//! Readiness: a live pipeline takes input before its sender's first frames; and a stop
//! before those frames is a stop, not a failure; a name stays taken while a stopped run's
//! thread still runs; an instance whose every pipeline failed is not ready; a filter switch
//! to a run that ends before it takes the switch says the pipeline ended, at once, not that
//! it timed out.

use std::time::Duration;

use super::lifecycle::Supervisor;
use convstream_config::ConfigFile;
use convstream_media::PipelineState;

/// A supervisor running a pipeline named after each input of `inputs` (`None`: a UDP port
/// nothing sends to), each writing `NAME.ts` into `out`.
fn pipelines_reading(out: &std::path::Path, inputs: &[(&str, Option<&std::path::Path>)]) -> Supervisor {
    let mut text = String::new();
    for (name, input) in inputs {
        let source = match input {
            Some(path) => format!("url = {:?}", path.display().to_string()),
            None => {
                let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                format!("url = \"udp://{}\"\nformat = \"mpegts\"", socket.local_addr().unwrap())
            }
        };
        let sink = out.join(format!("{name}.ts")).display().to_string();
        text += &format!(
            "[[pipeline]]\nname = {name:?}\n[pipeline.source]\n{source}\n[pipeline.filter]\ndevice = \"cpu\"\n[pipeline.sink]\nurl = {sink:?}\n"
        );
    }
    let supervisor = Supervisor::new(
        ConfigFile::parse(&text, "test", convstream_media::output_problems).unwrap(),
        None,
    );
    supervisor.start_configured().unwrap();
    supervisor
}

/// A supervisor running one pipeline, `name`, that reads a UDP port nothing sends to.
fn waiting_for_a_sender(out: &std::path::Path, name: &str) -> Supervisor {
    pipelines_reading(out, &[(name, None)])
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

#[test]
fn an_instance_whose_every_pipeline_failed_is_not_ready_and_one_doing_work_is() {
    let out = tempfile::tempdir().unwrap();
    let missing = out.path().join("no-such-clip.mp4");
    let failed = |supervisor: &Supervisor, name: &str| supervisor.view(name).unwrap().state == PipelineState::Failed;
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };

    // Every pipeline failed: not ready, each named, no error text on this endpoint.
    let broken = pipelines_reading(out.path(), &[("a", Some(&missing)), ("b", Some(&missing))]);
    wait_until("both to fail", &|| failed(&broken, "a") && failed(&broken, "b"));
    let not_ready = broken.not_ready();
    assert_eq!(not_ready.keys().collect::<Vec<_>>(), ["a", "b"], "{not_ready:?}");
    assert!(not_ready["a"].starts_with("failed"), "{not_ready:?}");
    assert!(!not_ready["a"].contains("no-such-clip"), "{not_ready:?}");
    assert!(!broken.ready());
    assert!(broken.shutdown(Duration::from_secs(10)).is_empty());

    // One failed beside one that works (a live input waits for its sender): ready, the
    // failure is for `GET /pipelines` and the metrics to show.
    let mixed = pipelines_reading(out.path(), &[("gone", Some(&missing)), ("live", None)]);
    wait_until("gone to fail", &|| failed(&mixed, "gone"));
    assert!(mixed.ready(), "{:?}", mixed.not_ready());
    assert!(mixed.shutdown(Duration::from_secs(10)).is_empty());
}

/// A supervisor listing pipeline `name` as running on a stand-in run: `stage` gets the
/// pipeline's end of the switch channel on a thread of its own, as the filter stage does,
/// and the run ends when `stage` returns. Returns the pipeline's settings too.
fn running_on(
    name: &str,
    stage: impl FnOnce(crossbeam_channel::Receiver<convstream_media::FilterSwitch>) + Send + 'static,
) -> (Supervisor, convstream_config::PipelineSettings) {
    let text = format!(
        "[[pipeline]]\nname = {name:?}\n[pipeline.source]\nurl = \"clip.y4m\"\n[pipeline.filter]\ndevice = \"cpu\"\n[pipeline.sink]\nurl = \"null\"\n"
    );
    let config = ConfigFile::parse(&text, "test", convstream_media::output_problems).unwrap();
    let supervisor = Supervisor::new(config.clone(), None);
    let settings = supervisor.validate_one(config.pipelines[0].clone()).unwrap();
    let monitor = std::sync::Arc::new(convstream_media::PipelineMonitor::new(name, &settings.filter));
    monitor.set_state(PipelineState::Running);
    let (switches, received) = crossbeam_channel::bounded(4);
    let (run_ending, run_ended) = crossbeam_channel::bounded(0);
    let thread = std::thread::spawn(move || {
        let _run_ending = run_ending;
        stage(received);
    });
    let handle = super::handle::Handle {
        id: supervisor.new_id(),
        settings: settings.clone(),
        origin: super::Origin::Api,
        monitor,
        stop: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        switches,
        thread: Some(std::sync::Arc::new(thread)),
        run_ended,
        operator_stopped: false,
        was_ready: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    supervisor.pipelines().insert(name.to_string(), handle);
    (supervisor, settings)
}

/// Switches `name` to the filter it has; returns the outcome and how long it took.
fn switch_timed(
    supervisor: &Supervisor,
    settings: &convstream_config::PipelineSettings,
) -> (Result<super::Switched, super::SupervisorError>, Duration) {
    let started = std::time::Instant::now();
    let outcome = supervisor.switch_to(settings, "");
    (outcome, started.elapsed())
}

#[test]
fn a_switch_to_a_run_whose_filter_stage_has_ended_says_it_ended() {
    // The stage returned (its input ended) before the switch came: no receiver is left.
    let (supervisor, settings) = running_on("ended", drop);
    let (outcome, took) = switch_timed(&supervisor, &settings);
    assert!(
        matches!(outcome, Err(super::SupervisorError::EndedDuringSwitch(ref name)) if name == "ended"),
        "{outcome:?} after {took:?}"
    );
}

#[test]
fn a_switch_the_run_drops_as_it_ends_says_it_ended() {
    // Taken and dropped unanswered, as a stage that fails while it drains does.
    let (supervisor, settings) = running_on("dropped", |received| drop(received.recv()));
    let (outcome, took) = switch_timed(&supervisor, &settings);
    assert!(
        matches!(outcome, Err(super::SupervisorError::EndedDuringSwitch(_))),
        "{outcome:?} after {took:?}"
    );
}

#[test]
fn a_switch_queued_when_the_run_ends_answers_with_the_end_not_at_the_timeout() {
    // The stage stops reading (its input ended while the switch was on the way) and the run
    // returns without taking it: the switch stays queued, and no answer ever comes.
    let (supervisor, settings) = running_on("queued", |received| {
        while received.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let (outcome, took) = switch_timed(&supervisor, &settings);
    assert!(
        matches!(outcome, Err(super::SupervisorError::EndedDuringSwitch(_))),
        "{outcome:?} after {took:?}"
    );
    assert!(took < Duration::from_secs(5), "with the run's end: {took:?}");
}

#[test]
fn a_switch_the_run_takes_answers_its_first_frame() {
    let (supervisor, settings) = running_on("taken", |received| {
        if let Ok(switch) = received.recv() {
            let _ = switch.reply.send(Ok(42));
        }
    });
    let (outcome, _) = switch_timed(&supervisor, &settings);
    assert_eq!(outcome.map(|switched| switched.applies_from).ok(), Some(42));
}

//! Tests of how admission learns a host's NVDEC seats, over a made-up inventory and made-up
//! pace (no GPU, no clock waited on): a start is not judged, a window behind holds
//! admission, a pipeline fallen behind lowers the seats to what was kept, and the operator's
//! setting overrides what was learned.

use super::*;
use std::sync::mpsc;

const BOUND: Duration = Duration::from_secs(10);
const SETTLE_WAIT: Duration = Duration::from_millis(300);

/// A pipeline's pace as a test sets it.
struct FakePace(Mutex<PaceReading>);

impl FakePace {
    fn on_time(first_frame: Instant) -> Arc<FakePace> {
        Arc::new(FakePace(Mutex::new(PaceReading {
            first_frame: Some(first_frame),
            setbacks: 0,
            share_kept: 1.0,
        })))
    }

    /// `setbacks` more, and the share of its rate it keeps now.
    fn set_back(&self, setbacks: u64, share_kept: f64) {
        let mut reading = self.0.lock().unwrap();
        reading.setbacks += setbacks;
        reading.share_kept = share_kept;
    }
}

impl PaceGauge for FakePace {
    fn read(&self, _now: Instant) -> PaceReading {
        *self.0.lock().unwrap()
    }
}

fn h100s(count: usize) -> Vec<GpuNvdec> {
    (0..count)
        .map(|ordinal| GpuNvdec {
            ordinal,
            model: Some("NVIDIA H100 80GB HBM3".into()),
            nvdec_capacity: Some(convstream_core::predicted_nvdec_pipelines(7)),
        })
        .collect()
}

/// `count` seats taken at once, each watched with an on-time pace whose first frame is now.
fn seated(board: &Arc<SeatBoard>, inventory: &[GpuNvdec], count: usize) -> Vec<(NvdecSeat, Arc<FakePace>)> {
    let now = Instant::now();
    (0..count)
        .map(|_| {
            let seat = board
                .admit(inventory, SeatWanted::AnyGpu, &[], &AtomicBool::new(false), &mut |_| {})
                .expect("a free seat");
            let pace = FakePace::on_time(now);
            board.watch_seat(&seat, pace.clone(), now);
            (seat, pace)
        })
        .collect()
}

/// A pipeline admitted on a thread: its GPU arrives on `seated` once it has a seat.
struct Waiter {
    seated: mpsc::Receiver<Option<usize>>,
    waits: mpsc::Receiver<String>,
    stop: Arc<AtomicBool>,
}

fn wait_for_seat(board: &Arc<SeatBoard>, inventory: &[GpuNvdec]) -> Waiter {
    let (seated_tx, seated) = mpsc::channel();
    let (waits_tx, waits) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let (board, inventory, thread_stop) = (board.clone(), inventory.to_vec(), stop.clone());
    std::thread::spawn(move || {
        let seat = board.admit(&inventory, SeatWanted::AnyGpu, &[], &thread_stop, &mut |why| {
            let _ = waits_tx.send(why.to_string());
        });
        let _ = seated_tx.send(seat.as_ref().map(NvdecSeat::ordinal));
        // Held until the test ends.
        std::thread::sleep(BOUND);
    });
    Waiter { seated, waits, stop }
}

/// Each look `WINDOW` after the one before, from the first moment every pipeline is settled.
fn looks(start: Instant) -> impl Iterator<Item = Instant> {
    (0..).map(move |n| start + pace::SETTLE + pace::WINDOW * n)
}

#[test]
fn a_start_is_not_judged_however_far_behind_it_is() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(1);
    let pipelines = seated(&board, &inventory, 4);
    let start = Instant::now();
    for n in 0..4 {
        for (_, pace) in &pipelines {
            pace.set_back(100, 0.2);
        }
        let now = start + pace::WINDOW * n / 2;
        assert_eq!(board.look_at_pace(now), None, "look {n}: still settling");
    }
    assert!(!board.lock().judge.any_behind(), "nothing was judged behind");
    assert_eq!(board.snapshot().0[0].capacity, Some(56), "the prediction stands");
}

#[test]
fn pipelines_on_time_teach_nothing_and_admission_goes_on() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(1);
    let _pipelines = seated(&board, &inventory, 56);
    for now in looks(Instant::now()).take(6) {
        assert_eq!(board.look_at_pace(now), None);
    }
    let (gpus, waiting) = board.snapshot();
    assert_eq!(
        (gpus[0].taken, gpus[0].capacity, gpus[0].source),
        (56, Some(56), SeatSource::Predicted)
    );
    assert_eq!(waiting, 0);
}

#[test]
fn a_pipeline_fallen_behind_stops_admission_at_the_pipelines_worth_its_gpu_kept() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(1);
    let pipelines = seated(&board, &inventory, 40);
    let mut at = looks(Instant::now());
    assert_eq!(board.look_at_pace(at.next().unwrap()), None, "windows start");
    assert_eq!(board.look_at_pace(at.next().unwrap()), None, "a window on time");
    // Every pipeline keeps three quarters of its rate, late frames in every window.
    for (_, pace) in &pipelines {
        pace.set_back(40, 0.75);
    }
    assert_eq!(
        board.look_at_pace(at.next().unwrap()),
        None,
        "one window behind is not yet a fall"
    );
    // A pipeline asking now waits: admission holds while one is behind.
    let waiter = wait_for_seat(&board, &inventory);
    let why = waiter.waits.recv_timeout(BOUND).expect("it says why it waits");
    assert_eq!(why, "an NVDEC seat (cuda:0 40/56)");
    assert!(board
        .waiting_reason()
        .unwrap()
        .contains("holds while a seated NVDEC pipeline is behind"));
    for (_, pace) in &pipelines {
        pace.set_back(40, 0.75);
    }
    let learned = board.look_at_pace(at.next().unwrap()).expect("a fall behind teaches");
    assert_eq!(
        learned.gpus,
        vec![GpuLearned {
            ordinal: 0,
            model: Some("NVIDIA H100 80GB HBM3".into()),
            seated: 40,
            kept: 30.0,
            seats: 30,
        }]
    );
    assert_eq!(learned.by_model(), [("NVIDIA H100 80GB HBM3".to_string(), 30)].into());
    let gpu = board.snapshot().0[0];
    assert_eq!((gpu.capacity, gpu.source), (Some(30), SeatSource::Learned));
    // No longer behind in a window, yet past the learned seats: the waiter still waits, and
    // /readyz's reason says what was learned.
    assert!(
        waiter.seated.recv_timeout(SETTLE_WAIT).is_err(),
        "40 seated, 30 learned"
    );
    let reason = board.waiting_reason().expect("one waits");
    assert!(reason.contains("NVDEC seats learned: cuda:0 30"), "{reason}");
    assert!(reason.contains("40 seated on cuda:0 (30.0 kept pace)"), "{reason}");
    // The same overload is not judged again while more are seated than learned.
    for (_, pace) in &pipelines {
        pace.set_back(40, 0.5);
    }
    for now in at.by_ref().take(3) {
        assert_eq!(board.look_at_pace(now), None);
    }
    assert_eq!(board.snapshot().0[0].capacity, Some(30));
    waiter.stop.store(true, Ordering::Relaxed);
    assert_eq!(waiter.seated.recv_timeout(BOUND).expect("the stop ends the wait"), None);
}

#[test]
fn a_window_behind_holds_admission_and_a_window_on_time_ends_the_hold() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(1);
    let pipelines = seated(&board, &inventory, 8);
    let mut at = looks(Instant::now());
    board.look_at_pace(at.next().unwrap());
    pipelines[3].1.set_back(20, 0.9);
    assert_eq!(board.look_at_pace(at.next().unwrap()), None);
    let waiter = wait_for_seat(&board, &inventory);
    waiter.waits.recv_timeout(BOUND).expect("it waits while one is behind");
    assert!(waiter.seated.recv_timeout(SETTLE_WAIT).is_err(), "held");
    pipelines[3].1.set_back(0, 1.0);
    assert_eq!(board.look_at_pace(at.next().unwrap()), None, "back on time");
    assert_eq!(waiter.seated.recv_timeout(BOUND).expect("seated in time"), Some(0));
    assert_eq!(board.snapshot().0[0].source, SeatSource::Predicted, "nothing learned");
}

#[test]
fn on_two_gpus_only_the_one_whose_pipelines_fell_behind_learns() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(2);
    let pipelines = seated(&board, &inventory, 40);
    let mut at = looks(Instant::now());
    board.look_at_pace(at.next().unwrap());
    for _ in 0..2 {
        for (seat, pace) in &pipelines {
            match seat.ordinal() {
                0 => pace.set_back(30, 0.5),
                _ => pace.set_back(0, 1.0),
            }
        }
        if let Some(learned) = board.look_at_pace(at.next().unwrap()) {
            let seats: Vec<(usize, usize, usize)> = learned
                .gpus
                .iter()
                .map(|gpu| (gpu.ordinal, gpu.seated, gpu.seats))
                .collect();
            assert_eq!(seats, vec![(0, 20, 10)], "cuda:1 kept every one: it taught nothing");
            assert_eq!(learned.by_model(), [("NVIDIA H100 80GB HBM3".to_string(), 10)].into());
            let now = board.snapshot().0;
            assert_eq!(now[1].source, SeatSource::Predicted, "cuda:1 keeps its seats");
            return;
        }
    }
    panic!("two windows behind make a fall behind");
}

#[test]
fn pipelines_not_watched_count_as_kept() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(1);
    let watched = seated(&board, &inventory, 2);
    // Two more decode a file as fast as they can: no pace to show.
    let _unwatched: Vec<NvdecSeat> = (0..2)
        .filter_map(|_| {
            board.admit(
                &inventory,
                SeatWanted::AnyGpu,
                &[],
                &AtomicBool::new(false),
                &mut |_| {},
            )
        })
        .collect();
    let mut at = looks(Instant::now());
    board.look_at_pace(at.next().unwrap());
    let mut learned = None;
    for _ in 0..2 {
        for (_, pace) in &watched {
            pace.set_back(50, 0.0);
        }
        learned = board.look_at_pace(at.next().unwrap());
    }
    let learned = learned.expect("a fall behind teaches");
    assert_eq!((learned.gpus[0].seated, learned.gpus[0].seats), (4, 2));
}

#[test]
fn the_operators_seats_override_what_was_learned_and_stop_the_learning() {
    let board = Arc::new(SeatBoard::default());
    let inventory = h100s(1);
    let pipelines = seated(&board, &inventory, 20);
    let mut at = looks(Instant::now());
    board.look_at_pace(at.next().unwrap());
    let mut learned = None;
    for _ in 0..2 {
        for (_, pace) in &pipelines {
            pace.set_back(50, 0.5);
        }
        learned = learned.or(board.look_at_pace(at.next().unwrap()));
    }
    assert_eq!(learned.expect("learned").gpus[0].seats, 10);
    let waiter = wait_for_seat(&board, &inventory);
    let why = waiter.waits.recv_timeout(BOUND).expect("it waits");
    assert_eq!(why, "an NVDEC seat (cuda:0 20/10 learned)");
    board.set_seats_per_gpu(Some(21));
    assert_eq!(waiter.seated.recv_timeout(BOUND).expect("seated in time"), Some(0));
    let gpu = board.snapshot().0[0];
    assert_eq!((gpu.capacity, gpu.source), (Some(21), SeatSource::Set));
    // With the seats set, a fall behind teaches nothing.
    for _ in 0..3 {
        for (_, pace) in &pipelines {
            pace.set_back(50, 0.5);
        }
        assert_eq!(board.look_at_pace(at.next().unwrap()), None);
    }
    // Back to no setting: what was learned stands again (a stopped admission only looks).
    board.set_seats_per_gpu(None);
    let stopped = AtomicBool::new(true);
    assert!(board
        .admit(&inventory, SeatWanted::AnyGpu, &[], &stopped, &mut |_| {})
        .is_none());
    let gpu = board.snapshot().0[0];
    assert_eq!((gpu.capacity, gpu.source), (Some(10), SeatSource::Learned));
}

#[test]
fn the_listener_hears_what_was_learned() {
    let board = Arc::new(SeatBoard::default());
    let heard = Arc::new(Mutex::new(Vec::new()));
    let kept = heard.clone();
    board.on_learned(Some(Arc::new(move |learned: &Learned| {
        kept.lock().unwrap().push(learned.by_model());
    })));
    let learned = Learned {
        gpus: vec![GpuLearned {
            ordinal: 0,
            model: Some("NVIDIA H200".into()),
            seated: 30,
            kept: 24.2,
            seats: 24,
        }],
    };
    board.tell(&learned);
    assert_eq!(*heard.lock().unwrap(), vec![[("NVIDIA H200".to_string(), 24)].into()]);
    assert!(learned
        .describe()
        .starts_with("NVDEC pipelines fell behind with 30 seated on cuda:0 (24.2 kept pace)"));
}

//! Tests of NVDEC admission over a made-up inventory of GPUs (no GPU needed): spreading,
//! waiting with a reason, and which seat given back admits which waiter.

use super::*;
use std::sync::mpsc;
use std::time::Duration;

/// Long enough for a thread that should not be seated to have been, were it wrong.
const SETTLE: Duration = Duration::from_millis(300);
/// A bound on waits that should end: a hang fails the test instead of blocking.
const BOUND: Duration = Duration::from_secs(10);

fn gpus(count: usize, capacity: usize) -> Vec<GpuNvdec> {
    (0..count)
        .map(|ordinal| GpuNvdec {
            ordinal,
            model: None,
            nvdec_capacity: Some(capacity),
        })
        .collect()
}

fn admit_now(board: &Arc<SeatBoard>, inventory: &[GpuNvdec], wanted: SeatWanted) -> Option<NvdecSeat> {
    board.admit(inventory, wanted, &[], &AtomicBool::new(false), &mut |_| {})
}

/// Starts a pipeline's admission on a thread: its seat's GPU arrives on the first channel,
/// the reason it waits (if it does) on the second. The seat is held until `release` closes.
struct Starter {
    seated: mpsc::Receiver<Option<usize>>,
    waits: mpsc::Receiver<String>,
    stop: Arc<AtomicBool>,
    release: Option<mpsc::Sender<()>>,
}

fn start(board: &Arc<SeatBoard>, inventory: &[GpuNvdec], wanted: SeatWanted) -> Starter {
    let (seated_tx, seated) = mpsc::channel();
    let (waits_tx, waits) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let stop = Arc::new(AtomicBool::new(false));
    let (board, inventory, thread_stop) = (board.clone(), inventory.to_vec(), stop.clone());
    std::thread::spawn(move || {
        let seat = board.admit(&inventory, wanted, &[], &thread_stop, &mut |why| {
            let _ = waits_tx.send(why.to_string());
        });
        let _ = seated_tx.send(seat.as_ref().map(NvdecSeat::ordinal));
        let _ = released.recv();
        drop(seat);
    });
    Starter {
        seated,
        waits,
        stop,
        release: Some(release),
    }
}

fn all_seat_evenly(gpu_count: usize) {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(gpu_count, 56);
    let starters: Vec<Starter> = (0..gpu_count * 56)
        .map(|_| start(&board, &inventory, SeatWanted::AnyGpu))
        .collect();
    let mut per_gpu = vec![0; gpu_count];
    for starter in &starters {
        let ordinal = starter
            .seated
            .recv_timeout(BOUND)
            .expect("seated in time")
            .expect("a seat");
        per_gpu[ordinal] += 1;
    }
    assert_eq!(per_gpu, vec![56; gpu_count], "every GPU's seats are taken");
    let (seats, waiting) = board.snapshot();
    assert!(seats.iter().all(|gpu| gpu.taken == 56 && gpu.capacity == Some(56)));
    assert_eq!(waiting, 0);
}

#[test]
fn pipelines_started_at_once_on_one_gpu_all_seat() {
    all_seat_evenly(1);
}

#[test]
fn pipelines_started_at_once_on_two_gpus_all_seat_and_split_evenly() {
    all_seat_evenly(2);
}

#[test]
fn pipelines_started_at_once_on_four_gpus_all_seat_and_split_evenly() {
    all_seat_evenly(4);
}

#[test]
fn seats_are_spread_while_taken_one_after_another() {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(2, 56);
    let seats: Vec<NvdecSeat> = (0..10)
        .filter_map(|_| admit_now(&board, &inventory, SeatWanted::AnyGpu))
        .collect();
    let on_first = seats.iter().filter(|seat| seat.ordinal() == 0).count();
    assert_eq!(on_first, 5, "half of ten on each GPU");
}

#[test]
fn past_every_seat_a_pipeline_waits_saying_why_and_a_seat_freed_on_any_gpu_admits_it() {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(2, 2);
    let mut held: Vec<NvdecSeat> = (0..4)
        .map(|_| admit_now(&board, &inventory, SeatWanted::AnyGpu).expect("a free seat"))
        .collect();
    let waiter = start(&board, &inventory, SeatWanted::AnyGpu);
    let why = waiter.waits.recv_timeout(BOUND).expect("it says why it waits");
    assert_eq!(why, "an NVDEC seat (cuda:0 2/2, cuda:1 2/2)");
    assert_eq!(board.snapshot().1, 1, "one pipeline waits");
    assert!(waiter.seated.recv_timeout(SETTLE).is_err(), "no seat was free");
    let on_second = held
        .iter()
        .position(|seat| seat.ordinal() == 1)
        .expect("a seat on cuda:1");
    drop(held.remove(on_second));
    assert_eq!(waiter.seated.recv_timeout(BOUND).expect("seated in time"), Some(1));
    assert_eq!(board.snapshot().1, 0, "none waits");
}

#[test]
fn a_pipeline_naming_its_gpu_waits_for_that_gpu_only() {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(2, 1);
    let on_first = admit_now(&board, &inventory, SeatWanted::Gpu(0)).expect("a free seat");
    let on_second = admit_now(&board, &inventory, SeatWanted::Gpu(1)).expect("a free seat");
    let waiter = start(&board, &inventory, SeatWanted::Gpu(1));
    let why = waiter.waits.recv_timeout(BOUND).expect("it says why it waits");
    assert_eq!(why, "an NVDEC seat (cuda:1 1/1)");
    drop(on_first);
    assert!(
        waiter.seated.recv_timeout(SETTLE).is_err(),
        "cuda:0's seat is not for it"
    );
    drop(on_second);
    assert_eq!(waiter.seated.recv_timeout(BOUND).expect("seated in time"), Some(1));
}

#[test]
fn a_stop_ends_the_wait_without_a_seat() {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(1, 1);
    let _only = admit_now(&board, &inventory, SeatWanted::AnyGpu).expect("a free seat");
    let mut waiter = start(&board, &inventory, SeatWanted::AnyGpu);
    waiter.waits.recv_timeout(BOUND).expect("it waits");
    waiter.stop.store(true, Ordering::Relaxed);
    assert_eq!(
        waiter.seated.recv_timeout(BOUND).expect("ended in time"),
        None,
        "stopped, not seated"
    );
    waiter.release.take();
    assert_eq!(board.snapshot().1, 0, "none waits");
}

#[test]
fn an_unknown_capacity_admits_every_pipeline() {
    let board = Arc::new(SeatBoard::default());
    let inventory = vec![GpuNvdec {
        ordinal: 0,
        model: None,
        nvdec_capacity: None,
    }];
    let seats: Vec<_> = (0..100)
        .filter_map(|_| admit_now(&board, &inventory, SeatWanted::AnyGpu))
        .collect();
    assert_eq!(seats.len(), 100);
}

#[test]
fn a_gpu_the_host_lacks_is_refused_at_once() {
    let board = Arc::new(SeatBoard::default());
    assert!(admit_now(&board, &gpus(1, 1), SeatWanted::Gpu(3)).is_none());
}

#[test]
fn the_reason_names_the_pipelines_asked_for_and_the_seats_of_every_gpu() {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(2, 1);
    let _held: Vec<NvdecSeat> = (0..2)
        .filter_map(|_| admit_now(&board, &inventory, SeatWanted::AnyGpu))
        .collect();
    assert_eq!(board.waiting_reason(), None, "none waits yet");
    let waiter = start(&board, &inventory, SeatWanted::AnyGpu);
    waiter.waits.recv_timeout(BOUND).expect("it waits");
    assert_eq!(
        board.waiting_reason().as_deref(),
        Some(
            "1 pipelines wait for an NVDEC seat: the config asks more NVDEC pipelines (3) than this host's GPUs \
             seat (2 on 2 GPUs); decoder = \"software\" decodes the rest on the CPU"
        )
    );
    waiter.stop.store(true, Ordering::Relaxed);
    waiter.seated.recv_timeout(BOUND).expect("ended in time");
}

#[test]
fn seats_the_operator_measured_replace_the_prediction_and_a_raise_admits_waiters() {
    let board = Arc::new(SeatBoard::default());
    let inventory = gpus(2, 56);
    board.set_seats_per_gpu(Some(2));
    let held: Vec<NvdecSeat> = (0..4)
        .map(|_| admit_now(&board, &inventory, SeatWanted::AnyGpu).expect("a free seat"))
        .collect();
    let waiter = start(&board, &inventory, SeatWanted::AnyGpu);
    let why = waiter.waits.recv_timeout(BOUND).expect("it says why it waits");
    assert_eq!(
        why, "an NVDEC seat (cuda:0 2/2, cuda:1 2/2)",
        "2 measured seats, not 56 predicted"
    );
    assert!(waiter.seated.recv_timeout(SETTLE).is_err(), "no seat was free");
    board.set_seats_per_gpu(Some(3));
    assert!(
        waiter.seated.recv_timeout(BOUND).expect("seated in time").is_some(),
        "a raised count seats the waiter"
    );
    // Back to the prediction: 56 each.
    board.set_seats_per_gpu(None);
    let more = admit_now(&board, &inventory, SeatWanted::AnyGpu);
    assert!(more.is_some());
    assert!(board.snapshot().0.iter().all(|gpu| gpu.capacity == Some(56)));
    drop(held);
}

#[test]
fn seats_measured_for_a_model_apply_to_its_gpus_only_and_a_setting_overrides_them() {
    let board = Arc::new(SeatBoard::default());
    // A host with two models: the file measured one of them.
    let inventory = vec![
        GpuNvdec {
            ordinal: 0,
            model: Some("NVIDIA H200".into()),
            nvdec_capacity: Some(56),
        },
        GpuNvdec {
            ordinal: 1,
            model: Some("NVIDIA H100 80GB HBM3".into()),
            nvdec_capacity: Some(56),
        },
    ];
    board.set_measured_seats(Some(convstream_config::MeasuredSeats {
        measured_with: None,
        seats_per_gpu: [("NVIDIA H200".to_string(), 1)].into(),
    }));
    let first = admit_now(&board, &inventory, SeatWanted::Gpu(0)).expect("the measured seat");
    let waiter = start(&board, &inventory, SeatWanted::Gpu(0));
    let why = waiter.waits.recv_timeout(BOUND).expect("it says why it waits");
    assert_eq!(why, "an NVDEC seat (cuda:0 1/1)", "1 measured seat, not 56 predicted");
    let sources: Vec<(Option<usize>, SeatSource)> = board
        .snapshot()
        .0
        .iter()
        .map(|gpu| (gpu.capacity, gpu.source))
        .collect();
    assert_eq!(
        sources,
        vec![(Some(1), SeatSource::Measured), (Some(56), SeatSource::Predicted)]
    );
    // A reload measuring more seats admits the pipeline already waiting.
    board.set_measured_seats(Some(convstream_config::MeasuredSeats {
        measured_with: None,
        seats_per_gpu: [("NVIDIA H200".to_string(), 2)].into(),
    }));
    assert_eq!(
        waiter.seated.recv_timeout(BOUND).expect("seated in time"),
        Some(0),
        "the new measurement seats the waiter"
    );
    // Seats set for every GPU weigh more than the measured ones.
    board.set_seats_per_gpu(Some(5));
    let third = admit_now(&board, &inventory, SeatWanted::Gpu(0)).expect("a set seat");
    assert!(board
        .snapshot()
        .0
        .iter()
        .all(|gpu| gpu.capacity == Some(5) && gpu.source == SeatSource::Set));
    drop((first, third));
}

/// Before anything ran, one H100's or H200's prediction seats what one such GPU alone
/// kept up with: 32 NVDEC pipelines beside software ones, or 56, all seat at once.
#[test]
fn the_prediction_seats_what_one_gpu_alone_sustains() {
    use convstream_core::predicted_nvdec_pipelines;
    for asked in [32, 56] {
        let board = Arc::new(SeatBoard::default());
        let inventory = gpus(1, predicted_nvdec_pipelines(7));
        let held: Vec<NvdecSeat> = (0..asked)
            .filter_map(|_| admit_now(&board, &inventory, SeatWanted::AnyGpu))
            .collect();
        assert_eq!(held.len(), asked, "{asked} asked");
        assert_eq!(board.waiting_reason(), None);
    }
}

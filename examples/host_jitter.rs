//! Measures how long threads on this host are kept from running, without any GPU or video:
//! the floor under the latency tail of a real-time pipeline on the same host.
//!
//! Two kinds of probe threads run for a while:
//! - spinners read the clock in a tight loop; a gap between two reads is time the thread
//!   did not run (another task, an interrupt, or a hypervisor that descheduled the vCPU);
//! - sleepers wake at 30 Hz deadlines, as a paced pipeline's threads do, and record how late
//!   each wake-up is.
//!
//! It prints, per kind, how many gaps or late wake-ups passed 0.25, 0.5, 1 and 2 ms, the
//! largest, and the 99th percentile of the sleepers' lateness, plus the steal time the
//! kernel counted (`/proc/stat`) over the run.
//!
//!   cargo run --release --example host_jitter -- [SECONDS] [SPINNERS] [SLEEPERS]
//!   (defaults: 20 s, 2 spinners, 4 sleepers)

use std::time::{Duration, Instant};

const THRESHOLDS_MS: [f64; 4] = [0.25, 0.5, 1.0, 2.0];

/// Gaps (spinners) or wake-up delays (sleepers) of one thread, in milliseconds.
fn spin(run_for: Duration) -> Vec<f64> {
    let started = Instant::now();
    let mut last = started;
    let mut gaps = Vec::new();
    while last - started < run_for {
        let now = Instant::now();
        let gap = (now - last).as_secs_f64() * 1e3;
        if gap >= THRESHOLDS_MS[0] {
            gaps.push(gap);
        }
        last = now;
    }
    gaps
}

fn sleep_at_30hz(run_for: Duration) -> Vec<f64> {
    let period = Duration::from_secs_f64(1.0 / 30.0);
    let started = Instant::now();
    let mut deadline = started + period;
    let mut delays = Vec::new();
    while deadline - started < run_for {
        if let Some(wait) = deadline.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        delays.push(Instant::now().saturating_duration_since(deadline).as_secs_f64() * 1e3);
        deadline += period;
    }
    delays
}

/// Total steal time over all CPUs in clock ticks, from the first line of /proc/stat.
fn steal_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines().next()?.split_whitespace().nth(8)?.parse().ok()
}

fn describe(kind: &str, threads: usize, seconds: f64, samples: &[f64], all_counted: bool) -> String {
    let counts: Vec<String> = THRESHOLDS_MS
        .iter()
        .map(|&ms| format!(">={ms} ms: {}", samples.iter().filter(|&&s| s >= ms).count()))
        .collect();
    let max = samples.iter().cloned().fold(0.0, f64::max);
    let mut line = format!(
        "{kind}: {threads} thread(s), {seconds:.0} s; {}; max {max:.2} ms",
        counts.join(", ")
    );
    if all_counted && !samples.is_empty() {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let quantile = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        line += &format!(
            "; {} wake-ups, late by p50 {:.3} ms, p99 {:.3} ms",
            sorted.len(),
            quantile(0.5),
            quantile(0.99)
        );
    }
    line
}

fn main() {
    let arg = |index: usize, default: f64| {
        std::env::args()
            .nth(index)
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or(default)
    };
    let (seconds, spinners, sleepers) = (arg(1, 20.0), arg(2, 2.0) as usize, arg(3, 4.0) as usize);
    let run_for = Duration::from_secs_f64(seconds);
    let steal_before = steal_ticks();
    let spinning: Vec<_> = (0..spinners)
        .map(|_| std::thread::spawn(move || spin(run_for)))
        .collect();
    let sleeping: Vec<_> = (0..sleepers)
        .map(|_| std::thread::spawn(move || sleep_at_30hz(run_for)))
        .collect();
    let join = |handles: Vec<std::thread::JoinHandle<Vec<f64>>>| -> Vec<f64> {
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    };
    let (gaps, delays) = (join(spinning), join(sleeping));
    println!("{}", describe("spinners, gaps", spinners, seconds, &gaps, false));
    println!(
        "{}",
        describe("sleepers at 30 Hz, late wake-ups", sleepers, seconds, &delays, true)
    );
    if let (Some(before), Some(after)) = (steal_before, steal_ticks()) {
        // USER_HZ is 100 on Linux: one tick is 10 ms.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stolen = after.saturating_sub(before) as f64 * 10.0;
        println!(
            "steal (/proc/stat): {stolen:.0} ms over {cpus} CPUs in {seconds:.0} s ({:.2}% of CPU time)",
            stolen / (seconds * 1e3 * cpus as f64) * 100.0
        );
    }
}

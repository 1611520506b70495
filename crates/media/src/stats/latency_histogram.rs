//! Frame latencies as a fixed log-linear histogram of atomic counts ([`LatencyHistogram`]):
//! recording is one atomic add, a quantile is one walk over 896 buckets, whatever the
//! number of frames, and two snapshots of the counts subtract into the histogram of the
//! frames between them (the server's history takes each interval's p99 that way).

use std::sync::atomic::{AtomicU64, Ordering};

/// Sub-buckets per power of two: each bucket is at most 1/32 of its lower bound wide, so
/// a quantile read at a bucket's middle is within 1.6% of the true sample.
const SUB_BITS: u32 = 5;
const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// Buckets for every `u32` of microseconds (over an hour): values below 32 exactly, then 32
/// sub-buckets for each of the 27 powers of two up to 2^32.
pub const LATENCY_BUCKETS: usize = SUB_BUCKETS * (32 - SUB_BITS as usize + 1);

/// Counts of frame latencies in microseconds, bucketed log-linearly.
#[derive(Debug)]
pub struct LatencyHistogram {
    buckets: Box<[AtomicU64]>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: (0..LATENCY_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// The bucket of `micros`.
fn bucket_of(micros: u32) -> usize {
    if micros < SUB_BUCKETS as u32 {
        return micros as usize;
    }
    let top = 31 - micros.leading_zeros(); // >= SUB_BITS
    let shift = top - SUB_BITS;
    (shift as usize + 1) * SUB_BUCKETS + ((micros >> shift) as usize - SUB_BUCKETS)
}

/// The middle of bucket `index`, in microseconds.
fn middle_of(index: usize) -> f64 {
    if index < SUB_BUCKETS {
        return index as f64;
    }
    let shift = (index / SUB_BUCKETS - 1) as u32;
    let low = ((SUB_BUCKETS + index % SUB_BUCKETS) as u64) << shift;
    low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl LatencyHistogram {
    /// Counts one frame's latency.
    pub fn record(&self, micros: u32) {
        self.buckets[bucket_of(micros)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now, bucket by bucket (for [`quantile_ms_of`] and differences).
    pub fn counts(&self) -> Vec<u64> {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect()
    }

    /// The `q` quantile (0..=1) of every latency recorded, in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        quantile_ms_of(&self.counts(), q)
    }
}

/// The `q` quantile (0..=1) of the latencies `counts` holds (as `LatencyHistogram::counts`
/// gives them, or the difference of two), in milliseconds; `None` when it holds none. The
/// sample taken is the one at rank `round((n - 1) * q)`, as the run's report takes it.
pub fn quantile_ms_of(counts: &[u64], q: f64) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((total - 1) as f64 * q.clamp(0.0, 1.0)).round() as u64;
    let mut seen = 0u64;
    for (index, &count) in counts.iter().enumerate() {
        seen += count;
        if seen > rank {
            return Some(middle_of(index) / 1e3);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_a_bucket_whose_middle_is_within_two_percent() {
        let mut value: u64 = 1;
        while value <= u32::MAX as u64 {
            let micros = value as u32;
            let index = bucket_of(micros);
            assert!(index < LATENCY_BUCKETS, "{micros} -> {index}");
            let middle = middle_of(index);
            assert!(
                (middle - micros as f64).abs() <= micros as f64 * 0.016 + 0.5,
                "{micros} read as {middle}"
            );
            value = value * 17 / 16 + 1;
        }
        assert_eq!(bucket_of(u32::MAX), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn quantiles_match_sorted_samples_within_the_bucket_width() {
        let histogram = LatencyHistogram::default();
        // 1..=10000 microseconds, shuffled by a stride prime to the count.
        let samples: Vec<u32> = (0..10_000u32).map(|i| (i * 7919) % 10_000 + 1).collect();
        for &s in &samples {
            histogram.record(s);
        }
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            let exact = sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
            let read = histogram.quantile_ms(q).unwrap();
            assert!((read - exact).abs() <= exact * 0.02 + 0.001, "q {q}: {read} vs {exact}");
        }
        assert_eq!(LatencyHistogram::default().quantile_ms(0.99), None);
    }

    #[test]
    fn the_difference_of_two_snapshots_holds_only_the_frames_between_them() {
        let histogram = LatencyHistogram::default();
        for _ in 0..1000 {
            histogram.record(100_000); // 100 ms, before
        }
        let before = histogram.counts();
        for _ in 0..100 {
            histogram.record(2_000); // 2 ms, since
        }
        let since: Vec<u64> = histogram.counts().iter().zip(&before).map(|(a, b)| a - b).collect();
        let p99 = quantile_ms_of(&since, 0.99).unwrap();
        assert!((p99 - 2.0).abs() < 0.05, "{p99}");
        assert!(histogram.quantile_ms(0.99).unwrap() > 90.0);
    }
}

//! Random samples for tests: fresh on every run, reproducible from the seed printed when a
//! generator is made (set `CONVSTREAM_TEST_SEED` to replay one).

/// The seed a randomised test runs with: `CONVSTREAM_TEST_SEED` when set (a replay), else
/// one from the clock.
pub fn seed() -> u64 {
    replayed_seed().unwrap_or_else(clock_seed)
}

/// The seed in `CONVSTREAM_TEST_SEED`, if set: a failed run's, to replay it.
pub fn replayed_seed() -> Option<u64> {
    std::env::var("CONVSTREAM_TEST_SEED").ok().and_then(|s| s.parse().ok())
}

/// A fresh seed from the clock.
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// A small xorshift generator.
pub struct Random(u64);

impl Random {
    /// Seeded from `CONVSTREAM_TEST_SEED` or the clock; prints the seed.
    pub fn seeded() -> Random {
        let seed = seed() | 1;
        println!("seed {seed} (CONVSTREAM_TEST_SEED={seed} replays it)");
        Random(seed)
    }

    /// Seeded with `seed` (the same numbers on every run).
    pub fn from_seed(seed: u64) -> Random {
        Random(seed | 1)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `bytes` filled with random samples of `depth` bits: bytes at 8 bits, else
    /// little-endian 16-bit words holding `depth` bits shifted left by `shift`.
    pub fn fill_samples(&mut self, bytes: &mut [u8], depth: u32, shift: u32) {
        if depth > 8 {
            for sample in bytes.chunks_exact_mut(2) {
                let value = ((self.next_u64() % (1 << depth)) as u16) << shift;
                sample.copy_from_slice(&value.to_le_bytes());
            }
        } else {
            bytes.iter_mut().for_each(|byte| *byte = self.next_u64() as u8);
        }
    }
}

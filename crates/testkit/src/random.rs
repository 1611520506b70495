//! Random samples for tests: fresh on every run, reproducible from the seed printed when a
//! generator is made (set `CONVSTREAM_TEST_SEED` to replay one).

/// A small xorshift generator.
pub struct Random(u64);

impl Random {
    /// Seeded from `CONVSTREAM_TEST_SEED` or the clock; prints the seed.
    pub fn seeded() -> Random {
        let seed = std::env::var("CONVSTREAM_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            })
            | 1;
        println!("seed {seed} (CONVSTREAM_TEST_SEED={seed} replays it)");
        Random(seed)
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

//! What the workspace's tests share, written once: temporary folders, YUV4MPEG2 files, a seeded
//! source of random samples, hostile inputs for property tests, every exact tie of a divisor, the CPU oracle (a
//! convolution from the definition, sharing no code with the engines), and how a test that
//! needs a GPU says so.
//!
//! A test that needs a GPU is `#[ignore = "needs a GPU"]`: without one it is reported as
//! ignored, never as passed, and a GPU host runs it with `cargo test -- --include-ignored`
//! (or the test binary with `--include-ignored`).

pub mod hostile;
pub mod oracle;
pub mod random;
pub mod ties;
pub mod y4m;

/// A fresh temporary folder, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("convstream-test")
        .tempdir()
        .expect("a temporary folder")
}

/// Whether this run was asked to use a GPU for tests that run on either engine
/// (`CONVSTREAM_TEST_GPU=1`, set by the GPU scripts): they then run on CUDA.
pub fn gpu_requested() -> bool {
    std::env::var("CONVSTREAM_TEST_GPU").is_ok_and(|v| v == "1")
}

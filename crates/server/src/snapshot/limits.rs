//! How many snapshots, how fresh, how long a wait, how wide a picture.

use std::time::Duration;

/// Snapshots one pipeline serves per second, in bursts of as many.
pub const SNAPSHOTS_PER_SECOND: f64 = 10.0;
/// A copy younger than this answers without asking the pipeline for another.
pub(super) const FRESH_FOR: Duration = Duration::from_millis(100);
/// The longest a request waits for the pipeline's next frame.
pub(super) const WAIT_AT_MOST: Duration = Duration::from_secs(2);
pub(super) const POLL_EVERY: Duration = Duration::from_millis(10);
/// The width a picture has when none is asked for (at most the frame's), and the most.
pub(super) const DEFAULT_WIDTH: usize = 640;
pub(super) const MAX_WIDTH: usize = 4096;
/// Pipelines whose request budget is remembered; beyond, the idlest are forgotten.
pub(super) const REMEMBERED_PIPELINES: usize = 1024;

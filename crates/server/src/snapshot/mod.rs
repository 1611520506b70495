//! `GET /pipelines/{name}/snapshot`: the latest input or output frame of a pipeline as a
//! JPEG or PNG picture, for previews. The pipeline copies a frame only when asked (see
//! [`convstream_media::snapshot`]); converting and encoding run here, on the blocking
//! pool. Requests are limited per pipeline (429 with `Retry-After` beyond), a copy a
//! moment old answers several requests, and a wait for a frame is bounded and ends when
//! the pipeline stops.

mod error;
mod handler;
mod limiter;
mod limits;
pub mod picture;
mod query;

pub use error::SnapshotError;
pub use handler::{routes, snapshot};
pub use limiter::SnapshotLimiter;
pub use limits::SNAPSHOTS_PER_SECOND;
pub use query::{parse_query, SnapshotQuery};

//! The operator console: a page at `/` that lists the pipelines, previews one, switches
//! its mask and deletes pipelines, all through the API with the operator's token. The
//! page, its script, style and icon are compiled into the binary and served with a strict
//! Content-Security-Policy (no inline script or style, nothing from elsewhere); they hold
//! no data, so they are served without a token. Its endpoints, `GET /console/status` and
//! `POST /console/reload` and `POST /console/mask-preview`, need the token like the rest of the API.
//!
//! - `routes`: [`page_routes`], [`data_routes`], their handlers and
//!   `CONTENT_SECURITY_POLICY`; `mask_preview`: `POST /console/mask-preview`, a mask's
//!   matrix as `convstream masks show` prints it; `assets/`: the page, script, style and icon.

mod mask_preview;
mod routes;

pub use routes::{data_routes, page_routes};

//! convstream inside GStreamer: the `convstreamfilter` element ([`filter`]) runs the same
//! masks, semantics and engines (CPU, CUDA lanes) as `convstream run` on `video/x-raw`
//! buffers. Built as `libgstconvstream.so`; `GST_PLUGIN_PATH=target/release` finds it.

pub mod filter;
mod formats;

pub use formats::{engine_format, formats};

use gst::glib;

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    filter::register(plugin)
}

gst::plugin_define!(
    convstream,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    env!("CARGO_PKG_VERSION"),
    "MIT/X11",
    env!("CARGO_PKG_NAME"),
    "convstream",
    "https://github.com/convstream/convstream",
    "2026-11-24"
);

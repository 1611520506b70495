//! The `convstreamfilter` element: a `BaseTransform` that hands each buffer to a convstream
//! engine and pushes the filtered buffers in order. With the CUDA engine several buffers are
//! in flight in the engine's lanes (copies and kernels of different frames overlap); the
//! added latency (the lanes' frames) is reported through the LATENCY query, and EOS and
//! flushes drain them.

mod choices;
mod frames;
mod imp;
mod pool;
mod settings;
mod stream;

use std::sync::LazyLock;

use gst::glib;
use gst::prelude::*;

/// The element's debug category (`GST_DEBUG=convstreamfilter:5`).
pub(crate) static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "convstreamfilter",
        gst::DebugColorFlags::empty(),
        Some("convstream 2D convolution"),
    )
});

glib::wrapper! {
    pub struct ConvstreamFilter(ObjectSubclass<imp::ConvstreamFilter>)
        @extends gst_base::BaseTransform, gst::Element, gst::Object;
}

/// Registers `convstreamfilter` with `plugin`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    // The property enums are documented with the element (gst-inspect, the plugin cache).
    choices::Border::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    choices::Planes::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    choices::EngineKind::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "convstreamfilter",
        gst::Rank::NONE,
        ConvstreamFilter::static_type(),
    )
}

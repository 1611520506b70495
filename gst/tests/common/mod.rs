//! What the element's test files share: GStreamer set-up, the plugin and `convstream` binary
//! that `cargo test --release --workspace` builds, planes of a buffer, YUV4MPEG2 frames, clips
//! made with FFmpeg's CLI, and pipelines run to their end.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use gst::prelude::*;
use gst_video::prelude::*;

pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        gst::init().expect("GStreamer initialises");
        gstconvstream::plugin_register_static().expect("the plugin registers");
    });
}

/// The folder of this test executable (`target/release/deps`), where the same cargo
/// invocation put the plugin it built (`cargo build` copies it one folder up, later).
pub fn test_exe_dir() -> PathBuf {
    std::env::current_exe().unwrap().parent().unwrap().to_path_buf()
}

/// The `convstream` binary the same `cargo test --release --workspace` built.
pub fn convstream_binary() -> PathBuf {
    let binary = test_exe_dir().parent().unwrap().join("convstream");
    assert!(
        binary.exists(),
        "{} is built by `cargo test --release --workspace` (scripts/test.sh)",
        binary.display()
    );
    binary
}

/// The plugin alone in a folder of `dir`, for `GST_PLUGIN_PATH` (GStreamer would try to load
/// every library in deps/).
pub fn plugin_folder(dir: &Path) -> PathBuf {
    let plugin = test_exe_dir().join("libgstconvstream.so");
    assert!(
        plugin.exists(),
        "{} is built by `cargo test --release --workspace`",
        plugin.display()
    );
    let folder = dir.join("plugin");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(&plugin, folder.join("libgstconvstream.so")).unwrap();
    folder
}

/// The pixels of each plane of `buffer`, rows without their padding.
pub fn planes_of(buffer: &gst::BufferRef, info: &gst_video::VideoInfo) -> Vec<Vec<u8>> {
    let video = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, info).unwrap();
    let format_info = info.format_info();
    (0..info.n_planes())
        .map(|plane| {
            let data = video.plane_data(plane).unwrap();
            let stride = video.plane_stride()[plane as usize] as usize;
            let component = format_info
                .plane()
                .iter()
                .position(|&p| p == plane)
                .expect("a component in the plane") as u8;
            let height = format_info.scale_height(component, info.height()) as usize;
            let width = format_info.scale_width(component, info.width()) as usize;
            let row_bytes = width * format_info.pixel_stride()[component as usize] as usize;
            (0..height)
                .flat_map(|y| data[y * stride..y * stride + row_bytes].iter().copied())
                .collect()
        })
        .collect()
}

/// Runs FFmpeg's CLI with `args` (after `-y -loglevel error`) and fails the test if it fails.
pub fn ffmpeg(args: &[&str]) {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-loglevel", "error", "-y"])
        .args(args)
        .output()
        .expect("ffmpeg runs (scripts/install-deps.sh installs it)");
    assert!(
        output.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `convstream run` on `input` with `args`, written to `output` (a y4m file); fails the
/// test if it fails.
pub fn convstream_run(input: &Path, output: &Path, args: &[&str]) {
    let run = Command::new(convstream_binary())
        .args(["run", "--no-progress"])
        .args(args)
        .arg("-i")
        .arg(input)
        .arg("-o")
        .arg(output)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "convstream run {args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// How the end of a test pipeline answers the element's ALLOCATION query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Downstream {
    /// Reads VideoMeta: the element hands over the engine's own planes.
    ReadsVideoMeta,
    /// Wants the default layout: the element copies.
    DefaultLayout,
}

/// A buffer that left a pipeline, with the video it was negotiated as.
pub struct Sample {
    /// The buffer's position in the media (its stream time): 0 for the first frame, whatever
    /// the container's start offset.
    pub stream_time: Option<gst::ClockTime>,
    pub info: gst_video::VideoInfo,
    pub planes: Vec<Vec<u8>>,
}

impl Sample {
    /// The planes one after another, as a y4m frame holds them.
    pub fn bytes(&self) -> Vec<u8> {
        self.planes.concat()
    }
}

/// Makes `appsink` answer the ALLOCATION query as `downstream` says.
pub fn answer_allocation(appsink: &gst::Element, downstream: Downstream) {
    if downstream == Downstream::DefaultLayout {
        return;
    }
    let pad = appsink.static_pad("sink").unwrap();
    pad.add_probe(gst::PadProbeType::QUERY_DOWNSTREAM, |_, info| {
        if let Some(gst::PadProbeData::Query(query)) = &mut info.data {
            if let gst::QueryViewMut::Allocation(allocation) = query.view_mut() {
                allocation.add_allocation_meta::<gst_video::VideoMeta>(None);
            }
        }
        gst::PadProbeReturn::Ok
    });
}

/// Every buffer `appsink` receives from now on, as samples.
pub fn collect(appsink: &gst::Element) -> std::sync::Arc<std::sync::Mutex<Vec<Sample>>> {
    let samples = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = appsink.clone().dynamic_cast::<gst_app::AppSink>().unwrap();
    let kept = samples.clone();
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let caps = sample.caps().ok_or(gst::FlowError::NotNegotiated)?;
                let info = gst_video::VideoInfo::from_caps(caps).map_err(|_| gst::FlowError::NotNegotiated)?;
                let buffer = sample.buffer().ok_or(gst::FlowError::Error)?;
                let stream_time = sample
                    .segment()
                    .and_then(|segment| segment.downcast_ref::<gst::ClockTime>())
                    .and_then(|segment| segment.to_stream_time(buffer.pts()?));
                kept.lock().unwrap().push(Sample {
                    stream_time,
                    planes: planes_of(buffer, &info),
                    info,
                });
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    samples
}

/// Plays `pipeline` until EOS, an error or `timeout`; returns the error, if any.
pub fn play_to_end(pipeline: &gst::Element, timeout: gst::ClockTime) -> Result<(), String> {
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| format!("cannot play: {e}"))?;
    let result = wait_for_end(pipeline, timeout);
    pipeline.set_state(gst::State::Null).unwrap();
    result
}

/// Waits on `pipeline`'s bus for EOS (Ok), an error, or `timeout` (both Err).
pub fn wait_for_end(pipeline: &gst::Element, timeout: gst::ClockTime) -> Result<(), String> {
    let bus = pipeline.bus().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_nanos(timeout.nseconds());
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let Some(message) = bus.timed_pop(gst::ClockTime::from_nseconds(left.as_nanos() as u64)) else {
            break;
        };
        match message.view() {
            gst::MessageView::Eos(_) => return Ok(()),
            gst::MessageView::Error(e) => {
                return Err(format!("{} ({})", e.error(), e.debug().unwrap_or_default()));
            }
            _ => {}
        }
    }
    Err(format!("no EOS within {timeout}"))
}

/// The element named `name` in `pipeline`.
pub fn by_name(pipeline: &gst::Element, name: &str) -> gst::Element {
    pipeline
        .clone()
        .dynamic_cast::<gst::Bin>()
        .unwrap()
        .by_name(name)
        .unwrap_or_else(|| panic!("an element named {name}"))
}

/// The `stats` counter `field` of a `convstreamfilter`.
pub fn stats(element: &gst::Element, field: &str) -> u64 {
    element.property::<gst::Structure>("stats").get::<u64>(field).unwrap()
}

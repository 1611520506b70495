//! The `convstreamfilter` element inside GStreamer.
//!
//! - Through `gstreamer-check`'s Harness: the filtered pixels against convstream's CPU engine
//!   given the same frames, timestamps and flags kept, a mask change mid-stream taking effect
//!   at the next buffer, and every buffer out after EOS.
//! - Through real pipelines: a bad mask or format fails negotiation with a message that names
//!   the problem, and `gst-launch-1.0 ... ! convstreamfilter ! y4menc` writes the same frames
//!   as `convstream run` on the same input.
//! - With `CONVSTREAM_TEST_GPU=1` (a GPU host): `device=cuda` gives the buffers `device=cpu`
//!   gives, in every format and kernel path, with its lanes full.
//!
//! One test file at some length (about 580 lines): the element through the Harness and
//! through real pipelines share their helpers (buffers, references, pipelines) here.

mod common;

use std::process::Command;

use convstream_config::Overrides;
use convstream_core::FilterSpec;
use convstream_core::Frame;
use convstream_core::{build_engine, EngineOptions};
use gst::prelude::*;
use gst_check::Harness;
use gst_video::VideoFormat;

use convstream_testkit::random::Random;

use common::{convstream_binary, init, planes_of, plugin_folder, stats};
use convstream_testkit::y4m::y4m_frames;

fn gpu_tests_enabled() -> bool {
    convstream_testkit::gpu_requested()
}

fn video_info(format: VideoFormat, width: u32, height: u32) -> gst_video::VideoInfo {
    init();
    gst_video::VideoInfo::builder(format, width, height)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .expect("valid video info")
}

/// A buffer of random samples in range for the format's depth (10-bit samples of P010 in the
/// high bits), with a timestamp, duration, offset and flags of its own.
fn random_buffer(info: &gst_video::VideoInfo, index: u64, random: &mut Random) -> gst::Buffer {
    fill_random(gst::Buffer::with_size(info.size()).unwrap(), info, index, random)
}

/// `buffer` (any layout) filled as [`random_buffer`] fills a fresh one.
fn fill_random(mut buffer: gst::Buffer, info: &gst_video::VideoInfo, index: u64, random: &mut Random) -> gst::Buffer {
    let format_info = info.format_info();
    let depth = format_info.depth()[0];
    let shift = format_info.shift()[0];
    {
        let buffer = buffer.get_mut().unwrap();
        random.fill_samples(&mut buffer.map_writable().unwrap(), depth, shift);
        buffer.set_pts(gst::ClockTime::from_mseconds(40 * index + 7));
        buffer.set_dts(gst::ClockTime::from_mseconds(40 * index));
        buffer.set_duration(gst::ClockTime::from_mseconds(40));
        buffer.set_offset(index);
        buffer.set_offset_end(index + 1);
        if index.is_multiple_of(3) {
            buffer.set_flags(gst::BufferFlags::DELTA_UNIT);
        }
    }
    buffer
}

/// The filter `convstream run --mask MASK [--plane-mask ...]` makes.
fn cli_filter(mask: &str, plane_masks: &[(&str, &str)]) -> FilterSpec {
    let overrides = Overrides {
        input: Some("in.y4m".into()),
        output: Some("null".into()),
        mask: Some(mask.into()),
        plane_masks: plane_masks
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect(),
        device: Some("cpu".into()),
        ..Overrides::default()
    };
    let settings = overrides
        .standalone()
        .unwrap()
        .validate(None, convstream_config::NO_OUTPUT_CHECK)
        .unwrap();
    settings.pipelines[0].filter.clone()
}

/// What convstream's CPU engine makes of `buffer`.
fn cpu_reference(filter: &FilterSpec, buffer: &gst::BufferRef, info: &gst_video::VideoInfo) -> Vec<Vec<u8>> {
    let format = gstconvstream::engine_format(info.format()).expect("a convstream format");
    let mut frame = Frame::new(format, info.width() as usize, info.height() as usize);
    for (plane, pixels) in frame.planes.iter_mut().zip(planes_of(buffer, info)) {
        let row_bytes = plane.row_bytes();
        for (y, row) in pixels.chunks_exact(row_bytes).enumerate() {
            plane.row_mut(y).copy_from_slice(row);
        }
    }
    let options = EngineOptions::new(convstream_core::DeviceChoice::Cpu, 1, "reference");
    let mut engine = build_engine(filter.clone(), &options).unwrap();
    engine.submit(frame).unwrap();
    let filtered = engine.receive().unwrap().expect("a filtered frame");
    filtered
        .planes
        .iter()
        .map(|plane| (0..plane.height).flat_map(|y| plane.row(y).to_vec()).collect())
        .collect()
}

fn element(properties: &[(&str, &str)]) -> gst::Element {
    init();
    let mut builder = gst::ElementFactory::make("convstreamfilter");
    for (name, value) in properties {
        builder = builder.property_from_str(name, value);
    }
    builder.build().expect("convstreamfilter is registered")
}

/// How the harness's sink answers the element's ALLOCATION query.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Downstream {
    /// Reads VideoMeta: the element hands over the engine's own planes.
    ReadsVideoMeta,
    /// Wants the default layout: the element copies.
    DefaultLayout,
}

fn harness(element: &gst::Element, info: &gst_video::VideoInfo) -> Harness {
    harness_with(element, info, Downstream::DefaultLayout)
}

fn harness_with(element: &gst::Element, info: &gst_video::VideoInfo, downstream: Downstream) -> Harness {
    // A bus, so that the element's errors can be read back.
    element.set_bus(Some(&gst::Bus::new()));
    let mut harness = Harness::with_element(element, Some("sink"), Some("src"));
    if downstream == Downstream::ReadsVideoMeta {
        harness.add_propose_allocation_meta(gst_video::VideoMeta::meta_api(), None);
    }
    harness.set_src_caps(info.to_caps().unwrap());
    harness.play();
    harness
}

/// Pushes `buffers`, then EOS, and returns every buffer that came out.
fn filter_all(harness: &mut Harness, buffers: &[gst::Buffer]) -> Vec<gst::Buffer> {
    for buffer in buffers {
        if let Err(error) = harness.push(buffer.clone()) {
            let message = harness
                .element()
                .and_then(|e| e.bus())
                .and_then(|bus| bus.pop_filtered(&[gst::MessageType::Error]))
                .map(|m| format!("{m:?}"));
            panic!("the element refused a buffer: {error:?} {message:?}");
        }
    }
    assert!(harness.push_event(gst::event::Eos::new()));
    let mut out = Vec::new();
    while let Some(buffer) = harness.try_pull() {
        out.push(buffer);
    }
    out
}

fn assert_same_timing(input: &gst::BufferRef, output: &gst::BufferRef) {
    assert_eq!(output.pts(), input.pts());
    assert_eq!(output.dts(), input.dts());
    assert_eq!(output.duration(), input.duration());
    assert_eq!(output.offset(), input.offset());
    assert_eq!(output.offset_end(), input.offset_end());
    assert_eq!(output.flags(), input.flags());
}

#[test]
fn filters_as_the_cpu_engine_does_and_keeps_timestamps_and_flags() {
    let mut random = Random::seeded();
    // Widths whose chroma rows GStreamer pads to a 4-byte stride.
    for downstream in [Downstream::DefaultLayout, Downstream::ReadsVideoMeta] {
        for (format, mask, plane_masks) in [
            (VideoFormat::I420, "gaussian:size=5", &[][..]),
            (VideoFormat::Nv12, "sharpen", &[][..]),
            (VideoFormat::Y444, "edge", &[("uv", "neutral")][..]),
            (VideoFormat::Gbr, "emboss", &[][..]),
            (VideoFormat::Rgb, "box:size=3", &[][..]),
            (VideoFormat::Gray16Le, "sobel", &[][..]),
            (VideoFormat::P01010le, "gaussian:size=9", &[][..]),
            (
                VideoFormat::I42010le,
                "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],normalize=true",
                &[][..],
            ),
        ] {
            let info = video_info(format, 66, 42);
            let plane_text: Vec<String> = plane_masks.iter().map(|(p, s)| format!("{p}={s}")).collect();
            let element = element(&[
                ("mask", mask),
                ("plane-masks", &plane_text.join(";")),
                ("device", "cpu"),
            ]);
            let mut harness = harness_with(&element, &info, downstream);
            let inputs: Vec<gst::Buffer> = (0..4).map(|i| random_buffer(&info, i, &mut random)).collect();
            let outputs = filter_all(&mut harness, &inputs);
            assert_eq!(outputs.len(), inputs.len(), "{format:?}: every buffer comes out");
            let filter = cli_filter(mask, plane_masks);
            for (index, (input, output)) in inputs.iter().zip(&outputs).enumerate() {
                assert_same_timing(input, output);
                // The engine's planes themselves, or one copy in the default layout.
                let has_meta = output.meta::<gst_video::VideoMeta>().is_some();
                assert_eq!(
                    has_meta,
                    downstream == Downstream::ReadsVideoMeta,
                    "{format:?} {downstream:?}"
                );
                assert_eq!(
                    planes_of(output, &info),
                    cpu_reference(&filter, input, &info),
                    "{format:?} {mask} {downstream:?}: buffer {index} differs from the CPU engine's frame"
                );
            }
        }
    }
}

/// The pool the element proposes upstream, active, as an upstream element would take it.
fn proposed_pool(harness: &mut Harness, info: &gst_video::VideoInfo) -> gst::BufferPool {
    let mut query = gst::query::Allocation::new(Some(&info.to_caps().unwrap()), true);
    assert!(harness.srcpad().unwrap().peer_query(&mut query), "the element answers");
    let pool = query
        .allocation_pools()
        .into_iter()
        .find_map(|(pool, _, _, _)| pool)
        .expect("the element proposes a pool");
    assert!(query.find_allocation_meta::<gst_video::VideoMeta>().is_some());
    pool.set_active(true).unwrap();
    pool
}

#[test]
fn upstream_writes_into_the_proposed_pool_and_the_engine_reads_it_there() {
    let mut random = Random::seeded();
    for (format, mask) in [
        (VideoFormat::I420, "sharpen"),
        (VideoFormat::Nv12, "edge:size=5"),
        (VideoFormat::I42010le, "gaussian:size=5"),
        (VideoFormat::Gbr, "emboss"),
    ] {
        // A width whose rows the pool pads to the GPU's 64-byte pitch.
        let info = video_info(format, 70, 30);
        let element = element(&[("mask", mask), ("device", "cpu")]);
        let mut harness = harness(&element, &info);
        let pool = proposed_pool(&mut harness, &info);
        // Five buffers of the pool, then one of another origin, which is copied in.
        let mut inputs: Vec<gst::Buffer> = (0..5)
            .map(|i| fill_random(pool.acquire_buffer(None).unwrap(), &info, i, &mut random))
            .collect();
        inputs.push(random_buffer(&info, 5, &mut random));
        let outputs = filter_all(&mut harness, &inputs);
        assert_eq!(outputs.len(), inputs.len());
        assert_eq!(
            stats(&element, "buffers-lent-in"),
            5,
            "{format:?}: the pool's buffers were not copied"
        );
        assert_eq!(stats(&element, "buffers-copied-in"), 1, "{format:?}");
        let filter = cli_filter(mask, &[]);
        for (index, (input, output)) in inputs.iter().zip(&outputs).enumerate() {
            assert_same_timing(input, output);
            assert_eq!(
                planes_of(output, &info),
                cpu_reference(&filter, input, &info),
                "{format:?} {mask}: buffer {index}"
            );
        }
    }
}

#[test]
fn a_mask_change_while_playing_applies_from_the_next_buffer() {
    let mut random = Random::seeded();
    let info = video_info(VideoFormat::I420, 48, 32);
    // On a GPU host, the CUDA engine: the new kernels are compiled on this thread, when the
    // property is set, and the lanes switch at the buffer.
    let device = if gpu_tests_enabled() { "cuda" } else { "cpu" };
    let element = element(&[("mask", "box:size=3"), ("device", device)]);
    let mut harness = harness(&element, &info);
    let inputs: Vec<gst::Buffer> = (0..6).map(|i| random_buffer(&info, i, &mut random)).collect();
    let mut outputs = Vec::new();
    for (index, input) in inputs.iter().enumerate() {
        if index == 3 {
            element.set_property("mask", "edge:size=5");
        }
        harness.push(input.clone()).unwrap();
        while let Some(buffer) = harness.try_pull() {
            outputs.push(buffer);
        }
    }
    assert!(harness.push_event(gst::event::Eos::new()));
    while let Some(buffer) = harness.try_pull() {
        outputs.push(buffer);
    }
    assert_eq!(outputs.len(), 6);
    let (before, after) = (cli_filter("box:size=3", &[]), cli_filter("edge:size=5", &[]));
    for (index, (input, output)) in inputs.iter().zip(&outputs).enumerate() {
        let filter = if index < 3 { &before } else { &after };
        assert_eq!(
            planes_of(output, &info),
            cpu_reference(filter, input, &info),
            "buffer {index} took the wrong mask"
        );
    }
    assert_eq!(element.property::<String>("mask"), "edge:size=5");
}

#[test]
fn mask_names_a_mask_of_the_config_file() {
    let mut random = Random::seeded();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("masks.toml");
    std::fs::write(
        &config,
        "[masks.my_edge]\nmatrix = [[0, -1, 0], [-1, 4, -1], [0, -1, 0]]\nbias = 128\n",
    )
    .unwrap();
    let info = video_info(VideoFormat::I420, 40, 30);
    let element = element(&[
        ("config", config.to_str().unwrap()),
        ("mask", "my_edge"),
        ("plane-masks", "uv=neutral"),
        ("device", "cpu"),
    ]);
    let inputs: Vec<gst::Buffer> = (0..3).map(|i| random_buffer(&info, i, &mut random)).collect();
    let outputs = filter_all(&mut harness(&element, &info), &inputs);
    // The same matrix given inline, as the command line takes it.
    let filter = cli_filter(
        "custom:matrix=[[0,-1,0],[-1,4,-1],[0,-1,0]],bias=128",
        &[("uv", "neutral")],
    );
    for (input, output) in inputs.iter().zip(&outputs) {
        assert_eq!(planes_of(output, &info), cpu_reference(&filter, input, &info));
    }
}

#[test]
fn latency_counts_the_buffers_in_flight() {
    let mut random = Random::seeded();
    let info = video_info(VideoFormat::I420, 64, 36);
    let device = if gpu_tests_enabled() { "cuda" } else { "cpu" };
    let element = element(&[("device", device), ("streams", "3"), ("frames-per-stream", "2")]);
    let mut harness = harness(&element, &info);
    harness.push(random_buffer(&info, 0, &mut random)).unwrap();
    // Six buffers in flight on three CUDA streams: five frames of 40 ms beyond the one being
    // filtered. The CPU engine holds none.
    let added = if device == "cuda" { 200 } else { 0 };
    assert_eq!(
        harness.query_latency(),
        Some(gst::ClockTime::from_mseconds(added)),
        "{device}"
    );
}

/// Runs `description` to its end and returns its first error message (from linking or from
/// the bus), if any.
fn run_pipeline(description: &str) -> Option<String> {
    run_pipeline_with_warnings(description).0
}

/// Runs `description` to its end: its first error, if any, and every warning on the bus.
fn run_pipeline_with_warnings(description: &str) -> (Option<String>, Vec<String>) {
    init();
    let pipeline = match gst::parse::launch(description) {
        Ok(pipeline) => pipeline,
        Err(error) => return (Some(error.to_string()), Vec::new()),
    };
    pipeline.set_state(gst::State::Playing).ok();
    let bus = pipeline.bus().unwrap();
    let (mut error, mut warnings) = (None, Vec::new());
    for message in bus.iter_timed(gst::ClockTime::from_seconds(60)) {
        match message.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                error = Some(format!("{} ({})", e.error(), e.debug().unwrap_or_default()));
                break;
            }
            gst::MessageView::Warning(w) => warnings.push(w.error().to_string()),
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    (error, warnings)
}

#[test]
fn device_auto_without_a_gpu_says_so_on_the_bus() {
    let (error, warnings) = run_pipeline_with_warnings(
        "videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=64,height=48 ! \
         convstreamfilter device=auto ! fakesink",
    );
    assert_eq!(error, None);
    let fell_back = warnings
        .iter()
        .any(|w| w.contains("no usable GPU: filtering on the CPU"));
    // On a GPU host `auto` takes the GPU and says nothing.
    assert_eq!(fell_back, !gpu_tests_enabled(), "{warnings:?}");
}

#[test]
fn a_bad_filter_fails_negotiation_naming_every_problem() {
    let error = run_pipeline(
        "videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=64,height=48 ! \
         convstreamfilter mask=blurry plane-masks=y=box:size=4 device=cuda:x ! fakesink",
    )
    .expect("negotiation fails");
    // Each problem named by its property, every one at once.
    for problem in [
        "mask: unknown mask `blurry`",
        "plane-masks: y: size: 4 is even",
        "device: `cuda:x` is not a device",
    ] {
        assert!(error.contains(problem), "{problem}: {error}");
    }
    assert!(!error.contains("pipeline \"main\""), "{error}");

    // A format the engines do not take is refused by the pad: GStreamer's own error.
    let error = run_pipeline(
        "videotestsrc num-buffers=3 ! video/x-raw,format=YUY2,width=64,height=48 ! \
         convstreamfilter device=cpu ! fakesink",
    )
    .expect("linking fails");
    assert!(error.contains("can't handle caps") && error.contains("YUY2"), "{error}");

    // Per-channel masks on packed RGB need a planar format: the message says which.
    let error = run_pipeline(
        "videotestsrc num-buffers=3 ! video/x-raw,format=RGB,width=64,height=48 ! \
         convstreamfilter plane-masks=\"r=edge\" device=cpu ! fakesink",
    )
    .expect("negotiation fails");
    assert!(error.contains("videoconvert"), "{error}");
}

/// Choices are enums: a bad value fails when it is set (here, when gst-launch's syntax is
/// parsed), naming the property; `gst-inspect-1.0` lists the values and the numbers' ranges
/// (GLib refuses a number out of range when it is set).
#[test]
fn choices_are_enums_that_refuse_a_bad_value_when_set() {
    init();
    for (property, bad) in [("border", "fold"), ("planes", "some"), ("engine", "gpu")] {
        let error = gst::parse::launch(&format!("videotestsrc ! convstreamfilter {property}={bad} ! fakesink"))
            .err()
            .unwrap_or_else(|| panic!("{property}={bad} was taken"));
        assert!(
            error.to_string().contains(property) && error.to_string().contains(bad),
            "{property}={bad}: {error}"
        );
    }
    let filter = element(&[("border", "mirror"), ("planes", "luma"), ("device", "cuda:1")]);
    assert_eq!(filter.property_value("border").serialize().unwrap(), "mirror");
    // Every spelling the CLI takes; an alias reads back as its mode.
    for (alias, mode) in [
        ("reflect_101", "mirror"),
        ("replicate", "nearest"),
        ("symmetric", "reflect"),
        ("zero", "constant"),
        ("periodic", "wrap"),
    ] {
        let aliased = element(&[("border", alias)]);
        assert_eq!(
            aliased.property_value("border").serialize().unwrap(),
            mode,
            "border={alias}"
        );
    }
    assert_eq!(filter.property_value("planes").serialize().unwrap(), "luma");
    assert_eq!(filter.property_value("engine").serialize().unwrap(), "cuda");
    assert_eq!(filter.property::<i32>("cuda-device-id"), 1);
    filter.set_property_from_str("engine", "cpu");
    assert_eq!(filter.property::<String>("device"), "cpu");

    let inspect = Command::new("gst-inspect-1.0")
        .arg("convstreamfilter")
        .env("GST_PLUGIN_PATH", plugin_folder(tempfile::tempdir().unwrap().path()))
        .output()
        .expect("gst-inspect-1.0 runs (gstreamer1.0-tools)");
    let text = String::from_utf8_lossy(&inspect.stdout);
    for listed in [
        "(0): constant",
        "(4): wrap",
        "(1): luma",
        "(2): cuda",
        "cuda-device-id",
        "Range: -1 - 63",
    ] {
        assert!(text.contains(listed), "gst-inspect-1.0 does not list {listed}:\n{text}");
    }
}

#[test]
fn eos_drains_every_buffer_in_flight() {
    let mut random = Random::seeded();
    let info = video_info(VideoFormat::I420, 64, 36);
    let device = if gpu_tests_enabled() { "cuda" } else { "cpu" };
    let element = element(&[("mask", "gaussian:size=7"), ("device", device)]);
    let mut harness = harness(&element, &info);
    let inputs: Vec<gst::Buffer> = (0..21).map(|i| random_buffer(&info, i, &mut random)).collect();
    let outputs = filter_all(&mut harness, &inputs);
    assert_eq!(outputs.len(), 21, "{device}: every buffer leaves after EOS");
    for (input, output) in inputs.iter().zip(&outputs) {
        assert_same_timing(input, output);
    }
}

#[test]
fn gst_launch_writes_the_frames_convstream_run_writes() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let convstream = convstream_binary();
    // A width whose rows GStreamer does not pad: 1.22's y4menc writes the padding too.
    let plugin_dir = plugin_folder(dir.path());
    let source = "videotestsrc num-buffers=12 pattern=zone-plate kx2=20 ky2=20 kt=1 ! \
                  video/x-raw,format=I420,width=176,height=100,framerate=25/1";
    let launch = |tail: &str, file: &str| {
        let status = Command::new("gst-launch-1.0")
            .arg("-q")
            .args(
                format!(
                    "{source} ! {tail} y4menc ! filesink location={}",
                    dir.path().join(file).display()
                )
                .split(' '),
            )
            .env("GST_PLUGIN_PATH", &plugin_dir)
            .env("GST_REGISTRY", dir.path().join("registry.bin"))
            .status()
            .expect("gst-launch-1.0 runs (gstreamer1.0-tools)");
        assert!(status.success(), "gst-launch-1.0 failed for {tail}");
    };
    let mask = "gaussian:size=7,sigma=1.5";
    launch("", "in.y4m");
    launch(&format!("convstreamfilter mask={mask} device=cpu !"), "element.y4m");
    let output = Command::new(&convstream)
        .args(["run", "--no-progress", "--device", "cpu", "--mask", mask, "-i"])
        .arg(dir.path().join("in.y4m"))
        .arg("-o")
        .arg(dir.path().join("run.y4m"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let (element, run, input) = (
        y4m_frames(&dir.path().join("element.y4m")),
        y4m_frames(&dir.path().join("run.y4m")),
        y4m_frames(&dir.path().join("in.y4m")),
    );
    assert_eq!(element.len(), 12);
    assert_eq!(run.len(), 12);
    assert_ne!(element, input, "the mask changed the frames");
    for (index, (a, b)) in element.iter().zip(&run).enumerate() {
        assert!(a == b, "frame {index}: the element and convstream run differ");
    }
}

/// `device=cuda` against `device=cpu` on the same buffers: every format, each kernel path
/// (separable, dense, gradient magnitude), both borders' extremes, the lanes full.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a GPU host"]
fn cuda_gives_the_buffers_the_cpu_gives() {
    let mut random = Random::seeded();
    let mut cases = 0;
    for format in gstconvstream::formats() {
        for (mask, border) in [
            ("gaussian:size=9", "constant"),
            ("edge:size=13", "wrap"),
            ("sobel", "reflect"),
            ("custom:matrix=[[0,-1,0],[-1,5,-1],[0,-1,0]]", "nearest"),
        ] {
            let info = video_info(format, 130, 74);
            let inputs: Vec<gst::Buffer> = (0..19).map(|i| random_buffer(&info, i, &mut random)).collect();
            let run = |device: &str, downstream| {
                let element = element(&[("mask", mask), ("border", border), ("device", device)]);
                filter_all(&mut harness_with(&element, &info, downstream), &inputs)
            };
            // The CUDA engine's pinned planes handed over as they are, and copied.
            let downstream = if cases % 2 == 0 {
                Downstream::ReadsVideoMeta
            } else {
                Downstream::DefaultLayout
            };
            let (cpu, cuda) = (run("cpu", Downstream::DefaultLayout), run("cuda", downstream));
            assert_eq!(cuda.len(), inputs.len(), "{format:?} {mask}");
            for (index, (a, b)) in cpu.iter().zip(&cuda).enumerate() {
                assert_same_timing(&inputs[index], b);
                assert!(
                    planes_of(a, &info) == planes_of(b, &info),
                    "{format:?} {mask} {border}: buffer {index} differs between cpu and cuda"
                );
            }
            cases += 1;
        }
    }
    println!("cuda_gives_the_buffers_the_cpu_gives: {cases} cases, 19 buffers each, identical");
}

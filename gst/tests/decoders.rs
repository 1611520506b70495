//! `convstreamfilter` between GStreamer's own elements, as users put it: behind FFmpeg's
//! decoders (`avdec_h264` with frame threads, `avdec_h265` at 10 bits, `avdec_vp9`), Cisco's
//! `openh264dec` and libvpx's `vp9dec`, in front of `videoconvert`, `tee`, leaky queues and
//! `x264enc ! mp4mux`, through a mask change, a resolution change and a flushing seek.
//!
//! Decoders that render into the pool the element proposes (avdec's direct rendering) write
//! padding rows below the picture and keep their pictures as references; every frame that
//! leaves must be identical to what `convstream run` makes of the same file, at 1080p and at
//! a size that is no multiple of 16, whichever way downstream answers the ALLOCATION query.
//!
//! On a GPU host: `CONVSTREAM_TEST_GPU=1` puts the element on the CUDA engine (its pinned pool
//! proposed upstream, still compared with `convstream run` on the CPU), the ignored tests add
//! `nvh264dec`, and `CONVSTREAM_TEST_CLIPS=DIR` takes the clips from DIR (a host without
//! FFmpeg's CLI; a run with it set and FFmpeg present writes them there).
//!
//! One test file at some length (about 500 lines): every decoder case shares the clip,
//! reference and pipeline helpers above the tests.

mod common;

use std::path::{Path, PathBuf};

use common::{answer_allocation, by_name, collect, convstream_run, ffmpeg, init, play_to_end, stats, Downstream};
use convstream_testkit::y4m::read_y4m;
use gst::prelude::*;

/// A clip made with FFmpeg's CLI for one decoder.
struct Clip {
    path: PathBuf,
    frames: usize,
}

/// How a decoder under test is fed: the clip FFmpeg makes for it and the elements that
/// demux, parse and decode it.
struct Decoder {
    name: &'static str,
    /// FFmpeg's encoding arguments (after the input), and the file's extension.
    encode: &'static [&'static str],
    extension: &'static str,
    chain: &'static str,
}

/// One VP9 clip for both VP9 decoders (libvpx's and FFmpeg's).
const VP9_ENCODE: &[&str] = &[
    "-c:v",
    "libvpx-vp9",
    "-deadline",
    "realtime",
    "-cpu-used",
    "8",
    "-g",
    "12",
];

const DECODERS: &[Decoder] = &[
    Decoder {
        name: "avdec_h264",
        // B-frames and several references: pictures the decoder keeps after pushing them.
        encode: &[
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-bf",
            "3",
            "-refs",
            "4",
            "-g",
            "12",
        ],
        extension: "mp4",
        // Frame threads on, as a file (not live) gets them by default.
        chain: "qtdemux ! h264parse ! avdec_h264 max-threads=4 thread-type=frame",
    },
    Decoder {
        name: "openh264dec",
        // openh264 decodes the constrained baseline profile.
        encode: &[
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-profile:v",
            "baseline",
            "-g",
            "12",
        ],
        extension: "mp4",
        chain: "qtdemux ! h264parse ! openh264dec",
    },
    Decoder {
        name: "avdec_h265 10-bit",
        encode: &[
            "-c:v",
            "libx265",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p10le",
            "-x265-params",
            "log-level=error:keyint=12:bframes=3",
        ],
        extension: "mkv",
        chain: "matroskademux ! h265parse ! avdec_h265",
    },
    Decoder {
        name: "avdec_vp9",
        encode: VP9_ENCODE,
        extension: "webm",
        chain: "matroskademux ! avdec_vp9",
    },
    Decoder {
        name: "vp9dec",
        encode: VP9_ENCODE,
        extension: "webm",
        chain: "matroskademux ! vp9dec",
    },
];

/// Where the element filters: CUDA on a GPU host that asks for it, else the CPU.
fn device() -> &'static str {
    if std::env::var("CONVSTREAM_TEST_GPU").is_ok_and(|v| v == "1") {
        "cuda"
    } else {
        "cpu"
    }
}

/// A moving test picture with a little noise (so that references matter) of `width` x
/// `height`, from `CONVSTREAM_TEST_CLIPS` when it holds it.
fn make_clip(
    dir: &Path,
    name: &str,
    width: usize,
    height: usize,
    frames: usize,
    encode: &[&str],
    extension: &str,
) -> Clip {
    let clips = std::env::var_os("CONVSTREAM_TEST_CLIPS").map(PathBuf::from);
    let path = clips
        .as_deref()
        .unwrap_or(dir)
        .join(format!("{name}-{width}x{height}.{extension}"));
    if path.exists() {
        return Clip { path, frames };
    }
    let source = format!("testsrc2=size={width}x{height}:rate=25,noise=alls=4:allf=t");
    let frames_text = frames.to_string();
    let mut args = vec!["-f", "lavfi", "-i", &source, "-frames:v", &frames_text];
    args.extend_from_slice(encode);
    let path_text = path.to_str().unwrap().to_string();
    args.push(&path_text);
    ffmpeg(&args);
    Clip { path, frames }
}

/// The frames `convstream run --device cpu --mask MASK` writes for `clip`.
fn run_frames(dir: &Path, clip: &Clip, mask: &str) -> Vec<Vec<u8>> {
    let output = dir.join(format!(
        "{}.{}.run.y4m",
        clip.path.file_name().unwrap().to_str().unwrap(),
        mask.replace([':', '=', ','], "_")
    ));
    if !output.exists() {
        convstream_run(&clip.path, &output, &["--device", "cpu", "--mask", mask]);
    }
    read_y4m(&output).frames
}

/// Runs `filesrc ! CHAIN ! convstreamfilter ! appsink` and returns the samples and the
/// element's stats (buffers lent in, planes out).
fn filter_through(clip: &Clip, chain: &str, mask: &str, downstream: Downstream) -> (Vec<common::Sample>, u64, u64) {
    init();
    let description = format!(
        "filesrc location={} ! {chain} ! convstreamfilter name=filter mask={mask} device={} ! appsink name=sink sync=false",
        clip.path.display(),
        device()
    );
    let pipeline = gst::parse::launch(&description).unwrap_or_else(|e| panic!("{description}: {e}"));
    let sink = by_name(&pipeline, "sink");
    answer_allocation(&sink, downstream);
    let samples = collect(&sink);
    if let Err(error) = play_to_end(&pipeline, gst::ClockTime::from_seconds(120)) {
        panic!("{description}: {error}");
    }
    let filter = by_name(&pipeline, "filter");
    let lent = stats(&filter, "buffers-lent-in");
    let planes_out = stats(&filter, "buffers-planes-out");
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    (samples, lent, planes_out)
}

fn assert_identical(what: &str, element: &[common::Sample], run: &[Vec<u8>], expected_frames: usize) {
    assert_eq!(run.len(), expected_frames, "{what}: convstream run wrote every frame");
    assert_eq!(element.len(), expected_frames, "{what}: every frame left the element");
    for (index, (sample, frame)) in element.iter().zip(run).enumerate() {
        assert!(
            sample.bytes() == *frame,
            "{what}: frame {index} differs from convstream run's"
        );
    }
}

/// Every decoder, at 1080p and at a size no multiple of 16, both allocation answers: the
/// frames are those of `convstream run`, and no memory is written out of bounds (this test
/// crashed the process, or corrupted the heap, when the proposed pool ignored the decoder's
/// padding rows).
#[test]
fn behind_every_decoder_the_frames_are_those_of_convstream_run() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let mask = "gaussian:size=5";
    let mut cases = 0;
    for decoder in DECODERS {
        if gst::ElementFactory::find(decoder.chain.rsplit("! ").next().unwrap().split(' ').next().unwrap()).is_none() {
            panic!(
                "{}: the element is not installed (scripts/install-deps.sh installs it)",
                decoder.name
            );
        }
        for (width, height, frames) in [(1920, 1080, 16), (650, 362, 30)] {
            let name = decoder.name.replace(' ', "-");
            let clip = make_clip(
                dir.path(),
                &name,
                width,
                height,
                frames,
                decoder.encode,
                decoder.extension,
            );
            let run = run_frames(dir.path(), &clip, mask);
            for downstream in [Downstream::DefaultLayout, Downstream::ReadsVideoMeta] {
                let what = format!("{} {width}x{height} {downstream:?}", decoder.name);
                let (samples, lent, planes_out) = filter_through(&clip, decoder.chain, mask, downstream);
                assert_identical(&what, &samples, &run, clip.frames);
                // The filtered planes leave as they are exactly when downstream reads VideoMeta.
                assert_eq!(
                    planes_out > 0,
                    downstream == Downstream::ReadsVideoMeta,
                    "{what}: planes out {planes_out}"
                );
                println!("{what}: {} frames identical, {lent} lent in", samples.len());
                cases += 1;
            }
        }
    }
    println!("{cases} decoder cases identical to convstream run");
}

/// avdec_h264 renders straight into the proposed pool at 1080p: the padded buffers are
/// really used (lent to the engine, no copy), not refused. The pictures it decoded before
/// downstream's pool was negotiated come in its own buffers and are copied.
#[test]
fn avdec_h264_renders_into_the_proposed_pool() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let decoder = &DECODERS[0];
    let clip = make_clip(dir.path(), "dr", 1920, 1080, 12, decoder.encode, decoder.extension);
    let (samples, lent, _) = filter_through(&clip, decoder.chain, "sharpen", Downstream::DefaultLayout);
    assert_eq!(samples.len(), 12);
    assert!(
        lent >= 6,
        "{lent} of 12: the decoded pictures were written in the element's pool and lent as they are"
    );
}

/// Downstream of the element, GStreamer's own elements: a `tee` to a lossless `x264enc !
/// mp4mux` file, to a leaky queue, and to `videoconvert ! appsink`. The file decodes to the
/// frames of `convstream run`, and so do the frames the appsink got.
#[test]
fn tee_videoconvert_leaky_queue_and_x264enc_mp4mux_downstream() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let decoder = &DECODERS[0];
    let frames = 20;
    let clip = make_clip(dir.path(), "tee", 640, 360, frames, decoder.encode, decoder.extension);
    let mask = "edge:size=5";
    let run = run_frames(dir.path(), &clip, mask);
    let encoded = dir.path().join("encoded.mp4");
    let dev = device();
    let description = format!(
        "filesrc location={} ! {} ! convstreamfilter mask={mask} device={dev} ! tee name=t \
         t. ! queue ! x264enc pass=quant quantizer=0 speed-preset=ultrafast ! mp4mux ! filesink location={} \
         t. ! queue leaky=downstream max-size-buffers=2 ! fakesink sync=true \
         t. ! queue ! videoconvert ! video/x-raw,format=I420 ! appsink name=sink sync=false",
        clip.path.display(),
        decoder.chain,
        encoded.display()
    );
    let pipeline = gst::parse::launch(&description).unwrap();
    let samples = collect(&by_name(&pipeline, "sink"));
    play_to_end(&pipeline, gst::ClockTime::from_seconds(120)).unwrap_or_else(|e| panic!("{description}: {e}"));
    assert_identical("tee to appsink", &samples.lock().unwrap(), &run, frames);
    // x264 at quantizer 0 is lossless: FFmpeg decodes the file to the filtered frames.
    let decoded = dir.path().join("decoded.y4m");
    ffmpeg(&[
        "-i",
        encoded.to_str().unwrap(),
        "-pix_fmt",
        "yuv420p",
        decoded.to_str().unwrap(),
    ]);
    let file = read_y4m(&decoded).frames;
    assert_eq!(file.len(), frames, "mp4mux wrote every frame");
    assert!(file == run, "the lossless mp4 decodes to the frames of convstream run");
}

/// A mask change on the streaming thread at frame 7 takes effect at frame 7: the frames
/// before are `convstream run --mask A`'s, the frames after `--mask B`'s.
#[test]
fn a_mask_change_while_playing_behind_a_decoder() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let decoder = &DECODERS[0];
    let frames = 16;
    let clip = make_clip(
        dir.path(),
        "switch",
        320,
        240,
        frames,
        decoder.encode,
        decoder.extension,
    );
    let (before, after) = ("box:size=3", "sobel");
    let (run_before, run_after) = (
        run_frames(dir.path(), &clip, before),
        run_frames(dir.path(), &clip, after),
    );
    let dev = device();
    let description = format!(
        "filesrc location={} ! {} ! convstreamfilter name=filter mask={before} device={dev} ! appsink name=sink sync=false",
        clip.path.display(),
        decoder.chain
    );
    let pipeline = gst::parse::launch(&description).unwrap();
    let filter = by_name(&pipeline, "filter");
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let switcher = filter.clone();
    filter
        .static_pad("sink")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 7 {
                switcher.set_property("mask", after);
            }
            gst::PadProbeReturn::Ok
        });
    let samples = collect(&by_name(&pipeline, "sink"));
    play_to_end(&pipeline, gst::ClockTime::from_seconds(60)).unwrap();
    let samples = samples.lock().unwrap();
    assert_eq!(samples.len(), frames);
    for (index, sample) in samples.iter().enumerate() {
        let expected = if index < 7 {
            &run_before[index]
        } else {
            &run_after[index]
        };
        assert!(sample.bytes() == *expected, "frame {index} took the wrong mask");
    }
}

/// A flushing seek into the middle of the clip: the frames after it are those of `convstream
/// run` at the same positions in the media.
#[test]
fn a_flushing_seek_behind_a_decoder() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let decoder = &DECODERS[0];
    let frames = 36;
    let clip = make_clip(dir.path(), "seek", 480, 270, frames, decoder.encode, decoder.extension);
    let mask = "emboss";
    let run = run_frames(dir.path(), &clip, mask);
    let dev = device();
    let description = format!(
        "filesrc location={} ! {} ! convstreamfilter mask={mask} device={dev} ! appsink name=sink sync=false",
        clip.path.display(),
        decoder.chain
    );
    let pipeline = gst::parse::launch(&description).unwrap();
    let sink = by_name(&pipeline, "sink");
    let samples = collect(&sink);
    pipeline.set_state(gst::State::Paused).unwrap();
    let (result, _, _) = pipeline.state(gst::ClockTime::from_seconds(30));
    result.expect("the pipeline prerolls");
    // Frame 12 is a key frame (-g 12): the decoder starts there.
    pipeline
        .seek_simple(
            gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
            gst::ClockTime::from_mseconds(12 * 40),
        )
        .expect("the seek is taken");
    let (result, _, _) = pipeline.state(gst::ClockTime::from_seconds(30));
    result.expect("the pipeline prerolls after the seek");
    samples.lock().unwrap().clear();
    let bus_result = play_to_end(&pipeline, gst::ClockTime::from_seconds(60));
    bus_result.unwrap();
    let samples = samples.lock().unwrap();
    assert!(samples.len() >= frames - 13, "{} frames after the seek", samples.len());
    for sample in samples.iter() {
        let position = sample.stream_time.expect("a position in the media");
        let index = (position.mseconds() as f64 / 40.0).round() as usize;
        assert!(index >= 12, "frame {index} came after a seek to frame 12");
        assert!(
            sample.bytes() == run[index],
            "frame {index} after the seek differs from convstream run's"
        );
    }
}

/// The resolution changes mid-stream (two H.264 streams one after the other in MPEG-TS):
/// the decoder renegotiates, the element proposes a pool of the new size, and every frame of
/// both sizes is the CPU engine's.
#[test]
fn a_resolution_change_behind_a_decoder() {
    init();
    let dir = tempfile::tempdir().unwrap();
    let encode = &["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "10"][..];
    let first = make_clip(dir.path(), "first", 352, 288, 10, encode, "ts");
    let second = make_clip(dir.path(), "second", 1280, 720, 10, encode, "ts");
    let mask = "gaussian:size=7";
    let (run_first, run_second) = (
        run_frames(dir.path(), &first, mask),
        run_frames(dir.path(), &second, mask),
    );
    let joined = dir.path().join("joined.ts");
    let mut bytes = std::fs::read(&first.path).unwrap();
    bytes.extend(std::fs::read(&second.path).unwrap());
    std::fs::write(&joined, bytes).unwrap();
    let dev = device();
    let description = format!(
        "filesrc location={} ! tsdemux ! h264parse ! avdec_h264 ! convstreamfilter mask={mask} device={dev} ! appsink name=sink sync=false",
        joined.display()
    );
    let pipeline = gst::parse::launch(&description).unwrap();
    let samples = collect(&by_name(&pipeline, "sink"));
    play_to_end(&pipeline, gst::ClockTime::from_seconds(60)).unwrap_or_else(|e| panic!("{description}: {e}"));
    let samples = samples.lock().unwrap();
    let expected: Vec<&Vec<u8>> = run_first.iter().chain(&run_second).collect();
    assert_eq!(samples.len(), expected.len(), "every frame of both sizes left");
    for (index, (sample, frame)) in samples.iter().zip(expected).enumerate() {
        let size = (sample.info.width(), sample.info.height());
        assert_eq!(size, if index < 10 { (352, 288) } else { (1280, 720) }, "frame {index}");
        assert!(
            sample.bytes() == *frame,
            "frame {index} ({size:?}) differs from convstream run's"
        );
    }
}

/// `planes` of an NV12 picture as I420's (the interleaved chroma plane split in two), as a
/// y4m frame holds them.
fn nv12_as_i420(planes: &[Vec<u8>]) -> Vec<u8> {
    let (luma, chroma) = (&planes[0], &planes[1]);
    let mut bytes = luma.clone();
    bytes.extend(chroma.iter().step_by(2));
    bytes.extend(chroma.iter().skip(1).step_by(2));
    bytes
}

/// Behind NVIDIA's decoder (`nvh264dec`, NV12 in system memory, which NVDEC decodes exactly as
/// the standard says): the frames are those of `convstream run` decoding in software.
#[test]
#[ignore = "needs a GPU with NVDEC (nvh264dec): run with --ignored on a GPU host"]
fn behind_nvh264dec_the_frames_are_those_of_convstream_run() {
    init();
    assert!(
        gst::ElementFactory::find("nvh264dec").is_some(),
        "nvh264dec is not available: no NVDEC here, or gstreamer1.0-plugins-bad's nvcodec is missing"
    );
    let dir = tempfile::tempdir().unwrap();
    let decoder = &DECODERS[0];
    let mask = "gaussian:size=5";
    for (width, height, frames) in [(1920, 1080, 16), (650, 362, 30)] {
        let clip = make_clip(
            dir.path(),
            "avdec_h264",
            width,
            height,
            frames,
            decoder.encode,
            decoder.extension,
        );
        let run = run_frames(dir.path(), &clip, mask);
        for downstream in [Downstream::DefaultLayout, Downstream::ReadsVideoMeta] {
            let what = format!("nvh264dec {width}x{height} {downstream:?} on {}", device());
            let (samples, lent, _) = filter_through(&clip, "qtdemux ! h264parse ! nvh264dec", mask, downstream);
            assert_eq!(samples.len(), frames, "{what}");
            for (index, (sample, frame)) in samples.iter().zip(&run).enumerate() {
                assert_eq!(sample.info.format(), gst_video::VideoFormat::Nv12, "{what}");
                assert!(
                    nv12_as_i420(&sample.planes) == *frame,
                    "{what}: frame {index} differs from convstream run's"
                );
            }
            println!("{what}: {frames} frames identical, {lent} lent in");
        }
    }
}

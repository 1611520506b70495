//! The source as a whole: pictures decoded into a frame pool are the copied ones, without
//! the copy (the decoder's `get_buffer2` in `pooled_pictures.rs` through `Source::run`).

use crossbeam_channel::unbounded;
use std::sync::atomic::AtomicBool;

use std::sync::Arc;

use super::input::Source;
use super::pooled_pictures::PLANE_ALIGN;
use crate::sample::{generate, SampleSpec};
use crate::source::nvdec::{Chroma, NvdecCaps, NvdecCodec, NvdecProbe, ProbeError};
use crate::stats::Counters;
use convstream_config::SourceConfig;
use convstream_core::BufferPool;
use convstream_core::Frame;
use convstream_core::HeapMemory;
use convstream_core::POOLED_ROW_ALIGN;

struct NoNvdec;
impl NvdecProbe for NoNvdec {
    fn capabilities(&self, _: NvdecCodec, _: Chroma, _: u32) -> Result<NvdecCaps, ProbeError> {
        Err(ProbeError::new(std::io::Error::other("no NVDEC in unit tests")))
    }
}

/// Every frame of `path`, decoded with frame threads, into `pool` if given.
fn decode(path: &std::path::Path, pool: Option<Arc<BufferPool>>) -> Vec<Frame> {
    decode_guarded(path, pool, &[]).expect("the sample opens")
}

/// [`decode`] of an input that may not be one of `protected`.
fn decode_guarded(
    path: &std::path::Path,
    pool: Option<Arc<BufferPool>>,
    protected: &[crate::sink::FileId],
) -> Result<Vec<Frame>, super::error::SourceError> {
    let config = SourceConfig {
        threads: 4,
        ..SourceConfig::from_url(&path.display().to_string())
    };
    let probe: Arc<dyn NvdecProbe> = Arc::new(NoNvdec);
    let stop = Arc::new(AtomicBool::new(false));
    let source = Source::open_guarded(&config, stop.clone(), &probe, None, protected)?;
    let (frames, received) = unbounded();
    let (packets, _) = unbounded();
    let counters = Counters::default();
    source
        .with_frame_pool(pool)
        .run(&frames, &packets, &stop, &counters, None)
        .expect("the sample decodes");
    drop(frames);
    Ok(received.into_iter().collect())
}

#[test]
fn a_guarded_input_is_read_through_the_descriptor_checked_and_the_protected_file_never() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clip.mp4");
    let spec = SampleSpec {
        width: 160,
        height: 96,
        fps: 25,
        frames: 30,
        prefer_h264: true,
    };
    generate(&path, spec).unwrap();
    let protected_elsewhere = dir.path().join("config.toml");
    std::fs::write(&protected_elsewhere, "[server]\n").unwrap();
    let other = crate::sink::FileId::at(&protected_elsewhere).unwrap();
    // Read through our own descriptor (seeks included: MP4 keeps its index at the end), the
    // frames are FFmpeg's own.
    let by_ffmpeg = decode(&path, None);
    let by_descriptor = decode_guarded(&path, None, &[other]).expect("an unprotected file opens");
    assert!(by_descriptor.len() >= 25, "{} frames", by_descriptor.len());
    assert_eq!(by_descriptor.len(), by_ffmpeg.len());
    for (ours, theirs) in by_descriptor.iter().zip(&by_ffmpeg) {
        assert_eq!(ours.pts, theirs.pts);
        assert!(ours.planes.iter().zip(&theirs.planes).all(|(a, b)| a.same_pixels(b)));
    }
    // The protected file under another name (a hard link) is refused by its descriptor.
    let link = dir.path().join("innocent.mp4");
    std::fs::hard_link(&protected_elsewhere, &link).unwrap();
    let refused = decode_guarded(&link, None, &[other]).unwrap_err();
    assert!(refused.to_string().contains("own config file"), "{refused}");
    assert!(refused.is_usage());
    // A name that is not there is said as FFmpeg says it.
    let missing = decode_guarded(&dir.path().join("absent.mp4"), None, &[other]).unwrap_err();
    assert!(missing.to_string().contains("No such file or directory"), "{missing}");
}

#[test]
fn pictures_decoded_into_the_pool_are_the_copied_ones_without_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.mp4");
    // An odd size: FFmpeg pads rows and heights, the pool rounds rows to the GPU pitch.
    let spec = SampleSpec {
        width: 322,
        height: 182,
        fps: 25,
        frames: 40,
        prefer_h264: true,
    };
    generate(&path, spec).unwrap();
    let copied = decode(&path, None);
    let pool = BufferPool::new(Box::new(HeapMemory), 1 << 30);
    let lent = decode(&path, Some(pool.clone()));
    assert!(copied.len() >= 30, "the sample has its frames ({})", copied.len());
    assert_eq!(lent.len(), copied.len());
    for (a, b) in copied.iter().zip(&lent) {
        assert_eq!((a.pts, a.index), (b.pts, b.index));
        assert!(
            a.planes.iter().zip(&b.planes).all(|(x, y)| x.same_pixels(y)),
            "frame {} differs",
            a.index
        );
    }
    let copied_anyway: Vec<u64> = lent
        .iter()
        .filter(|f| !f.planes.iter().all(|p| p.data.is_lent()))
        .map(|f| f.index)
        .collect();
    assert_eq!(copied_anyway, Vec::<u64>::new(), "every picture came from the pool");
    assert!(lent.iter().all(|f| f.planes[0].stride % POOLED_ROW_ALIGN == 0));
    assert!(
        lent.iter()
            .flat_map(|f| &f.planes)
            .all(|p| (p.data.as_ptr() as usize).is_multiple_of(PLANE_ALIGN)),
        "every plane starts on a {PLANE_ALIGN}-byte boundary, even in heap blocks"
    );
    assert!(pool.allocated_bytes() > 0);
    drop(lent);
    // Every block went back: a new decode needs no new memory.
    let allocated = pool.allocated_bytes();
    let again = decode(&path, Some(pool.clone()));
    assert_eq!(again.len(), copied.len());
    assert_eq!(pool.allocated_bytes(), allocated, "the blocks were reused");
}

/// `frames` frames of `path` looped, each next pass made seamless (the decoder kept, as for
/// NVDEC) or anew (drained and flushed).
fn decode_looped(path: &std::path::Path, frames: u64, seamless: bool) -> Vec<Frame> {
    let config = SourceConfig {
        looping: true,
        frames: Some(frames),
        ..SourceConfig::from_url(&path.display().to_string())
    };
    let probe: Arc<dyn NvdecProbe> = Arc::new(NoNvdec);
    let stop = Arc::new(AtomicBool::new(false));
    let source = Source::open(&config, stop.clone(), &probe, None).expect("the sample opens");
    let (sender, received) = unbounded();
    let (packets, _) = unbounded();
    source
        .with_seamless_loop(seamless)
        .run(&sender, &packets, &stop, &Counters::default(), None)
        .expect("the sample decodes");
    drop(sender);
    received.into_iter().collect()
}

#[test]
fn a_seamless_loop_sends_the_frames_and_timestamps_a_loop_made_anew_sends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clip.mp4");
    // H.264 with B-frames: the decoder holds pictures back, which a seamless loop lets the
    // next pass's packets push out. The mp4 muxer marks its last packet to be discarded.
    let spec = SampleSpec {
        width: 160,
        height: 90,
        fps: 25,
        frames: 30,
        prefer_h264: true,
    };
    generate(&path, spec).unwrap();
    let wanted = 75; // two passes and a half
    let anew = decode_looped(&path, wanted, false);
    let seamless = decode_looped(&path, wanted, true);
    assert_eq!(anew.len() as u64, wanted);
    assert_eq!(seamless.len() as u64, wanted);
    let step = anew[1].pts.unwrap() - anew[0].pts.unwrap();
    for (a, b) in anew.iter().zip(&seamless) {
        assert_eq!(a.index, b.index);
        // A pass made anew starts one frame after the last frame sent, a seamless one where
        // the clip's last packet ends: within a frame of each other.
        assert!(
            a.pts.unwrap().abs_diff(b.pts.unwrap()) < step as u64,
            "frame {}: {:?} {:?}",
            a.index,
            a.pts,
            b.pts
        );
        assert!(
            a.planes.iter().zip(&b.planes).all(|(x, y)| x.same_pixels(y)),
            "frame {} differs",
            a.index
        );
    }
    assert!(
        seamless
            .windows(2)
            .all(|w| w[1].pts.unwrap() - w[0].pts.unwrap() == step),
        "timestamps go on one frame apart across the passes"
    );
    // The passes repeat the clip (29 frames shown of 30 encoded: the muxer's edit list
    // drops the last): frame 29 + i is frame i again.
    let shown = decode(&path, None).len();
    assert!(seamless[shown].planes[0].same_pixels(&seamless[0].planes[0]));
    assert!(seamless[2 * shown + 1].planes[0].same_pixels(&seamless[1].planes[0]));
}

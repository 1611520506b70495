//! Streams decoded or refused, never silently wrong: a picture the output cannot hold
//! exactly is refused before anything is written, with the reason and the fix.

use crate::common::{ffmpeg, run_in, Y4m};

/// A 10-bit 4:2:0 clip of `width` x `height` (FFV1 in Matroska, lossless), 3 frames.
fn ten_bit_clip(dir: &std::path::Path, name: &str, width: usize, height: usize) {
    let size = format!("{width}x{height}");
    ffmpeg(
        dir,
        &[
            "-f",
            "lavfi",
            "-i",
            &format!("testsrc2=size=16x16:rate=25,scale={size},format=yuv420p10le"),
            "-frames:v",
            "3",
            "-c:v",
            "ffv1",
            name,
        ],
    );
}

#[test]
fn a_ten_bit_picture_of_odd_width_is_refused_as_y4m_and_written_elsewhere() {
    let dir = convstream_testkit::tempdir();
    ten_bit_clip(dir.path(), "odd.mkv", 7, 5);
    let refused = run_in(
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "odd.mkv",
            "-o",
            "out.y4m",
        ],
    );
    refused.assert_no_panic();
    assert_ne!(refused.code, Some(0), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("odd width 7") && refused.stderr.contains(".nut or .mkv"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("out.y4m").exists(), "nothing is written");
    // To stdout as well (the pipe users reach for first).
    let piped = run_in(
        dir.path(),
        &["run", "--device", "cpu", "--no-progress", "-i", "odd.mkv", "-o", "-"],
    );
    assert_ne!(piped.code, Some(0));
    assert!(piped.stdout.is_empty(), "{} bytes reached the pipe", piped.stdout.len());

    // The same picture in Matroska keeps every sample; an even width goes to y4m whole.
    run_in(
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "odd.mkv",
            "-o",
            "out.mkv",
            "--codec",
            "ffv1",
        ],
    )
    .success();
    ten_bit_clip(dir.path(), "even.mkv", 8, 5);
    run_in(
        dir.path(),
        &[
            "run",
            "--device",
            "cpu",
            "--no-progress",
            "-i",
            "even.mkv",
            "-o",
            "even.y4m",
        ],
    )
    .success();
    let y4m = Y4m::read(&dir.path().join("even.y4m"));
    assert_eq!((y4m.width, y4m.height, y4m.sample_bytes), (8, 5, 2));
    assert_eq!(y4m.frames.len(), 3);
}

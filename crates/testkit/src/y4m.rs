//! YUV4MPEG2 files as tests read them: the size and each frame's planes, one after another.

use std::path::Path;

/// A YUV4MPEG2 stream: its size and its frames, each the concatenated planes without their
/// frame header.
pub struct Y4m {
    pub width: usize,
    pub height: usize,
    pub frames: Vec<Vec<u8>>,
}

/// Reads the YUV4MPEG2 file at `path`: 4:2:0, 4:2:2, 4:4:4 or mono, 8 to 16 bits.
pub fn read_y4m(path: &Path) -> Y4m {
    let data = std::fs::read(path).unwrap();
    let header_end = data.iter().position(|&b| b == b'\n').expect("a header line");
    let header = std::str::from_utf8(&data[..header_end]).unwrap();
    let field = |key: char| header.split(' ').find_map(|field| field.strip_prefix(key));
    let dimension = |key: char| -> usize { field(key).and_then(|v| v.parse().ok()).unwrap() };
    let (width, height) = (dimension('W'), dimension('H'));
    let colour = field('C').unwrap_or("420jpeg");
    // C420p10, C444p12, Cmono16...: two bytes a sample; C420jpeg, C420mpeg2, Cmono: one.
    let deep = colour
        .split_once('p')
        .is_some_and(|(_, depth)| depth.starts_with(|c: char| c.is_ascii_digit()))
        || colour.starts_with("mono1");
    let bytes_per_sample = if deep { 2 } else { 1 };
    let (chroma_width, chroma_height) = if colour.starts_with("444") {
        (width, height)
    } else if colour.starts_with("422") {
        (width.div_ceil(2), height)
    } else if colour.starts_with("mono") {
        (0, 0)
    } else {
        (width.div_ceil(2), height.div_ceil(2))
    };
    let frame_bytes = (width * height + 2 * chroma_width * chroma_height) * bytes_per_sample;
    let mut frames = Vec::new();
    let mut at = header_end + 1;
    while at < data.len() {
        let line_end = at + data[at..].iter().position(|&b| b == b'\n').unwrap();
        assert!(
            data[at..].starts_with(b"FRAME"),
            "{}: a frame header at {at}",
            path.display()
        );
        frames.push(data[line_end + 1..line_end + 1 + frame_bytes].to_vec());
        at = line_end + 1 + frame_bytes;
    }
    Y4m { width, height, frames }
}

/// The frames of a YUV4MPEG2 stream.
pub fn y4m_frames(path: &Path) -> Vec<Vec<u8>> {
    read_y4m(path).frames
}

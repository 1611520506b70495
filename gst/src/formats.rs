//! The raw video formats the element takes: GStreamer's name for each engine format.

use convstream_core::{PixelFormat, PixelLayout};
use gst_video::VideoFormat;

/// GStreamer formats and the engine formats they are, sample for sample (P010's 10 bits in
/// the high bits of each 16-bit sample, as the engines take them).
const FORMATS: &[(VideoFormat, PixelLayout, u8)] = &[
    (VideoFormat::I420, PixelLayout::Yuv420, 8),
    (VideoFormat::Y42b, PixelLayout::Yuv422, 8),
    (VideoFormat::Y444, PixelLayout::Yuv444, 8),
    (VideoFormat::Nv12, PixelLayout::SemiPlanar420, 8),
    (VideoFormat::Gray8, PixelLayout::Gray, 8),
    (VideoFormat::Rgb, PixelLayout::Rgb, 8),
    (VideoFormat::Bgr, PixelLayout::Bgr, 8),
    (VideoFormat::Gbr, PixelLayout::Gbr, 8),
    (VideoFormat::I42010le, PixelLayout::Yuv420, 10),
    (VideoFormat::I42012le, PixelLayout::Yuv420, 12),
    (VideoFormat::I42210le, PixelLayout::Yuv422, 10),
    (VideoFormat::I42212le, PixelLayout::Yuv422, 12),
    (VideoFormat::Y44410le, PixelLayout::Yuv444, 10),
    (VideoFormat::Y44412le, PixelLayout::Yuv444, 12),
    (VideoFormat::Y44416le, PixelLayout::Yuv444, 16),
    (VideoFormat::P01010le, PixelLayout::SemiPlanar420, 10),
    (VideoFormat::P016Le, PixelLayout::SemiPlanar420, 16),
    (VideoFormat::Gray16Le, PixelLayout::Gray, 16),
    (VideoFormat::Gbr10le, PixelLayout::Gbr, 10),
    (VideoFormat::Gbr12le, PixelLayout::Gbr, 12),
];

/// The formats the pads offer, in order of preference.
pub fn formats() -> Vec<VideoFormat> {
    FORMATS.iter().map(|(format, _, _)| *format).collect()
}

/// The engine format of a GStreamer format, if the engines take it.
pub fn engine_format(format: VideoFormat) -> Option<PixelFormat> {
    FORMATS
        .iter()
        .find(|(f, _, _)| *f == format)
        .and_then(|(_, layout, bits)| PixelFormat::new(*layout, *bits))
}

#[cfg(test)]
mod tests {
    /// Each pair has the same planes, sample size and depth on both sides.
    #[test]
    fn every_format_is_the_engine_format_it_names() {
        gst::init().unwrap();
        for format in super::formats() {
            let engine = super::engine_format(format).expect("an engine format");
            let info = gst_video::VideoInfo::builder(format, 64, 32).build().unwrap();
            let gst_format = info.format_info();
            assert_eq!(gst_format.depth()[0], engine.sample_depth().bits as u32, "{format:?}");
            assert_eq!(
                info.n_planes() as usize,
                engine.plane_shapes(64, 32).len(),
                "{format:?}"
            );
        }
    }
}

//! A snapshot made viewable: its planes (YUV 4:2:0/4:2:2/4:4:4 or NV12-style, gray, RGB or
//! GBR, 8 to 16 bits) converted to 8-bit RGB at the width asked for, then encoded as JPEG
//! or PNG. Runs on the HTTP side's blocking pool, never on a pipeline's threads.

use convstream_core::PixelLayout;
use convstream_media::{Snapshot, SnapshotPlane};

/// How a snapshot is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
}

impl ImageFormat {
    pub fn parse(text: &str) -> Option<ImageFormat> {
        match text.to_ascii_lowercase().as_str() {
            "jpeg" | "jpg" => Some(ImageFormat::Jpeg),
            "png" => Some(ImageFormat::Png),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Png => "image/png",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    #[error("the frame has no planes to show")]
    Empty,
    #[error("encoding the picture failed: {0}")]
    Encode(String),
}

/// An 8-bit RGB picture, rows packed.
pub struct Rgb {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

/// One sample of `plane` at (`x`, `y`), channel `c`, scaled to 8 bits.
fn sample(plane: &SnapshotPlane, x: usize, y: usize, c: usize) -> u8 {
    let x = x.min(plane.width.saturating_sub(1));
    let y = y.min(plane.height.saturating_sub(1));
    let at = (y * plane.width + x) * plane.channels + c;
    let depth = plane.depth;
    if depth.bytes() == 1 {
        plane.data.get(at).copied().unwrap_or(0)
    } else {
        let low = plane.data.get(2 * at).copied().unwrap_or(0) as u16;
        let high = plane.data.get(2 * at + 1).copied().unwrap_or(0) as u16;
        let value = ((high << 8) | low) >> depth.shift;
        (value >> depth.bits.saturating_sub(8)).min(255) as u8
    }
}

/// BT.601 limited range, the usual meaning of untagged YUV.
fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    let c = (y as f32 - 16.0) * 1.164;
    let d = u as f32 - 128.0;
    let e = v as f32 - 128.0;
    let clamp = |v: f32| v.round().clamp(0.0, 255.0) as u8;
    [
        clamp(c + 1.596 * e),
        clamp(c - 0.392 * d - 0.813 * e),
        clamp(c + 2.017 * d),
    ]
}

/// The snapshot as RGB, `width` pixels across (at most the frame's; the height follows the
/// aspect ratio). Scaling takes the nearest sample: a preview, not a resampler.
pub fn to_rgb(snapshot: &Snapshot, width: usize) -> Result<Rgb, PictureError> {
    let planes = &snapshot.planes;
    if planes.is_empty() || snapshot.width == 0 || snapshot.height == 0 {
        return Err(PictureError::Empty);
    }
    let out_w = width.clamp(1, snapshot.width);
    let out_h = ((snapshot.height * out_w) as f64 / snapshot.width as f64)
        .round()
        .max(1.0) as usize;
    let layout = snapshot.format.layout();
    let mut pixels = Vec::with_capacity(out_w * out_h * 3);
    for oy in 0..out_h {
        let sy = oy * snapshot.height / out_h;
        for ox in 0..out_w {
            let sx = ox * snapshot.width / out_w;
            // Where a chroma sample of this pixel sits in a plane of another size.
            let at = |plane: &SnapshotPlane, c: usize| {
                let px = sx * plane.width / snapshot.width;
                let py = sy * plane.height / snapshot.height;
                sample(plane, px, py, c)
            };
            let rgb = match (layout, planes.len()) {
                (PixelLayout::Yuv420 | PixelLayout::Yuv422 | PixelLayout::Yuv444, 3) => {
                    yuv_to_rgb(at(&planes[0], 0), at(&planes[1], 0), at(&planes[2], 0))
                }
                (PixelLayout::SemiPlanar420, 2) => yuv_to_rgb(at(&planes[0], 0), at(&planes[1], 0), at(&planes[1], 1)),
                (PixelLayout::Rgb, _) => [at(&planes[0], 0), at(&planes[0], 1), at(&planes[0], 2)],
                (PixelLayout::Bgr, _) => [at(&planes[0], 2), at(&planes[0], 1), at(&planes[0], 0)],
                (PixelLayout::Gbr, 3) => [at(&planes[2], 0), at(&planes[0], 0), at(&planes[1], 0)],
                // Gray, or planes of an unexpected count: the first plane as a grey picture.
                _ => {
                    let value = at(&planes[0], 0);
                    [value; 3]
                }
            };
            pixels.extend_from_slice(&rgb);
        }
    }
    Ok(Rgb {
        width: out_w,
        height: out_h,
        pixels,
    })
}

/// Encodes `rgb` as `format` (JPEG at quality 80).
pub fn encode(rgb: &Rgb, format: ImageFormat) -> Result<Vec<u8>, PictureError> {
    let encode_error = |e: &dyn std::fmt::Display| PictureError::Encode(e.to_string());
    let (width, height) = (
        u16::try_from(rgb.width).map_err(|e| encode_error(&e))?,
        u16::try_from(rgb.height).map_err(|e| encode_error(&e))?,
    );
    let mut bytes = Vec::new();
    match format {
        ImageFormat::Jpeg => {
            let encoder = jpeg_encoder::Encoder::new(&mut bytes, 80);
            encoder
                .encode(&rgb.pixels, width, height, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| encode_error(&e))?;
        }
        ImageFormat::Png => {
            let mut encoder = png::Encoder::new(&mut bytes, width.into(), height.into());
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::Fast);
            let mut writer = encoder.write_header().map_err(|e| encode_error(&e))?;
            writer.write_image_data(&rgb.pixels).map_err(|e| encode_error(&e))?;
            writer.finish().map_err(|e| encode_error(&e))?;
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_core::{PixelFormat, SampleDepth};
    use std::time::Instant;

    fn plane(width: usize, height: usize, channels: usize, depth: SampleDepth, data: Vec<u8>) -> SnapshotPlane {
        SnapshotPlane {
            width,
            height,
            channels,
            depth,
            data,
        }
    }

    fn snapshot(format: PixelFormat, width: usize, height: usize, planes: Vec<SnapshotPlane>) -> Snapshot {
        Snapshot {
            format,
            width,
            height,
            index: 0,
            taken_at: Instant::now(),
            planes,
        }
    }

    #[test]
    fn mid_grey_yuv_is_grey_and_white_is_white_at_any_depth() {
        let eight = SampleDepth::EIGHT;
        let grey = snapshot(
            PixelFormat::YUV420P,
            4,
            2,
            vec![
                plane(4, 2, 1, eight, vec![126; 8]),
                plane(2, 1, 1, eight, vec![128; 2]),
                plane(2, 1, 1, eight, vec![128; 2]),
            ],
        );
        let rgb = to_rgb(&grey, 4).unwrap();
        assert_eq!((rgb.width, rgb.height), (4, 2));
        assert!(rgb.pixels.iter().all(|&v| (127..=129).contains(&v)), "{:?}", rgb.pixels);

        // P010: 10 bits in the high bits of each word; 940 << 6 is white.
        let format = PixelFormat::P010;
        let depth = format.sample_depth();
        let white = (940u16 << 6).to_le_bytes();
        let mid = (512u16 << 6).to_le_bytes();
        let snap = snapshot(
            format,
            2,
            2,
            vec![
                plane(2, 2, 1, depth, white.repeat(4)),
                plane(1, 1, 2, depth, mid.repeat(2)),
            ],
        );
        let rgb = to_rgb(&snap, 2).unwrap();
        assert!(rgb.pixels.iter().all(|&v| v >= 254), "{:?}", rgb.pixels);
    }

    #[test]
    fn the_width_asked_for_scales_and_both_formats_encode() {
        let gray = snapshot(
            PixelFormat::GRAY8,
            8,
            4,
            vec![plane(8, 4, 1, SampleDepth::EIGHT, (0..32).collect())],
        );
        let rgb = to_rgb(&gray, 4).unwrap();
        assert_eq!((rgb.width, rgb.height), (4, 2));
        assert_eq!(&rgb.pixels[..3], &[0, 0, 0]);
        assert_eq!(to_rgb(&gray, 100).unwrap().width, 8, "never larger than the frame");
        let jpeg = encode(&rgb, ImageFormat::Jpeg).unwrap();
        assert_eq!(&jpeg[..2], &[0xFF, 0xD8]);
        let png = encode(&rgb, ImageFormat::Png).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}

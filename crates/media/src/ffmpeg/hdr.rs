//! HDR metadata carried from input to output: the mastering display's colour volume
//! (SMPTE ST 2086) and the content light level (MaxCLL, MaxFALL). Inputs hold them as stream
//! side data (Matroska's MasteringMetadata, MP4's `mdcv`/`clli`) or only in the bitstream,
//! which the decoder gives as side data of each frame; outputs get them as stream side data
//! (which the Matroska and MP4 muxers write) and, with libx265, in the bitstream too (so an
//! MPEG-TS output carries them).

use ffmpeg::ffi;
use ffmpeg_next as ffmpeg;
use std::path::Path;

/// Mirrors libavutil's `AVMasteringDisplayMetadata` (mastering_display_metadata.h, whose
/// layout has not changed since FFmpeg 3.0; the bindings leave that header out). Primaries
/// are in R, G, B order, chromaticities and luminance (cd/m^2) as rationals.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MasteringDisplay {
    /// The x and y chromaticity of the display's red, green and blue primaries.
    pub display_primaries: [[ffi::AVRational; 2]; 3],
    /// The x and y chromaticity of its white point.
    pub white_point: [ffi::AVRational; 2],
    /// Its least luminance, in cd/m^2.
    pub min_luminance: ffi::AVRational,
    /// Its greatest luminance, in cd/m^2.
    pub max_luminance: ffi::AVRational,
    /// Non-zero when the primaries and white point are set.
    pub has_primaries: i32,
    /// Non-zero when the luminances are set.
    pub has_luminance: i32,
}

/// Mirrors libavutil's `AVContentLightMetadata`: MaxCLL and MaxFALL in cd/m^2.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentLight {
    /// The brightest pixel of the content (MaxCLL), in cd/m^2.
    pub max_cll: u32,
    /// The brightest frame average of the content (MaxFALL), in cd/m^2.
    pub max_fall: u32,
}

/// The HDR metadata of a video stream; either part may be missing.
#[derive(Debug, Clone, Copy, Default)]
pub struct HdrMetadata {
    /// The mastering display's colour volume.
    pub mastering: Option<MasteringDisplay>,
    /// The content light levels.
    pub light: Option<ContentLight>,
}

/// Packets read at most while looking for the first picture's side data.
const PROBE_PACKETS: usize = 200;

impl HdrMetadata {
    /// Whether neither part is known.
    pub fn is_empty(&self) -> bool {
        self.mastering.is_none() && self.light.is_none()
    }

    /// What `other` has that this lacks, filled in.
    pub fn or(self, other: HdrMetadata) -> HdrMetadata {
        HdrMetadata {
            mastering: self.mastering.or(other.mastering),
            light: self.light.or(other.light),
        }
    }

    /// The stream side data of `stream`.
    pub fn of_stream(stream: &ffmpeg::format::stream::Stream) -> HdrMetadata {
        // SAFETY: `stream` is a valid stream of an open input; av_stream_get_side_data
        // returns null or a pointer to side data of at least the type's size, which is read
        // (copied) before the stream can go.
        unsafe {
            let raw = stream.as_ptr();
            HdrMetadata {
                mastering: stream_side_data(raw, ffi::AVPacketSideDataType::AV_PKT_DATA_MASTERING_DISPLAY_METADATA),
                light: stream_side_data(raw, ffi::AVPacketSideDataType::AV_PKT_DATA_CONTENT_LIGHT_LEVEL),
            }
        }
    }

    /// The side data of a decoded picture.
    pub fn of_frame(frame: &ffmpeg::frame::Video) -> HdrMetadata {
        // SAFETY: `frame` is a valid frame; side data of these types holds at least the
        // struct, which is copied out.
        unsafe {
            let raw = frame.as_ptr();
            HdrMetadata {
                mastering: frame_side_data(raw, ffi::AVFrameSideDataType::AV_FRAME_DATA_MASTERING_DISPLAY_METADATA),
                light: frame_side_data(raw, ffi::AVFrameSideDataType::AV_FRAME_DATA_CONTENT_LIGHT_LEVEL),
            }
        }
    }

    /// The metadata of the first picture of video stream `index` of the file at `path`,
    /// decoded in software on a separate opening of the file (the output's header is
    /// written before the pipeline's own decoder has a picture). Empty if none is found.
    pub fn of_first_picture(path: &Path, index: usize) -> HdrMetadata {
        let probe = || -> Result<HdrMetadata, ffmpeg::Error> {
            let mut input = ffmpeg::format::input(&path)?;
            let parameters = input.stream(index).ok_or(ffmpeg::Error::StreamNotFound)?.parameters();
            let mut decoder = ffmpeg::codec::Context::from_parameters(parameters)?.decoder().video()?;
            let mut picture = ffmpeg::frame::Video::empty();
            for (_, packet) in input.packets().filter(|(s, _)| s.index() == index).take(PROBE_PACKETS) {
                if decoder.send_packet(&packet).is_err() {
                    continue;
                }
                if decoder.receive_frame(&mut picture).is_ok() {
                    return Ok(HdrMetadata::of_frame(&picture));
                }
            }
            Ok(HdrMetadata::default())
        };
        probe().unwrap_or_default()
    }

    /// Attaches the metadata to an output stream as side data (before its header is written).
    pub fn attach_to(&self, stream: &mut ffmpeg::format::stream::StreamMut) -> Result<(), ffmpeg::Error> {
        // SAFETY: `stream` is a stream of an output whose header is not written yet;
        // av_stream_new_side_data returns a buffer of the size asked for (or null), into
        // which the plain struct is copied.
        unsafe {
            let raw = stream.as_mut_ptr();
            if let Some(mastering) = &self.mastering {
                add_stream_side_data(
                    raw,
                    ffi::AVPacketSideDataType::AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
                    mastering,
                )?;
            }
            if let Some(light) = &self.light {
                add_stream_side_data(raw, ffi::AVPacketSideDataType::AV_PKT_DATA_CONTENT_LIGHT_LEVEL, light)?;
            }
        }
        Ok(())
    }

    /// libx265's options that write the metadata into the bitstream (SEI messages):
    /// `master-display=G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)` in x265's units (chromaticity
    /// in 1/50000, luminance in 1/10000 cd/m^2) and `max-cll=MaxCLL,MaxFALL`.
    pub fn x265_params(&self) -> Vec<String> {
        let mut params = Vec::new();
        if let Some(m) = self.mastering.filter(|m| m.has_primaries != 0 && m.has_luminance != 0) {
            let chroma = |q: ffi::AVRational| scaled(q, 50_000);
            let luma = |q: ffi::AVRational| scaled(q, 10_000);
            let xy = |p: [ffi::AVRational; 2]| format!("({},{})", chroma(p[0]), chroma(p[1]));
            // FFmpeg keeps the primaries in R, G, B order; x265 takes G, B, R.
            let [r, g, b] = m.display_primaries;
            params.push(format!(
                "master-display=G{}B{}R{}WP{}L({},{})",
                xy(g),
                xy(b),
                xy(r),
                xy(m.white_point),
                luma(m.max_luminance),
                luma(m.min_luminance)
            ));
        }
        if let Some(light) = self.light {
            params.push(format!("max-cll={},{}", light.max_cll, light.max_fall));
        }
        params
    }
}

/// `q` in units of 1/`denominator`, rounded.
fn scaled(q: ffi::AVRational, denominator: i64) -> i64 {
    if q.den == 0 {
        return 0;
    }
    (q.num as i64 * denominator + q.den as i64 / 2) / q.den as i64
}

/// A copy of a stream's side data of `kind`, read as `T`.
///
/// SAFETY: `stream` must be valid, and side data of `kind` must hold a `T`.
unsafe fn stream_side_data<T: Copy>(stream: *const ffi::AVStream, kind: ffi::AVPacketSideDataType) -> Option<T> {
    let mut size = 0;
    // SAFETY: as the caller promises.
    let data = unsafe { ffi::av_stream_get_side_data(stream, kind, &mut size) };
    // SAFETY: non-null side data of this kind is at least a T; it may be unaligned.
    (!data.is_null() && size >= std::mem::size_of::<T>()).then(|| unsafe { std::ptr::read_unaligned(data as *const T) })
}

/// A copy of a frame's side data of `kind`, read as `T`.
///
/// SAFETY: `frame` must be valid, and side data of `kind` must hold a `T`.
unsafe fn frame_side_data<T: Copy>(frame: *const ffi::AVFrame, kind: ffi::AVFrameSideDataType) -> Option<T> {
    // SAFETY: as the caller promises.
    let side = unsafe { ffi::av_frame_get_side_data(frame, kind) };
    if side.is_null() {
        return None;
    }
    // SAFETY: `side` is valid; its data holds `size` bytes.
    unsafe { ((*side).size >= std::mem::size_of::<T>()).then(|| std::ptr::read_unaligned((*side).data as *const T)) }
}

/// Adds side data of `kind` holding `value` to an output stream.
///
/// SAFETY: `stream` must be a valid stream whose header is not written yet.
unsafe fn add_stream_side_data<T: Copy>(
    stream: *mut ffi::AVStream,
    kind: ffi::AVPacketSideDataType,
    value: &T,
) -> Result<(), ffmpeg::Error> {
    let size = std::mem::size_of::<T>();
    // SAFETY: as the caller promises; the buffer returned is `size` bytes the stream owns.
    unsafe {
        let data = ffi::av_stream_new_side_data(stream, kind, size as _);
        if data.is_null() {
            return Err(ffmpeg::Error::Other {
                errno: ffmpeg::util::error::ENOMEM,
            });
        }
        std::ptr::write_unaligned(data as *mut T, *value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(num: i32, den: i32) -> ffi::AVRational {
        ffi::AVRational { num, den }
    }

    #[test]
    fn x265_params_use_its_units_and_its_primary_order() {
        // BT.2020 primaries, D65, 1000 / 0.0001 cd/m^2 (as FFmpeg's HEVC decoder gives them).
        let mastering = MasteringDisplay {
            display_primaries: [
                [q(34000, 50000), q(16000, 50000)],
                [q(13250, 50000), q(34500, 50000)],
                [q(7500, 50000), q(3000, 50000)],
            ],
            white_point: [q(15635, 50000), q(16450, 50000)],
            min_luminance: q(1, 10_000),
            max_luminance: q(10_000_000, 10_000),
            has_primaries: 1,
            has_luminance: 1,
        };
        let hdr = HdrMetadata {
            mastering: Some(mastering),
            light: Some(ContentLight {
                max_cll: 1000,
                max_fall: 400,
            }),
        };
        assert_eq!(
            hdr.x265_params(),
            [
                "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)",
                "max-cll=1000,400"
            ]
        );
        assert!(HdrMetadata::default().x265_params().is_empty());
        assert!(HdrMetadata::default().is_empty());
    }
}

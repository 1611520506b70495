//! A generated sample clip (moving shapes and fine detail, with a tone on an audio track)
//! so that `convstream demo` runs on a fresh machine with no media at hand, and the
//! benchmark's clips: the same smooth pattern, or a textured one that costs a decoder more.

use ffmpeg::{codec, format::Sample, ChannelLayout, Packet, Rational};
use ffmpeg_next as ffmpeg;
use std::path::Path;

/// Shape of the generated clip.
#[derive(Debug, Clone, Copy)]
pub struct SampleSpec {
    /// Width, in pixels.
    pub width: u32,
    /// Height, in pixels.
    pub height: u32,
    /// Frames per second.
    pub fps: i32,
    /// How many frames.
    pub frames: u32,
    /// Encode H.264 with libx264 where the FFmpeg build has it (else MPEG-4 Part 2).
    pub prefer_h264: bool,
}

impl Default for SampleSpec {
    fn default() -> Self {
        SampleSpec {
            width: 1280,
            height: 720,
            fps: 30,
            frames: 150,
            prefer_h264: false,
        }
    }
}

/// What the generated pictures show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SampleContent {
    /// A gradient, a checkerboard, lines and a moving disc: large flat areas that an encoder
    /// predicts almost entirely, so the clip decodes far faster than camera footage.
    #[default]
    Smooth,
    /// Noise textures panning by fractions of a pixel, and an object moving against them:
    /// every block needs interpolated motion and residuals, so the clip costs a decoder about
    /// twice the smooth one per frame, as detailed footage does.
    Textured,
}

impl SampleContent {
    /// The name benchmarks give clips and rows of this content.
    pub fn name(self) -> &'static str {
        match self {
            SampleContent::Smooth => "smooth",
            SampleContent::Textured => "textured",
        }
    }
}

const AUDIO_RATE: i32 = 48_000;

/// Writes the smooth clip as MPEG-4 Part 2 video (+ AAC audio where the FFmpeg build has it)
/// in MP4.
pub fn generate(path: &Path, spec: SampleSpec) -> Result<(), String> {
    generate_content(path, spec, SampleContent::Smooth)
}

/// Writes a clip of `content` as [`generate`] does.
pub fn generate_content(path: &Path, spec: SampleSpec, content: SampleContent) -> Result<(), String> {
    crate::ffmpeg::init();
    let fail = |what: &str, e: ffmpeg::Error| format!("cannot generate {}: {what}: {e}", path.display());
    let mut output = ffmpeg::format::output(path).map_err(|e| fail("open", e))?;
    let global_header = output.format().flags().contains(ffmpeg::format::Flags::GLOBAL_HEADER);

    let h264 = spec
        .prefer_h264
        .then(|| ffmpeg::encoder::find_by_name("libx264"))
        .flatten();
    let video_codec = match h264 {
        Some(codec) => codec,
        None => ffmpeg::encoder::find_by_name("mpeg4").ok_or("this FFmpeg build has no mpeg4 encoder")?,
    };
    let mut video = codec::Context::new_with_codec(video_codec)
        .encoder()
        .video()
        .map_err(|e| fail("video encoder", e))?;
    let time_base = Rational::new(1, spec.fps);
    video.set_width(spec.width);
    video.set_height(spec.height);
    video.set_format(ffmpeg::format::Pixel::YUV420P);
    video.set_time_base(time_base);
    video.set_frame_rate(Some(Rational::new(spec.fps, 1)));
    let mut flags = if global_header {
        codec::Flags::GLOBAL_HEADER
    } else {
        codec::Flags::empty()
    };
    let mut options = ffmpeg::Dictionary::new();
    if h264.is_some() {
        options.set("preset", "veryfast");
        options.set("crf", "20");
    } else {
        // A fixed quantiser keeps the detail the filters act on.
        flags |= codec::Flags::QSCALE;
        video.set_global_quality(3 * ffmpeg::ffi::FF_QP2LAMBDA);
    }
    video.set_flags(flags);
    let mut video = video
        .open_as_with(video_codec, options)
        .map_err(|e| fail("open video encoder", e))?;
    let mut stream = output.add_stream(video_codec).map_err(|e| fail("video stream", e))?;
    stream.set_parameters(&video);
    stream.set_time_base(time_base);
    let video_index = stream.index();

    let mut audio = match ffmpeg::encoder::find_by_name("aac") {
        Some(audio_codec) => {
            let mut enc = codec::Context::new_with_codec(audio_codec)
                .encoder()
                .audio()
                .map_err(|e| fail("audio encoder", e))?;
            enc.set_rate(AUDIO_RATE);
            enc.set_format(Sample::F32(ffmpeg::format::sample::Type::Planar));
            enc.set_channel_layout(ChannelLayout::STEREO);
            enc.set_time_base(Rational::new(1, AUDIO_RATE));
            if global_header {
                enc.set_flags(codec::Flags::GLOBAL_HEADER);
            }
            let enc = enc.open_as(audio_codec).map_err(|e| fail("open audio encoder", e))?;
            let mut stream = output.add_stream(audio_codec).map_err(|e| fail("audio stream", e))?;
            stream.set_parameters(&enc);
            stream.set_time_base(Rational::new(1, AUDIO_RATE));
            Some((enc, stream.index()))
        }
        None => None,
    };
    output.write_header().map_err(|e| fail("header", e))?;

    let mut picture = ffmpeg::frame::Video::new(ffmpeg::format::Pixel::YUV420P, spec.width, spec.height);
    let mut samples_written: i64 = 0;
    for n in 0..spec.frames {
        match content {
            SampleContent::Smooth => draw(&mut picture, n),
            SampleContent::Textured => draw_textured(&mut picture, n),
        }
        picture.set_pts(Some(n as i64));
        video.send_frame(&picture).map_err(|e| fail("encode", e))?;
        write_packets(&mut video, &mut output, video_index, time_base).map_err(|e| fail("write", e))?;
        if let Some((enc, index)) = audio.as_mut() {
            let due = (n as i64 + 1) * AUDIO_RATE as i64 / spec.fps as i64;
            let frame_size = enc.frame_size().max(1024) as i64;
            while samples_written + frame_size <= due {
                let tone = tone(samples_written, frame_size as usize);
                enc.send_frame(&tone).map_err(|e| fail("encode audio", e))?;
                samples_written += frame_size;
                write_packets(enc, &mut output, *index, Rational::new(1, AUDIO_RATE))
                    .map_err(|e| fail("write audio", e))?;
            }
        }
    }
    video.send_eof().map_err(|e| fail("flush", e))?;
    write_packets(&mut video, &mut output, video_index, time_base).map_err(|e| fail("write", e))?;
    if let Some((enc, index)) = audio.as_mut() {
        enc.send_eof().map_err(|e| fail("flush audio", e))?;
        write_packets(enc, &mut output, *index, Rational::new(1, AUDIO_RATE)).map_err(|e| fail("write audio", e))?;
    }
    output.write_trailer().map_err(|e| fail("trailer", e))
}

fn write_packets(
    encoder: &mut ffmpeg::encoder::Encoder,
    output: &mut ffmpeg::format::context::Output,
    index: usize,
    time_base: Rational,
) -> Result<(), ffmpeg::Error> {
    let out_time_base = output.stream(index).map(|s| s.time_base()).unwrap_or(time_base);
    let mut packet = Packet::empty();
    loop {
        match encoder.receive_packet(&mut packet) {
            Ok(()) => {
                packet.set_stream(index);
                packet.rescale_ts(time_base, out_time_base);
                packet.write_interleaved(output)?;
            }
            Err(ffmpeg::Error::Eof) => return Ok(()),
            Err(e) if crate::ffmpeg::is_again(&e) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// A 440 Hz tone, stereo planar f32, starting at sample `start`.
fn tone(start: i64, count: usize) -> ffmpeg::frame::Audio {
    let mut frame = ffmpeg::frame::Audio::new(
        Sample::F32(ffmpeg::format::sample::Type::Planar),
        count,
        ChannelLayout::STEREO,
    );
    frame.set_rate(AUDIO_RATE as u32);
    frame.set_pts(Some(start));
    for channel in 0..2 {
        let plane = frame.plane_mut::<f32>(channel);
        for (i, s) in plane.iter_mut().enumerate() {
            let t = (start + i as i64) as f32 / AUDIO_RATE as f32;
            *s = 0.2 * (2.0 * std::f32::consts::PI * 440.0 * t).sin();
        }
    }
    frame
}

/// Frame `n`: a diagonal gradient, a fine checkerboard (shows blur), thin lines (show
/// edges) and a disc that moves, with slowly turning colours.
fn draw(picture: &mut ffmpeg::frame::Video, n: u32) {
    let (w, h) = (picture.width() as i64, picture.height() as i64);
    let t = n as f32;
    let (cx, cy) = (
        (w as f32 * (0.5 + 0.35 * (t * 0.05).cos())) as i64,
        (h as f32 * (0.5 + 0.3 * (t * 0.07).sin())) as i64,
    );
    let radius = h / 6;
    let stride = picture.stride(0);
    let luma = picture.data_mut(0);
    for y in 0..h {
        for x in 0..w {
            let mut v = ((x + y + n as i64 * 4) * 200 / (w + h)) as i32 + 30;
            if x < w / 3 && y > h / 2 && ((x / 4) + (y / 4)) % 2 == 0 {
                v = 230;
            }
            if x > 2 * w / 3 && y % 24 == 0 {
                v = 16;
            }
            if (x - cx).pow(2) + (y - cy).pow(2) < radius * radius {
                v = 235;
            }
            luma[y as usize * stride + x as usize] = v.clamp(0, 255) as u8;
        }
    }
    for (plane, phase) in [(1usize, 0.0f32), (2, 2.0)] {
        let stride = picture.stride(plane);
        let (pw, ph) = ((w as usize).div_ceil(2), (h as usize).div_ceil(2));
        let data = picture.data_mut(plane);
        for y in 0..ph {
            for x in 0..pw {
                let v = 128.0
                    + 60.0
                        * ((x as f32 / pw as f32) * 3.0 + t * 0.03 + phase).sin()
                        * ((y as f32 / ph as f32) * 2.0 + phase).cos();
                data[y * stride + x] = v.clamp(0.0, 255.0) as u8;
            }
        }
    }
}

/// Frame `n` of the textured clip: a noise texture with features of 2 to 8 pixels panning by
/// a pixel and a half per frame (so a decoder interpolates between pixels, as camera pans
/// make it), a disc with a texture of its own moving across it the other way, and chroma
/// textures panning with it. About 10 Mb/s at 1080p30 with libx264 `crf 20`, where the smooth
/// clip needs 2, and about twice the smooth clip's decoding time (FFmpeg 5.1, 2 threads).
fn draw_textured(picture: &mut ffmpeg::frame::Video, n: u32) {
    let (w, h) = (picture.width() as i64, picture.height() as i64);
    let (n, t) = (n as i64, n as f32);
    let (cx, cy) = (
        (w as f32 * (0.5 + 0.35 * (t * 0.05).cos())) as i64,
        (h as f32 * (0.5 + 0.3 * (t * 0.07).sin())) as i64,
    );
    let radius = h / 5;
    let stride = picture.stride(0);
    let luma = picture.data_mut(0);
    for y in 0..h {
        for x in 0..w {
            // Positions in half pixels: the pan moves 3 of them right and 1 down per frame.
            let (px, py) = (2 * x + 3 * n, 2 * y + n);
            let v = if (x - cx).pow(2) + (y - cy).pow(2) < radius * radius {
                118 + (value_noise(2 * x - 5 * n, 2 * y + 3 * n, 8, 7) - 128) * 3 / 4
            } else {
                let base = value_noise(px, py, 16, 1) - 128;
                let detail = value_noise(px, py, 4, 2) - 128;
                118 + ((x + y) * 40 / (w + h)) as i32 + base * 3 / 4 + detail / 2
            };
            luma[(y as usize) * stride + x as usize] = v.clamp(16, 235) as u8;
        }
    }
    for (plane, seed) in [(1usize, 5u32), (2, 6)] {
        let stride = picture.stride(plane);
        let (pw, ph) = ((w as usize).div_ceil(2), (h as usize).div_ceil(2));
        let data = picture.data_mut(plane);
        for y in 0..ph {
            for x in 0..pw {
                let (px, py) = (2 * x as i64 + 3 * n / 2, 2 * y as i64 + n / 2);
                let v = 128 + (value_noise(px, py, 32, seed) - 128) / 3;
                data[y * stride + x] = v.clamp(16, 240) as u8;
            }
        }
    }
}

/// A pseudo-random byte for a pixel position and a seed (a multiply-xorshift hash).
fn noise_at(x: i64, y: i64, seed: u32) -> u8 {
    let mut h = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (y as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ u64::from(seed).wrapping_mul(0x1656_67B1_9E37_79F9);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    (h >> 24) as u8
}

/// Noise with features about `cell` pixels across: random values on a grid of that pitch,
/// interpolated bilinearly between them (0 to 255).
fn value_noise(x: i64, y: i64, cell: i64, seed: u32) -> i32 {
    let (gx, gy) = (x.div_euclid(cell), y.div_euclid(cell));
    let (fx, fy) = (x.rem_euclid(cell), y.rem_euclid(cell));
    let corner = |dx: i64, dy: i64| i64::from(noise_at(gx + dx, gy + dy, seed));
    let top = corner(0, 0) * (cell - fx) + corner(1, 0) * fx;
    let bottom = corner(0, 1) * (cell - fx) + corner(1, 1) * fx;
    ((top * (cell - fy) + bottom * fy) / (cell * cell)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_noise_stays_in_a_byte_and_moves_with_its_position() {
        let values: Vec<i32> = (0..200).map(|i| value_noise(i * 7 - 500, i * 3 - 40, 16, 1)).collect();
        assert!(values.iter().all(|v| (0..=255).contains(v)));
        assert!(values.iter().any(|&v| v != values[0]), "not constant");
        // Neighbours within a cell differ little: the texture is smooth at its scale.
        let step = (value_noise(100, 100, 16, 1) - value_noise(101, 100, 16, 1)).abs();
        assert!(step <= 16, "{step}");
    }

    #[test]
    fn textured_clips_cost_more_video_bits_than_smooth_ones() {
        let dir = tempfile::tempdir().unwrap();
        let video_bytes = |content: SampleContent| {
            let path = dir.path().join(format!("{}.mp4", content.name()));
            let spec = SampleSpec {
                width: 192,
                height: 108,
                frames: 10,
                ..SampleSpec::default()
            };
            generate_content(&path, spec, content).unwrap();
            let mut input = ffmpeg::format::input(&path).unwrap();
            let stream = input.streams().best(ffmpeg::media::Type::Video).unwrap();
            assert_eq!(stream.parameters().id(), codec::Id::MPEG4, "{}", content.name());
            let index = stream.index();
            let packets: Vec<usize> = input
                .packets()
                .filter(|(s, _)| s.index() == index)
                .map(|(_, p)| p.size())
                .collect();
            assert_eq!(packets.len(), 10, "{}: every frame written", content.name());
            packets.iter().sum::<usize>()
        };
        let (smooth, textured) = (video_bytes(SampleContent::Smooth), video_bytes(SampleContent::Textured));
        assert!(textured > 2 * smooth, "{textured} vs {smooth} bytes");
    }
}

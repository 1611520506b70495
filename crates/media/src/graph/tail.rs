//! The filters FFmpeg's command line adds after a graph for its output options, as FFmpeg
//! 5.1 adds them (`configure_output_video_filter`): `-s` a `scale`, `-pix_fmt` a `format`;
//! `-r` becomes an `fps` filter, for a constant rate. Each value is read as FFmpeg reads it.

use ffmpeg_next as ffmpeg;
use std::ffi::CString;

/// The output options that become filters, as typed (`None`: not given).
#[derive(Debug, Default, Clone)]
pub struct OutputFilterOptions {
    /// `-s WxH` (or a name such as `hd720`) after `-i`.
    pub size: Option<String>,
    /// `-pix_fmt NAME` after `-i`.
    pub pix_fmt: Option<String>,
    /// `-r RATE` after `-i`.
    pub frame_rate: Option<String>,
}

impl OutputFilterOptions {
    /// The chain they make, in FFmpeg's order (`scale`, `format`, then `fps`), or `None`
    /// when none is given. A value FFmpeg would not take is refused, naming its option.
    pub fn chain(&self) -> Result<Option<String>, String> {
        let mut filters = Vec::new();
        if let Some(size) = &self.size {
            let (width, height) = video_size(size)
                .ok_or_else(|| format!("-s {size:?}: not a frame size (WxH, or a name such as hd720 or vga)"))?;
            // FFmpeg passes its swscale flags (bicubic) with the size.
            filters.push(format!("scale={width}:{height}:flags=bicubic"));
        }
        if let Some(name) = &self.pix_fmt {
            let known = CString::new(name.as_str())
                // SAFETY: a NUL-terminated name; the call only reads it.
                .map(|c| unsafe { ffmpeg::ffi::av_get_pix_fmt(c.as_ptr()) } != ffmpeg::ffi::AVPixelFormat::AV_PIX_FMT_NONE)
                .unwrap_or(false);
            if !known {
                return Err(format!(
                    "-pix_fmt {name:?}: no pixel format of FFmpeg's (`ffmpeg -pix_fmts` lists them)"
                ));
            }
            filters.push(format!("format=pix_fmts={name}"));
        }
        if let Some(rate) = &self.frame_rate {
            let (num, den) =
                video_rate(rate).ok_or_else(|| format!("-r {rate:?}: not a frame rate (25, 30000/1001, ntsc, ...)"))?;
            filters.push(format!("fps={num}/{den}"));
        }
        Ok((!filters.is_empty()).then(|| filters.join(",")))
    }
}

/// `av_parse_video_size`: WxH or one of FFmpeg's names.
fn video_size(text: &str) -> Option<(i32, i32)> {
    let text = CString::new(text).ok()?;
    let (mut width, mut height) = (0, 0);
    // SAFETY: the text is NUL-terminated; the two integers are written.
    let code = unsafe { ffmpeg::ffi::av_parse_video_size(&mut width, &mut height, text.as_ptr()) };
    (code >= 0 && width > 0 && height > 0).then_some((width, height))
}

/// `av_parse_video_rate`: a number, a fraction or one of FFmpeg's names, above 0.
fn video_rate(text: &str) -> Option<(i32, i32)> {
    let text = CString::new(text).ok()?;
    let mut rate = ffmpeg::ffi::AVRational { num: 0, den: 1 };
    // SAFETY: the text is NUL-terminated; the rational is written.
    let code = unsafe { ffmpeg::ffi::av_parse_video_rate(&mut rate, text.as_ptr()) };
    (code >= 0 && rate.num > 0 && rate.den > 0).then_some((rate.num, rate.den))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_ffmpegs_filters_in_its_order() {
        let options = OutputFilterOptions {
            size: Some("hd720".into()),
            pix_fmt: Some("gray".into()),
            frame_rate: Some("ntsc".into()),
        };
        assert_eq!(
            options.chain().unwrap().as_deref(),
            Some("scale=1280:720:flags=bicubic,format=pix_fmts=gray,fps=30000/1001")
        );
        assert_eq!(OutputFilterOptions::default().chain().unwrap(), None);
    }

    #[test]
    fn values_ffmpeg_refuses_are_refused_naming_the_option() {
        for (options, named) in [
            (
                OutputFilterOptions {
                    size: Some("12xq".into()),
                    ..Default::default()
                },
                "-s \"12xq\"",
            ),
            (
                OutputFilterOptions {
                    pix_fmt: Some("grey9".into()),
                    ..Default::default()
                },
                "-pix_fmt \"grey9\"",
            ),
            (
                OutputFilterOptions {
                    frame_rate: Some("-5".into()),
                    ..Default::default()
                },
                "-r \"-5\"",
            ),
        ] {
            let error = options.chain().unwrap_err();
            assert!(error.starts_with(named), "{error}");
        }
    }
}

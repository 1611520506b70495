//! Whose option an FFmpeg `-KEY VALUE` is, found as FFmpeg's own command line finds it: among
//! the AVOptions of the codecs (`AVCodecContext` and every codec's private class) and of the
//! formats (`AVFormatContext`, every muxer's, demuxer's and protocol's).

use std::ffi::CString;

use ffmpeg_next::ffi;

/// The libraries' part an option belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionOwner {
    /// A codec's (the encoder's after `-i`, the decoder's before it).
    Codec,
    /// A format's or protocol's (the muxer's after `-i`, the demuxer's before it).
    Format,
}

/// Whose option `name` is in this build's FFmpeg, codecs first (as FFmpeg's `opt_default`
/// looks), `None` when no codec, format or protocol of the build has it.
pub fn option_owner(name: &str) -> Option<OptionOwner> {
    let name = CString::new(name).ok()?;
    let search = |class: *const ffi::AVClass| {
        let mut fake = class;
        // SAFETY: AV_OPT_SEARCH_FAKE_OBJ makes `obj` a pointer to an AVClass pointer, which
        // `fake` is; FFmpeg only reads the class and its children's static tables.
        let found = unsafe {
            ffi::av_opt_find(
                (&mut fake as *mut *const ffi::AVClass).cast(),
                name.as_ptr(),
                std::ptr::null(),
                0,
                (ffi::AV_OPT_SEARCH_CHILDREN | ffi::AV_OPT_SEARCH_FAKE_OBJ) as _,
            )
        };
        !found.is_null()
    };
    // SAFETY: both return pointers to static classes.
    let (codec, format) = unsafe { (ffi::avcodec_get_class(), ffi::avformat_get_class()) };
    if search(codec) {
        Some(OptionOwner::Codec)
    } else if search(format) {
        Some(OptionOwner::Format)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_and_format_options_are_told_apart() {
        assert_eq!(option_owner("g"), Some(OptionOwner::Codec));
        assert_eq!(option_owner("movflags"), Some(OptionOwner::Format));
        assert_eq!(option_owner("no_such_option_anywhere"), None);
    }
}

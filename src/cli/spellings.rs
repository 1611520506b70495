//! FFmpeg's spellings of flags, read as convstream's own before clap sees them.

/// FFmpeg's single-dash spellings that users type by habit, read as the long flags.
pub(crate) fn ffmpeg_spellings(arg: std::ffi::OsString) -> std::ffi::OsString {
    match arg.to_str() {
        Some("-an") => "--no-audio".into(),
        Some("-ss") => "--ss".into(),
        _ => arg,
    }
}

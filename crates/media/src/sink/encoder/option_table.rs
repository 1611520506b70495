//! What an encoder's option table says of an option it left unused: that it has no option of
//! that name, or the range its value missed, for messages that name the range broken
//! (`-bf -5`: allowed -1..=2147483647) instead of calling a real option unknown.

use std::ffi::CString;

use ffmpeg_next as ffmpeg;

use convstream_core::quoted;

/// Why the encoder left an option unused: it has no option of that name, or it has and the
/// value is out of the option's range (given for numbers) or not one it reads.
pub(super) fn unused_option(codec: ffmpeg::Codec, key: &str, value: &str) -> String {
    let name = codec.name();
    let Some(option) = find_option(codec, key) else {
        return format!(
            "the {name} encoder has no option `{}` (`ffmpeg -h encoder={name}` lists what it takes)",
            quoted(key)
        );
    };
    use ffmpeg::ffi::AVOptionType::*;
    let whole = matches!(
        option.kind,
        AV_OPT_TYPE_INT | AV_OPT_TYPE_INT64 | AV_OPT_TYPE_UINT64 | AV_OPT_TYPE_BOOL
    );
    let number = whole || matches!(option.kind, AV_OPT_TYPE_DOUBLE | AV_OPT_TYPE_FLOAT);
    match number {
        true => format!(
            "{} is out of range for {name}, or no {}; allowed {}..={}",
            quoted(value),
            if whole { "whole number" } else { "number" },
            shown_bound(option.min, whole),
            shown_bound(option.max, whole)
        ),
        false => format!(
            "`{}` is a value the {name} encoder refuses (`ffmpeg -h encoder={name}` lists the values it takes)",
            quoted(value)
        ),
    }
}

/// A bound of an option's range as people write it (`9223372036854775807`, `-1`, `0.5`).
fn shown_bound(bound: f64, whole: bool) -> String {
    match whole {
        true if bound >= i64::MAX as f64 => i64::MAX.to_string(),
        true if bound <= i64::MIN as f64 => i64::MIN.to_string(),
        true => format!("{}", bound as i64),
        false => format!("{bound}"),
    }
}

/// What FFmpeg's option table says of one option.
struct OptionInfo {
    kind: ffmpeg::ffi::AVOptionType,
    min: f64,
    max: f64,
}

/// The option `key` of the encoder's own options or of every codec's, if it has one.
fn find_option(codec: ffmpeg::Codec, key: &str) -> Option<OptionInfo> {
    let name = CString::new(key).ok()?;
    // SAFETY: `codec` is an encoder from FFmpeg's static table; its `priv_class` and
    // `avcodec_get_class()` are static AVClass pointers. With AV_OPT_SEARCH_FAKE_OBJ,
    // av_opt_find takes a pointer to a class pointer (no object), and returns a pointer into
    // the class's static option table, or null.
    unsafe {
        let classes = [(*codec.as_ptr()).priv_class, ffmpeg::ffi::avcodec_get_class()];
        classes.into_iter().filter(|class| !class.is_null()).find_map(|class| {
            let fake_object = &class as *const *const ffmpeg::ffi::AVClass as *mut std::ffi::c_void;
            let option = ffmpeg::ffi::av_opt_find(
                fake_object,
                name.as_ptr(),
                std::ptr::null(),
                0,
                ffmpeg::ffi::AV_OPT_SEARCH_FAKE_OBJ,
            );
            option.as_ref().map(|option| OptionInfo {
                kind: option.type_,
                min: option.min,
                max: option.max,
            })
        })
    }
}

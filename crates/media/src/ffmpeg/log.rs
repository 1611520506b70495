//! FFmpeg's own log lines, routed through `tracing` (so JSON logs carry them too), and the
//! last errors FFmpeg logged on each thread, so that an error convstream reports can name
//! FFmpeg's reason ("Picture size 0x240 is invalid") rather than only its code ("Device or
//! resource busy").

use ffmpeg_next as ffmpeg;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr};

use ffmpeg::ffi::{AVClass, AV_LOG_ERROR, AV_LOG_WARNING};

/// Longest FFmpeg line kept or logged: a reason, never a dump of input data.
const MAX_LINE: usize = 160;
/// Error lines kept per thread: a failure is often explained by the line before the last
/// ("AVHWFramesContext is already initialized with incompatible parameters", then "cuvid
/// decode callback error").
const KEPT_ERRORS: usize = 3;

thread_local! {
    static LAST_ERRORS: RefCell<VecDeque<String>> = const { RefCell::new(VecDeque::new()) };
    /// Set while this thread asks FFmpeg a question whose "no" is an answer, not a fault
    /// (see [`quietly`]).
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// Every error line while a [`first_error_during`] call runs on this thread.
    static COLLECTED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Runs `call` quietly (see [`quietly`]) and returns, with its result, the first error FFmpeg
/// logged on this thread meanwhile: where FFmpeg explains one failure in several lines, the
/// first names the cause ("Value -3.000000 for parameter 'sigma' out of range [0 - 1024]")
/// and the later ones only where it surfaced ("Error initializing filter 'gblur'").
pub fn first_error_during<T>(call: impl FnOnce() -> T) -> (T, Option<String>) {
    struct Restore(Option<Vec<String>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            COLLECTED.with(|collected| *collected.borrow_mut() = self.0.take());
        }
    }
    let restore = Restore(COLLECTED.with(|collected| collected.replace(Some(Vec::new()))));
    let result = quietly(call);
    let first = COLLECTED.with(|collected| collected.borrow_mut().as_mut().and_then(|lines| lines.drain(..).next()));
    drop(restore);
    (result, first)
}

/// Runs `probe` with FFmpeg's errors on this thread kept as its reason (for
/// [`take_last_error`]) and logged at debug level only: a probe that finds no NVENC on a
/// host without one has found an answer, which the caller reports where it matters.
pub fn quietly<T>(probe: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            QUIET.with(|quiet| quiet.set(self.0));
        }
    }
    let _restore = Restore(QUIET.with(|quiet| quiet.replace(true)));
    probe()
}

/// From now on, FFmpeg's errors on this thread are logged at debug level only (still kept as
/// the reason, see [`quietly`]): for a source thread whose stop has cut a read short, where the
/// demuxer's complaints about the half-read packet ("Invalid NAL unit size") are no fault of
/// the input and would only alarm whoever reads the log of a stop.
pub fn quiet_from_now() {
    QUIET.with(|quiet| quiet.set(true));
}

/// Sends FFmpeg's errors to `tracing` from now on (warnings too when `verbose`).
pub fn install() {
    // SAFETY: the callback is a plain function that FFmpeg may call from any thread; it
    // only formats the line and touches thread-local state and `tracing`.
    unsafe { ffmpeg::ffi::av_log_set_callback(Some(log_line)) };
}

/// Forgets this thread's FFmpeg errors, before a call whose failure is to be explained.
pub fn clear_last_error() {
    LAST_ERRORS.with(|last| last.borrow_mut().clear());
}

/// The errors FFmpeg logged on this thread since [`clear_last_error`] (the last few, oldest
/// first, joined by "; "), if any; they are forgotten.
pub fn take_last_error() -> Option<String> {
    LAST_ERRORS.with(|last| {
        let lines: Vec<String> = last.borrow_mut().drain(..).collect();
        (!lines.is_empty()).then(|| lines.join("; "))
    })
}

/// `reason`, followed by what FFmpeg logged about it on this thread, if anything.
pub fn with_ffmpeg_reason(reason: String) -> String {
    match take_last_error() {
        Some(lines) => format!("{reason} (FFmpeg: {lines})"),
        None => reason,
    }
}

/// What FFmpeg logged about a failure on this thread, followed by `code` (the error code's
/// text), or `code` alone. For failures whose code says little or misleads (a y4m header
/// with an impossible size fails with EBUSY's "Device or resource busy"), FFmpeg's own line
/// names the cause, so it comes first.
pub fn ffmpeg_reason_first(code: String) -> String {
    match take_last_error() {
        Some(lines) => format!("{lines} (error code: {code})"),
        None => code,
    }
}

/// `text`, with control characters escaped and cut to [`MAX_LINE`] characters.
fn clean(text: &str) -> String {
    let mut cleaned: String = text.trim().chars().flat_map(char::escape_default).collect();
    if cleaned.chars().count() > MAX_LINE {
        cleaned = cleaned.chars().take(MAX_LINE).collect::<String>() + "...";
    }
    // escape_default also escapes quotes and backslashes, which read badly in a reason.
    cleaned.replace("\\'", "'").replace("\\\"", "\"")
}

unsafe extern "C" fn log_line(
    object: *mut c_void,
    level: c_int,
    format: *const c_char,
    arguments: *mut ffmpeg::ffi::__va_list_tag,
) {
    if level > AV_LOG_WARNING as c_int || format.is_null() {
        return;
    }
    let mut buffer = [0 as c_char; 512];
    let mut print_prefix: c_int = 0;
    // SAFETY: FFmpeg passes a valid format and argument list for this call; the buffer's
    // size is given, and the function always NUL-terminates what it writes.
    let line = unsafe {
        ffmpeg::ffi::av_log_format_line2(
            object,
            level,
            format,
            arguments,
            buffer.as_mut_ptr(),
            buffer.len() as c_int,
            &mut print_prefix,
        );
        CStr::from_ptr(buffer.as_ptr()).to_string_lossy().into_owned()
    };
    let line = clean(&line);
    if line.is_empty() {
        return;
    }
    // SAFETY: an object FFmpeg logs with starts with a pointer to its AVClass (or is null).
    let component = unsafe { component_name(object) };
    if level <= AV_LOG_ERROR as c_int {
        COLLECTED.with(|collected| {
            if let Some(lines) = collected
                .borrow_mut()
                .as_mut()
                .filter(|lines| lines.len() < KEPT_ERRORS)
            {
                lines.push(line.clone());
            }
        });
        LAST_ERRORS.with(|last| {
            let mut last = last.borrow_mut();
            if last.len() == KEPT_ERRORS {
                last.pop_front();
            }
            last.push_back(line.clone());
        });
        if QUIET.with(Cell::get) {
            tracing::debug!("FFmpeg ({component}), asked quietly: {line}");
        } else {
            tracing::warn!("FFmpeg ({component}): {line}");
        }
    } else {
        tracing::debug!("FFmpeg ({component}): {line}");
    }
}

/// The name FFmpeg gives the logging object (`h264`, `mpegts`, `h264_cuvid`, ...).
///
/// # Safety
/// `object` is null or points to a struct whose first field is a `*const AVClass`.
unsafe fn component_name(object: *mut c_void) -> String {
    if object.is_null() {
        return "ffmpeg".into();
    }
    // SAFETY: per the function's contract.
    unsafe {
        let class = *(object as *const *const AVClass);
        if class.is_null() {
            return "ffmpeg".into();
        }
        let name = match (*class).item_name {
            Some(item_name) => item_name(object),
            None => (*class).class_name,
        };
        if name.is_null() {
            "ffmpeg".into()
        } else {
            clean(&CStr::from_ptr(name).to_string_lossy())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cleaned_and_cut() {
        assert_eq!(
            clean("  Picture size 0x240 is invalid\n"),
            "Picture size 0x240 is invalid"
        );
        assert_eq!(clean("a\u{1b}[31mred\rfake"), "a\\u{1b}[31mred\\rfake");
        let long = clean(&"x".repeat(1000));
        assert_eq!(long.len(), MAX_LINE + 3);
    }
}

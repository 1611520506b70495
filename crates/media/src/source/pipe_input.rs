//! Inputs read through our own AVIO context instead of FFmpeg's protocols.
//!
//! Named pipes, and stdin when it is a pipe: FFmpeg's own file and pipe protocols block in
//! `open()` until a FIFO has a writer and in `read()` while the writer is silent, where no
//! interrupt callback reaches them. Here the FIFO is opened without blocking and read through
//! our own AVIO context, whose reads wait in `poll()` and give up as soon as the source's
//! [`Watchdog`] says stop: SIGTERM, `DELETE` and reloads end such a source at once, writer or
//! not.
//!
//! A regular file a service pipeline reads ([`PipeInput::over_file`]): opened here, checked by
//! its descriptor against the files no pipeline may read (the service's config file), and
//! handed to FFmpeg as that descriptor, so no rename or link swap between the check and the
//! open can change what is read.

use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use super::watchdog::Watchdog;

/// The AVIO buffer: FFmpeg's own default size.
const IO_BUFFER: usize = 32 * 1024;
/// How long one wait for data lasts before the stop is looked at again.
const POLL_MS: c_int = 100;

/// What our read callback reads from.
struct PipeReader {
    file: File,
    watchdog: Arc<Watchdog>,
}

/// An AVIOContext over a pipe, for a format context opened with `AVFMT_FLAG_CUSTOM_IO`.
/// It must outlive that format context (the source keeps it after the input).
pub(super) struct PipeInput {
    pub(super) context: *mut ffmpeg::ffi::AVIOContext,
    reader: *mut PipeReader,
}

// SAFETY: the context and its reader are used by one thread at a time (the source's).
unsafe impl Send for PipeInput {}

/// The local path a source URL names, if it names one (`file:` or no protocol).
fn local_path(url: &str) -> &std::path::Path {
    std::path::Path::new(url.strip_prefix("file:").unwrap_or(url))
}

impl PipeInput {
    /// Our reader for `url` when it is a local FIFO, or `-` while stdin is a pipe; `None`
    /// for anything else (FFmpeg opens it as usual).
    pub(super) fn open_for(url: &str, watchdog: &Arc<Watchdog>) -> std::io::Result<Option<PipeInput>> {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let file = if url == "-" {
            use std::os::fd::AsFd;
            // A duplicate, so stdin itself stays open; reads wait in poll() first, so its
            // blocking mode (shared with the shell) is left as it is.
            let file = File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
            if !file.metadata()?.file_type().is_fifo() {
                return Ok(None);
            }
            file
        } else {
            match std::fs::metadata(local_path(url)) {
                Ok(meta) if meta.file_type().is_fifo() => {}
                _ => return Ok(None),
            }
            // Non-blocking: the open returns at once, writer or not.
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(local_path(url))?
        };
        PipeInput::with_reader(file, watchdog, false).map(Some)
    }

    /// Our reader over a FIFO already opened (without blocking) and checked.
    pub(super) fn over_fifo(file: File, watchdog: &Arc<Watchdog>) -> std::io::Result<PipeInput> {
        PipeInput::with_reader(file, watchdog, false)
    }

    /// Our reader (seekable) over a regular file already opened and checked.
    pub(super) fn over_file(file: File, watchdog: &Arc<Watchdog>) -> std::io::Result<PipeInput> {
        PipeInput::with_reader(file, watchdog, true)
    }

    /// An AVIO context reading `file`, seekable (a regular file) or not (a pipe).
    fn with_reader(file: File, watchdog: &Arc<Watchdog>, seekable: bool) -> std::io::Result<PipeInput> {
        let reader = Box::into_raw(Box::new(PipeReader {
            file,
            watchdog: watchdog.clone(),
        }));
        // SAFETY: a buffer from av_malloc, owned by the context from here on (it may
        // reallocate it; Drop frees whatever it holds then); the reader is ours until Drop.
        unsafe {
            let buffer = ffmpeg::ffi::av_malloc(IO_BUFFER) as *mut u8;
            if buffer.is_null() {
                drop(Box::from_raw(reader));
                return Err(std::io::ErrorKind::OutOfMemory.into());
            }
            let context = ffmpeg::ffi::avio_alloc_context(
                buffer,
                IO_BUFFER as c_int,
                0,
                reader as *mut c_void,
                Some(read_packet),
                None,
                if seekable { Some(seek_file) } else { None },
            );
            if context.is_null() {
                ffmpeg::ffi::av_free(buffer as *mut c_void);
                drop(Box::from_raw(reader));
                return Err(std::io::ErrorKind::OutOfMemory.into());
            }
            Ok(PipeInput { context, reader })
        }
    }
}

impl Drop for PipeInput {
    fn drop(&mut self) {
        // SAFETY: the format context using this AVIOContext was closed first (Source drops
        // its input before this; a failed open freed its context); both pointers are ours
        // and freed once.
        unsafe {
            ffmpeg::ffi::av_freep(&mut (*self.context).buffer as *mut *mut u8 as *mut c_void);
            ffmpeg::ffi::avio_context_free(&mut self.context);
            drop(Box::from_raw(self.reader));
        }
    }
}

/// AVIO seek callback of a regular file: a position (from the start, here, or the end), or
/// the file's size for `AVSEEK_SIZE`; a negative errno when the system refuses.
unsafe extern "C" fn seek_file(opaque: *mut c_void, offset: i64, whence: c_int) -> i64 {
    use std::io::{Seek, SeekFrom};
    // SAFETY: `opaque` is the PipeReader the PipeInput owns, alive as long as the
    // AVIOContext; FFmpeg calls back from the one thread using the context.
    let reader = unsafe { &mut *(opaque as *mut PipeReader) };
    let failed = |e: std::io::Error| -i64::from(e.raw_os_error().unwrap_or(libc::EIO));
    if whence & ffmpeg::ffi::AVSEEK_SIZE as c_int != 0 {
        return reader.file.metadata().map_or_else(failed, |meta| meta.len() as i64);
    }
    let to = match whence & !(ffmpeg::ffi::AVSEEK_FORCE as c_int) {
        libc::SEEK_SET => match u64::try_from(offset) {
            Ok(offset) => SeekFrom::Start(offset),
            Err(_) => return -i64::from(libc::EINVAL),
        },
        libc::SEEK_CUR => SeekFrom::Current(offset),
        libc::SEEK_END => SeekFrom::End(offset),
        _ => return -i64::from(libc::EINVAL),
    };
    reader.file.seek(to).map_or_else(failed, |position| position as i64)
}

/// AVIO read callback: waits for data in poll(), a tenth of a second at a time, until the
/// watchdog says stop (then `AVERROR_EXIT`, as FFmpeg's interrupt callback would).
unsafe extern "C" fn read_packet(opaque: *mut c_void, buf: *mut u8, size: c_int) -> c_int {
    // SAFETY: `opaque` is the PipeReader the PipeInput owns, alive as long as the
    // AVIOContext; FFmpeg calls back from the one thread using the context.
    let reader = unsafe { &mut *(opaque as *mut PipeReader) };
    if size <= 0 {
        return 0;
    }
    // SAFETY: FFmpeg hands over a writable buffer of `size` bytes (positive, checked above)
    // for the duration of the call.
    let data = unsafe { std::slice::from_raw_parts_mut(buf, size as usize) };
    loop {
        if reader.watchdog.interrupted() {
            return ffmpeg::ffi::AVERROR_EXIT;
        }
        let mut poll = libc::pollfd {
            fd: reader.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, POLL_MS) };
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return -error.raw_os_error().unwrap_or(libc::EIO);
        }
        if ready == 0 {
            continue; // no writer yet, or a silent one
        }
        match reader.file.read(data) {
            Ok(0) => return ffmpeg::ffi::AVERROR_EOF,
            Ok(read) => return read as c_int,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return -e.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

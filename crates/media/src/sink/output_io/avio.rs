//! Our own AVIO context: FFmpeg's muxer writes through callbacks into a [`Writer`], so a
//! write blocked on a FIFO or pipe whose reader stopped reading gives up once a stop has
//! waited its grace, and flushing is ours to time.

use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;

use super::error::OutputIoError;
use super::stop_watch::StopWatch;

/// The AVIO buffer: FFmpeg's own default size.
const IO_BUFFER: usize = 32 * 1024;
/// How long one wait for a FIFO or pipe to take data lasts before the stop is looked at.
const POLL_MS: c_int = 100;
/// Atomic pipe write size: a write of at most this much after POLLOUT does not block.
const PIPE_CHUNK: usize = 4096;

/// The file behind our AVIO callbacks.
pub(super) struct Writer {
    pub(super) file: File,
    /// A FIFO, pipe, terminal or socket: no seeking, and writes wait in poll() so that a
    /// stop can end them.
    pub(super) streamed: bool,
    /// The file description is ours alone and non-blocking (a FIFO we opened); stdout is
    /// shared with the shell, so it stays blocking and is written in pipe-atomic chunks.
    pub(super) nonblocking: bool,
    pub(super) stop: StopWatch,
}

impl Writer {
    /// Waits until the file takes data, or the stop's grace is over (an AVERROR then).
    fn wait_writable(&self) -> Result<(), c_int> {
        loop {
            let mut poll = libc::pollfd {
                fd: self.file.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut poll, 1, POLL_MS) };
            if ready > 0 {
                return Ok(()); // writable, or an error the write will report
            }
            if ready < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err(averror(&std::io::Error::last_os_error()));
            }
            if self.stop.expired() {
                return Err(ffmpeg::ffi::AVERROR_EXIT);
            }
        }
    }

    /// How much a blocking write may take now without blocking: a pipe's free space (its
    /// size less what is queued), else one pipe-atomic chunk.
    fn room(&self) -> usize {
        let fd = self.file.as_raw_fd();
        let mut queued: c_int = 0;
        // SAFETY: fcntl and ioctl on a descriptor we own, with an int to write into.
        let (size, queued_ok) = unsafe {
            (
                libc::fcntl(fd, libc::F_GETPIPE_SZ),
                libc::ioctl(fd, libc::FIONREAD, &mut queued) == 0,
            )
        };
        if size > 0 && queued_ok && size > queued {
            (size - queued) as usize
        } else {
            PIPE_CHUNK
        }
    }

    fn write_all(&mut self, mut data: &[u8]) -> Result<(), c_int> {
        while !data.is_empty() {
            if self.stop.expired() && self.streamed {
                return Err(ffmpeg::ffi::AVERROR_EXIT);
            }
            if self.streamed {
                self.wait_writable()?;
            }
            let chunk = if self.streamed && !self.nonblocking {
                &data[..data.len().min(self.room())]
            } else {
                data
            };
            match self.file.write(chunk) {
                Ok(0) => return Err(averror(&std::io::Error::from(std::io::ErrorKind::WriteZero))),
                Ok(written) => data = &data[written..],
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                    ) => {}
                Err(e) => return Err(averror(&e)),
            }
        }
        Ok(())
    }
}

fn averror(error: &std::io::Error) -> c_int {
    -error.raw_os_error().unwrap_or(libc::EIO)
}

/// AVIO write callback. The buffer is `const` from FFmpeg 7 on and mutable before; the
/// pointer is only read, so one function serves both (see [`CustomIo::new`]).
unsafe extern "C" fn write_packet(opaque: *mut c_void, buf: *const u8, size: c_int) -> c_int {
    // SAFETY: `opaque` is the Writer CustomIo owns, alive as long as the AVIOContext; FFmpeg
    // calls back from the one thread using the context. `buf` holds `size` bytes.
    let writer = unsafe { &mut *(opaque as *mut Writer) };
    if size <= 0 {
        return 0;
    }
    // SAFETY: FFmpeg hands over a buffer of `size` bytes (positive, checked above) that
    // stays valid and unchanged for the duration of the call.
    let data = unsafe { std::slice::from_raw_parts(buf, size as usize) };
    match writer.write_all(data) {
        Ok(()) => size,
        Err(code) => code,
    }
}

/// AVIO seek callback (regular files only).
unsafe extern "C" fn seek(opaque: *mut c_void, offset: i64, whence: c_int) -> i64 {
    // SAFETY: as in `write_packet`.
    let writer = unsafe { &mut *(opaque as *mut Writer) };
    if whence & ffmpeg::ffi::AVSEEK_SIZE as c_int != 0 {
        return match writer.file.metadata() {
            Ok(meta) => meta.len() as i64,
            Err(e) => averror(&e) as i64,
        };
    }
    let position = match whence & !(ffmpeg::ffi::AVSEEK_FORCE as c_int) {
        libc::SEEK_SET => SeekFrom::Start(offset.max(0) as u64),
        libc::SEEK_CUR => SeekFrom::Current(offset),
        libc::SEEK_END => SeekFrom::End(offset),
        _ => return -libc::EINVAL as i64,
    };
    match writer.file.seek(position) {
        Ok(at) => at as i64,
        Err(e) => averror(&e) as i64,
    }
}

/// AVIO interrupt callback: FFmpeg's network protocols poll it while they wait.
pub(super) unsafe extern "C" fn interrupted(opaque: *mut c_void) -> c_int {
    // SAFETY: `opaque` is the StopWatch the Muxer holds in a Box for as long as the
    // context lives.
    let stop = unsafe { &*(opaque as *const StopWatch) };
    c_int::from(stop.expired())
}

/// An AVIOContext over our own [`Writer`].
pub(super) struct CustomIo {
    pub(super) context: *mut ffmpeg::ffi::AVIOContext,
    writer: *mut Writer,
}

// SAFETY: the context and its writer are used by one thread at a time (the sink's).
unsafe impl Send for CustomIo {}

impl CustomIo {
    pub(super) fn new(writer: Writer) -> Result<CustomIo, OutputIoError> {
        let seekable = !writer.streamed && writer.file.metadata().is_ok_and(|m| m.is_file());
        let writer = Box::into_raw(Box::new(writer));
        // SAFETY: a buffer from av_malloc, owned by the context from here on (it may
        // reallocate it; Drop frees whatever it holds then). The callbacks' signatures
        // match FFmpeg's but for the constness of the write buffer, which differs between
        // FFmpeg versions and is ABI-identical.
        unsafe {
            let buffer = ffmpeg::ffi::av_malloc(IO_BUFFER) as *mut u8;
            if buffer.is_null() {
                drop(Box::from_raw(writer));
                return Err(OutputIoError::OutOfMemory("buffer"));
            }
            let write: unsafe extern "C" fn(*mut c_void, *const u8, c_int) -> c_int = write_packet;
            let seek_fn: unsafe extern "C" fn(*mut c_void, i64, c_int) -> i64 = seek;
            // The write callback type differs between FFmpeg versions (see above): it is
            // inferred from the binding rather than named.
            #[allow(clippy::missing_transmute_annotations)]
            let context = ffmpeg::ffi::avio_alloc_context(
                buffer,
                IO_BUFFER as c_int,
                1,
                writer as *mut c_void,
                None,
                Some(std::mem::transmute::<*const (), _>(write as *const ())),
                if seekable { Some(seek_fn) } else { None },
            );
            if context.is_null() {
                ffmpeg::ffi::av_free(buffer as *mut c_void);
                drop(Box::from_raw(writer));
                return Err(OutputIoError::OutOfMemory("context"));
            }
            Ok(CustomIo { context, writer })
        }
    }
}

impl CustomIo {
    /// The file written.
    pub(super) fn file(&self) -> &File {
        // SAFETY: the writer is ours and alive until Drop; only read here, on the sink's thread.
        unsafe { &(*self.writer).file }
    }
}

impl Drop for CustomIo {
    fn drop(&mut self) {
        // SAFETY: the context was detached from the format context before this runs
        // (Muxer's Drop, OutputIo::detach); both pointers are ours and freed once.
        unsafe {
            ffmpeg::ffi::av_freep(&mut (*self.context).buffer as *mut *mut u8 as *mut c_void);
            ffmpeg::ffi::avio_context_free(&mut self.context);
            drop(Box::from_raw(self.writer));
        }
    }
}

//! Where a sink's bytes go, and when a file appears. A local file is written under a
//! temporary name beside it and takes its real name only once the encoder, the muxer and
//! the header are ready, so a failed start leaves an existing file byte-identical and no
//! empty file behind; an existing file is then replaced, kept (an error) or kept with the
//! output going to the next free name, as the caller says. Files, FIFOs and stdout are
//! written through our own AVIO callbacks: a write blocked on a reader that stopped
//! reading gives up once a stop has waited its grace, and flushing is ours to time.
//! Network URLs go through FFmpeg's protocols, with an interrupt callback for the same stop.

use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void, CString};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::OutputTarget;

/// What opening does when a regular file is already at the sink's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenExists {
    /// Keep it and fail (`run` without `--overwrite`: checked before anything opens, and
    /// here again, so a file that appeared meanwhile is kept too).
    Refuse,
    /// Replace it, in one step, once the new output has its header.
    Replace,
    /// Keep it and write `NAME.1.EXT`, `NAME.2.EXT`, ...: the first name that is free.
    NextFreeName,
}

/// How a stop reaches blocked output I/O: once `stop` has been set for `grace`, writes
/// that cannot go on fail instead of waiting (the drain before that writes normally).
#[derive(Clone, Debug)]
pub struct StopWatch {
    stop: Arc<AtomicBool>,
    grace: Duration,
    /// Nanoseconds after `epoch` at which the stop was first seen (0: not yet).
    seen_at: Arc<AtomicU64>,
    epoch: Instant,
}

impl StopWatch {
    pub fn new(stop: Arc<AtomicBool>, grace: Duration) -> StopWatch {
        StopWatch {
            stop,
            grace,
            seen_at: Arc::new(AtomicU64::new(0)),
            epoch: Instant::now(),
        }
    }

    /// Whether a stop was asked for.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether the stop has waited its grace: blocked I/O gives up.
    pub fn expired(&self) -> bool {
        if !self.stopping() {
            return false;
        }
        let now = self.epoch.elapsed().as_nanos().max(1) as u64;
        let seen = match self
            .seen_at
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => now,
            Err(earlier) => earlier,
        };
        Duration::from_nanos(now.saturating_sub(seen)) >= self.grace
    }
}

/// The AVIO buffer: FFmpeg's own default size.
const IO_BUFFER: usize = 32 * 1024;
/// How long one wait for a FIFO or pipe to take data lasts before the stop is looked at.
const POLL_MS: c_int = 100;
/// Atomic pipe write size: a write of at most this much after POLLOUT does not block.
const PIPE_CHUNK: usize = 4096;

/// The file behind our AVIO callbacks.
struct Writer {
    file: File,
    /// A FIFO, pipe, terminal or socket: no seeking, and writes wait in poll() so that a
    /// stop can end them.
    streamed: bool,
    /// The file description is ours alone and non-blocking (a FIFO we opened); stdout is
    /// shared with the shell, so it stays blocking and is written in pipe-atomic chunks.
    nonblocking: bool,
    stop: StopWatch,
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
unsafe extern "C" fn interrupted(opaque: *mut c_void) -> c_int {
    // SAFETY: `opaque` is the StopWatch the Muxer holds in a Box for as long as the
    // context lives.
    let stop = unsafe { &*(opaque as *const StopWatch) };
    c_int::from(stop.expired())
}

/// An AVIOContext over our own [`Writer`].
struct CustomIo {
    context: *mut ffmpeg::ffi::AVIOContext,
    writer: *mut Writer,
}

// SAFETY: the context and its writer are used by one thread at a time (the sink's).
unsafe impl Send for CustomIo {}

impl CustomIo {
    fn new(writer: Writer) -> Result<CustomIo, String> {
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
                return Err("out of memory for the output buffer".into());
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
                return Err("out of memory for the output context".into());
            }
            Ok(CustomIo { context, writer })
        }
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

/// A local file being prepared under a temporary name.
struct Staged {
    temporary: PathBuf,
    /// The name asked for (after following a symlink to its file).
    wanted: PathBuf,
    when_exists: WhenExists,
    published: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// The I/O side of an output: attached to a format context before its header is written.
pub struct OutputIo {
    custom: Option<CustomIo>,
    staged: Option<Staged>,
    /// Where the output is, once published (a local file's final name).
    pub path: Option<PathBuf>,
    /// The file kept its name free: the output went to a numbered name beside it.
    pub renamed: bool,
    /// Boxed so the interrupt callback's pointer stays valid.
    stop: Box<StopWatch>,
}

impl OutputIo {
    /// Opens the I/O for `target` and attaches it to `output` (nothing for muxers that
    /// write their own files). A local file is created under a temporary name only.
    pub fn attach(
        output: &mut ffmpeg::format::context::Output,
        url: &str,
        target: &OutputTarget,
        when_exists: WhenExists,
        stop: StopWatch,
    ) -> Result<OutputIo, String> {
        let mut io = OutputIo {
            custom: None,
            staged: None,
            path: None,
            renamed: false,
            stop: Box::new(stop),
        };
        // SAFETY: a valid output context, not yet writing; its interrupt callback points at
        // the boxed StopWatch this OutputIo keeps (the Muxer drops the context first).
        unsafe {
            let context = output.as_mut_ptr();
            (*context).interrupt_callback = ffmpeg::ffi::AVIOInterruptCB {
                callback: Some(interrupted),
                opaque: &*io.stop as *const StopWatch as *mut c_void,
            };
            if (*(*context).oformat).flags & ffmpeg::ffi::AVFMT_NOFILE as c_int != 0 {
                return Ok(io); // the muxer opens its own files (image sequences, segments)
            }
        }
        let writer = match target {
            OutputTarget::Discard => return Ok(io),
            OutputTarget::Url => {
                let name = CString::new(url).map_err(|_| "the URL holds a NUL byte".to_string())?;
                // SAFETY: valid context and strings; FFmpeg owns the opened AVIOContext and
                // closes it with the format context.
                let opened = unsafe {
                    let context = output.as_mut_ptr();
                    ffmpeg::ffi::avio_open2(
                        &mut (*context).pb,
                        name.as_ptr(),
                        ffmpeg::ffi::AVIO_FLAG_WRITE as c_int,
                        &(*context).interrupt_callback,
                        std::ptr::null_mut(),
                    )
                };
                if opened < 0 {
                    return Err(ffmpeg::Error::from(opened).to_string());
                }
                return Ok(io);
            }
            OutputTarget::Stdout => {
                let file = std::io::stdout()
                    .lock()
                    .as_fd_clone()
                    .map_err(|e| format!("cannot use stdout: {e}"))?;
                let regular = file.metadata().is_ok_and(|m| m.is_file());
                Writer {
                    file,
                    streamed: !regular,
                    nonblocking: false,
                    stop: (*io.stop).clone(),
                }
            }
            OutputTarget::File(path) => {
                // Only a FIFO is streamed here: opened by us, non-blocking.
                let (file, streamed, staged) = open_local(path, when_exists, &io.stop)?;
                if staged.is_none() {
                    io.path = Some(path.clone());
                }
                io.staged = staged;
                Writer {
                    file,
                    streamed,
                    nonblocking: streamed,
                    stop: (*io.stop).clone(),
                }
            }
        };
        let custom = CustomIo::new(writer)?;
        // SAFETY: the context takes our AVIOContext; CUSTOM_IO tells FFmpeg it is not its own.
        unsafe {
            let context = output.as_mut_ptr();
            (*context).pb = custom.context;
            (*context).flags |= ffmpeg::ffi::AVFMT_FLAG_CUSTOM_IO as c_int;
        }
        io.custom = Some(custom);
        Ok(io)
    }

    /// Gives a staged file its real name (after the header is written). Returns the path.
    pub fn publish(&mut self, output: &mut ffmpeg::format::context::Output) -> Result<Option<PathBuf>, String> {
        let Some(staged) = self.staged.as_mut() else {
            return Ok(self.path.clone());
        };
        let path = publish(staged)?;
        staged.published = true;
        self.renamed = path != staged.wanted;
        // The muxer reopens its URL at the end for some layouts (MP4 faststart): point it
        // at the name the file has now.
        if let Ok(name) = CString::new(path.as_os_str().as_encoded_bytes()) {
            // SAFETY: the context's url is av_malloc'ed by FFmpeg; replaced by another.
            unsafe {
                let context = output.as_mut_ptr();
                let copy = ffmpeg::ffi::av_strdup(name.as_ptr());
                if !copy.is_null() {
                    ffmpeg::ffi::av_free((*context).url as *mut c_void);
                    (*context).url = copy;
                }
            }
        }
        self.path = Some(path.clone());
        Ok(Some(path))
    }

    /// Whether our own I/O writes this output (so `flush` reaches the file).
    pub fn is_file_like(&self) -> bool {
        self.custom.is_some()
    }

    /// Takes our AVIOContext back from the format context, before either is freed.
    pub fn detach(&mut self, output: &mut ffmpeg::format::context::Output) {
        if let Some(custom) = self.custom.take() {
            // SAFETY: the context's pb is ours (set in `attach`); FFmpeg must not close it.
            unsafe {
                let context = output.as_mut_ptr();
                if (*context).pb == custom.context {
                    ffmpeg::ffi::avio_flush((*context).pb);
                    (*context).pb = std::ptr::null_mut();
                }
            }
            drop(custom);
        }
    }
}

/// stdout as a File of its own (a duplicated descriptor, so closing it leaves stdout open).
trait FdClone {
    fn as_fd_clone(&self) -> std::io::Result<File>;
}

impl FdClone for std::io::StdoutLock<'_> {
    fn as_fd_clone(&self) -> std::io::Result<File> {
        use std::os::fd::AsFd;
        Ok(File::from(self.as_fd().try_clone_to_owned()?))
    }
}

/// Opens a local output path: a FIFO or device as it is (waiting, stoppably, for a FIFO's
/// reader), anything else staged under a temporary name in the same folder.
fn open_local(path: &Path, when_exists: WhenExists, stop: &StopWatch) -> Result<(File, bool, Option<Staged>), String> {
    // Writing through a symlink writes its file, as FFmpeg does: follow it to the name to publish.
    let wanted = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    };
    match std::fs::metadata(&wanted) {
        Ok(meta) if meta.is_dir() => return Err(format!("{} is a folder; give a file name", path.display())),
        Ok(meta) if meta.file_type().is_fifo() => return open_fifo(&wanted, stop).map(|f| (f, true, None)),
        Ok(meta) if !meta.is_file() => {
            // A device (/dev/null, a terminal): written as it is, blocking, without seeking;
            // nothing there to keep.
            let file = OpenOptions::new()
                .write(true)
                .open(&wanted)
                .map_err(|e| format!("cannot open {}: {e}", wanted.display()))?;
            return Ok((file, false, None));
        }
        Ok(_) if when_exists == WhenExists::Refuse => {
            return Err(format!(
                "{} exists; it is kept: pass -y / --overwrite (or set sink.overwrite = true) to replace it",
                path.display()
            ))
        }
        _ => {}
    }
    let folder = match wanted.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = wanted
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| format!("{} has no file name", path.display()))?;
    let temporary = folder.join(format!(".{name}.{}.partial", std::process::id()));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(&temporary)
        .map_err(|e| format!("cannot create a file in {}: {e}", folder.display()))?;
    Ok((
        file,
        false,
        Some(Staged {
            temporary,
            wanted,
            when_exists,
            published: false,
        }),
    ))
}

/// Opens a FIFO for writing without blocking on a missing reader: waits for one, stoppably.
fn open_fifo(path: &Path, stop: &StopWatch) -> Result<File, String> {
    loop {
        match OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(path) {
            Ok(file) => return Ok(file),
            // ENXIO: no reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if stop.stopping() {
                    return Err(format!(
                        "stopped while waiting for a reader of the FIFO {}",
                        path.display()
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
        }
    }
}

/// `cam1.mkv` -> `cam1.N.mkv` (`cam1` -> `cam1.N`).
pub fn numbered(path: &Path, n: u32) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n}"),
    };
    path.with_file_name(name)
}

/// Gives the staged file its name; never replaces a file unless told to.
fn publish(staged: &Staged) -> Result<PathBuf, String> {
    let from = &staged.temporary;
    let to = &staged.wanted;
    match staged.when_exists {
        WhenExists::Replace => {
            std::fs::rename(from, to).map_err(|e| format!("cannot name the output {}: {e}", to.display()))?;
            Ok(to.clone())
        }
        WhenExists::Refuse => {
            link_new(from, to).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => format!(
                    "{} appeared while the output was opening; it is kept: pass -y / --overwrite to replace it",
                    to.display()
                ),
                _ => format!("cannot name the output {}: {e}", to.display()),
            })?;
            Ok(to.clone())
        }
        WhenExists::NextFreeName => {
            for n in 0..10_000 {
                let candidate = if n == 0 { to.clone() } else { numbered(to, n) };
                match link_new(from, &candidate) {
                    Ok(()) => return Ok(candidate),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(format!("cannot name the output {}: {e}", candidate.display())),
                }
            }
            Err(format!("no free name beside {} (tried .1 to .9999)", to.display()))
        }
    }
}

/// Gives `from` the name `to` unless `to` exists (atomically where the file system has hard
/// links), and drops the name `from`.
fn link_new(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            let _ = std::fs::remove_file(from);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => {
            // No hard links here (some network and FUSE file systems): check, then rename.
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(std::io::ErrorKind::AlreadyExists.into());
            }
            std::fs::rename(from, to)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names_go_beside_the_file() {
        assert_eq!(numbered(Path::new("out/cam1.mkv"), 1), PathBuf::from("out/cam1.1.mkv"));
        assert_eq!(numbered(Path::new("cam1.mkv"), 12), PathBuf::from("cam1.12.mkv"));
        assert_eq!(numbered(Path::new("cam1"), 2), PathBuf::from("cam1.2"));
    }
}

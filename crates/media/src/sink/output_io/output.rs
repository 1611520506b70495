//! [`OutputIo`]: the I/O side of an output, attached to its format context (a URL through
//! FFmpeg's protocols, stdout, a FIFO or a staged local file through our own AVIO), then
//! published, completed and detached; and whether stdout was closed at start.

use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void, CString};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use super::avio::{interrupted, CustomIo, Writer};
use super::error::OutputIoError;
use super::guard::OutputGuard;
use super::staged::{open_local, publish, Staged, WhenExists};
use super::stop_watch::StopWatch;
use convstream_config::OutputTarget;

/// Set when the process started with stdout closed (`>&-`): `-o -` then has nowhere to go.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Records that stdout was closed when the process started (see `STDOUT_CLOSED`).
pub fn mark_stdout_closed() {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
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
        guard: &OutputGuard,
        stop: StopWatch,
    ) -> Result<OutputIo, OutputIoError> {
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
                let name = CString::new(url).map_err(|_| OutputIoError::NulInUrl)?;
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
                    return Err(OutputIoError::Protocol(ffmpeg::Error::from(opened)));
                }
                return Ok(io);
            }
            OutputTarget::Stdout => {
                if STDOUT_CLOSED.load(Ordering::Relaxed) {
                    return Err(OutputIoError::Stdout(std::io::Error::other(
                        "stdout is closed (`>&-`); redirect it to a file or a pipe, or give the output a file name",
                    )));
                }
                let file = std::io::stdout().lock().as_fd_clone().map_err(OutputIoError::Stdout)?;
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
                let (file, streamed, staged) = open_local(path, when_exists, guard, &io.stop)?;
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
    /// A file that replaces an existing one keeps its temporary name until
    /// [`OutputIo::complete`]: until then the old file is whole.
    pub fn publish(&mut self, output: &mut ffmpeg::format::context::Output) -> Result<Option<PathBuf>, OutputIoError> {
        let Some(staged) = self.staged.as_mut() else {
            return Ok(self.path.clone());
        };
        let path = if staged.replaces_existing() {
            staged.at_end = true;
            staged.temporary().to_path_buf()
        } else {
            let path = publish(staged)?;
            staged.published = true;
            self.renamed = path != staged.wanted;
            path
        };
        // The muxer reopens its URL at the end for some layouts (MP4 faststart): point it
        // at the name the file has now.
        set_url(output, &path);
        if staged.at_end {
            self.path = Some(staged.wanted.clone());
            return Ok(self.path.clone());
        }
        self.path = Some(path.clone());
        Ok(Some(path))
    }

    /// After the trailer: a file that replaces another takes its name now, complete; a file
    /// named at the start must still be there under that name. Anything else is an error,
    /// so a run never reports success for output nobody can read.
    pub fn complete(&mut self, output: &mut ffmpeg::format::context::Output) -> Result<(), OutputIoError> {
        let Some(custom) = self.custom.as_ref() else {
            return Ok(());
        };
        let Some(staged) = self.staged.as_mut() else {
            // stdout redirected to a file (`> folder/out.mkv`): that file must still have a
            // name, or what was written is lost (its folder deleted while the run wrote).
            return match custom.file().metadata() {
                Ok(meta) if meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) == 0 => {
                    Err(OutputIoError::LostStdout)
                }
                _ => Ok(()),
            };
        };
        // SAFETY: the context's pb is ours (set in `attach`) while `custom` is attached.
        unsafe {
            let context = output.as_mut_ptr();
            if (*context).pb == custom.context {
                ffmpeg::ffi::avio_flush((*context).pb);
            }
        }
        let written = custom.file().try_clone().map_err(|error| OutputIoError::Sync {
            path: staged.wanted.clone(),
            error,
        })?;
        let named = self.path.clone().unwrap_or_else(|| staged.wanted.clone());
        let path = staged.complete(&written, &named)?;
        set_url(output, &path);
        self.path = Some(path);
        Ok(())
    }

    /// Instead of [`OutputIo::complete`], for an output nothing was written to: a file kept
    /// under its temporary name (it would have replaced one) is removed with it, and a file
    /// named at the start is removed if that name is still this file. The old file, if any,
    /// stays as it was.
    pub fn discard(&mut self, output: &mut ffmpeg::format::context::Output) {
        let (Some(staged), Some(custom)) = (self.staged.as_mut(), self.custom.as_ref()) else {
            return;
        };
        if let Some(named) = self.path.take().filter(|_| staged.published) {
            staged.remove_published(custom.file(), &named);
        }
        // The muxer must not reopen a name that is gone (MP4 faststart at its end).
        set_url(output, staged.temporary());
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

/// Points the format context's URL at `path` (the muxer may reopen it at the end).
fn set_url(output: &mut ffmpeg::format::context::Output, path: &std::path::Path) {
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

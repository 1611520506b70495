//! Local output files: a FIFO or device written as it is, anything else created under a
//! temporary name beside the wanted one and given that name (replacing, refusing or
//! numbering past an existing file) only once the output's header is written.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::OutputIoError;
use super::guard::{FileId, OutputGuard};
use super::stop_watch::StopWatch;

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

/// A local file being prepared under a temporary name.
pub(super) struct Staged {
    temporary: PathBuf,
    /// The name asked for (after following a symlink to its file).
    pub(super) wanted: PathBuf,
    when_exists: WhenExists,
    pub(super) published: bool,
    /// Files this name may never be taken from (the service's config file).
    protected: Vec<FileId>,
    /// The staged file replaces an existing one: it takes the name only once complete (see
    /// [`Staged::complete`]), so a crash, a kill or a full disk leaves the old file whole.
    pub(super) at_end: bool,
}

impl Staged {
    /// Whether the output must wait for its end to take its name: it replaces a file.
    pub(super) fn replaces_existing(&self) -> bool {
        self.when_exists == WhenExists::Replace && std::fs::symlink_metadata(&self.wanted).is_ok()
    }

    /// The temporary name it is written under until then.
    pub(super) fn temporary(&self) -> &Path {
        &self.temporary
    }

    /// At the end of a complete output: gives a file kept under its temporary name its real
    /// one (replacing the old file in one step), or checks that the name given at the start
    /// still is this file (not removed with its folder, nor replaced meanwhile).
    pub(super) fn complete(&mut self, written: &File, named: &Path) -> Result<PathBuf, OutputIoError> {
        let ours = written.metadata().map(|meta| FileId::of(&meta)).ok();
        if self.at_end {
            // On disk before it takes the name: a power cut cannot leave an empty file there.
            let _ = written.sync_all();
            let path = publish(self)?;
            self.published = true;
            self.at_end = false;
            return Ok(path);
        }
        let now = std::fs::metadata(named).ok().map(|meta| FileId::of(&meta));
        // No name left at all (its folder removed, even if one of that name came back).
        let unlinked = written.metadata().is_ok_and(|meta| {
            use std::os::unix::fs::MetadataExt;
            meta.nlink() == 0
        });
        if ours.is_some() && (now != ours || unlinked) {
            return Err(OutputIoError::Lost(named.to_path_buf()));
        }
        Ok(named.to_path_buf())
    }
}

impl Staged {
    /// Removes the file this output gave the name `named` at its start, if that name is
    /// still this file (`written`): never a file that took the name meanwhile.
    pub(super) fn remove_published(&mut self, written: &File, named: &Path) {
        let ours = written.metadata().map(|meta| FileId::of(&meta)).ok();
        let now = std::fs::symlink_metadata(named).ok().map(|meta| FileId::of(&meta));
        if ours.is_some() && now == ours {
            let _ = std::fs::remove_file(named);
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Opens a local output path: a FIFO or device as it is (waiting, stoppably, for a FIFO's
/// reader), anything else staged under a temporary name in the same folder.
pub(super) fn open_local(
    path: &Path,
    when_exists: WhenExists,
    guard: &OutputGuard,
    stop: &StopWatch,
) -> Result<(File, bool, Option<Staged>), OutputIoError> {
    // `run` writes through a symlink to its file, as FFmpeg does: follow it to the name to
    // publish. `serve` never does: a link at the name is a name like any other (kept, or
    // replaced by the new file itself), so no link can lead a pipeline's output to a file
    // outside the folders it may write, or onto the service's own config file.
    let link = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    let wanted = if link && guard.follow_final_link {
        path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
    } else {
        path.to_path_buf()
    };
    let existing = if guard.follow_final_link {
        std::fs::metadata(&wanted)
    } else {
        std::fs::symlink_metadata(&wanted)
    };
    // Opened as they are: O_NOFOLLOW keeps a link swapped in since the check from being followed.
    let no_follow = if guard.follow_final_link { 0 } else { libc::O_NOFOLLOW };
    match existing {
        Ok(meta) if meta.is_dir() => return Err(OutputIoError::Folder(path.to_path_buf())),
        Ok(meta) if meta.file_type().is_fifo() => {
            let file = open_fifo(&wanted, no_follow, stop)?;
            guard.check_opened(&file, &wanted)?;
            return Ok((file, true, None));
        }
        Ok(meta) if !meta.is_file() && !meta.file_type().is_symlink() => {
            // A device (/dev/null, a terminal): written as it is, blocking, without seeking;
            // nothing there to keep.
            let file = OpenOptions::new()
                .write(true)
                .custom_flags(no_follow)
                .open(&wanted)
                .map_err(|error| OutputIoError::Open {
                    path: wanted.clone(),
                    error,
                })?;
            guard.check_opened(&file, &wanted)?;
            return Ok((file, false, None));
        }
        Ok(_) if when_exists == WhenExists::Refuse => return Err(OutputIoError::Exists(path.to_path_buf())),
        _ => {}
    }
    let folder = match wanted.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = wanted
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| OutputIoError::NoFileName(path.to_path_buf()))?;
    // A name of its own: the PID and a number, the next one free. A file left by an earlier
    // process with this PID (PID 1 in every container) is skipped over, not an error.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let (temporary, file) = loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temporary = folder.join(format!(".{name}.{}.{n}.partial", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&temporary)
        {
            Ok(file) => break (temporary, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => continue,
            Err(error) => {
                return Err(OutputIoError::CreateTemporary {
                    folder: folder.clone(),
                    error,
                })
            }
        }
    };
    Ok((
        file,
        false,
        Some(Staged {
            temporary,
            wanted,
            when_exists,
            published: false,
            protected: guard.protected.clone(),
            at_end: false,
        }),
    ))
}

/// Opens a FIFO for writing without blocking on a missing reader: waits for one, stoppably.
fn open_fifo(path: &Path, extra_flags: i32, stop: &StopWatch) -> Result<File, OutputIoError> {
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | extra_flags)
            .open(path)
        {
            Ok(file) => return Ok(file),
            // ENXIO: no reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if stop.stopping() {
                    return Err(OutputIoError::StoppedWaitingForReader(path.to_path_buf()));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(error) => {
                return Err(OutputIoError::Open {
                    path: path.to_path_buf(),
                    error,
                })
            }
        }
    }
}

/// `cam1.mkv` -> `cam1.N.mkv` (`cam1` -> `cam1.N`).
pub(crate) fn numbered(path: &Path, n: u32) -> PathBuf {
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
pub(super) fn publish(staged: &Staged) -> Result<PathBuf, OutputIoError> {
    let from = &staged.temporary;
    let to = &staged.wanted;
    match staged.when_exists {
        WhenExists::Replace => {
            // A rename replaces the name, never the file behind it; but the name itself may be
            // the one a protected file (the config file) goes by.
            if let Ok(existing) = std::fs::symlink_metadata(to) {
                if staged.protected.contains(&FileId::of(&existing)) {
                    return Err(OutputIoError::Protected(to.clone()));
                }
            }
            std::fs::rename(from, to).map_err(|error| OutputIoError::Name {
                path: to.clone(),
                error,
            })?;
            Ok(to.clone())
        }
        WhenExists::Refuse => {
            link_new(from, to).map_err(|error| match error.kind() {
                std::io::ErrorKind::AlreadyExists => OutputIoError::AppearedMeanwhile(to.clone()),
                _ => OutputIoError::Name {
                    path: to.clone(),
                    error,
                },
            })?;
            Ok(to.clone())
        }
        WhenExists::NextFreeName => {
            for n in 0..10_000 {
                let candidate = if n == 0 { to.clone() } else { numbered(to, n) };
                match link_new(from, &candidate) {
                    Ok(()) => return Ok(candidate),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(error) => return Err(OutputIoError::Name { path: candidate, error }),
                }
            }
            Err(OutputIoError::NoFreeName(to.clone()))
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

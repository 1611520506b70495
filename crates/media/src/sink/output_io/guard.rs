//! What an output may open: files known by device and inode ([`FileId`]), and whether a
//! link at the output's name is followed and which files are never written ([`OutputGuard`]).

use std::fs::File;

use super::error::OutputIoError;

/// A file by its device and inode: the same file under any name or link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    /// The file system's device number.
    pub device: u64,
    /// The file's inode number on that device.
    pub inode: u64,
}

impl FileId {
    /// The file `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            device: meta.dev(),
            inode: meta.ino(),
        }
    }

    /// The file at `path`, links followed; `None` if there is none.
    pub fn at(path: &std::path::Path) -> Option<FileId> {
        std::fs::metadata(path).ok().map(|meta| FileId::of(&meta))
    }
}

/// What an output may open. `run` follows a symlink at the output's name to its file;
/// `serve` follows none (the link is replaced or kept, its target never written) and never
/// writes its protected files, whatever name or link leads to them.
#[derive(Debug, Clone)]
pub struct OutputGuard {
    /// Whether a symlink at the output's name leads to the file written.
    pub follow_final_link: bool,
    /// Files never written, under any name.
    pub protected: Vec<FileId>,
}

impl OutputGuard {
    /// `run`: links followed, nothing protected (its own checks refuse outputs that are inputs).
    pub fn command() -> OutputGuard {
        OutputGuard {
            follow_final_link: true,
            protected: Vec::new(),
        }
    }

    /// `serve`: no link followed at the output's name, and `protected` never written.
    pub fn service(protected: Vec<FileId>) -> OutputGuard {
        OutputGuard {
            follow_final_link: false,
            protected,
        }
    }

    /// Refuses a FIFO or device that turns out, once opened, to be a protected file.
    pub(super) fn check_opened(&self, file: &File, path: &std::path::Path) -> Result<(), OutputIoError> {
        let meta = file.metadata().map_err(|error| OutputIoError::Open {
            path: path.to_path_buf(),
            error,
        })?;
        if self.protected.contains(&FileId::of(&meta)) {
            return Err(OutputIoError::Protected(path.to_path_buf()));
        }
        Ok(())
    }
}

//! Files written whole or not at all (`--stats-json`, `--trace`): the bytes go to a
//! temporary file beside the target, are synced, and only then take its name, so a full
//! disk, a write past `ulimit -f` or a kill leaves the old file as it was.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` whole: replaces the file there in one step once every byte is on
/// disk, or leaves it untouched and returns the error. A symlink at `path` is followed, as
/// the outputs of `run` follow one, so the file it points to is the one replaced.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = followed(path);
    let folder = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut staged = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .tempfile_in(&folder)?;
    staged.write_all(bytes)?;
    staged.as_file().sync_all()?;
    // The mode `std::fs::write` would give a new file (before the umask), not the 0600 of a
    // temporary one; an existing file keeps its own.
    let mode = std::fs::metadata(&target).map_or(0o644, |meta| meta.permissions().mode() & 0o7777);
    staged
        .as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    staged.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// `path`, or the file its symlink points to.
fn followed(path: &Path) -> PathBuf {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    match is_link {
        true => path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        false => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_a_failed_write_leaves_it_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.json");
        std::fs::write(&path, b"old").unwrap();
        write_whole(&path, b"new contents").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new contents");
        // A folder where the file should go: the write fails, nothing is left behind.
        let folder = dir.path().join("missing").join("stats.json");
        assert!(write_whole(&folder, b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["stats.json"], "no temporary file stays");
    }

    #[test]
    fn a_link_is_followed_to_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_whole(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }
}

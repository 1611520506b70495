//! The kernel pack: CUBINs compiled ahead of time (at build time, by NVRTC, no GPU needed) for
//! the architectures a build targets, in one file shipped beside the binary, in the Python
//! package and in the image. `compile` looks here before the disk cache and NVRTC, so a
//! fresh host runs its first frames without compiling anything.
//!
//! An entry is found by architecture and key; the key hashes the kernel source and the
//! variant's NVRTC options (see `compile::pack_key`), and the pack's header names the hash of
//! the source it was built from: a pack built from other kernel sources is never used, and no
//! entry of it could match anyway.
//!
//! The format, little-endian: the magic `CSKPACK1`, the source hash (u64), the entry count
//! (u32), then per entry its architecture (u8 length, bytes), key (u64), offset from the
//! file's start (u64), stored length (u64) and CUBIN length (u64); then the CUBINs, each
//! deflated (zlib; a quarter of the size). Entries are read and inflated on demand.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The pack's file name, beside the binary or module that looks for it.
pub const FILE_NAME: &str = "convstream-kernels.pack";

const MAGIC: &[u8; 8] = b"CSKPACK1";
/// More entries than any catalogue makes: a count past it is a damaged file, not a pack.
const MAX_ENTRIES: u32 = 1 << 20;

/// Why a pack could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// Reading or writing the file failed.
    #[error("kernel pack {path}: {error}")]
    Io {
        /// The pack.
        path: PathBuf,
        /// The failure.
        error: std::io::Error,
    },
    /// The file is not a pack of this format, or is cut short.
    #[error("kernel pack {path} is not a kernel pack of this version or is damaged: {what}")]
    Damaged {
        /// The pack.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
}

/// One compiled kernel module to put in a pack.
pub struct PackEntry {
    /// The architecture it was compiled for (`sm_90`).
    pub arch: String,
    /// The variant's key (`compile::pack_key`).
    pub key: u64,
    /// The CUBIN.
    pub cubin: Vec<u8>,
}

/// An opened pack: its index in memory, its CUBINs read when asked for.
#[derive(Debug)]
pub struct Pack {
    path: PathBuf,
    file: File,
    source_hash: u64,
    entries: Index,
}

/// Where each entry lies, by architecture and key.
type Index = HashMap<(String, u64), Stored>;

/// Where an entry lies in the file, and its size once inflated.
#[derive(Debug, Clone, Copy)]
struct Stored {
    offset: u64,
    len: u64,
    inflated: u64,
}

/// Reads the index from `reader`, checking every entry lies within `file_len` bytes.
fn read_index(reader: &mut impl Read, file_len: u64) -> Result<(u64, Index), String> {
    let mut magic = [0u8; 8];
    reader
        .read_exact(&mut magic)
        .map_err(|_| "shorter than its header".to_string())?;
    if &magic != MAGIC {
        return Err("no CSKPACK1 header".into());
    }
    let mut word = [0u8; 8];
    let mut half = [0u8; 4];
    let mut u64_of = |reader: &mut dyn Read, what: &str| {
        reader
            .read_exact(&mut word)
            .map(|_| u64::from_le_bytes(word))
            .map_err(|_| format!("cut short in {what}"))
    };
    let source_hash = u64_of(reader, "the header")?;
    reader
        .read_exact(&mut half)
        .map_err(|_| "cut short in the header".to_string())?;
    let count = u32::from_le_bytes(half);
    if count > MAX_ENTRIES {
        return Err(format!("{count} entries, more than {MAX_ENTRIES}"));
    }
    let mut entries = HashMap::with_capacity(count as usize);
    for index in 0..count {
        let mut length = [0u8; 1];
        reader
            .read_exact(&mut length)
            .map_err(|_| format!("cut short in entry {index}"))?;
        let mut arch = vec![0u8; length[0] as usize];
        reader
            .read_exact(&mut arch)
            .map_err(|_| format!("cut short in entry {index}"))?;
        let arch = String::from_utf8(arch).map_err(|_| format!("entry {index}: the architecture is not text"))?;
        let key = u64_of(reader, "an entry")?;
        let offset = u64_of(reader, "an entry")?;
        let len = u64_of(reader, "an entry")?;
        let inflated = u64_of(reader, "an entry")?;
        if offset.checked_add(len).is_none_or(|end| end > file_len) {
            return Err(format!("entry {index} ({arch}) lies past the end of the file"));
        }
        entries.insert((arch, key), Stored { offset, len, inflated });
    }
    Ok((source_hash, entries))
}

impl Pack {
    /// Opens `path` and reads its index.
    pub fn open(path: &Path) -> Result<Pack, PackError> {
        let io = |error| PackError::Io {
            path: path.to_path_buf(),
            error,
        };
        let file = File::open(path).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut reader = std::io::BufReader::new(&file);
        let (source_hash, entries) = read_index(&mut reader, file_len).map_err(|what| PackError::Damaged {
            path: path.to_path_buf(),
            what,
        })?;
        Ok(Pack {
            path: path.to_path_buf(),
            file,
            source_hash,
            entries,
        })
    }

    /// Where the pack was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hash of the kernel source the pack was built from.
    pub fn source_hash(&self) -> u64 {
        self.source_hash
    }

    /// Entries per architecture.
    pub fn architectures(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for (arch, _) in self.entries.keys() {
            *counts.entry(arch.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// Entries in all.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the pack holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the pack holds `key` for `arch`.
    pub fn contains(&self, arch: &str, key: u64) -> bool {
        self.entries.contains_key(&(arch.to_string(), key))
    }

    /// The CUBIN of `key` for `arch`; `None` when the pack has none (or it cannot be read,
    /// which only costs a compile).
    pub fn get(&self, arch: &str, key: u64) -> Option<Vec<u8>> {
        let stored = *self.entries.get(&(arch.to_string(), key))?;
        let mut deflated = vec![0u8; usize::try_from(stored.len).ok()?];
        self.file.read_exact_at(&mut deflated, stored.offset).ok()?;
        // Never more than the index says: a damaged entry cannot make a huge allocation.
        let mut cubin = Vec::with_capacity(usize::try_from(stored.inflated).ok()?);
        flate2::read::ZlibDecoder::new(&deflated[..])
            .take(stored.inflated)
            .read_to_end(&mut cubin)
            .ok()?;
        (cubin.len() as u64 == stored.inflated).then_some(cubin)
    }
}

/// Writes a pack of `entries` built from the source of `source_hash` to `path`, whole or not
/// at all (a temporary file renamed into place).
pub fn write(path: &Path, source_hash: u64, entries: &[PackEntry]) -> Result<(), PackError> {
    let damaged = |what: String| PackError::Damaged {
        path: path.to_path_buf(),
        what,
    };
    if entries.len() > MAX_ENTRIES as usize {
        return Err(damaged(format!("{} entries, more than {MAX_ENTRIES}", entries.len())));
    }
    let deflated: Vec<Vec<u8>> = entries
        .iter()
        .map(|entry| {
            let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            encoder.write_all(&entry.cubin).and_then(|_| encoder.finish())
        })
        .collect::<Result<_, _>>()
        .map_err(|error| PackError::Io {
            path: path.to_path_buf(),
            error,
        })?;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&source_hash.to_le_bytes());
    bytes.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    let index_len: usize = 8 + 8 + 4 + entries.iter().map(|e| 1 + e.arch.len() + 32).sum::<usize>();
    let mut offset = index_len as u64;
    for (entry, stored) in entries.iter().zip(&deflated) {
        let arch_len = u8::try_from(entry.arch.len())
            .map_err(|_| damaged(format!("architecture {:?} is too long", entry.arch)))?;
        bytes.push(arch_len);
        bytes.extend_from_slice(entry.arch.as_bytes());
        bytes.extend_from_slice(&entry.key.to_le_bytes());
        bytes.extend_from_slice(&offset.to_le_bytes());
        bytes.extend_from_slice(&(stored.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&(entry.cubin.len() as u64).to_le_bytes());
        offset += stored.len() as u64;
    }
    for stored in &deflated {
        bytes.extend_from_slice(stored);
    }
    crate::side_file::write_whole(path, &bytes).map_err(|error| PackError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// Where a pack is looked for: `$CONVSTREAM_KERNEL_PACK` (`off` for none), else beside the
/// binary or shared library this code is in (the CLI, the Python module, the GStreamer
/// plug-in) or in `../share/convstream/` from there (an installed tree), else beside the
/// executable.
pub fn candidates() -> Vec<PathBuf> {
    match std::env::var_os("CONVSTREAM_KERNEL_PACK") {
        Some(value) if value == "off" => return Vec::new(),
        Some(value) => return vec![PathBuf::from(value)],
        None => {}
    }
    let dirs = [module_path(), std::env::current_exe().ok()]
        .into_iter()
        .flatten()
        .filter_map(|file| file.parent().map(Path::to_path_buf));
    let mut found: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        for candidate in [dir.join(FILE_NAME), dir.join("../share/convstream").join(FILE_NAME)] {
            if !found.contains(&candidate) {
                found.push(candidate);
            }
        }
    }
    found
}

/// The file (executable or shared library) this function was loaded from.
fn module_path() -> Option<PathBuf> {
    // SAFETY: dladdr reads the loader's tables for an address of this program's own code and
    // fills `info`; its file name is a NUL-terminated string the loader keeps while the
    // module is loaded (it is copied at once).
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let address = module_path as *const () as *const libc::c_void;
        if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_fname).to_str().ok()?;
        if name.is_empty() {
            return None;
        }
        std::fs::canonicalize(name).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(arch: &str, key: u64, cubin: &[u8]) -> PackEntry {
        PackEntry {
            arch: arch.into(),
            key,
            cubin: cubin.to_vec(),
        }
    }

    #[test]
    fn a_written_pack_reads_back_entry_by_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let entries = [
            entry("sm_90", 7, b"\x7fELF ninety"),
            entry("sm_80", 7, b"\x7fELF eighty"),
            entry("sm_90", 9, b""),
        ];
        write(&path, 0xfeed, &entries).unwrap();
        let pack = Pack::open(&path).unwrap();
        assert_eq!(pack.source_hash(), 0xfeed);
        assert_eq!(pack.len(), 3);
        assert_eq!(pack.get("sm_90", 7).unwrap(), b"\x7fELF ninety");
        assert_eq!(pack.get("sm_80", 7).unwrap(), b"\x7fELF eighty");
        assert_eq!(pack.get("sm_90", 9).unwrap(), b"");
        assert!(pack.get("sm_86", 7).is_none());
        assert!(pack.get("sm_90", 8).is_none());
        assert_eq!(
            pack.architectures().into_iter().collect::<Vec<_>>(),
            [("sm_80".into(), 1), ("sm_90".into(), 2)]
        );
    }

    #[test]
    fn damaged_packs_are_refused_not_read_past_their_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        write(&path, 1, &[entry("sm_90", 7, &[1u8; 100])]).unwrap();
        let whole = std::fs::read(&path).unwrap();
        for cut in [0, 5, 12, 21, 30, whole.len() - 1] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let refused = Pack::open(&path)
                .err()
                .unwrap_or_else(|| panic!("cut at {cut} was read"));
            assert!(matches!(refused, PackError::Damaged { .. }), "{refused}");
        }
        // An entry whose bytes were changed is a miss, not a wrong kernel.
        let mut flipped = whole.clone();
        let last = flipped.len() - 1;
        flipped[last - 10] ^= 0x55;
        std::fs::write(&path, &flipped).unwrap();
        assert!(Pack::open(&path).unwrap().get("sm_90", 7).is_none());
        std::fs::write(&path, b"not a pack at all").unwrap();
        assert!(Pack::open(&path).unwrap_err().to_string().contains("not a kernel pack"));
        assert!(matches!(
            Pack::open(&dir.path().join("missing")),
            Err(PackError::Io { .. })
        ));
    }
}

//! How the C allocator treats frame-sized blocks. glibc's malloc serves a large block with
//! its own mapping, given back to the system when freed, until the first such block is
//! freed: it then raises that threshold to the freed block's size (up to 32 MiB), and later
//! frame-sized blocks (a 1080p plane is 0.5-2 MiB, a 2160p one 8 MiB) come from its arenas,
//! which keep what is freed. With one arena per thread and many pipelines of several
//! threads, a host's frames that went through ordinary memory once stay in the process's
//! RSS for good. Fixing the threshold keeps those blocks mapped and given back.

/// Blocks at least this large are mapped on their own and unmapped when freed.
const OWN_MAPPING_FROM: usize = 256 << 10;

/// Sets the allocator's large-block threshold once, before any thread starts (glibc only;
/// other C libraries keep their own behaviour).
pub fn give_large_blocks_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called once, before other threads
    // allocate. A value it refuses leaves the default in place (its result is not an error
    // anyone could act on).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM as libc::c_int);
    }
}

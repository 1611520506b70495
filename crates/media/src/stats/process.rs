//! What this process uses, read from `/proc`: CPU time, memory, threads and open files, for
//! the server's metrics and the scale benchmark's memory per pipeline.

/// What `/proc/self/stat` and `/proc/stat` tell of this process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStat {
    /// User and system CPU time used, in seconds.
    pub cpu_seconds: f64,
    /// Threads of the process.
    pub threads: i64,
    /// When the process started, in seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// Virtual memory, in bytes.
    pub virtual_bytes: i64,
    /// Resident memory, in bytes.
    pub resident_bytes: i64,
}

/// Parses `/proc/self/stat` (`stat`) with the clock tick and page size, and the boot time
/// from `/proc/stat`. None when a field is missing: the metrics are then left out.
fn parse_stat(stat: &str, boot_time_seconds: f64, ticks_per_second: f64, page_bytes: i64) -> Option<ProcessStat> {
    // The command name (field 2) is in parentheses and may hold spaces or parentheses: the
    // fields are counted from after its last ')'. There, index 0 is field 3 (the state).
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| fields.get(number - 3)?.parse::<f64>().ok();
    Some(ProcessStat {
        cpu_seconds: (field(14)? + field(15)?) / ticks_per_second,
        threads: field(20)? as i64,
        start_time_seconds: boot_time_seconds + field(22)? / ticks_per_second,
        virtual_bytes: field(23)? as i64,
        resident_bytes: field(24)? as i64 * page_bytes,
    })
}

fn boot_time_seconds(proc_stat: &str) -> Option<f64> {
    let line = proc_stat.lines().find(|line| line.starts_with("btime "))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The process's CPU time (seconds) and resident memory (bytes), from `/proc`.
pub fn cpu_and_resident() -> Option<(f64, u64)> {
    read_process_stat().map(|stat| (stat.cpu_seconds, stat.resident_bytes.max(0) as u64))
}

/// What `/proc` tells of this process now; None off Linux or when a field is missing.
pub fn read_process_stat() -> Option<ProcessStat> {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if ticks <= 0 || page <= 0 {
        return None;
    }
    let boot = boot_time_seconds(&std::fs::read_to_string("/proc/stat").ok()?)?;
    parse_stat(
        &std::fs::read_to_string("/proc/self/stat").ok()?,
        boot,
        ticks as f64,
        page as i64,
    )
}

/// How many file descriptors the process has open.
pub fn open_fds() -> Option<i64> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count() as i64)
}

#[cfg(test)]
mod tests {
    use super::{boot_time_seconds, parse_stat, read_process_stat, ProcessStat};

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_the_name_parses() {
        // Fields 3.. of a real line; utime 250, stime 150, 7 threads, started at tick 1000,
        // 1 GiB virtual, 2048 resident pages.
        let stat = "4242 (cam (1) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 7 0 1000 1073741824 2048 18446744073709551615";
        let parsed = parse_stat(stat, 1_700_000_000.0, 100.0, 4096).unwrap();
        assert_eq!(
            parsed,
            ProcessStat {
                cpu_seconds: 4.0,
                threads: 7,
                start_time_seconds: 1_700_000_010.0,
                virtual_bytes: 1 << 30,
                resident_bytes: 2048 * 4096,
            }
        );
        assert_eq!(parse_stat("12 (short) S 1 2", 0.0, 100.0, 4096), None, "too few fields");
        assert_eq!(boot_time_seconds("cpu 1 2 3\nbtime 1700000000\n"), Some(1.7e9));
    }

    #[test]
    fn this_process_reads_plausibly() {
        let stat = read_process_stat().expect("/proc/self/stat on Linux");
        assert!(stat.threads >= 1);
        assert!(stat.resident_bytes > 0 && stat.virtual_bytes >= stat.resident_bytes);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(stat.start_time_seconds <= now + 1.0 && stat.start_time_seconds > now - 86_400.0 * 365.0);
    }
}

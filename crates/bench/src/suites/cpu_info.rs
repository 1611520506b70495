//! What the CPU engine runs on, for the kernel suite's header: the model, the threads it
//! uses, the SIMD width of its fused multiply-adds and the FP32 peak they bound
//! (threads x SIMD lanes x 2 FLOP per FMA x clock; CPUs with two FMA units per core reach
//! twice that, and hyper-threads share a core's units, so the fraction printed is of a
//! simple, stated bound).

/// The CPU's description and its FP32 FMA peak in FLOP/s (`None` when the clock is unknown).
pub fn describe() -> (String, Option<f64>) {
    let threads = rayon::current_num_threads();
    let (lanes, isa) = simd_lanes();
    let model = cpuinfo_field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let Some(ghz) = clock_ghz() else {
        return (
            format!("cpu: {model}, {threads} threads, {isa} ({lanes} FP32 lanes)"),
            None,
        );
    };
    let peak = threads as f64 * lanes as f64 * 2.0 * ghz * 1e9;
    (
        format!(
            "cpu: {model}, {threads} threads x {lanes} FP32 lanes ({isa}) x 2 x {ghz:.2} GHz = {:.0} GFLOP/s peak",
            peak / 1e9
        ),
        Some(peak),
    )
}

/// FP32 lanes of the widest FMA the engine's inner loop uses here, and its name.
fn simd_lanes() -> (usize, &'static str) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            return (16, "AVX-512");
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return (8, "AVX2+FMA");
        }
        (1, "scalar")
    }
    #[cfg(target_arch = "aarch64")]
    return (4, "NEON");
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    (1, "scalar")
}

/// The highest clock the kernel reports: cpufreq's maximum, else the MHz /proc/cpuinfo shows.
fn clock_ghz() -> Option<f64> {
    let max_khz = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()
        .and_then(|text| text.trim().parse::<f64>().ok());
    max_khz
        .map(|khz| khz / 1e6)
        .or_else(|| {
            cpuinfo_field("cpu MHz")
                .and_then(|mhz| mhz.parse::<f64>().ok())
                .map(|mhz| mhz / 1e3)
        })
        .filter(|ghz| *ghz > 0.0)
}

/// The first value of `field` in /proc/cpuinfo.
fn cpuinfo_field(field: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| key.trim() == field)
        .map(|(_, value)| value.trim().to_string())
}

//! Which device a run measures (a GPU, or the CPU when none is usable) and the run's
//! description: device, driver, FP32 peak, commit, date, host.

use super::cpu_info;
use crate::error::BenchError;
use crate::options::BenchOptions;
use crate::results::RunInfo;
use convstream_core::DeviceChoice;

/// The GPU the options ask for, `None` for the CPU.
pub fn gpu_ordinal(device: DeviceChoice) -> Result<Option<usize>, BenchError> {
    match device {
        DeviceChoice::Cpu => Ok(None),
        DeviceChoice::Cuda(n) => {
            probe()?;
            Ok(Some(n))
        }
        DeviceChoice::AnyCuda => {
            probe()?;
            Ok(Some(0))
        }
        DeviceChoice::Auto => match probe() {
            Ok(()) => Ok(Some(0)),
            Err(e) => {
                tracing::warn!("no usable GPU ({e}); benchmarking the CPU engine");
                Ok(None)
            }
        },
    }
}

/// Whether a usable GPU is there (never, in a build without CUDA support).
fn probe() -> Result<(), BenchError> {
    #[cfg(feature = "cuda")]
    return super::gpu::probe();
    #[cfg(not(feature = "cuda"))]
    Err(convstream_core::EngineError::NotCompiledWithCuda.into())
}

pub fn run_info(options: &BenchOptions, gpu: Option<usize>) -> Result<RunInfo, BenchError> {
    let (device, driver, peak) = describe_device(gpu)?;
    Ok(RunInfo {
        device,
        driver,
        fp32_peak_tflops: peak.map(|p| p / 1e12),
        commit: options.commit.to_string(),
        date: utc_now(),
        host_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        quick: options.quick,
        suites: format!("{:?}", options.suite).to_lowercase(),
        tuning: options.tuning,
        host_cpu: Some(cpu_info::describe().0),
    })
}

/// The device's name, the driver's version and the FP32 peak in FLOP/s.
fn describe_device(gpu: Option<usize>) -> Result<(String, Option<String>, Option<f64>), BenchError> {
    match gpu {
        #[cfg(feature = "cuda")]
        Some(ordinal) => super::gpu::describe_device(ordinal),
        _ => Ok(("cpu".into(), None, cpu_info::describe().1)),
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

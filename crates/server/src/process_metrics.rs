//! The process's own metrics in Prometheus' standard names (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, ...), read from `/proc/self` at scrape time
//! (`convstream_media::process`), so an operator sees what the pipelines cost the host
//! beside what they do.

use convstream_media::{open_fds, read_process_stat};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// Encodes the process metrics at each scrape.
#[derive(Debug)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stat) = read_process_stat() else { return Ok(()) };
        let mut counter = encoder.encode_descriptor(
            "process_cpu_seconds",
            "User and system CPU time the process has used, in seconds",
            None,
            MetricType::Counter,
        )?;
        counter.encode_counter::<NoLabelSet, _, u64>(&stat.cpu_seconds, None)?;
        let gauges: [(&str, &str, f64); 4] = [
            (
                "process_resident_memory_bytes",
                "Resident memory",
                stat.resident_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory",
                stat.virtual_bytes as f64,
            ),
            ("process_threads", "Threads of the process", stat.threads as f64),
            (
                "process_start_time_seconds",
                "When the process started, in seconds since the Unix epoch",
                stat.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            ConstGauge::new(value).encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
        }
        if let Some(fds) = open_fds() {
            ConstGauge::new(fds).encode(encoder.encode_descriptor(
                "process_open_fds",
                "Open file descriptors",
                None,
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}

//! Per-GPU metrics from NVML at scrape time: how busy each GPU's SMs and NVDEC engines are and
//! how much of its memory is used, labelled by NVML index (`gpu`) and `uuid`. A host without
//! an NVIDIA driver reports none of these families.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use convstream_core::{gpu_usage, GpuUsage};

/// One family: its name, help, and what it reads of a GPU.
type Family = (&'static str, &'static str, fn(&GpuUsage) -> Option<f64>);

const FAMILIES: &[Family] = &[
    (
        "convstream_gpu_utilization_ratio",
        "Share of the last sample period a kernel ran on the GPU (NVML)",
        |gpu| gpu.busy_percent.map(|percent| f64::from(percent) / 100.0),
    ),
    (
        "convstream_nvdec_utilization_ratio",
        "Share of the last sample period the GPU's NVDEC engines were decoding (NVML)",
        |gpu| gpu.decoder_busy_percent.map(|percent| f64::from(percent) / 100.0),
    ),
    (
        "convstream_gpu_memory_used_bytes",
        "GPU memory in use by every process, with what the driver reserves (NVML; nvidia-smi leaves that reservation out)",
        |gpu| gpu.memory_used_bytes.map(|bytes| bytes as f64),
    ),
    ("convstream_gpu_memory_total_bytes", "GPU memory in all (NVML)", |gpu| {
        gpu.memory_total_bytes.map(|bytes| bytes as f64)
    }),
];

/// Encodes the GPU families at each scrape.
#[derive(Debug)]
pub struct GpuCollector;

impl Collector for GpuCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        encode_usage(&gpu_usage(), encoder)
    }
}

fn encode_usage(gpus: &[GpuUsage], mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
    for (name, help, read) in FAMILIES {
        let values: Vec<(Vec<(&str, String)>, f64)> = gpus
            .iter()
            .filter_map(|gpu| {
                let labels = vec![("gpu", gpu.index.to_string()), ("uuid", gpu.uuid.clone())];
                Some((labels, read(gpu)?))
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (labels, value) in values {
            ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{encode_usage, GpuUsage};
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::DescriptorEncoder;
    use prometheus_client::registry::Registry;

    #[derive(Debug)]
    struct Fixed(Vec<GpuUsage>);

    impl Collector for Fixed {
        fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            encode_usage(&self.0, encoder)
        }
    }

    fn scrape(gpus: Vec<GpuUsage>) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Fixed(gpus)));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn each_gpu_is_a_labelled_gauge_and_unknown_values_are_left_out() {
        let text = scrape(vec![
            GpuUsage {
                index: 0,
                uuid: "GPU-a".into(),
                busy_percent: Some(37),
                decoder_busy_percent: Some(5),
                memory_used_bytes: Some(1 << 30),
                memory_total_bytes: Some(80 << 30),
            },
            GpuUsage {
                index: 1,
                uuid: "GPU-b".into(),
                busy_percent: None,
                decoder_busy_percent: None,
                memory_used_bytes: Some(0),
                memory_total_bytes: Some(80 << 30),
            },
        ]);
        assert!(
            text.contains("convstream_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-a\"} 0.37"),
            "{text}"
        );
        assert!(
            text.contains("convstream_nvdec_utilization_ratio{gpu=\"0\",uuid=\"GPU-a\"} 0.05"),
            "{text}"
        );
        assert!(
            !text.contains("utilization_ratio{gpu=\"1\""),
            "GPU 1 did not say: {text}"
        );
        assert!(
            text.contains("convstream_gpu_memory_used_bytes{gpu=\"1\",uuid=\"GPU-b\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("convstream_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-a\"} 85899345920"),
            "{text}"
        );
    }

    #[test]
    fn a_host_without_gpus_reports_no_gpu_family() {
        assert!(!scrape(Vec::new()).contains("convstream_gpu"));
    }
}

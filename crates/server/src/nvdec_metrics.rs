//! NVDEC seat metrics at scrape time: per GPU the seats taken and its capacity
//! (`convstream_nvdec_seats{gpu, state="taken|capacity"}`), and how many pipelines wait for
//! a seat (`convstream_nvdec_waiting_pipelines`), so a host asked for more NVDEC pipelines
//! than its GPUs seat shows it on a dashboard.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use std::sync::Arc;

use convstream_media::SeatBoard;

/// Encodes a seat board's families at each scrape (the process's: `NvdecSeatCollector::global()`).
#[derive(Debug)]
pub struct NvdecSeatCollector(pub Arc<SeatBoard>);

impl NvdecSeatCollector {
    /// Over the seats the process's pipelines take.
    pub fn global() -> NvdecSeatCollector {
        NvdecSeatCollector(SeatBoard::global())
    }
}

impl Collector for NvdecSeatCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let (gpus, waiting) = self.0.snapshot();
        if gpus.is_empty() {
            // No NVDEC pipeline has asked for a seat yet: nothing to say.
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "convstream_nvdec_seats",
            "NVDEC pipeline seats per GPU: taken now, and the GPU's capacity (predicted from its NVDEC engines)",
            None,
            MetricType::Gauge,
        )?;
        for gpu in &gpus {
            let ordinal = gpu.ordinal.to_string();
            let taken = [("gpu", ordinal.clone()), ("state", "taken".to_string())];
            ConstGauge::new(gpu.taken as i64).encode(family.encode_family(&taken)?)?;
            if let Some(capacity) = gpu.capacity {
                let capacity_labels = [("gpu", ordinal), ("state", "capacity".to_string())];
                ConstGauge::new(capacity as i64).encode(family.encode_family(&capacity_labels)?)?;
            }
        }
        let family = encoder.encode_descriptor(
            "convstream_nvdec_waiting_pipelines",
            "Pipelines waiting for an NVDEC seat because every seat they may take is taken",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(waiting as i64).encode(family)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convstream_core::GpuNvdec;
    use convstream_media::SeatWanted;
    use prometheus_client::registry::Registry;
    use std::sync::atomic::AtomicBool;

    fn scrape(board: &Arc<SeatBoard>) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(NvdecSeatCollector(board.clone())));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn each_gpu_reports_its_seats_taken_and_its_capacity() {
        let board = Arc::new(SeatBoard::default());
        let inventory: Vec<GpuNvdec> = (0..2)
            .map(|ordinal| GpuNvdec {
                ordinal,
                model: None,
                nvdec_capacity: Some(56),
            })
            .collect();
        let stop = AtomicBool::new(false);
        let _seats: Vec<_> = (0..3)
            .filter_map(|_| board.admit(&inventory, SeatWanted::AnyGpu, &[], &stop, &mut |_| {}))
            .collect();
        let text = scrape(&board);
        assert!(
            text.contains("convstream_nvdec_seats{gpu=\"0\",state=\"taken\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("convstream_nvdec_seats{gpu=\"1\",state=\"taken\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("convstream_nvdec_seats{gpu=\"1\",state=\"capacity\"} 56"),
            "{text}"
        );
        assert!(text.contains("convstream_nvdec_waiting_pipelines 0"), "{text}");
    }

    #[test]
    fn no_nvdec_pipeline_reports_no_seat_family() {
        assert!(!scrape(&Arc::new(SeatBoard::default())).contains("convstream_nvdec"));
    }
}

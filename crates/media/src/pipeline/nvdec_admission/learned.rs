//! What admission learned when an NVDEC pipeline fell behind: per GPU, the pipelines seated
//! then, the pipelines' worth of frames its NVDEC kept, and the seats it keeps from now on;
//! worded for the log and `/readyz`, and by GPU model for the seats file.

use std::collections::BTreeMap;

/// One GPU's part of what was learned.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuLearned {
    /// The GPU's CUDA ordinal.
    pub ordinal: usize,
    /// Its model as CUDA names it, when known: seats are kept by model.
    pub model: Option<String>,
    /// NVDEC pipelines seated on it when one of the host's fell behind.
    pub seated: usize,
    /// The pipelines' worth of frames they kept (each real-time pipeline at most 1).
    pub kept: f64,
    /// Seats it keeps from now on.
    pub seats: usize,
}

/// What admission learned at one fall behind, every GPU with a pipeline seated.
#[derive(Clone, Debug, PartialEq)]
pub struct Learned {
    /// Per GPU, in ordinal order.
    pub gpus: Vec<GpuLearned>,
}

impl Learned {
    /// Seats per GPU model, as the seats file keeps them: the fewest any GPU of the model
    /// kept. GPUs of no known model are left out.
    pub fn by_model(&self) -> BTreeMap<String, usize> {
        let mut models: BTreeMap<String, usize> = BTreeMap::new();
        for gpu in &self.gpus {
            if let Some(model) = &gpu.model {
                models
                    .entry(model.clone())
                    .and_modify(|seats| *seats = (*seats).min(gpu.seats))
                    .or_insert(gpu.seats);
            }
        }
        models
    }

    /// "NVDEC pipelines fell behind with 20 seated on cuda:0 (12.4 kept pace) and ...; NVDEC
    /// seats learned: cuda:0 12, ...".
    pub fn describe(&self) -> String {
        let mut text = String::from("NVDEC pipelines fell behind with ");
        let seated: Vec<String> = self
            .gpus
            .iter()
            .map(|gpu| {
                format!(
                    "{} seated on cuda:{} ({:.1} kept pace)",
                    gpu.seated, gpu.ordinal, gpu.kept
                )
            })
            .collect();
        text.push_str(&seated.join(" and "));
        text.push_str("; NVDEC seats learned: ");
        let learned: Vec<String> = self
            .gpus
            .iter()
            .map(|gpu| format!("cuda:{} {}", gpu.ordinal, gpu.seats))
            .collect();
        text.push_str(&learned.join(", "));
        text.push_str(" (no NVDEC pipeline is admitted past them; `[server] nvdec_seats_per_gpu` overrides)");
        text
    }
}

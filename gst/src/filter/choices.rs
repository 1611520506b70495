//! The element's choices as GLib enums, so that `gst-inspect-1.0` lists them and a bad value
//! fails when it is set (`gst-launch-1.0` names the property and the value), and the engine's
//! own types they stand for.

use convstream_core::{BorderMode, PlaneSelection};
use gst::glib;

/// How samples outside the picture read, as SciPy's `ndimage` names the modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstConvstreamBorder")]
pub enum Border {
    #[enum_value(name = "Constant: 0 outside (000|abcd|000)", nick = "constant")]
    Constant,
    #[enum_value(name = "Nearest: the edge sample repeated (aaa|abcd|ddd)", nick = "nearest")]
    Nearest,
    #[default]
    #[enum_value(name = "Reflect: mirrored about the edge (cba|abcd|dcb)", nick = "reflect")]
    Reflect,
    #[enum_value(name = "Mirror: mirrored about the edge sample (dcb|abcd|cba)", nick = "mirror")]
    Mirror,
    #[enum_value(name = "Wrap: the picture repeated (bcd|abcd|abc)", nick = "wrap")]
    Wrap,
    #[enum_value(
        name = "FFmpeg: as FFmpeg's convolution filter (cb|abcd|dc at 3x3, else mirror)",
        nick = "ffmpeg"
    )]
    Ffmpeg,
    // Other tools' names for the same modes, as the CLI, configs and Python take them
    // (`BorderMode::aliases`); a value set by one of them reads back as the mode's own name.
    #[enum_value(name = "Alias of constant", nick = "zero")]
    Zero,
    #[enum_value(name = "Alias of constant", nick = "zeros")]
    Zeros,
    #[enum_value(name = "Alias of nearest (OpenCV's BORDER_REPLICATE)", nick = "replicate")]
    Replicate,
    #[enum_value(name = "Alias of nearest (NumPy's edge)", nick = "edge")]
    Edge,
    #[enum_value(name = "Alias of nearest", nick = "clamp")]
    Clamp,
    #[enum_value(name = "Alias of reflect (NumPy's symmetric)", nick = "symmetric")]
    Symmetric,
    #[enum_value(name = "Alias of mirror (OpenCV's BORDER_REFLECT_101)", nick = "reflect_101")]
    Reflect101,
    #[enum_value(name = "Alias of mirror", nick = "reflect101")]
    Reflect101Joined,
    #[enum_value(name = "Alias of mirror", nick = "reflect-101")]
    Reflect101Dashed,
    #[enum_value(name = "Alias of wrap", nick = "periodic")]
    Periodic,
    #[enum_value(name = "Alias of wrap", nick = "circular")]
    Circular,
}

impl Border {
    /// The mode's own value for an alias (`reflect_101` is `mirror`), itself for a mode.
    pub fn canonical(self) -> Border {
        match BorderMode::from(self) {
            BorderMode::Constant => Border::Constant,
            BorderMode::Nearest => Border::Nearest,
            BorderMode::Reflect => Border::Reflect,
            BorderMode::Mirror => Border::Mirror,
            BorderMode::Wrap => Border::Wrap,
            BorderMode::Ffmpeg => Border::Ffmpeg,
        }
    }
}

impl From<Border> for BorderMode {
    fn from(border: Border) -> BorderMode {
        match border {
            Border::Constant | Border::Zero | Border::Zeros => BorderMode::Constant,
            Border::Nearest | Border::Replicate | Border::Edge | Border::Clamp => BorderMode::Nearest,
            Border::Reflect | Border::Symmetric => BorderMode::Reflect,
            Border::Mirror | Border::Reflect101 | Border::Reflect101Joined | Border::Reflect101Dashed => {
                BorderMode::Mirror
            }
            Border::Wrap | Border::Periodic | Border::Circular => BorderMode::Wrap,
            Border::Ffmpeg => BorderMode::Ffmpeg,
        }
    }
}

/// The planes `mask` filters; the others are copied (unless `plane-masks` names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstConvstreamPlanes")]
pub enum Planes {
    #[default]
    #[enum_value(name = "All: every plane", nick = "all")]
    All,
    #[enum_value(name = "Luma: Y only", nick = "luma")]
    Luma,
    #[enum_value(name = "Chroma: U and V only", nick = "chroma")]
    Chroma,
}

impl From<Planes> for PlaneSelection {
    fn from(planes: Planes) -> PlaneSelection {
        match planes {
            Planes::All => PlaneSelection::All,
            Planes::Luma => PlaneSelection::Luma,
            Planes::Chroma => PlaneSelection::Chroma,
        }
    }
}

/// The engine that filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstConvstreamEngine")]
pub enum EngineKind {
    #[default]
    #[enum_value(
        name = "Auto: CUDA when a GPU is usable, else the CPU (with a warning on the bus)",
        nick = "auto"
    )]
    Auto,
    #[enum_value(name = "CPU: the reference engine, every core", nick = "cpu")]
    Cpu,
    #[enum_value(name = "CUDA: fails when no GPU is usable", nick = "cuda")]
    Cuda,
}

/// The device text `convstream run --device` takes for `engine` and `cuda-device-id` (-1: the
/// least loaded GPU). A GPU named by number means CUDA, as an nvcodec element's
/// `cuda-device-id` does.
pub fn device_text(engine: EngineKind, cuda_device_id: i32) -> String {
    match (engine, cuda_device_id) {
        (EngineKind::Cpu, _) => "cpu".to_string(),
        (EngineKind::Auto, id) if id < 0 => "auto".to_string(),
        (_, id) if id < 0 => "cuda".to_string(),
        (_, id) => format!("cuda:{id}"),
    }
}

/// `engine` and `cuda-device-id` from the `device` alias (`auto`, `cpu`, `cuda`, `cuda:N`).
pub fn parse_device(text: &str) -> Option<(EngineKind, i32)> {
    match text {
        "auto" => Some((EngineKind::Auto, -1)),
        "cpu" => Some((EngineKind::Cpu, -1)),
        "cuda" => Some((EngineKind::Cuda, -1)),
        _ => {
            let id: i32 = text.strip_prefix("cuda:")?.parse().ok()?;
            (0..=MAX_CUDA_DEVICE_ID).contains(&id).then_some((EngineKind::Cuda, id))
        }
    }
}

/// The highest `cuda-device-id` taken.
pub const MAX_CUDA_DEVICE_ID: i32 = 63;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_alias_and_engine_with_cuda_device_id_say_the_same() {
        for text in ["auto", "cpu", "cuda", "cuda:0", "cuda:3"] {
            let (engine, id) = parse_device(text).unwrap();
            assert_eq!(device_text(engine, id), text);
        }
        for bad in ["gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:64", "CUDA"] {
            assert_eq!(parse_device(bad), None, "{bad}");
        }
        assert_eq!(device_text(EngineKind::Auto, 2), "cuda:2");
        assert_eq!(device_text(EngineKind::Cpu, 2), "cpu");
    }
}

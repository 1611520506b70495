//! convstream's core: what a frame is (pixel formats, planes, host buffers), what a filter is
//! (masks, borders, planes), and the engines that apply it, the CPU reference and CUDA lanes.
//! Nothing here knows FFmpeg, an async runtime or HTTP: the media crate feeds the engines
//! decoded frames, and the binary, the GStreamer element and Python build on both.
//!
//! An [`Engine`](engine::Engine) takes frames and gives them back filtered, in the order they
//! came; the CPU engine is the reference every GPU result is checked against:
//!
//! ```
//! use convstream_core::engine::{CpuEngine, Engine};
//! use convstream_core::filter::{BorderMode, FilterSpec, PlaneSelection};
//! use convstream_core::format::PixelFormat;
//! use convstream_core::frame::Frame;
//! use convstream_core::mask::Mask;
//!
//! let mask = Mask::from_spec("box:size=3").unwrap();
//! let mut engine = CpuEngine::new(FilterSpec::uniform(mask, BorderMode::Reflect, PlaneSelection::All));
//! let mut frame = Frame::new(PixelFormat::GRAY8, 8, 4);
//! frame.planes[0].row_mut(1)[3] = 90; // one bright pixel
//! engine.submit(frame).unwrap();
//! let filtered = engine.receive().unwrap().expect("the frame comes back");
//! // A 3x3 box spreads it over its neighbours: a ninth each.
//! assert_eq!(filtered.planes[0].row(0)[2..5], [10, 10, 10]);
//! assert_eq!(filtered.planes[0].row(1)[3], 10);
//! ```

#![deny(missing_docs)]

pub mod engine;
pub mod filter;
pub mod format;
pub mod frame;
pub mod host_buffers;
pub mod mask;
pub mod nvdec;
pub mod side_file;
pub mod text;

//! [`Source`]: an opened input with its video decoder, what it tells of the input, and the
//! builders applied before it runs (delivered format, frame pool, pictures left on the GPU).

use ffmpeg_next as ffmpeg;
use std::sync::Arc;

use super::decoder::VideoDecoder;
use super::device_pictures::{host_filters_format, CudaDecoding};
use super::nvdec::NvdecProbe;
use super::pipe_input;
use super::watchdog::Watchdog;
use crate::ffmpeg::{engine_format, nearest_engine_format, SourceInfo};
use crate::graph::host::{HostGraph, Pictures};
use convstream_config::SourceConfig;
use convstream_core::BufferPool;

/// An opened input with its video decoder.
pub struct Source {
    pub(super) decoder: VideoDecoder,
    pub(super) input: ffmpeg::format::context::Input,
    /// Our reader of a FIFO input, or of a file checked by its descriptor: declared after
    /// `input`, so dropped after it.
    #[allow(dead_code)] // held, never read: FFmpeg reads through it
    pub(super) pipe: Option<pipe_input::PipeInput>,
    /// What the interrupt callback reads; kept alive as long as `input`.
    pub(super) watchdog: Arc<Watchdog>,
    pub(super) video_index: usize,
    pub(super) info: SourceInfo,
    pub(super) config: SourceConfig,
    /// Where decoded frames are made (the engine's pinned buffers), if anywhere special.
    pub(super) frame_pool: Option<Arc<BufferPool>>,
    /// Asked before NVDEC is chosen; kept for reconnections.
    pub(super) nvdec_probe: Arc<dyn NvdecProbe>,
    /// The GPU an NVDEC decoder leaves its pictures on (see [`Source::with_device_pictures`]).
    pub(super) device: Option<Arc<CudaDecoding>>,
    /// How a looped file starts its next pass (see `looping.rs`).
    pub(super) looping: super::looping::LoopState,
    /// Files this input may never be (the service's config file), checked again at each
    /// reconnection.
    pub(super) protected: Vec<crate::sink::FileId>,
    /// FFmpeg's filters run on each decoded picture before it becomes a frame (see
    /// [`Source::with_filters_before`]).
    pub(super) before: Option<HostGraph>,
}

impl Source {
    /// What the input is: its video's size, format, timing and colour, its copied streams.
    pub fn info(&self) -> &SourceInfo {
        &self.info
    }

    /// Delivers frames in `format` instead of the layout the decoder gives (see
    /// [`convstream_core::FilterSpec::planar_format_for`]); each picture is converted, as a
    /// size change is, and NVDEC pictures come through host memory.
    pub fn with_format(mut self, format: convstream_core::PixelFormat, why: &str) -> Source {
        if format != self.info.format {
            tracing::info!(input = %self.config.url, "{} pictures are converted to {format}: {why}", self.info.format);
            if format.bits() != self.info.format.bits() {
                self.info.stream_bits = format.bits();
            }
            self.info.format = format;
        }
        self
    }

    /// Runs FFmpeg's `before` chain (a libavfilter chain) on each decoded picture: frames
    /// are what it gives (size, format, aspect), and what the rest of the pipeline is set up
    /// for. The chain must give one picture for each (FFmpeg's filters that add, drop or
    /// retime frames, such as `fps`, go after the convolution). With `after` (the chain after
    /// the engine), the frames come in the pixel format FFmpeg would run the convolution in
    /// with both around it as one graph (see `HostGraph::engine_format`), converted by
    /// `before` as FFmpeg converts. NVDEC's pictures that meet a `before` chain are copied to
    /// host memory once, in their surface format, and filtered there.
    pub fn with_ffmpeg_filters(self, before: Option<&str>, after: Option<&str>) -> Result<Source, String> {
        if before.is_none() && (after.is_none() || self.decoder.is_hardware()) {
            return Ok(self);
        }
        let input = self.filters_input();
        let negotiated = HostGraph::engine_format(before, after, &input)?;
        let format_name = negotiated.descriptor().map(|d| d.name()).unwrap_or("none");
        let chain = match before {
            Some(chain) => format!("{chain},format=pix_fmts={format_name}"),
            None if negotiated != input.format => format!("format=pix_fmts={format_name}"),
            None => return Ok(self),
        };
        self.with_filters_before(&chain)
    }

    /// The pictures FFmpeg's filters before the engine take: the decoder's, NVDEC's as they
    /// come to host memory (see `host_filters_format`).
    fn filters_input(&self) -> Pictures {
        let video = self.decoder.video();
        let hardware = self.decoder.is_hardware();
        let (width, height) = match hardware {
            // NVDEC's pictures are cropped to the display size the source reports.
            true => (self.info.width as u32, self.info.height as u32),
            false => (video.width(), video.height()),
        };
        Pictures {
            width,
            height,
            format: host_filters_format(hardware, video.format(), self.info.format),
            time_base: self.info.time_base,
            frame_rate: self.info.frame_rate,
            aspect_ratio: self.info.aspect_ratio,
        }
    }

    /// Runs FFmpeg's `chain` on each decoded picture (see [`Source::with_ffmpeg_filters`]).
    fn with_filters_before(mut self, chain: &str) -> Result<Source, String> {
        let input = self.filters_input();
        let graph = HostGraph::new(chain, &input)?;
        let out = *graph.output();
        if out.time_base != input.time_base || out.frame_rate != input.frame_rate {
            return Err(format!(
                "FFmpeg's `{}` changes the frames' timing before the convolution; put `fps`, `setpts` and the like after the convolution filters (they give the same result there)",
                convstream_core::quoted(chain)
            ));
        }
        let format = engine_format(out.format).unwrap_or_else(|| nearest_engine_format(out.format));
        tracing::info!(
            input = %self.config.url,
            "FFmpeg's `{chain}` gives {}x{} {:?}, filtered as {format}",
            out.width,
            out.height,
            out.format
        );
        self.info.width = out.width as usize;
        self.info.height = out.height as usize;
        self.info.format = format;
        self.info.stream_bits = self.info.stream_bits.min(format.bits());
        self.info.aspect_ratio = out.aspect_ratio;
        self.before = Some(graph);
        Ok(self)
    }

    /// Makes decoded frames in `pool`'s buffers (the engine's page-locked memory, so the
    /// engine copies nothing on the way to the GPU).
    pub fn with_frame_pool(mut self, pool: Option<Arc<BufferPool>>) -> Source {
        self.frame_pool = pool;
        self
    }

    /// With NVDEC, leaves decoded pictures on the GPU, in `context` (the CUDA engine's),
    /// so that a frame crosses PCIe once, filtered; `None`, or a software decoder, changes
    /// nothing. When the GPU cannot be opened for NVDEC, pictures come to host memory as
    /// before, with a warning.
    pub fn with_device_pictures(mut self, context: Option<convstream_core::GpuContext>) -> Source {
        let Some(context) = context.filter(|_| self.decoder.is_hardware()) else {
            return self;
        };
        if self
            .device
            .as_ref()
            .is_some_and(|device| device.ordinal() == context.ordinal)
        {
            return self; // the decoder was opened there
        }
        match CudaDecoding::new(context) {
            Ok(device) => self.device = Some(device),
            Err(reason) => {
                tracing::warn!(input = %self.config.url, "{reason}; decoded pictures go through host memory")
            }
        }
        self
    }
}

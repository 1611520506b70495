//! The element's implementation: its GObject, Element and BaseTransform methods (properties,
//! caps, allocation, buffers in and out, events). One job at some length (about 520 lines),
//! the element's behaviour; the property declarations are a third of it. What the methods
//! work on lives beside it: the negotiated stream in `stream.rs`, buffer and frame
//! conversions in `frames.rs`, the pool proposed upstream in `pool.rs`, the properties'
//! meaning in `settings.rs` and `choices.rs`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::base_transform::GenerateOutputSuccess;
use gst_base::subclass::prelude::*;

use convstream_core::{build_engine, DeviceChoice, EngineOptions, FrameShape};
use convstream_core::{BufferPool, HeapMemory};

use super::choices::{parse_device, Border, MAX_CUDA_DEVICE_ID};
use super::frames::BufferTiming;
use super::settings::{Settings, DEFAULT_MASK};
use super::stream::{Counters, OutputTarget, State};
use super::CAT;
use crate::formats;

/// Filtered frames downstream may hold in the engine's pinned pool before new frames fall
/// back to ordinary memory (which the CUDA engine stages through its own buffers).
const DOWNSTREAM_POOLED_FRAMES: usize = 8;

/// Buffers of the pool proposed upstream beyond those the lanes hold: being filled, and in
/// queues between upstream and this element.
const UPSTREAM_POOLED_FRAMES: usize = 4;

#[derive(Default)]
pub struct ConvstreamFilter {
    settings: Mutex<Settings>,
    /// A filter property changed since the engine took the filter.
    filter_changed: AtomicBool,
    /// Downstream takes buffers described by a VideoMeta (any strides and plane offsets).
    downstream_video_meta: AtomicBool,
    counters: Counters,
    state: Mutex<Option<State>>,
}

impl ConvstreamFilter {
    fn state(&self) -> MutexGuard<'_, Option<State>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where filtered frames go: their own planes when downstream reads VideoMeta, else a copy.
    fn output_target(&self) -> OutputTarget {
        if self.downstream_video_meta.load(Ordering::Acquire) {
            OutputTarget::Planes
        } else {
            OutputTarget::Copy(self.obj().buffer_pool())
        }
    }

    fn settings(&self) -> Settings {
        self.settings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Compiles the kernels of the filter the properties now say on the caller's thread (the
    /// application's, setting a property), so that the switch on the streaming thread is quick.
    /// A filter that does not resolve is left for the switch to report.
    fn prepare_filter(&self) {
        let Some(preparer) = self.state().as_ref().map(|state| state.engine.preparer()) else {
            return;
        };
        if let Ok(pipeline) = self.settings().resolve() {
            if let Err(e) = preparer(&pipeline.filter) {
                gst::debug!(CAT, imp = self, "the new filter could not be prepared: {e}");
            }
        }
    }

    /// Gives the engine the filter the properties now say, from the next buffer on; a
    /// filter that does not resolve is reported and the current one kept.
    fn apply_filter_changes(&self, state: &mut State) -> Result<(), gst::FlowError> {
        if !self.filter_changed.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let pipeline = match self.settings().resolve() {
            Ok(pipeline) => pipeline,
            Err(problem) => {
                gst::element_imp_warning!(
                    self,
                    gst::LibraryError::Settings,
                    ("the filter is unchanged: {problem}")
                );
                return Ok(());
            }
        };
        let problems = pipeline.filter.problems_with(state.format);
        if !problems.is_empty() {
            gst::element_imp_warning!(
                self,
                gst::LibraryError::Settings,
                ("the filter is unchanged: {}", problems.join("; "))
            );
            return Ok(());
        }
        gst::info!(
            CAT,
            imp = self,
            "filter: {} from frame {}",
            pipeline.filter.description(),
            state.next_index
        );
        state.engine.set_filter(pipeline.filter).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Failed, ("cannot change the filter: {e}"));
            gst::FlowError::Error
        })
    }

    /// Pushes the frames still in the engine downstream (before EOS, new caps or a gap).
    fn drain_downstream(&self) -> Result<(), gst::FlowError> {
        let target = self.output_target();
        let buffers = match self.state().as_mut().map(|state| state.drain(&target, &self.counters)) {
            Some(Ok(buffers)) => buffers,
            Some(Err(e)) => {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("{e}"));
                return Err(gst::FlowError::Error);
            }
            None => return Ok(()),
        };
        // Pushed without the state lock: downstream may query this element.
        let src = self.obj().src_pad().clone();
        for buffer in buffers {
            src.push(buffer)?;
        }
        Ok(())
    }
}

#[glib::object_subclass]
impl ObjectSubclass for ConvstreamFilter {
    const NAME: &'static str = "GstConvstreamFilter";
    type Type = super::ConvstreamFilter;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for ConvstreamFilter {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let defaults = Settings::default();
            vec![
                glib::ParamSpecString::builder("mask")
                    .nick("Mask")
                    .blurb("The mask: a preset with keys (gaussian:size=9, sharpen, edge, sobel, emboss, box:size=5, neutral...), custom:matrix=[[...]], or a mask named in `config`. Changes apply from the next buffer, while playing")
                    .default_value(Some(DEFAULT_MASK))
                    .mutable_playing()
                    .build(),
                glib::ParamSpecString::builder("plane-masks")
                    .nick("Plane masks")
                    .blurb("A mask per plane over `mask`: PLANE=SPEC separated by `;` (or `,`), PLANE one of y, u, v, uv, r, g, b, e.g. \"y=edge;uv=neutral\". Changes apply from the next buffer")
                    .default_value(Some(""))
                    .mutable_playing()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("planes", defaults.planes)
                    .nick("Planes")
                    .blurb("The planes `mask` filters (the others are copied, unless plane-masks names them)")
                    .mutable_playing()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("border", defaults.border)
                    .nick("Border")
                    .blurb("How samples outside the picture read, as SciPy's ndimage names the modes")
                    .mutable_playing()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("engine", defaults.engine)
                    .nick("Engine")
                    .blurb("Where to filter")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("cuda-device-id")
                    .nick("CUDA device id")
                    .blurb("The GPU to filter on, numbered as nvcodec elements number them; -1: the least loaded usable GPU. A GPU named here means CUDA, even with engine=auto")
                    .minimum(-1)
                    .maximum(MAX_CUDA_DEVICE_ID)
                    .default_value(defaults.cuda_device_id)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("device")
                    .nick("Device")
                    .blurb("engine and cuda-device-id in one, as `convstream run --device` takes them: auto, cpu, cuda or cuda:N")
                    .default_value(Some(defaults.device().as_str()))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("streams")
                    .nick("CUDA streams")
                    .blurb("CUDA streams whose copies and kernels overlap (1-16)")
                    .minimum(1)
                    .maximum(convstream_core::MAX_STREAMS as u32)
                    .default_value(defaults.streams)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("frames-per-stream")
                    .nick("Frames per stream")
                    .blurb("Buffers queued on each CUDA stream (1-4); streams x frames-per-stream buffers are in flight, the latency the element reports")
                    .minimum(1)
                    .maximum(convstream_core::MAX_FRAMES_PER_STREAM as u32)
                    .default_value(defaults.frames_per_stream)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoxed::builder::<gst::Structure>("stats")
                    .nick("Statistics")
                    .blurb("Buffers so far: buffers-lent-in (from the pool this element proposed, filtered where upstream wrote them), buffers-copied-in, buffers-planes-out (the filtered planes themselves, to a downstream that reads VideoMeta), buffers-copied-out")
                    .read_only()
                    .build(),
                glib::ParamSpecString::builder("config")
                    .nick("Config file")
                    .blurb("A convstream TOML file whose [masks.NAME] tables `mask` and `plane-masks` may name")
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPERTIES.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut settings = self.settings.lock().unwrap_or_else(|e| e.into_inner());
        let text = || value.get::<Option<String>>().ok().flatten().unwrap_or_default();
        match pspec.name() {
            "mask" => settings.mask = text(),
            "plane-masks" => settings.plane_masks = text(),
            "planes" => settings.planes = value.get().unwrap_or(settings.planes),
            // An alias (`reflect_101`) is kept as its mode, which reads back by its own name.
            "border" => settings.border = value.get::<Border>().map_or(settings.border, Border::canonical),
            "engine" => {
                settings.engine = value.get().unwrap_or(settings.engine);
                settings.bad_device = None;
            }
            "cuda-device-id" => {
                settings.cuda_device_id = value.get().unwrap_or(settings.cuda_device_id);
                settings.bad_device = None;
            }
            "device" => match parse_device(&text()) {
                Some((engine, id)) => {
                    (settings.engine, settings.cuda_device_id) = (engine, id);
                    settings.bad_device = None;
                }
                None => {
                    // A property setter cannot fail: GLib's own warning, as for an enum
                    // value out of range, and negotiation then fails naming it.
                    glib::g_warning!(
                        "convstreamfilter",
                        "device: `{}` is not a device; use auto, cpu, cuda or cuda:N",
                        text().escape_debug()
                    );
                    settings.bad_device = Some(text());
                }
            },
            "streams" => settings.streams = value.get().unwrap_or(settings.streams),
            "frames-per-stream" => settings.frames_per_stream = value.get().unwrap_or(settings.frames_per_stream),
            "config" => settings.config = value.get::<Option<String>>().ok().flatten().filter(|p| !p.is_empty()),
            _ => return,
        }
        drop(settings);
        gst::debug!(CAT, imp = self, "{} set", pspec.name());
        if matches!(pspec.name(), "mask" | "plane-masks" | "planes" | "border") {
            self.prepare_filter();
        }
        self.filter_changed.store(true, Ordering::Release);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let settings = self.settings();
        match pspec.name() {
            "mask" => settings.mask.to_value(),
            "plane-masks" => settings.plane_masks.to_value(),
            "planes" => settings.planes.to_value(),
            "border" => settings.border.to_value(),
            "engine" => settings.engine.to_value(),
            "cuda-device-id" => settings.cuda_device_id.to_value(),
            "device" => settings.device().to_value(),
            "streams" => settings.streams.to_value(),
            "frames-per-stream" => settings.frames_per_stream.to_value(),
            "config" => settings.config.to_value(),
            "stats" => self.counters.structure().to_value(),
            _ => None::<String>.to_value(),
        }
    }
}

impl GstObjectImpl for ConvstreamFilter {}

impl ElementImpl for ConvstreamFilter {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "convstream filter",
                "Filter/Effect/Video",
                "2D convolution with a mask chosen by name (presets, custom matrices, a config's masks), per plane, on the CPU or CUDA, identical to convstream run",
                "convstream",
            )
        });
        Some(&*METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let caps = gst_video::VideoCapsBuilder::new()
                .format_list(formats::formats())
                .build();
            [gst::PadDirection::Src, gst::PadDirection::Sink]
                .into_iter()
                .map(|direction| {
                    let name = if direction == gst::PadDirection::Src {
                        "src"
                    } else {
                        "sink"
                    };
                    gst::PadTemplate::new(name, direction, gst::PadPresence::Always, &caps)
                        .expect("a valid pad template")
                })
                .collect()
        });
        TEMPLATES.as_ref()
    }
}

impl BaseTransformImpl for ConvstreamFilter {
    const MODE: gst_base::subclass::BaseTransformMode = gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    /// Upstream may give buffers with any strides: VideoMeta is read on the way in.
    fn propose_allocation(
        &self,
        decide_query: Option<&gst::query::Allocation>,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        self.parent_propose_allocation(decide_query, query)?;
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
        // A pool of the engine's memory, so upstream writes where the engine reads.
        if let Some(state) = self.state().as_mut() {
            match state.propose_pool() {
                Ok((pool, size, min_buffers)) => query.add_allocation_pool(Some(&pool), size, min_buffers, 0),
                Err(e) => gst::warning!(CAT, imp = self, "no pool proposed upstream: {e}"),
            }
        }
        Ok(())
    }

    fn decide_allocation(&self, query: &mut gst::query::Allocation) -> Result<(), gst::LoggableError> {
        let video_meta = query.find_allocation_meta::<gst_video::VideoMeta>().is_some();
        gst::debug!(
            CAT,
            imp = self,
            "filtered frames leave {}",
            if video_meta { "in their own planes" } else { "copied" }
        );
        self.downstream_video_meta.store(video_meta, Ordering::Release);
        self.parent_decide_allocation(query)
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        if incaps != outcaps {
            return Err(gst::loggable_error!(CAT, "input and output caps must be the same"));
        }
        let info = gst_video::VideoInfo::from_caps(incaps)
            .map_err(|_| gst::loggable_error!(CAT, "cannot read the video caps {incaps}"))?;
        let format = formats::engine_format(info.format())
            .ok_or_else(|| gst::loggable_error!(CAT, "{} is not a format convstream filters", info.format()))?;
        let fail = |message: String| {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{message}"));
            gst::loggable_error!(CAT, "{message}")
        };
        let pipeline = self.settings().resolve().map_err(fail)?;
        let mut problems = pipeline.filter.problems_with(format);
        if pipeline.filter.planar_format_for(format).is_some() {
            problems.push(format!(
                "{format} holds the planes the masks name interleaved; put videoconvert before this element and ask for a planar format (I420, GBR...)"
            ));
        }
        if !problems.is_empty() {
            return Err(fail(problems.join("; ")));
        }
        let capacity = pipeline.streams * pipeline.frames_per_stream;
        let options = EngineOptions {
            shape: Some(FrameShape {
                format,
                width: info.width() as usize,
                height: info.height() as usize,
            }),
            frames_per_stream: pipeline.frames_per_stream,
            // The lanes' frames, the one being made, and frames downstream still holds in
            // their own planes (a queue, an encoder's look-ahead); then the pool proposed
            // upstream: the lanes' inputs and the buffers being filled. Past that, ordinary
            // memory.
            pooled_frames: capacity + 2 + DOWNSTREAM_POOLED_FRAMES + capacity + UPSTREAM_POOLED_FRAMES,
            tuning: pipeline.gpu,
            ..EngineOptions::new(pipeline.device, pipeline.streams, "convstreamfilter")
        };
        let engine = build_engine(pipeline.filter.clone(), &options).map_err(|e| fail(e.to_string()))?;
        gst::info!(
            CAT,
            imp = self,
            "{}x{} {format} on {}: {}",
            info.width(),
            info.height(),
            engine.name(),
            pipeline.filter.description()
        );
        // `auto` without a usable GPU runs on the CPU: said on the bus, where a pipeline's
        // owner looks, not only in the debug log.
        if pipeline.device == DeviceChoice::Auto && engine.device() == "cpu" {
            gst::element_imp_warning!(
                self,
                gst::ResourceError::NotFound,
                ("no usable GPU: filtering on the CPU (device=auto); set device=cuda to fail instead")
            );
        }
        self.filter_changed.store(false, Ordering::Release);
        let upstream_memory = engine.frame_pool().unwrap_or_else(|| {
            let frame_bytes = format
                .plane_shapes(info.width() as usize, info.height() as usize)
                .iter()
                .map(|shape| shape.pooled_bytes())
                .sum::<usize>();
            BufferPool::new(Box::new(HeapMemory), frame_bytes * (capacity + UPSTREAM_POOLED_FRAMES))
        });
        *self.state() = Some(State {
            info,
            format,
            engine,
            upstream_memory,
            upstream_pool: None,
            pending: VecDeque::new(),
            next_index: 0,
        });
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        *self.state() = None;
        Ok(())
    }

    fn sink_event(&self, event: gst::Event) -> bool {
        match event.view() {
            // Every buffer in flight leaves before the stream ends or changes.
            gst::EventView::Eos(_) | gst::EventView::Caps(_) | gst::EventView::Gap(_)
                if self.drain_downstream().is_err() =>
            {
                gst::warning!(
                    CAT,
                    imp = self,
                    "could not push every buffer in flight before {:?}",
                    event.type_()
                );
            }
            // A flush throws the buffers in flight away.
            gst::EventView::FlushStop(_) => {
                let target = self.output_target();
                if let Some(state) = self.state().as_mut() {
                    let dropped = state.drain(&target, &self.counters).map(|b| b.len()).unwrap_or(0);
                    gst::debug!(CAT, imp = self, "flush: {dropped} buffers in flight dropped");
                    state.pending.clear();
                }
            }
            _ => {}
        }
        self.parent_sink_event(event)
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        let answered = BaseTransformImplExt::parent_query(self, direction, query);
        if let (true, gst::PadDirection::Src, gst::QueryViewMut::Latency(latency)) =
            (answered, direction, query.view_mut())
        {
            let added = self.state().as_ref().map_or(gst::ClockTime::ZERO, State::latency);
            let (live, min, max) = latency.result();
            latency.set(live, min + added, max.map(|max| max + added));
        }
        answered
    }

    fn submit_input_buffer(&self, _is_discont: bool, inbuf: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut guard = self.state();
        let Some(state) = guard.as_mut() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ("a buffer came before the caps"));
            return Err(gst::FlowError::NotNegotiated);
        };
        self.apply_filter_changes(state)?;
        let frame = state.frame_of(&inbuf, &self.counters).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Format, ("{e}"));
            gst::FlowError::Error
        })?;
        state.pending.push_back(BufferTiming::of(&inbuf));
        state.engine.submit(frame).map_err(|e| {
            gst::element_imp_error!(self, gst::StreamError::Failed, ("{e}"));
            gst::FlowError::Error
        })?;
        Ok(gst::FlowSuccess::Ok)
    }

    fn generate_output(&self) -> Result<GenerateOutputSuccess, gst::FlowError> {
        let target = self.output_target();
        let mut guard = self.state();
        let Some(state) = guard.as_mut() else {
            return Ok(GenerateOutputSuccess::NoOutput);
        };
        // The lanes stay full: a buffer leaves when the engine holds as many as it can.
        if state.engine.in_flight() < state.engine.capacity() {
            return Ok(GenerateOutputSuccess::NoOutput);
        }
        match state.next_output(&target, &self.counters) {
            Ok(Some(buffer)) => Ok(GenerateOutputSuccess::Buffer(buffer)),
            Ok(None) => Ok(GenerateOutputSuccess::NoOutput),
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("{e}"));
                Err(gst::FlowError::Error)
            }
        }
    }
}

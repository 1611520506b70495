//! FFmpeg's own filters after the engine (`filter.ffmpeg_after`, the end of a `-vf` chain
//! past its convolution filters): [`AfterFilters`] made for the engine's frames, and the
//! thread stage that runs every filtered frame through them on its way to the sink. Such
//! filters may add, drop or retime frames (`fps`), so the stage owns its own numbering.

use crossbeam_channel::{Receiver, Sender};
use ffmpeg_next as ffmpeg;

use crate::ffmpeg::{engine_format, ffmpeg_format, frame_from_ffmpeg, lend_to_ffmpeg, SourceInfo};
use crate::graph::host::{HostGraph, Pictures};
use convstream_core::{Frame, PixelFormat};

/// The graph, and the frames it gives as the engines' formats name them. A pipeline runs it
/// as a stage of its own (its `run`); Python's reader frame by frame
/// ([`AfterFilters::push`], [`AfterFilters::finish`]).
pub struct AfterFilters {
    graph: HostGraph,
    format: PixelFormat,
    /// The time base the sink counts in (the input's): the graph's timestamps are taken to it.
    time_base: ffmpeg::Rational,
    /// How long a frame lasts, in that time base: the input ends one frame after the last.
    frame_duration: i64,
    /// The index the next frame out gets.
    next_index: u64,
    /// When the input ends: one frame after the last frame in.
    end: Option<i64>,
}

impl AfterFilters {
    /// Sets up `chain` for the engine's frames (`engine`: what the source gives, which the
    /// engine keeps) and says what the sink then gets: the same input, in the graph's size,
    /// format, aspect and frame rate.
    pub fn new(chain: &str, engine: &SourceInfo) -> Result<(AfterFilters, SourceInfo), String> {
        let input = Pictures {
            width: engine.width as u32,
            height: engine.height as u32,
            format: ffmpeg_format(engine.format),
            time_base: engine.time_base,
            frame_rate: engine.frame_rate,
            aspect_ratio: engine.aspect_ratio,
        };
        let graph = HostGraph::new(chain, &input)?;
        let out = *graph.output();
        let Some(format) = engine_format(out.format) else {
            return Err(format!(
                "FFmpeg's `{}` gives {:?} pictures, a format convstream does not write; end the chain with `format=` one of yuv420p, yuv422p, yuv444p, gray, nv12, rgb24, gbrp or their deeper kinds",
                convstream_core::quoted(chain),
                out.format
            ));
        };
        let mut sink = engine.clone();
        sink.width = out.width as usize;
        sink.height = out.height as usize;
        sink.format = format;
        sink.stream_bits = sink.stream_bits.min(format.bits());
        sink.aspect_ratio = out.aspect_ratio;
        if out.frame_rate.numerator() > 0 && out.frame_rate != engine.frame_rate {
            sink.frame_rate = out.frame_rate;
            sink.expected_frames = None;
        }
        Ok((
            AfterFilters {
                graph,
                format,
                time_base: engine.time_base,
                frame_duration: frame_duration(engine),
                next_index: 0,
                end: None,
            },
            sink,
        ))
    }

    /// Runs every frame from `filtered` through the graph and sends what it gives to
    /// `output`, then flushes it at the end of the input. Returns when the input ends or
    /// the sink is gone; an error is FFmpeg's.
    pub(super) fn run(mut self, filtered: &Receiver<Frame>, output: &Sender<Frame>) -> Result<(), String> {
        for frame in filtered {
            for frame in self.push(frame)? {
                if output.send(frame).is_err() {
                    return Ok(());
                }
            }
        }
        for frame in self.finish()? {
            if output.send(frame).is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Gives the graph one filtered frame; returns the frames it has ready.
    pub fn push(&mut self, frame: Frame) -> Result<Vec<Frame>, String> {
        self.end = frame
            .pts
            .map(|pts| pts.saturating_add(self.frame_duration))
            .or(self.end);
        let (pts, timeline) = (frame.pts, frame.timeline);
        let mut picture = lend_to_ffmpeg(frame).map_err(|e| format!("cannot hand a frame to FFmpeg's filters: {e}"))?;
        picture.set_pts(pts);
        let mut ready = Vec::new();
        for out in self.graph.run(&picture)? {
            let mut frame = self.frame_of(&out)?;
            frame.timeline = timeline;
            ready.push(frame);
        }
        Ok(ready)
    }

    /// Ends the input; returns the frames the graph held.
    pub fn finish(&mut self) -> Result<Vec<Frame>, String> {
        let held = self.graph.finish(self.end)?;
        held.iter().map(|out| self.frame_of(out)).collect()
    }

    /// A picture the graph gave, as the sink's frame, its timestamp in the sink's time base.
    /// Refused when its size or format is not what the graph said it gives (a filter that
    /// reconfigures mid-stream, `scale` with `eval=frame`): the encoder was opened for that.
    fn frame_of(&mut self, picture: &ffmpeg::frame::Video) -> Result<Frame, String> {
        let made = self.graph.output();
        if (picture.width(), picture.height(), picture.format()) != (made.width, made.height, made.format) {
            return Err(format!(
                "FFmpeg's filters after the convolution changed the picture to {}x{} {:?} mid-stream; \
                 the output was opened for {}x{} {:?}",
                picture.width(),
                picture.height(),
                picture.format(),
                made.width,
                made.height,
                made.format
            ));
        }
        let mut frame = frame_from_ffmpeg(picture, self.format, None);
        let from = self.graph.output().time_base;
        frame.pts = picture.pts().map(|pts| match from == self.time_base {
            true => pts,
            // SAFETY: av_rescale_q only computes with its integer arguments.
            false => unsafe { ffmpeg::ffi::av_rescale_q(pts, from.into(), self.time_base.into()) },
        });
        frame.index = self.next_index;
        self.next_index += 1;
        Ok(frame)
    }
}

/// One frame's duration in the input's time base (at least 1).
fn frame_duration(info: &SourceInfo) -> i64 {
    let per_frame = f64::from(info.frame_rate.invert()) / f64::from(info.time_base);
    match per_frame.is_finite() {
        true => (per_frame.round() as i64).max(1),
        false => 1,
    }
}

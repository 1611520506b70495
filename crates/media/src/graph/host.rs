//! A chain of FFmpeg's own filters run in-process on host frames ([`HostGraph`]): a buffer
//! source fed the pictures as they are, the user's chain, a buffer sink. What comes out
//! (size, pixel format, aspect, timing) is the graph's, read once it is configured.

use ffmpeg::format::Pixel;
use ffmpeg::{filter, Rational};
use ffmpeg_next as ffmpeg;

use crate::ffmpeg::log;

/// The pictures a graph takes or gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pictures {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// FFmpeg's pixel format.
    pub format: Pixel,
    /// The time base timestamps count in.
    pub time_base: Rational,
    /// Frames per second (0/1 when unknown).
    pub frame_rate: Rational,
    /// Sample aspect ratio (0/1 when unknown).
    pub aspect_ratio: Rational,
}

/// A configured libavfilter graph: `in` (buffer) -> the chain -> `out` (buffersink).
pub struct HostGraph {
    graph: filter::Graph,
    /// The chain as written, for messages.
    chain: String,
    output: Pictures,
}

// SAFETY: a filter graph has no thread affinity; it is used from one thread at a time (the
// source's or the after-filter's).
unsafe impl Send for HostGraph {}

impl HostGraph {
    /// Builds and configures `chain` for pictures like `input`. The error is FFmpeg's first
    /// complaint (an option out of range, a size the input cannot give).
    pub fn new(chain: &str, input: &Pictures) -> Result<HostGraph, String> {
        Self::new_shown(chain, chain, input)
    }

    /// [`HostGraph::new`], its messages quoting `shown` for the chain.
    fn new_shown(chain: &str, shown: &str, input: &Pictures) -> Result<HostGraph, String> {
        crate::ffmpeg::init();
        let fail = |what: &str, first: Option<String>, e: ffmpeg::Error| {
            format!(
                "FFmpeg cannot {what} `{}`: {}",
                convstream_core::quoted(shown),
                first.unwrap_or_else(|| e.to_string())
            )
        };
        let mut graph = filter::Graph::new();
        let (buffer, sink) = match (filter::find("buffer"), filter::find("buffersink")) {
            (Some(buffer), Some(sink)) => (buffer, sink),
            _ => return Err("this FFmpeg build has no buffer or buffersink filter".into()),
        };
        let aspect = match input.aspect_ratio.numerator() > 0 {
            true => input.aspect_ratio,
            false => Rational::new(1, 1),
        };
        let rate = match input.frame_rate.numerator() > 0 {
            true => input.frame_rate,
            false => Rational::new(25, 1),
        };
        let args = format!(
            "video_size={}x{}:pix_fmt={}:time_base={}/{}:pixel_aspect={}/{}:frame_rate={}/{}",
            input.width,
            input.height,
            ffmpeg::ffi::AVPixelFormat::from(input.format) as i32,
            input.time_base.numerator(),
            input.time_base.denominator(),
            aspect.numerator(),
            aspect.denominator(),
            rate.numerator(),
            rate.denominator()
        );
        let (made, first) = log::first_error_during(|| -> Result<(), ffmpeg::Error> {
            graph.add(&buffer, "in", &args)?;
            graph.add(&sink, "out", "")?;
            graph.output("in", 0)?.input("out", 0)?.parse(chain)
        });
        made.map_err(|e| fail("read", first, e))?;
        let (configured, first) = log::first_error_during(|| graph.validate());
        configured.map_err(|e| fail("set up", first, e))?;
        let output = Self::sink_pictures(&mut graph).ok_or("the filter graph has no output")?;
        Ok(HostGraph {
            graph,
            chain: chain.to_string(),
            output,
        })
    }

    /// What the configured sink gives.
    fn sink_pictures(graph: &mut filter::Graph) -> Option<Pictures> {
        let sink = graph.get("out")?;
        // SAFETY: `sink` is the configured buffersink of this graph; its getters read fields.
        unsafe {
            let raw = sink.as_ptr();
            Some(Pictures {
                width: ffmpeg::ffi::av_buffersink_get_w(raw) as u32,
                height: ffmpeg::ffi::av_buffersink_get_h(raw) as u32,
                format: Pixel::from(std::mem::transmute::<i32, ffmpeg::ffi::AVPixelFormat>(
                    ffmpeg::ffi::av_buffersink_get_format(raw),
                )),
                time_base: ffmpeg::ffi::av_buffersink_get_time_base(raw).into(),
                frame_rate: ffmpeg::ffi::av_buffersink_get_frame_rate(raw).into(),
                aspect_ratio: ffmpeg::ffi::av_buffersink_get_sample_aspect_ratio(raw).into(),
            })
        }
    }

    /// The pixel format FFmpeg would filter the convolution filters in, for pictures like
    /// `input` going through `before`, the convolution filters and `after` as one graph: its
    /// format negotiation looks through a whole graph (`scale=640:-2,sobel,format=gray`
    /// scales straight to gray and runs `sobel` on gray), where convstream runs three
    /// pieces. `convolution` stands for the engine's filters: FFmpeg's `sobel`, `prewitt` and
    /// `roberts` are the same filter with the same formats.
    pub fn engine_format(before: Option<&str>, after: Option<&str>, input: &Pictures) -> Result<Pixel, String> {
        let joined = |engine: &str| {
            [before, Some(engine), after]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut graph = HostGraph::new_shown(&joined("convolution"), &joined("(the convolution filters)"), input)?;
        // FFmpeg names a parsed filter by its place in the chain.
        let at = before.map_or(0, crate::graph::chain::filter_count);
        let Some(filter) = graph.graph.get(&format!("Parsed_convolution_{at}")) else {
            return Err("FFmpeg's graph lost its convolution filter".into());
        };
        // SAFETY: `filter` is a configured filter of `graph` with one input, whose link
        // holds the negotiated format.
        let format = unsafe {
            let raw = filter.as_ptr();
            let link = *(*raw).inputs;
            std::mem::transmute::<i32, ffmpeg::ffi::AVPixelFormat>((*link).format)
        };
        Ok(Pixel::from(format))
    }

    /// The pictures the graph gives.
    pub fn output(&self) -> &Pictures {
        &self.output
    }

    /// The chain as written.
    pub fn chain(&self) -> &str {
        &self.chain
    }

    /// Gives the graph one picture and returns every picture it has ready.
    pub fn run(&mut self, picture: &ffmpeg::frame::Video) -> Result<Vec<ffmpeg::frame::Video>, String> {
        self.push(Some(picture), None)
    }

    /// Ends the input at `end` (the time the last picture ends, in the input's time base,
    /// as FFmpeg's command line closes its graphs: `fps` decides its last frames by it) and
    /// returns the pictures the filters held.
    pub fn finish(&mut self, end: Option<i64>) -> Result<Vec<ffmpeg::frame::Video>, String> {
        self.push(None, end)
    }

    fn push(
        &mut self,
        picture: Option<&ffmpeg::frame::Video>,
        end: Option<i64>,
    ) -> Result<Vec<ffmpeg::frame::Video>, String> {
        let chain = convstream_core::quoted(&self.chain);
        let failed = |first: Option<String>, e: ffmpeg::Error| {
            format!("FFmpeg's `{chain}` failed: {}", first.unwrap_or_else(|| e.to_string()))
        };
        let graph = &mut self.graph;
        let (added, first) = log::first_error_during(|| -> Result<(), ffmpeg::Error> {
            let mut source = graph.get("in").ok_or(ffmpeg::Error::Bug)?;
            match (picture, end) {
                (Some(picture), _) => source.source().add(picture),
                (None, Some(end)) => source.source().close(end),
                (None, None) => source.source().flush(),
            }
        });
        added.map_err(|e| failed(first, e))?;
        let mut ready = Vec::new();
        let mut sink = graph.get("out").ok_or_else(|| failed(None, ffmpeg::Error::Bug))?;
        loop {
            let mut out = ffmpeg::frame::Video::empty();
            match sink.sink().frame(&mut out) {
                Ok(()) => ready.push(out),
                Err(ffmpeg::Error::Eof) => break,
                Err(e) if crate::ffmpeg::is_again(&e) => break,
                Err(e) => return Err(failed(log::take_last_error(), e)),
            }
        }
        Ok(ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gray(width: u32, height: u32) -> Pictures {
        Pictures {
            width,
            height,
            format: Pixel::GRAY8,
            time_base: Rational::new(1, 25),
            frame_rate: Rational::new(25, 1),
            aspect_ratio: Rational::new(1, 1),
        }
    }

    #[test]
    fn the_output_is_the_graphs() {
        let graph = HostGraph::new("scale=32:-2,format=yuv420p", &gray(64, 48)).expect("configured");
        let out = graph.output();
        assert_eq!((out.width, out.height, out.format), (32, 24, Pixel::YUV420P));
    }

    #[test]
    fn a_picture_goes_through_with_its_timestamp() {
        let mut graph = HostGraph::new("crop=16:8:0:0", &gray(64, 48)).expect("configured");
        let mut picture = ffmpeg::frame::Video::new(Pixel::GRAY8, 64, 48);
        picture.data_mut(0).fill(9);
        picture.set_pts(Some(7));
        let out = graph.run(&picture).expect("ran");
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].width(), out[0].height(), out[0].pts()), (16, 8, Some(7)));
        assert_eq!(out[0].data(0)[0], 9);
    }

    #[test]
    fn the_engines_format_is_the_one_ffmpeg_negotiates_over_the_whole_graph() {
        let yuv = Pictures {
            format: Pixel::YUV420P,
            ..gray(64, 48)
        };
        let format = HostGraph::engine_format(Some("scale=32:-2"), Some("format=gray"), &yuv).unwrap();
        assert_eq!(format, Pixel::GRAY8);
        assert_eq!(HostGraph::engine_format(None, None, &yuv).unwrap(), Pixel::YUV420P);
    }

    #[test]
    fn a_size_the_input_cannot_give_is_ffmpegs_error() {
        let error = HostGraph::new("crop=100:100", &gray(64, 48)).err().expect("refused");
        assert!(error.starts_with("FFmpeg cannot set up `crop=100:100`:"), "{error}");
    }
}

//! What only FFmpeg can tell of an output before it opens, and of the filter's FFmpeg
//! chains, for the configuration's checks: the config crate knows no FFmpeg, so validation
//! is handed [`output_problems`] as its `OutputCheck`.

use convstream_config::{container_of_scheme, OutputTarget, PipelineConfig, Place, Problem};
use convstream_core::quoted;

use super::encoders::{default_encoders, first_usable, missing_encoder};
use super::{ffv1_unavailable, guess_muxer, lossless_options, lossless_unavailable, muxer_takes, video_encoder};

/// Container and codec problems that FFmpeg would report only when the output opens: an
/// unknown container or encoder, a codec the container cannot carry, `lossless` that the
/// container or the encoder cannot honour; and the filter's FFmpeg chains that libavfilter
/// refuses. The config's [`OutputCheck`] for every front end
/// whose outputs FFmpeg opens.
///
/// [`OutputCheck`]: convstream_config::OutputCheck
pub fn output_problems(pipeline: &PipelineConfig) -> Vec<Problem> {
    let mut problems = placed(chain_problems(pipeline), &Place::Pipeline(pipeline.name.clone()));
    problems.extend(sink_problems(pipeline));
    problems
}

/// FFmpeg's filter chains of the filter (`ffmpeg_before`, `ffmpeg_after`), read by libavfilter
/// as they will be run: its complaint (a filter it has not, an option out of range) is the
/// problem. What depends on the input (a crop larger than the picture) waits for it.
fn chain_problems(pipeline: &PipelineConfig) -> Vec<Problem> {
    let filter = &pipeline.filter;
    [
        ("filter.ffmpeg_before", &filter.ffmpeg_before),
        ("filter.ffmpeg_after", &filter.ffmpeg_after),
    ]
    .into_iter()
    .filter_map(|(field, chain)| Some((field, chain.as_deref()?)))
    .filter_map(|(field, chain)| {
        let error = crate::graph::chain::parse_chain(field, chain).err()?;
        Some(Problem::value(field, error.reason))
    })
    .collect()
}

/// The sink's problems (see [`output_problems`]).
fn sink_problems(pipeline: &PipelineConfig) -> Vec<Problem> {
    let sink = &pipeline.sink;
    let place = Place::Pipeline(pipeline.name.clone());
    let target = OutputTarget::of(&sink.url);
    if target == OutputTarget::Discard || sink.url.trim().is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let format = sink
        .format
        .as_deref()
        .or((target == OutputTarget::Stdout).then_some("yuv4mpegpipe"))
        .or(container_of_scheme(&sink.url));
    let muxer = guess_muxer(&sink.url, format);
    if muxer.is_none() {
        problems.push(match format {
            Some(name) => Problem::value(
                "sink.format",
                format!(
                    "`{}` is not an output format this FFmpeg build has (ffmpeg -muxers lists them)",
                    quoted(name)
                ),
            ),
            None => Problem::setting(
                "sink.url",
                format!(
                    "`{}`: cannot tell the container from the name; use a known extension (.mkv .mp4 .webm .mov .ts .avi .nut .y4m) or set the format with --format (sink.format in a config)",
                    quoted(&sink.url)
                ),
            ),
        });
    }
    let codec = sink.codec.as_deref().and_then(|name| {
        let codec = video_encoder(name);
        if codec.is_none() {
            problems.push(Problem::value(
                "sink.codec",
                missing_encoder(&quoted(name), muxer.as_ref()),
            ));
        }
        codec.map(|codec| (name, codec))
    });
    let Some(muxer) = muxer else {
        return placed(problems, &place);
    };
    let container = muxer.name().to_string();
    if matches!(container.as_str(), "yuv4mpegpipe" | "rawvideo") {
        return placed(problems, &place); // uncompressed: the codec and lossless do not apply
    }
    // The encoder the output will have, for its options' trial: the one named, else the
    // container's default on the CPU (`lossless` alone picks ffv1, which takes no options).
    let encoder = match &codec {
        Some((_, codec)) => Some(*codec),
        None if !sink.lossless => {
            let candidates = default_encoders(&container, false);
            first_usable(&candidates, |name| match video_encoder(name) {
                Some(codec) if muxer_takes(&muxer, codec.id()) => Ok(()),
                _ => Err(String::new()),
            })
            .0
            .and_then(video_encoder)
        }
        None => None,
    };
    if let Some(encoder) = encoder.filter(|codec| muxer_takes(&muxer, codec.id())) {
        problems.extend(crate::sink::encoder_option_problems(sink, encoder));
    }
    if let Some((name, codec)) = &codec {
        if !muxer_takes(&muxer, codec.id()) {
            problems.push(Problem::value(
                "sink.codec",
                format!(
                    "the {container} container cannot carry {} video; choose another codec or container",
                    quoted(name)
                ),
            ));
        } else if sink.lossless && lossless_options(name).is_none() {
            problems.push(Problem::value("sink.lossless", lossless_unavailable(name)));
        }
    } else if sink.lossless && sink.codec.is_none() {
        match video_encoder("ffv1") {
            Some(ffv1) if !muxer_takes(&muxer, ffv1.id()) => {
                problems.push(Problem::value("sink.lossless", ffv1_unavailable(&container)));
            }
            None => problems.push(Problem::value(
                "sink.lossless",
                "lossless output needs the ffv1 encoder, which this FFmpeg build lacks; name another with --codec (libx264)",
            )),
            Some(_) => {}
        }
    }
    placed(problems, &place)
}

/// Each problem, in the pipeline's place.
fn placed(problems: Vec<Problem>, place: &Place) -> Vec<Problem> {
    problems.into_iter().map(|problem| problem.at(place.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::output_problems;
    use convstream_config::{ConfigFile, PipelineConfig, Place, Problem, NO_OUTPUT_CHECK};

    fn pipeline(sink: &str) -> PipelineConfig {
        let text = format!("[[pipeline]]\nname = \"cam1\"\nsource.url = \"in.mkv\"\nsink = {sink}\n");
        let mut config = ConfigFile::parse(&text, "test.toml", NO_OUTPUT_CHECK).unwrap();
        config.pipelines.remove(0)
    }

    #[test]
    fn problems_name_the_pipeline_and_the_setting() {
        let cam1 = Place::Pipeline("cam1".into());
        let problems = output_problems(&pipeline(r#"{ url = "out.mkv", codec = "no-such-codec" }"#));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].place(), &cam1);
        assert_eq!(problems[0].field(), Some("sink.codec"));

        let problems = output_problems(&pipeline(r#"{ url = "out.nosuchcontainer" }"#));
        assert!(
            matches!(&problems[..], [Problem::Setting { field, .. }] if field == "sink.url"),
            "{problems:?}"
        );
        assert!(problems[0]
            .to_string()
            .starts_with("pipeline \"cam1\": sink.url `out.nosuchcontainer`: cannot tell"));

        let problems = output_problems(&pipeline(r#"{ url = "out.mkv", format = "no-such-muxer" }"#));
        assert_eq!(problems[0].field(), Some("sink.format"), "{problems:?}");

        assert!(output_problems(&pipeline(r#"{ url = "null", codec = "no-such-codec" }"#)).is_empty());
        assert!(output_problems(&pipeline(r#"{ url = "out.mkv" }"#)).is_empty());
    }
}

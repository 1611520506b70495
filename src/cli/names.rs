//! A run made of flags alone (no `--config`) is told about its flags, not about the places
//! of the config those flags fill: `filter.device: ...` is reported as `--device: ...`.

use convstream_config::{ConfigError, Place, Problem};

/// The place a flag fills in the one pipeline (`main`) a run of flags makes, and the flag;
/// longer places first, so `source.options.video_size` is found before `source.options`.
const PLACES: &[(&str, &str)] = &[
    ("source.options.video_size", "--size"),
    ("source.options.pixel_format", "--pix-fmt"),
    ("source.options.framerate", "--framerate"),
    ("source.options", "--input-opt"),
    ("source.url", "--input"),
    ("source.format", "--input-format"),
    ("source.decoder", "--decoder"),
    ("source.start", "--ss"),
    ("source.duration", "-t"),
    ("source.frames", "--frames"),
    ("source.depth", "--depth"),
    ("filter.mask", "--mask"),
    ("filter.plane_masks", "--plane-mask"),
    ("filter.border", "--border"),
    ("filter.device", "--device"),
    ("filter.streams", "--streams"),
    ("filter.frames_per_stream", "--frames-per-stream"),
    ("sink.url", "--output"),
    ("sink.format", "--format"),
    ("sink.codec", "--codec"),
    ("sink.lossless", "--lossless"),
    ("sink.muxer_options", "--muxer-opt"),
    ("sink.options.crf", "--crf"),
    ("sink.options.b", "--bitrate"),
    ("sink.options.preset", "--preset"),
    ("sink.options", "--encoder-opt"),
];

/// The problems of a run of flags, each naming the flag where it names a place.
pub(crate) fn as_flags(error: ConfigError) -> ConfigError {
    match error {
        ConfigError::Invalid(problems) => ConfigError::Invalid(problems.into_iter().map(problem_as_flags).collect()),
        other => other,
    }
}

/// A problem of the one pipeline a run of flags makes, said of the flag that set it, or of
/// the setting when no flag sets it; problems elsewhere are kept as they are.
fn problem_as_flags(problem: Problem) -> Problem {
    if !problem.place().is_standalone() {
        return problem;
    }
    let problem = problem.at(Place::Config);
    match problem.field().and_then(flag_of) {
        Some(flag) => problem.with_field(flag),
        None => problem,
    }
}

/// The flag that sets `field`: `filter.device` is `--device`, `sink.options.crf` is
/// `--encoder-opt crf`.
fn flag_of(field: &str) -> Option<String> {
    PLACES.iter().find_map(|(place, flag)| {
        let tail = field.strip_prefix(place)?;
        match tail.strip_prefix('.') {
            Some(key) => Some(format!("{flag} {key}")),
            None if tail.is_empty() => Some(flag.to_string()),
            None => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_become_flags() {
        let main = Place::Pipeline(convstream_config::STANDALONE_PIPELINE.to_string());
        let problems = vec![
            Problem::value("filter.device", "`tpu` is not a device; use auto, cpu, cuda or cuda:N").at(main.clone()),
            Problem::value("source.options.video_size", "raw video needs its picture size").at(main.clone()),
            Problem::value("filter.plane_masks.y", "unknown preset").at(main.clone()),
            Problem::setting("sink.url", "is empty").at(main.clone()),
            Problem::value("filter.streamsx", "nothing").at(main.clone()),
            Problem::general("two pipelines write out.mkv"),
            Problem::value("filter.device", "`tpu` is not a device").at(Place::Pipeline("cam1".into())),
        ];
        let ConfigError::Invalid(spoken) = as_flags(ConfigError::Invalid(problems)) else {
            panic!("still a list of problems");
        };
        let spoken: Vec<String> = spoken.iter().map(ToString::to_string).collect();
        assert_eq!(
            spoken,
            vec![
                "--device: `tpu` is not a device; use auto, cpu, cuda or cuda:N",
                "--size: raw video needs its picture size",
                "--plane-mask y: unknown preset",
                "--output is empty",
                "filter.streamsx: nothing",
                "two pipelines write out.mkv",
                "pipeline \"cam1\": filter.device: `tpu` is not a device",
            ]
        );
    }
}

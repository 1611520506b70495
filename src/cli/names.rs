//! A run made of flags alone (no `--config`) is told about its flags, not about the places
//! of the config those flags fill: `filter.device: ...` is reported as `--device: ...`.

use convstream_media::config::ConfigError;

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
    ("sink.options", "--encoder-opt"),
];

/// The pipeline a run of flags makes, as problems name it.
const FLAGS_PIPELINE: &str = "pipeline \"main\": ";

/// The problems of a run of flags, each naming the flag where it names a place.
pub(crate) fn as_flags(error: ConfigError) -> ConfigError {
    match error {
        ConfigError::Invalid(problems) => ConfigError::Invalid(problems.into_iter().map(problem_as_flags).collect()),
        other => other,
    }
}

fn problem_as_flags(problem: String) -> String {
    let Some(rest) = problem.strip_prefix(FLAGS_PIPELINE) else {
        return problem;
    };
    for (place, flag) in PLACES {
        let Some(tail) = rest.strip_prefix(place) else {
            continue;
        };
        // `sink.options.crf: ...` is `--encoder-opt crf: ...`; `sink.url is empty` is
        // `--output is empty`.
        return match tail.strip_prefix('.') {
            Some(key) => format!("{flag} {key}"),
            None if tail.starts_with(':') || tail.starts_with(' ') => format!("{flag}{tail}"),
            None => continue,
        };
    }
    rest.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_become_flags() {
        let problems = vec![
            "pipeline \"main\": filter.device: `tpu` is not a device; use auto, cpu, cuda or cuda:N".to_string(),
            "pipeline \"main\": source.options.video_size: raw video needs its picture size".to_string(),
            "pipeline \"main\": filter.plane_masks.y: unknown preset".to_string(),
            "pipeline \"main\": sink.url is empty".to_string(),
            "pipeline \"main\": filter.streamsx: nothing".to_string(),
            "two pipelines write out.mkv".to_string(),
        ];
        let ConfigError::Invalid(spoken) = as_flags(ConfigError::Invalid(problems)) else {
            panic!("still a list of problems");
        };
        assert_eq!(
            spoken,
            vec![
                "--device: `tpu` is not a device; use auto, cpu, cuda or cuda:N",
                "--size: raw video needs its picture size",
                "--plane-mask y: unknown preset",
                "--output is empty",
                "filter.streamsx: nothing",
                "two pipelines write out.mkv",
            ]
        );
    }
}

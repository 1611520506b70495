//! What the pipeline modules' tests share: a pipeline's settings from a config's text.

use convstream_config::{ConfigFile, PipelineSettings, NO_OUTPUT_CHECK};

/// The settings of the one pipeline of `toml`, a config that must validate.
pub(super) fn one_pipeline(toml: &str) -> PipelineSettings {
    ConfigFile::parse(toml, "test.toml", NO_OUTPUT_CHECK)
        .and_then(|config| config.validate(None, NO_OUTPUT_CHECK))
        .unwrap()
        .pipelines
        .remove(0)
}

//! One thing wrong with a configuration, typed: where it is ([`Place`]), which setting has it
//! and what is wrong. Each front end words a problem its own way from these parts (the
//! command line names its flags, the GStreamer element its properties, Python its keyword
//! arguments) without reading the text back; [`Problem`]'s `Display` is the config's own
//! wording (`pipeline "cam1": filter.mask: size: 4 is even`).

use std::fmt;

/// The name of the one pipeline `Overrides::standalone` makes of flags alone; front ends
/// know their own problems by it (see [`Place::is_standalone`]).
pub const STANDALONE_PIPELINE: &str = "main";

/// Where a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// Outside every pipeline (`server.*`, `masks.*`, `log.*`), or the config as a whole.
    Config,
    /// In the pipeline of this name (shown as `pipeline "NAME"`).
    Pipeline(String),
    /// In the pipeline at this position, counted from 1 (shown as `pipeline #N`): its name is
    /// missing or cannot be shown.
    PipelineNumber(usize),
}

impl Place {
    /// The pipeline a problem is in, if it is in one by name.
    pub fn pipeline_name(&self) -> Option<&str> {
        match self {
            Place::Pipeline(name) => Some(name),
            _ => None,
        }
    }

    /// Whether this is the one pipeline [`Overrides::standalone`] makes of flags alone (or of a
    /// front end's properties or arguments): its problems are the front end's own to word.
    ///
    /// [`Overrides::standalone`]: crate::Overrides::standalone
    pub fn is_standalone(&self) -> bool {
        self.pipeline_name() == Some(STANDALONE_PIPELINE)
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Config => Ok(()),
            Place::Pipeline(name) => write!(f, "pipeline {name:?}"),
            Place::PipelineNumber(number) => write!(f, "pipeline #{number}"),
        }
    }
}

/// One problem of a configuration, with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A setting's value is wrong: `FIELD: MESSAGE` (`filter.streams: 0 is out of range; ...`).
    Value {
        /// Where the setting is.
        place: Place,
        /// The setting, as its dotted path in the config (`filter.plane_masks.y`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A sentence about a setting, whose subject it is: `FIELD MESSAGE` (`sink.url is empty;
    /// give a path, ...`, `source.url \`x\` is the same file as ...`).
    Setting {
        /// Where the setting is.
        place: Place,
        /// The setting, as its dotted path in the config.
        field: String,
        /// The rest of the sentence.
        message: String,
    },
    /// About a pipeline, or the config, as a whole: `MESSAGE` (a name used twice, no pipeline).
    General {
        /// Where it is.
        place: Place,
        /// What is wrong.
        message: String,
    },
}

impl Problem {
    /// `field: message`, outside every pipeline until [`Problem::at`] places it.
    pub fn value(field: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem::Value {
            place: Place::Config,
            field: field.into(),
            message: message.into(),
        }
    }

    /// `field message`, a sentence about the setting (see [`Problem::Setting`]).
    pub fn setting(field: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem::Setting {
            place: Place::Config,
            field: field.into(),
            message: message.into(),
        }
    }

    /// A problem of the config (or, once placed, of a pipeline) as a whole.
    pub fn general(message: impl Into<String>) -> Problem {
        Problem::General {
            place: Place::Config,
            message: message.into(),
        }
    }

    /// The same problem, in `place`.
    pub fn at(mut self, new_place: Place) -> Problem {
        match &mut self {
            Problem::Value { place, .. } | Problem::Setting { place, .. } | Problem::General { place, .. } => {
                *place = new_place
            }
        }
        self
    }

    /// The same problem, said of `new_field` (a front end's own name for the setting: a flag,
    /// a property); a problem of no setting is returned as it is.
    pub fn with_field(mut self, new_field: impl Into<String>) -> Problem {
        match &mut self {
            Problem::Value { field, .. } | Problem::Setting { field, .. } => *field = new_field.into(),
            Problem::General { .. } => {}
        }
        self
    }

    /// Where the problem is.
    pub fn place(&self) -> &Place {
        match self {
            Problem::Value { place, .. } | Problem::Setting { place, .. } | Problem::General { place, .. } => place,
        }
    }

    /// The setting that has the problem, as its dotted path, if one does.
    pub fn field(&self) -> Option<&str> {
        match self {
            Problem::Value { field, .. } | Problem::Setting { field, .. } => Some(field),
            Problem::General { .. } => None,
        }
    }

    /// What is wrong, without the place and the setting.
    pub fn message(&self) -> &str {
        match self {
            Problem::Value { message, .. } | Problem::Setting { message, .. } | Problem::General { message, .. } => {
                message
            }
        }
    }

    /// The problem without its place: `FIELD: MESSAGE`, `FIELD MESSAGE` or `MESSAGE`.
    pub fn unplaced(&self) -> String {
        match self {
            Problem::Value { field, message, .. } => format!("{field}: {message}"),
            Problem::Setting { field, message, .. } => format!("{field} {message}"),
            Problem::General { message, .. } => message.clone(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.place() {
            Place::Config => {}
            place => write!(f, "{place}: ")?,
        }
        f.write_str(&self.unplaced())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_as_the_config_words_it() {
        let main = Place::Pipeline("main".into());
        assert_eq!(
            Problem::value("filter.streams", "0 is out of range")
                .at(main.clone())
                .to_string(),
            "pipeline \"main\": filter.streams: 0 is out of range"
        );
        assert_eq!(
            Problem::setting("sink.url", "is empty")
                .at(Place::PipelineNumber(3))
                .to_string(),
            "pipeline #3: sink.url is empty"
        );
        assert_eq!(
            Problem::general("no [[pipeline]] defined").to_string(),
            "no [[pipeline]] defined"
        );
        let problem = Problem::value("server.listen", "not an address");
        assert_eq!(problem.to_string(), "server.listen: not an address");
        assert_eq!(problem.field(), Some("server.listen"));
        assert_eq!(problem.place(), &Place::Config);
        assert_eq!(Problem::general("x").at(main).place().pipeline_name(), Some("main"));
    }
}

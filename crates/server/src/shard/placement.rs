//! Which shard a replica is: `[server] shard` (`auto` or `INDEX/COUNT`) with the count and
//! hostname it needs. `auto` takes the index from a StatefulSet pod's hostname
//! (`convstream-2` is shard 2) and the count from `[server] shards` or the
//! `CONVSTREAM_SHARDS` environment variable ([`resolve`] is given those values; it reads
//! nothing itself).

use super::rendezvous::owner;
use convstream_config::shard_spec::{count_problem, Shard, ShardError, ShardSpec};
use convstream_core::quoted;

/// The environment variable that gives `shard = "auto"` its count (a StatefulSet's manifest
/// sets it beside `replicas`).
pub const SHARDS_ENV: &str = "CONVSTREAM_SHARDS";

/// The shard this replica is, and what is known of its siblings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub shard: Shard,
    /// The pod name without its `-INDEX` (`convstream` for `convstream-1`), when the hostname
    /// has that shape: the sibling owning shard `k` is then `PREFIX-k`.
    pub pod_prefix: Option<String>,
    /// Where the index and count came from, for logs and errors.
    pub origin: String,
}

impl Placement {
    /// Whether this replica runs the pipeline `name`.
    pub fn owns(&self, name: &str) -> bool {
        owner(name, self.shard.count()) == self.shard.index()
    }

    /// The pod that runs shard `index`, where the hostnames say it.
    pub fn pod_of(&self, index: usize) -> Option<String> {
        self.pod_prefix.as_ref().map(|prefix| format!("{prefix}-{index}"))
    }

    /// Where the pipeline `name` runs: `shard 2 of 3 (pod convstream-2)`.
    pub fn describe_owner(&self, name: &str) -> String {
        let index = owner(name, self.shard.count());
        match self.pod_of(index) {
            Some(pod) => format!("shard {index} of {} (pod {pod})", self.shard.count()),
            None => format!("shard {index} of {}", self.shard.count()),
        }
    }
}

/// Whether `name` is a hostname: letters, digits, `-` and `.` (RFC 1123), so that it can
/// name a pod in a header, a metric or a log line as it is.
fn is_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// A hostname's `name-N`: the name and N. A value that is no hostname (`$HOSTNAME` holding
/// a line break or an escape sequence) has neither.
fn split_hostname(hostname: &str) -> Option<(&str, usize)> {
    if !is_hostname(hostname) {
        return None;
    }
    let (prefix, index) = hostname.rsplit_once('-')?;
    if prefix.is_empty() || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix, index.parse().ok()?))
}

/// What [`resolve`] is told about the replica's surroundings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Surroundings<'a> {
    /// `[server] shards`.
    pub configured_count: Option<usize>,
    /// The value of [`SHARDS_ENV`], if set.
    pub env_count: Option<&'a str>,
    /// The machine's (pod's) hostname.
    pub hostname: Option<&'a str>,
}

/// The shard a replica is: `spec` with the count and hostname it needs, every problem at once.
pub fn resolve(spec: ShardSpec, around: Surroundings) -> Result<Placement, ShardError> {
    let mut problems = Vec::new();
    let env_count = around.env_count.map(|text| match text.trim().parse::<usize>() {
        Ok(count) => Some(count),
        Err(_) => {
            problems.push(format!("{SHARDS_ENV}=`{}` is not a number of shards", quoted(text)));
            None
        }
    });
    // The count from the environment and the file must agree: replicas that disagree on it
    // would run some pipelines twice and others nowhere.
    let count = match (around.configured_count, env_count.flatten()) {
        (Some(file), Some(env)) if file != env => {
            problems.push(format!(
                "server.shards = {file} but {SHARDS_ENV}={env}; they must agree (or set only one)"
            ));
            None
        }
        (Some(file), _) => Some((file, format!("server.shards = {file}"))),
        (None, Some(env)) => Some((env, format!("{SHARDS_ENV}={env}"))),
        (None, None) => None,
    };
    if let Some((count, origin)) = &count {
        count_problem(*count, &format!("the shard count from {origin}:"), &mut problems);
    }
    let hostname = around.hostname.map(str::trim).filter(|h| !h.is_empty());
    let from_hostname = hostname.and_then(split_hostname);
    let placement = match spec {
        ShardSpec::Fixed(shard) => {
            if let Some((count, origin)) = &count {
                if *count != shard.count() {
                    problems.push(format!(
                        "the shard {shard} names {} shards, but {origin}; they must agree",
                        shard.count()
                    ));
                }
            }
            let pod_prefix = from_hostname
                .filter(|(_, index)| *index == shard.index())
                .map(|(prefix, _)| prefix.to_string());
            Some(Placement {
                shard,
                pod_prefix,
                origin: format!("shard {shard} as set"),
            })
        }
        ShardSpec::Auto => {
            if count.is_none() && !problems.iter().any(|p| p.contains(SHARDS_ENV)) {
                problems.push(format!(
                    "shard = \"auto\" needs the number of shards: set [server] shards = N or the environment variable {SHARDS_ENV} (the StatefulSet's replicas)"
                ));
            }
            match (hostname, from_hostname) {
                (None, _) => {
                    problems.push("shard = \"auto\" takes the index from the hostname, but it is unknown; set --shard INDEX/COUNT".into());
                    None
                }
                (Some(name), None) if !is_hostname(name) => {
                    problems.push(format!(
                        "shard = \"auto\" takes the index from the hostname, but `{}` is not a hostname (letters, digits, `-` and `.`); set --shard INDEX/COUNT instead",
                        quoted(name)
                    ));
                    None
                }
                (Some(name), None) => {
                    problems.push(format!(
                        "shard = \"auto\" takes the index from the hostname, but `{}` does not end in `-N` (a StatefulSet pod's name, such as convstream-2); set --shard INDEX/COUNT instead",
                        quoted(name)
                    ));
                    None
                }
                (Some(name), Some((prefix, index))) => match &count {
                    Some((count, origin)) if index >= *count && *count >= 1 => {
                        problems.push(format!(
                            "the hostname {name} says shard {index}, but {origin} allows only 0..={}; is the StatefulSet's replicas above the count?",
                            count - 1
                        ));
                        None
                    }
                    // A count out of range is among the problems already.
                    Some((count, origin)) => Shard::new(index, *count).ok().map(|shard| Placement {
                        shard,
                        pod_prefix: Some(prefix.to_string()),
                        origin: format!("index {index} from the hostname {name}, count from {origin}"),
                    }),
                    None => None,
                },
            }
        }
    };
    match placement {
        Some(placement) if problems.is_empty() => Ok(placement),
        _ => Err(ShardError(problems)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_the_index_from_the_hostname_and_the_count_from_file_or_environment() {
        let around = Surroundings {
            configured_count: None,
            env_count: Some("3"),
            hostname: Some("convstream-2"),
        };
        let placement = resolve(ShardSpec::Auto, around).unwrap();
        assert_eq!(placement.shard, Shard::new(2, 3).unwrap());
        assert_eq!(placement.pod_of(0).as_deref(), Some("convstream-0"));
        assert!(placement.origin.contains("CONVSTREAM_SHARDS=3"), "{}", placement.origin);
        let from_file = resolve(
            ShardSpec::Auto,
            Surroundings {
                configured_count: Some(4),
                env_count: None,
                hostname: Some("cams-east-10"),
            },
        );
        // 10 of 4: said, with where the count came from.
        let error = from_file.unwrap_err().to_string();
        assert!(
            error.contains("cams-east-10 says shard 10, but server.shards = 4"),
            "{error}"
        );
        let placement = resolve(
            ShardSpec::Auto,
            Surroundings {
                configured_count: Some(4),
                env_count: Some("4"),
                hostname: Some("cams-east-3"),
            },
        )
        .unwrap();
        assert_eq!(placement.pod_prefix.as_deref(), Some("cams-east"));
        assert!(placement.describe_owner("x").starts_with("shard "));
    }

    #[test]
    fn a_hostname_that_is_no_hostname_is_refused_escaped() {
        let around = Surroundings {
            configured_count: None,
            env_count: Some("1"),
            hostname: Some("x\n12:00:00.000 ERROR forged\u{1b}[2J-0"),
        };
        let error = resolve(ShardSpec::Auto, around).unwrap_err().to_string();
        assert!(error.contains("is not a hostname"), "{error}");
        assert!(!error.contains('\n') && !error.contains('\u{1b}'), "{error}");
        let fixed = resolve(ShardSpec::parse("0/1").unwrap(), around).unwrap();
        assert_eq!(fixed.pod_prefix, None, "no pod is named after it");
    }

    #[test]
    fn auto_lists_every_problem() {
        let error = resolve(
            ShardSpec::Auto,
            Surroundings {
                configured_count: None,
                env_count: None,
                hostname: Some("worker"),
            },
        )
        .unwrap_err();
        assert_eq!(error.0.len(), 2, "{error}");
        assert!(error.0[0].contains("needs the number of shards"), "{error}");
        assert!(error.0[1].contains("`worker` does not end in `-N`"), "{error}");
        let error = resolve(
            ShardSpec::Auto,
            Surroundings {
                configured_count: Some(3),
                env_count: Some("4"),
                hostname: None,
            },
        )
        .unwrap_err();
        assert!(
            error.0[0].contains("server.shards = 3 but CONVSTREAM_SHARDS=4"),
            "{error}"
        );
        assert!(error.0[1].contains("hostname, but it is unknown"), "{error}");
        let error = resolve(
            ShardSpec::Auto,
            Surroundings {
                configured_count: None,
                env_count: Some("three"),
                hostname: Some("convstream-0"),
            },
        )
        .unwrap_err();
        assert_eq!(error.0.len(), 1, "{error}");
        assert!(
            error.0[0].contains("CONVSTREAM_SHARDS=`three` is not a number"),
            "{error}"
        );
    }

    #[test]
    fn a_fixed_shard_must_agree_with_the_count_and_names_its_pod_when_the_hostname_does() {
        let fixed = ShardSpec::Fixed(Shard::new(1, 3).unwrap());
        let placement = resolve(
            fixed,
            Surroundings {
                configured_count: None,
                env_count: None,
                hostname: Some("convstream-1"),
            },
        )
        .unwrap();
        assert_eq!(placement.pod_prefix.as_deref(), Some("convstream"));
        let elsewhere = resolve(
            fixed,
            Surroundings {
                hostname: Some("convstream-0"),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(elsewhere.pod_prefix, None);
        let error = resolve(
            fixed,
            Surroundings {
                configured_count: Some(4),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("names 3 shards, but server.shards = 4"),
            "{error}"
        );
    }
}

//! `[server] shard` and `shards` as written: `auto` or `INDEX/COUNT`, the count's range and
//! the two settings' agreement, every problem at once, so that `check`, `run` and `serve`
//! list them with the config's other problems. Which pipelines a shard owns (rendezvous
//! hashing of their names) and which shard a replica is (its hostname, `CONVSTREAM_SHARDS`)
//! are the server's, in the binary.

use std::fmt;

use crate::problem::Problem;

/// The most shards one config may be spread over.
pub const MAX_SHARDS: usize = 1024;

/// One shard of a set: `index` of `count` (`index < count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: usize,
    count: usize,
}

impl Shard {
    /// Shard `index` of `count`, or every problem with them.
    pub fn new(index: usize, count: usize) -> Result<Shard, ShardError> {
        let mut problems = Vec::new();
        count_problem(count, "the count", &mut problems);
        if index >= count && count >= 1 {
            problems.push(format!(
                "the index {index} is not below the count {count}; shards are numbered 0..={}",
                count - 1
            ));
        }
        if problems.is_empty() {
            Ok(Shard { index, count })
        } else {
            Err(ShardError(problems))
        }
    }

    /// This shard's index, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many shards there are in all.
    pub fn count(&self) -> usize {
        self.count
    }
}

/// `INDEX/COUNT`, as `--shard` and `[server] shard` write it.
impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Adds `WHAT COUNT is out of range; allowed 1..=1024` to `problems` when `count` is not a
/// number of shards one config may be spread over.
pub fn count_problem(count: usize, what: &str, problems: &mut Vec<String>) {
    if !(1..=MAX_SHARDS).contains(&count) {
        problems.push(format!("{what} {count} is out of range; allowed 1..={MAX_SHARDS}"));
    }
}

/// Which shard a replica is, as configured: `auto` or `INDEX/COUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSpec {
    /// The index from the hostname (`name-N`), the count from `[server] shards` or
    /// `CONVSTREAM_SHARDS`.
    Auto,
    /// `INDEX/COUNT`, given as such.
    Fixed(Shard),
}

impl ShardSpec {
    /// Parses `auto` or `INDEX/COUNT`; the error lists every problem.
    pub fn parse(text: &str) -> Result<ShardSpec, ShardError> {
        if text == "auto" {
            return Ok(ShardSpec::Auto);
        }
        let shape = || {
            ShardError(vec![format!(
                "`{}` is neither `auto` nor INDEX/COUNT such as 1/3",
                crate::limits::quoted(text)
            )])
        };
        let (index, count) = text.split_once('/').ok_or_else(shape)?;
        let number = |part: &str| {
            part.parse::<usize>()
                .ok()
                .filter(|_| part.bytes().all(|b| b.is_ascii_digit()))
        };
        match (number(index), number(count)) {
            (Some(index), Some(count)) => Shard::new(index, count).map(ShardSpec::Fixed),
            _ => Err(shape()),
        }
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardSpec::Auto => f.write_str("auto"),
            ShardSpec::Fixed(shard) => shard.fmt(f),
        }
    }
}

/// What is wrong with a shard setting: every problem found, each a sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct ShardError(pub Vec<String>);

/// Checks `[server] shard` and `shards` as written (no environment, no hostname): the
/// problems go to `problems`, each prefixed with its place.
pub(crate) fn config_problems(shard: Option<&str>, shards: Option<usize>, problems: &mut Vec<Problem>) {
    let spec = shard.map(|text| ShardSpec::parse(text).map_err(|e| e.0));
    if let Some(Err(errors)) = &spec {
        problems.extend(errors.iter().map(|e| Problem::value("server.shard", e.as_str())));
    }
    if let Some(count) = shards {
        let mut local = Vec::new();
        count_problem(count, "the count", &mut local);
        problems.extend(local.into_iter().map(|e| Problem::value("server.shards", e)));
        if let Some(Ok(ShardSpec::Fixed(fixed))) = &spec {
            if fixed.count != count {
                problems.push(Problem::setting(
                    "server.shard",
                    format!(
                        "= \"{fixed}\" names {} shards but server.shards = {count}; they must agree (server.shards is for shard = \"auto\")",
                        fixed.count
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_every_problem_is_said() {
        assert_eq!(ShardSpec::parse("auto"), Ok(ShardSpec::Auto));
        assert_eq!(
            ShardSpec::parse("1/3"),
            Ok(ShardSpec::Fixed(Shard { index: 1, count: 3 }))
        );
        assert_eq!(ShardSpec::parse("0/1").map(|s| s.to_string()), Ok("0/1".to_string()));
        let error = ShardSpec::parse("3/3").unwrap_err().to_string();
        assert!(error.contains("index 3 is not below the count 3"), "{error}");
        let error = ShardSpec::parse("0/0").unwrap_err().to_string();
        assert!(error.contains("count 0 is out of range; allowed 1..=1024"), "{error}");
        for bad in ["", "1", "a/3", "1/b", "-1/3", "+1/3", "1/3/4", "Auto", " 1/3"] {
            let error = ShardSpec::parse(bad).unwrap_err().to_string();
            assert!(error.contains("neither `auto` nor INDEX/COUNT"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn config_problems_are_prefixed_with_their_place() {
        let mut problems = Vec::new();
        config_problems(Some("2/2"), Some(0), &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].to_string().starts_with("server.shard: "), "{problems:?}");
        assert!(
            problems[1].to_string().starts_with("server.shards: the count 0"),
            "{problems:?}"
        );
        let mut problems = Vec::new();
        config_problems(Some("1/3"), Some(4), &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let mut problems = Vec::new();
        config_problems(Some("auto"), Some(3), &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
    }
}

//! Shards: one config run by several `serve` replicas, each running only the pipelines that
//! rendezvous (highest-random-weight) hashing of their names gives it.
//!
//! Every replica reads the same config and computes the same assignment on its own: for a
//! pipeline name and each shard index `0..count` it draws a weight, and the shard with the
//! highest weight owns the pipeline. No coordination, no state: a replica needs only its own
//! index and the count. Going from `N` to `N + 1` shards moves only the pipelines whose new
//! shard outweighs their old one, about `1 / (N + 1)` of them, and all of them to the new
//! shard; every other pipeline stays where it ran.
//!
//! The weight is FNV-1a (64-bit) of the name's UTF-8 bytes, mixed with the shard index by
//! SplitMix64's finaliser: fixed arithmetic, the same on every platform and Rust version
//! (unlike std's `DefaultHasher`, whose algorithm is unspecified), so replicas built
//! differently still agree. The golden values in the tests hold it there.
//!
//! Where the index and count come from is [`ShardSpec`]: `"INDEX/COUNT"`, or `"auto"`, which
//! takes the index from a StatefulSet pod's hostname (`convstream-2` is shard 2) and the count
//! from `[server] shards` or the `CONVSTREAM_SHARDS` environment variable
//! ([`resolve`] is given those values; it reads nothing itself).

use std::fmt;

/// The most shards one config may be spread over.
pub const MAX_SHARDS: usize = 1024;

/// The environment variable that gives `shard = "auto"` its count (a StatefulSet's manifest
/// sets it beside `replicas`).
pub const SHARDS_ENV: &str = "CONVSTREAM_SHARDS";

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
    })
}

/// SplitMix64's finaliser: a bijection whose every output bit depends on every input bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The weight of shard `index` for the pipeline `name`.
pub fn weight(name: &str, index: usize) -> u64 {
    let shard = mix((index as u64).wrapping_add(1).wrapping_mul(GOLDEN_GAMMA));
    mix(fnv1a(name.as_bytes()) ^ shard)
}

/// The shard (`0..count`) that owns the pipeline `name`: the highest weight, the lower index
/// on a tie. A count of 0 is taken as 1.
pub fn owner(name: &str, count: usize) -> usize {
    (0..count.max(1))
        .map(|index| (weight(name, index), index))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map_or(0, |(_, index)| index)
}

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

    /// How many shards there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether this shard runs the pipeline `name`.
    pub fn owns(&self, name: &str) -> bool {
        owner(name, self.count) == self.index
    }
}

/// `INDEX/COUNT`, as `--shard` and `[server] shard` write it.
impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

fn count_problem(count: usize, what: &str, problems: &mut Vec<String>) {
    if !(1..=MAX_SHARDS).contains(&count) {
        problems.push(format!("{what} {count} is out of range; allowed 1..={MAX_SHARDS}"));
    }
}

/// Which shard a replica is, as configured: `auto` or `INDEX/COUNT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSpec {
    /// The index from the hostname (`name-N`), the count from `[server] shards` or
    /// [`SHARDS_ENV`].
    Auto,
    /// A fixed `INDEX/COUNT`.
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
                super::limits::quoted(text)
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

/// The shard this replica is, and what is known of its siblings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The shard this replica is.
    pub shard: Shard,
    /// The pod name without its `-INDEX` (`convstream` for `convstream-1`), when the hostname
    /// has that shape: the sibling owning shard `k` is then `PREFIX-k`.
    pub pod_prefix: Option<String>,
    /// Where the index and count came from, for logs and errors.
    pub origin: String,
}

impl Placement {
    /// The pod that runs shard `index`, where the hostnames say it.
    pub fn pod_of(&self, index: usize) -> Option<String> {
        self.pod_prefix.as_ref().map(|prefix| format!("{prefix}-{index}"))
    }

    /// Where the pipeline `name` runs: `shard 2 of 3 (pod convstream-2)`.
    pub fn describe_owner(&self, name: &str) -> String {
        let index = owner(name, self.shard.count);
        match self.pod_of(index) {
            Some(pod) => format!("shard {index} of {} (pod {pod})", self.shard.count),
            None => format!("shard {index} of {}", self.shard.count),
        }
    }
}

/// A hostname's `name-N`: the name and N.
fn split_hostname(hostname: &str) -> Option<(&str, usize)> {
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
            problems.push(format!(
                "{SHARDS_ENV}=`{}` is not a number of shards",
                super::limits::quoted(text)
            ));
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
                if *count != shard.count {
                    problems.push(format!(
                        "the shard {shard} names {} shards, but {origin}; they must agree",
                        shard.count
                    ));
                }
            }
            let pod_prefix = from_hostname
                .filter(|(_, index)| *index == shard.index)
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
                (Some(name), None) => {
                    problems.push(format!(
                        "shard = \"auto\" takes the index from the hostname, but `{}` does not end in `-N` (a StatefulSet pod's name, such as convstream-2); set --shard INDEX/COUNT instead",
                        super::limits::quoted(name)
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
                    Some((count, origin)) => Some(Placement {
                        shard: Shard { index, count: *count },
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

/// Checks `[server] shard` and `shards` as written (no environment, no hostname): the
/// problems go to `problems`, each prefixed with its place.
pub(super) fn config_problems(shard: Option<&str>, shards: Option<usize>, problems: &mut Vec<String>) {
    let spec = shard.map(|text| ShardSpec::parse(text).map_err(|e| e.0));
    if let Some(Err(errors)) = &spec {
        problems.extend(errors.iter().map(|e| format!("server.shard: {e}")));
    }
    if let Some(count) = shards {
        let mut local = Vec::new();
        count_problem(count, "the count", &mut local);
        problems.extend(local.into_iter().map(|e| format!("server.shards: {e}")));
        if let Some(Ok(ShardSpec::Fixed(fixed))) = &spec {
            if fixed.count != count {
                problems.push(format!(
                    "server.shard = \"{fixed}\" names {} shards but server.shards = {count}; they must agree (server.shards is for shard = \"auto\")",
                    fixed.count
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("cam-{i:04}")).collect()
    }

    fn loads(names: &[String], count: usize) -> Vec<usize> {
        let mut loads = vec![0; count];
        for name in names {
            loads[owner(name, count)] += 1;
        }
        loads
    }

    #[test]
    fn golden_values_hold_the_hash_fixed() {
        // A change of these numbers reassigns pipelines on every deployment: not by accident.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(weight("cam1", 0), GOLDEN_WEIGHT_CAM1_0);
        let owners: Vec<usize> = ["cam1", "cam2", "cam3", "lobby", "dock-east", "gate"]
            .iter()
            .map(|name| owner(name, 3))
            .collect();
        assert_eq!(owners, GOLDEN_OWNERS_OF_3);
    }

    const GOLDEN_WEIGHT_CAM1_0: u64 = 0xa1d0_c722_d70d_9f1a;
    const GOLDEN_OWNERS_OF_3: [usize; 6] = [1, 2, 0, 2, 0, 2];

    /// Each shard's load is binomial: with M names over N shards its standard deviation is
    /// sqrt(M (1/N) (1 - 1/N)), which no per-name hash beats. 10% of the mean is 3.2 of them
    /// at 1,000 names over 2 shards, 2.2 over 3, 1.8 over 4 (and 1.6 over 5, where even a
    /// cryptographic hash misses it about half the time), so 1,000 names are held to 10%
    /// for 2 to 4 shards, and the hash's quality beyond that by a test of many names.
    #[test]
    fn one_thousand_names_spread_within_ten_percent() {
        let names = names(1000);
        for count in 2..=4 {
            let loads = loads(&names, count);
            let mean = names.len() as f64 / count as f64;
            for (index, load) in loads.iter().enumerate() {
                let off = (*load as f64 - mean).abs() / mean;
                assert!(
                    off <= 0.10,
                    "{count} shards: shard {index} has {load}, mean {mean:.1} ({loads:?})"
                );
            }
        }
    }

    /// Many names over up to 32 shards: every load within 4 standard deviations of its mean
    /// (a fair hash misses that about once in 16,000 shards), and within 10% of the mean.
    #[test]
    fn many_names_spread_as_a_fair_hash_would_over_up_to_32_shards() {
        let names: Vec<String> = (0..40_000).map(|i| format!("site{}/camera-{}", i % 37, i)).collect();
        for count in 2..=32 {
            let loads = loads(&names, count);
            let p = 1.0 / count as f64;
            let mean = names.len() as f64 * p;
            let sigma = (names.len() as f64 * p * (1.0 - p)).sqrt();
            for load in &loads {
                let off = (*load as f64 - mean).abs();
                assert!(off <= 4.0 * sigma && off <= 0.10 * mean, "{count} shards: {loads:?}");
            }
        }
    }

    #[test]
    fn growing_by_one_moves_about_one_in_n_plus_one_and_only_to_the_new_shard() {
        let names = names(1000);
        for count in 1..=8 {
            let mut moved = 0;
            for name in &names {
                let before = owner(name, count);
                let after = owner(name, count + 1);
                if before != after {
                    assert_eq!(
                        after, count,
                        "{name} moved from {before} to {after}, not to the new shard"
                    );
                    moved += 1;
                }
            }
            let expected = names.len() as f64 / (count + 1) as f64;
            let off = (moved as f64 - expected).abs() / expected;
            assert!(
                off <= 0.15,
                "{count} -> {}: {moved} moved, expected about {expected:.0}",
                count + 1
            );
        }
    }

    #[test]
    fn one_shard_owns_everything_and_owners_are_in_range() {
        for name in names(100) {
            assert_eq!(owner(&name, 1), 0);
            assert_eq!(owner(&name, 0), 0);
            assert!(owner(&name, 7) < 7);
            assert_eq!(owner(&name, 7), owner(&name, 7));
        }
    }

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
    fn auto_takes_the_index_from_the_hostname_and_the_count_from_file_or_environment() {
        let around = Surroundings {
            configured_count: None,
            env_count: Some("3"),
            hostname: Some("convstream-2"),
        };
        let placement = resolve(ShardSpec::Auto, around).unwrap();
        assert_eq!(placement.shard, Shard { index: 2, count: 3 });
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
        let fixed = ShardSpec::Fixed(Shard { index: 1, count: 3 });
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

    #[test]
    fn config_problems_are_prefixed_with_their_place() {
        let mut problems = Vec::new();
        config_problems(Some("2/2"), Some(0), &mut problems);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("server.shard: "), "{problems:?}");
        assert!(problems[1].starts_with("server.shards: the count 0"), "{problems:?}");
        let mut problems = Vec::new();
        config_problems(Some("1/3"), Some(4), &mut problems);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let mut problems = Vec::new();
        config_problems(Some("auto"), Some(3), &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
    }
}

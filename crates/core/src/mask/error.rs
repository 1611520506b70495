//! What is wrong with a mask as written ([`MaskError`], one per problem, each saying what is
//! allowed) and the nearest allowed word to a typo.

use super::limits::MAX_SIDE;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MaskError {
    #[error("empty mask spec {spec:?}; expected `name` or `name:key=value,...`")]
    EmptySpec { spec: String },
    #[error("`{pair}` is not key=value")]
    BadSpecPair { pair: String },
    #[error("{key}={value:?} is not {expected}")]
    BadValue {
        key: String,
        value: String,
        expected: String,
    },
    #[error("unknown key `{key}`{}; keys are {allowed}", did_you_mean(suggestion))]
    UnknownKey {
        key: String,
        suggestion: Option<String>,
        allowed: String,
    },
    #[error("unknown mask `{name}`{}; presets are {allowed}", did_you_mean(suggestion))]
    UnknownPreset {
        name: String,
        suggestion: Option<String>,
        allowed: String,
    },
    #[error("preset `{preset}` takes no key `{key}`; it takes {allowed}")]
    KeyNotForPreset {
        preset: String,
        key: String,
        allowed: String,
    },
    #[error("{key}: {value} is {}; mask sizes must be odd, 1..={MAX_SIDE}", side_problem(*value))]
    BadSide { key: String, value: u32 },
    #[error("{key} must be a positive finite number, got {value}")]
    NotPositive { key: String, value: f64 },
    #[error("{what} must be a finite number (NaN and infinity are not allowed)")]
    NotFinite { what: String },
    #[error("neighbours must be 4 or 8, got {value}")]
    BadNeighbours { value: u32 },
    #[error("custom mask needs exactly one of `matrix` or `file`")]
    CustomSource,
    #[error("custom mask is empty")]
    EmptyMatrix,
    #[error("matrix row {row} has {len} values but row 1 has {expected}; rows must all be the same length")]
    RaggedRow { row: usize, len: usize, expected: usize },
    #[error("matrix is {height}x{width} (height x width): {}; each side must be odd, 1..={MAX_SIDE}", shape_problem(*height, *width))]
    BadMatrixShape { height: usize, width: usize },
    #[error("matrix value at row {row}, column {col} is {value}; values must be finite")]
    NonFiniteValue { row: usize, col: usize, value: f64 },
    #[error("{origin}, line {line}: `{token}` is not a number")]
    BadMatrixNumber { origin: String, line: usize, token: String },
    #[error("{origin}: {count} more values are not numbers")]
    MoreBadNumbers { origin: String, count: usize },
    #[error("cannot read mask file {path}: {reason}")]
    File { path: String, reason: String },
    #[error("normalize = true but the coefficients sum to {sum}; a zero-sum mask (edge, Laplacian) cannot be normalised, use divisor instead or drop normalize")]
    ZeroSum { sum: f64 },
    #[error("divisor must be finite and non-zero, got {value}")]
    BadDivisor { value: f64 },
    #[error("give either divisor or normalize = true, not both")]
    DivisorAndNormalize,
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

fn side_problem(value: u32) -> &'static str {
    match value {
        0 => "zero",
        v if v as usize > MAX_SIDE => "too large",
        _ => "even",
    }
}

fn shape_problem(height: usize, width: usize) -> String {
    let side = |name: &str, n: usize| match n {
        0 => Some(format!("the {name} is zero")),
        n if n > MAX_SIDE => Some(format!("the {name} {n} is too large")),
        n if n.is_multiple_of(2) => Some(format!("the {name} {n} is even")),
        _ => None,
    };
    let problems: Vec<String> = [side("height", height), side("width", width)]
        .into_iter()
        .flatten()
        .collect();
    problems.join(" and ")
}

/// The closest of `candidates` to `word`, if it is close enough to be a likely typo.
pub fn nearest(word: &str, candidates: &[&str]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

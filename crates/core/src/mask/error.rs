//! What is wrong with a mask as written ([`MaskError`], one per problem, each saying what is
//! allowed) and the nearest allowed word to a typo.

use super::limits::MAX_SIDE;

/// One problem with a mask as written; building a mask collects every one it finds.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MaskError {
    /// An `rdiv` (FFmpeg's arithmetic) on a matrix it cannot be exact for.
    #[error("rdiv (FFmpeg's arithmetic) {reason}")]
    FfmpegArithmetic {
        /// What is wrong, and what to write instead.
        reason: String,
    },
    /// A SPEC with no preset name.
    #[error("empty mask spec {spec:?}; expected `name` or `name:key=value,...`")]
    EmptySpec {
        /// The SPEC as written (cut short).
        spec: String,
    },
    /// A SPEC part that is not `key=value`.
    #[error("`{pair}` is not key=value")]
    BadSpecPair {
        /// The part as written (quoted).
        pair: String,
    },
    /// A value that does not read as its key's type.
    #[error("{key}={value:?} is not {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value as written (cut short).
        value: String,
        /// What the key takes (`a whole number`, `a number`...).
        expected: String,
    },
    /// A key no mask takes.
    #[error("unknown key `{key}`{}; keys are {allowed}", did_you_mean(suggestion))]
    UnknownKey {
        /// The key as written (quoted).
        key: String,
        /// The closest key, when the key looks like a typo of it.
        suggestion: Option<String>,
        /// Every key, listed.
        allowed: String,
    },
    /// A preset name (or named mask) that does not exist.
    #[error("unknown mask `{name}`{}; presets are {allowed}", did_you_mean(suggestion))]
    UnknownPreset {
        /// The name as written (quoted).
        name: String,
        /// The closest name, when the name looks like a typo of it.
        suggestion: Option<String>,
        /// Every name there is, listed.
        allowed: String,
    },
    /// A key that exists but that this preset does not take.
    #[error("preset `{preset}` takes no key `{key}`; it takes {allowed}")]
    KeyNotForPreset {
        /// The preset.
        preset: String,
        /// The key it does not take.
        key: String,
        /// The keys it takes, listed.
        allowed: String,
    },
    /// A mask side that is zero, even or larger than [`MAX_SIDE`].
    #[error("{key}: {value} is {}; mask sizes must be odd, 1..={MAX_SIDE}", side_problem(*value))]
    BadSide {
        /// The key that gave it (`size`, `width`, `height`).
        key: String,
        /// The side asked for.
        value: u32,
    },
    /// A number that must be positive and finite (`sigma`, `amount`) and is not.
    #[error("{key} must be a positive finite number, got {value}")]
    NotPositive {
        /// The key.
        key: String,
        /// The value given.
        value: f64,
    },
    /// NaN or an infinity where a number is needed.
    #[error("{what} must be a finite number (NaN and infinity are not allowed)")]
    NotFinite {
        /// The key, or what the number is.
        what: String,
    },
    /// A `neighbours` other than 4 or 8.
    #[error("neighbours must be 4 or 8, got {value}")]
    BadNeighbours {
        /// The value given.
        value: u32,
    },
    /// A custom mask with both or neither of `matrix` and `file`.
    #[error("custom mask needs exactly one of `matrix` or `file`")]
    CustomSource,
    /// A custom matrix with no numbers.
    #[error("custom mask is empty")]
    EmptyMatrix,
    /// A custom matrix row of another length than the first row.
    #[error("matrix row {row} has {len} values but row 1 has {expected}; rows must all be the same length")]
    RaggedRow {
        /// The row, counted from 1.
        row: usize,
        /// Its number of values.
        len: usize,
        /// The first row's number of values.
        expected: usize,
    },
    /// A custom matrix whose sides are not odd and at most [`MAX_SIDE`].
    #[error("matrix is {height}x{width} (height x width): {}; each side must be odd, 1..={MAX_SIDE}", shape_problem(*height, *width))]
    BadMatrixShape {
        /// Its rows.
        height: usize,
        /// Its columns.
        width: usize,
    },
    /// NaN or an infinity in a custom matrix.
    #[error("matrix value at row {row}, column {col} is {value}; values must be finite")]
    NonFiniteValue {
        /// The row, counted from 1.
        row: usize,
        /// The column, counted from 1.
        col: usize,
        /// The value.
        value: f64,
    },
    /// A word in a mask file's text that is not a number.
    #[error("{origin}, line {line}: `{token}` is not a number")]
    BadMatrixNumber {
        /// Where the text came from (the file's path).
        origin: String,
        /// The line, counted from 1.
        line: usize,
        /// The word (quoted, cut short).
        token: String,
    },
    /// How many more words were not numbers, past those quoted one by one.
    #[error("{origin}: {count} more values are not numbers")]
    MoreBadNumbers {
        /// Where the text came from (the file's path).
        origin: String,
        /// How many more.
        count: usize,
    },
    /// A mask file that cannot be read.
    #[error("cannot read mask file {path}: {reason}")]
    File {
        /// The file's path (quoted).
        path: String,
        /// Why: the system's error, or that it is too large.
        reason: String,
    },
    /// `normalize = true` on coefficients that sum to zero.
    #[error("normalize = true but the coefficients sum to {sum}; a zero-sum mask (edge, Laplacian) cannot be normalised, use divisor instead or drop normalize")]
    ZeroSum {
        /// Their sum.
        sum: f64,
    },
    /// A divisor of zero, NaN or an infinity.
    #[error("divisor must be finite and non-zero, got {value}")]
    BadDivisor {
        /// The divisor given.
        value: f64,
    },
    /// Both `divisor` and `normalize = true`.
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

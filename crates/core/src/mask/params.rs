//! The user-facing description of a mask ([`MaskParams`]): the keys shared by the SPEC grammar
//! (`gaussian:size=13,sigma=2.5`) and by TOML tables (`[masks.NAME]`, `filter.mask = {..}`),
//! and how the taps are oriented ([`MaskMode`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

use super::error::{nearest, MaskError};

/// Every key a mask may carry. Which keys a preset accepts is checked when the
/// mask is built, so that one message can name the preset and its allowed keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaskParams {
    /// Preset name; absent with `matrix`/`file` means `custom`.
    pub preset: Option<String>,
    /// `size`: the side of a square mask (odd).
    pub size: Option<u32>,
    /// `width`: the columns of a rectangular `box`.
    pub width: Option<u32>,
    /// `height`: the rows of a rectangular `box`.
    pub height: Option<u32>,
    /// `sigma`: the standard deviation, in pixels, of the Gaussian `gaussian`, `unsharp` and `edge` are made of.
    pub sigma: Option<f64>,
    /// `amount`: how strongly `sharpen` and `unsharp` sharpen.
    pub amount: Option<f64>,
    /// `angle`: the direction of a `motion-blur`, in degrees counter-clockwise from horizontal.
    pub angle: Option<f64>,
    /// `neighbours`: a `laplacian` of 4 or 8 neighbours.
    pub neighbours: Option<u32>,
    /// `matrix`: a custom mask's rows, as written.
    pub matrix: Option<Vec<Vec<f64>>>,
    /// `file`: a text file holding a custom mask's rows.
    pub file: Option<PathBuf>,
    /// `divisor`: what the coefficients are divided by.
    pub divisor: Option<f64>,
    /// `normalize`: scale the coefficients so that they sum to 1.
    pub normalize: Option<bool>,
    /// `bias`: what is added to every sum, in 8-bit units (with `rdiv`, in the samples' own).
    pub bias: Option<f64>,
    /// `rdiv`: FFmpeg's arithmetic for a whole-number `custom` matrix or a gradient magnitude
    /// (`sobel`, `prewitt`, `roberts`): the exact sum (the magnitude) is multiplied by `rdiv`
    /// (a 32-bit float), then the bias (in the samples' units) and 0.5 are added and the
    /// result truncated, each step rounded once, as FFmpeg's `convolution` filter computes it.
    pub rdiv: Option<f64>,
    /// How the matrix as written is slid over the picture (default `convolve`).
    pub mode: Option<MaskMode>,
}

/// How a matrix as written is applied.
///
/// `convolve` flips it first (SciPy's `ndimage.convolve`, the textbook convolution);
/// `correlate` slides it as written, the top-left value weighing the top-left neighbour
/// (FFmpeg's `convolution` filter, OpenCV's `filter2D`, SciPy's `ndimage.correlate`).
/// The two differ only for masks that are not symmetric (shifts, gradients, emboss,
/// motion blur at an angle).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaskMode {
    #[default]
    /// Flips the matrix before sliding it (the default).
    Convolve,
    /// Slides the matrix as written.
    Correlate,
}

impl MaskMode {
    /// The mode's name as a SPEC or config writes it.
    pub fn name(self) -> &'static str {
        match self {
            MaskMode::Convolve => "convolve",
            MaskMode::Correlate => "correlate",
        }
    }
}

impl std::str::FromStr for MaskMode {
    type Err = ();
    fn from_str(text: &str) -> Result<MaskMode, ()> {
        match text {
            "convolve" | "convolution" => Ok(MaskMode::Convolve),
            "correlate" | "correlation" => Ok(MaskMode::Correlate),
            _ => Err(()),
        }
    }
}

/// Keys suggested for an unknown SPEC key (`matrix` is accepted too, in brackets).
pub const SPEC_KEYS: &[&str] = &[
    "size",
    "width",
    "height",
    "sigma",
    "amount",
    "angle",
    "neighbours",
    "file",
    "divisor",
    "normalize",
    "bias",
    "mode",
    "rdiv",
];

impl MaskParams {
    /// The preset this mask names, `custom` when it only carries a matrix or a file.
    pub fn preset_name(&self) -> &str {
        match &self.preset {
            Some(name) => name,
            None => "custom",
        }
    }

    /// Names of the keys that are set, in a fixed order (used to reject keys a preset does not take).
    pub fn keys_set(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        let mut push = |set: bool, key: &'static str| {
            if set {
                keys.push(key)
            }
        };
        push(self.size.is_some(), "size");
        push(self.width.is_some(), "width");
        push(self.height.is_some(), "height");
        push(self.sigma.is_some(), "sigma");
        push(self.amount.is_some(), "amount");
        push(self.angle.is_some(), "angle");
        push(self.neighbours.is_some(), "neighbours");
        push(self.matrix.is_some(), "matrix");
        push(self.file.is_some(), "file");
        push(self.divisor.is_some(), "divisor");
        push(self.normalize.is_some(), "normalize");
        push(self.bias.is_some(), "bias");
        push(self.mode.is_some(), "mode");
        push(self.rdiv.is_some(), "rdiv");
        keys
    }

    /// Parses `name` or `name:key=value,key=value`. Every bad key or value is reported.
    pub fn parse_spec(spec: &str) -> Result<MaskParams, Vec<MaskError>> {
        let spec = spec.trim();
        let (name, rest) = match spec.split_once(':') {
            Some((name, rest)) => (name.trim(), Some(rest)),
            None => (spec, None),
        };
        if name.is_empty() {
            return Err(vec![MaskError::EmptySpec {
                spec: spec.chars().take(crate::text::QUOTED_CHARS).collect(),
            }]);
        }
        let mut params = MaskParams {
            preset: Some(name.to_string()),
            ..MaskParams::default()
        };
        let mut errors = Vec::new();
        for pair in rest.into_iter().flat_map(split_outside_brackets) {
            let pair = pair.trim();
            if pair.is_empty() {
                continue;
            }
            let Some((key, value)) = pair.split_once('=') else {
                errors.push(MaskError::BadSpecPair {
                    pair: crate::text::quoted(pair),
                });
                continue;
            };
            if let Err(e) = params.set_key(key.trim(), value.trim()) {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(params)
        } else {
            Err(errors)
        }
    }

    fn set_key(&mut self, key: &str, value: &str) -> Result<(), MaskError> {
        fn num<T: std::str::FromStr>(key: &str, value: &str, kind: &str) -> Result<T, MaskError> {
            value.parse().map_err(|_| MaskError::BadValue {
                key: key.to_string(),
                // Shown with its control characters escaped ({:?}); cut, as every quoted value.
                value: value.chars().take(crate::text::QUOTED_CHARS).collect(),
                expected: kind.to_string(),
            })
        }
        const UINT: &str = "a whole number";
        const REAL: &str = "a number";
        match key {
            "size" => self.size = Some(num(key, value, UINT)?),
            "width" => self.width = Some(num(key, value, UINT)?),
            "height" => self.height = Some(num(key, value, UINT)?),
            "sigma" => self.sigma = Some(num(key, value, REAL)?),
            "amount" => self.amount = Some(num(key, value, REAL)?),
            "angle" => self.angle = Some(num(key, value, REAL)?),
            "neighbours" | "neighbors" => self.neighbours = Some(num(key, value, UINT)?),
            "file" => self.file = Some(PathBuf::from(value)),
            "matrix" => self.matrix = Some(parse_inline_matrix(value)?),
            "divisor" => self.divisor = Some(num(key, value, REAL)?),
            "normalize" => self.normalize = Some(num(key, value, "true or false")?),
            "bias" => self.bias = Some(num(key, value, REAL)?),
            "mode" => self.mode = Some(num(key, value, "convolve or correlate")?),
            "rdiv" => self.rdiv = Some(num(key, value, REAL)?),
            _ => {
                return Err(MaskError::UnknownKey {
                    key: crate::text::quoted(key),
                    suggestion: nearest(key, SPEC_KEYS),
                    allowed: SPEC_KEYS.join(", "),
                })
            }
        }
        Ok(())
    }
}

/// Splits `key=value,key=value` at the commas that are not inside brackets, so that
/// `matrix=[[1,2,1],[2,4,2]],normalize=true` is two pairs.
fn split_outside_brackets(text: &str) -> Vec<&str> {
    let mut pairs = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth <= 0 => {
                pairs.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    pairs.push(&text[start..]);
    pairs
}

/// `[[1,2,1],[2,4,2],[1,2,1]]`: rows in brackets, numbers split by commas (or spaces).
fn parse_inline_matrix(value: &str) -> Result<Vec<Vec<f64>>, MaskError> {
    let bad = || MaskError::BadValue {
        key: "matrix".to_string(),
        value: value.chars().take(crate::text::QUOTED_CHARS).collect(),
        expected: "rows of numbers in brackets, e.g. [[1,2,1],[2,4,2],[1,2,1]]".to_string(),
    };
    let inner = value
        .trim()
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .ok_or_else(bad)?;
    let mut rows = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let row = rest.strip_prefix('[').ok_or_else(bad)?;
        let end = row.find(']').ok_or_else(bad)?;
        let numbers = row[..end]
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse::<f64>().map_err(|_| bad()))
            .collect::<Result<Vec<f64>, MaskError>>()?;
        rows.push(numbers);
        rest = row[end + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    if rows.is_empty() {
        return Err(bad());
    }
    Ok(rows)
}

/// Writes the SPEC form; `MaskParams::parse_spec` reads it back unchanged
/// (inline matrices have no SPEC form and are written as `matrix=<h>x<w>`).
impl fmt::Display for MaskParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.preset_name())?;
        let mut parts: Vec<String> = Vec::new();
        let mut add = |key: &str, value: Option<String>| {
            if let Some(v) = value {
                parts.push(format!("{key}={v}"));
            }
        };
        add("size", self.size.map(|v| v.to_string()));
        add("width", self.width.map(|v| v.to_string()));
        add("height", self.height.map(|v| v.to_string()));
        add("sigma", self.sigma.map(|v| v.to_string()));
        add("amount", self.amount.map(|v| v.to_string()));
        add("angle", self.angle.map(|v| v.to_string()));
        add("neighbours", self.neighbours.map(|v| v.to_string()));
        add(
            "matrix",
            self.matrix
                .as_ref()
                .map(|m| format!("{}x{}", m.len(), m.first().map_or(0, Vec::len))),
        );
        add("file", self.file.as_ref().map(|p| p.display().to_string()));
        add("divisor", self.divisor.map(|v| v.to_string()));
        add("normalize", self.normalize.map(|v| v.to_string()));
        add("bias", self.bias.map(|v| v.to_string()));
        add("mode", self.mode.map(|v| v.name().to_string()));
        add("rdiv", self.rdiv.map(|v| format!("{v:?}")));
        if !parts.is_empty() {
            write!(f, ":{}", parts.join(","))?;
        }
        Ok(())
    }
}

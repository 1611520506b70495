//! The [`Mask`] engines apply: built from its parameters (a preset, a custom matrix from a
//! table or a file), scaled (divisor, normalize), its rank-one factors found, and described.
//! An integer matrix also keeps its whole-number taps and divisor (`whole.rs`), which is what
//! engines sum and divide by.

use std::fmt;
use std::path::Path;

use super::error::{nearest, MaskError};
use super::factors::{rank_one_factors, SeparableFactors};
use super::limits::{MAX_MASK_FILE_BYTES, MAX_SIDE};
use super::params::{MaskMode, MaskParams};
use super::presets::{self, PRESETS};
use super::whole::WholeTaps;

/// Universal keys every mask accepts.
const UNIVERSAL_KEYS: &[&str] = &["divisor", "normalize", "bias", "mode"];

/// A validated mask, ready for an engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Mask {
    width: usize,
    height: usize,
    /// Row-major, convolution orientation, after divisor/normalisation.
    coefficients: Vec<f32>,
    bias: f32,
    factors: Option<SeparableFactors>,
    /// A gradient magnitude's second matrix (row-major, convolution orientation, the same
    /// size): the result is `sqrt(a^2 + b^2) + bias` of the two sums `a` and `b`.
    second: Option<Vec<f32>>,
    /// FFmpeg's arithmetic (`rdiv`): the coefficients are whole numbers whose sum is exact,
    /// and the result is `trunc(sum * rdiv + bias + 0.5)`, each step an f32 rounded once.
    ffmpeg_rdiv: Option<f32>,
    /// An integer matrix as engines sum it: whole taps, each sum divided by the divisor.
    whole: Option<WholeTaps>,
    /// The SPEC it came from, for logs and `masks show`.
    description: String,
    /// What is legal but probably not meant (a custom matrix that brightens the picture).
    warnings: Vec<String>,
}

impl Mask {
    /// Builds a mask from its parameters. `base_dir` resolves a relative `file`.
    /// Every problem is reported, not just the first.
    pub fn build(params: &MaskParams, base_dir: Option<&Path>) -> Result<Mask, Vec<MaskError>> {
        let mut errors = Vec::new();
        let name = params.preset_name();
        let Some(preset) = presets::find(name) else {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            errors.push(MaskError::UnknownPreset {
                name: crate::text::quoted(name),
                suggestion: nearest(name, &names),
                allowed: names.join(", "),
            });
            presets::check_sides_of_any_preset(params, &mut errors);
            return Err(errors);
        };
        for key in params.keys_set() {
            if !preset.keys.contains(&key) && !UNIVERSAL_KEYS.contains(&key) {
                let allowed: Vec<&str> = preset.keys.iter().chain(UNIVERSAL_KEYS).copied().collect();
                errors.push(MaskError::KeyNotForPreset {
                    preset: preset.name.to_string(),
                    key: key.to_string(),
                    allowed: allowed.join(", "),
                });
            }
        }
        let raw = if preset.name == "custom" {
            custom_matrix(params, base_dir, &mut errors).map(presets::RawMask::dense)
        } else {
            presets::build(preset.name, params, &mut errors)
        };
        let ffmpeg_rdiv = params
            .rdiv
            .and_then(|rdiv| ffmpeg_rdiv(params, rdiv, raw.as_ref(), &mut errors));
        // FFmpeg's arithmetic sums the whole taps and multiplies by rdiv: nothing to divide by.
        let divisor = match params.rdiv {
            Some(_) => Some(1.0),
            None => divisor(params, raw.as_ref(), &mut errors),
        };
        let bias = params.bias.unwrap_or(presets::default_bias(preset.name));
        if !bias.is_finite() {
            errors.push(MaskError::NotFinite { what: "bias".into() });
        } else if !(bias as f32).is_finite() {
            // Engines add the bias in f32: a larger one would become infinite there.
            errors.push(MaskError::NotFinite {
                what: "bias, within the range of a 32-bit float (about ±3.4e38),".into(),
            });
        }
        let (Some(raw), Some(divisor), true) = (raw, divisor, errors.is_empty()) else {
            return Err(errors);
        };
        // FFmpeg's arithmetic divides by rdiv, which the brightness warning does not see.
        let warnings = if preset.name == "custom" && params.rdiv.is_none() {
            custom_sum_warning(params, &raw).into_iter().collect()
        } else {
            Vec::new()
        };
        let raw = match params.mode.unwrap_or_default() {
            MaskMode::Convolve => raw,
            // Stored in convolution orientation: a matrix meant as correlation taps is the
            // same matrix turned half way.
            MaskMode::Correlate => raw.turned_half_way(),
        };
        let height = raw.rows.len();
        let width = raw.rows[0].len();
        let scale = 1.0 / divisor;
        // FFmpeg's arithmetic keeps its own final step over the (whole) coefficients.
        let whole = match ffmpeg_rdiv {
            Some(_) => None,
            None => WholeTaps::new(&raw.rows, raw.second.as_deref(), divisor),
        };
        let coefficients: Vec<f32> = raw.rows.iter().flatten().map(|v| (v * scale) as f32).collect();
        // Parameters can be finite yet give taps that are not (a sigma so small that 2*sigma^2
        // underflows, a divisor so small the taps overflow f32).
        if coefficients.iter().any(|c| !c.is_finite()) {
            return Err(vec![MaskError::NotFinite {
                what: "every mask coefficient (after sigma, divisor or normalize are applied)".into(),
            }]);
        }
        let second: Option<Vec<f32>> = raw
            .second
            .as_ref()
            .map(|rows| rows.iter().flatten().map(|v| (v * scale) as f32).collect());
        let factors = match (&whole, raw.factors) {
            // FFmpeg sums every tap of a pixel in one pass: keep the dense order.
            _ if ffmpeg_rdiv.is_some() => None,
            // Engines take the whole factors: these are the same with the scale on the row.
            (Some(whole), _) => whole.factors.as_ref().map(|f| SeparableFactors {
                column: f.column.clone(),
                row: f.row.iter().map(|v| (f64::from(*v) * scale) as f32).collect(),
            }),
            // The scale goes on the row factor; presets' factors are exact, so keep them.
            (None, Some((col, row))) => Some(SeparableFactors {
                column: col.iter().map(|v| *v as f32).collect(),
                row: row.iter().map(|v| (v * scale) as f32).collect(),
            }),
            // A gradient magnitude is two convolutions and a square root: never one pass.
            (None, None) if second.is_some() => None,
            (None, None) => rank_one_factors(&coefficients, height, width),
        };
        let description = params.to_string();
        Ok(Mask {
            width,
            height,
            coefficients,
            bias: bias as f32,
            factors,
            second,
            ffmpeg_rdiv,
            whole,
            description,
            warnings,
        })
    }

    /// Parses a SPEC and builds it (relative files resolve from the working directory).
    pub fn from_spec(spec: &str) -> Result<Mask, Vec<MaskError>> {
        Mask::build(&MaskParams::parse_spec(spec)?, None)
    }

    /// A mask from explicit coefficients (row-major, convolution orientation).
    /// Panics if the sizes do not match; for tests and internal use.
    pub fn from_coefficients(width: usize, height: usize, coefficients: Vec<f32>, bias: f32) -> Mask {
        assert_eq!(
            width * height,
            coefficients.len(),
            "coefficient count must be width*height"
        );
        let rows: Vec<Vec<f64>> = coefficients
            .chunks(width.max(1))
            .map(|row| row.iter().map(|v| f64::from(*v)).collect())
            .collect();
        let whole = WholeTaps::new(&rows, None, 1.0);
        let factors = match &whole {
            Some(whole) => whole.factors.clone(),
            None => rank_one_factors(&coefficients, height, width),
        };
        Mask {
            width,
            height,
            coefficients,
            bias,
            factors,
            second: None,
            ffmpeg_rdiv: None,
            whole,
            description: format!("custom:matrix={height}x{width}"),
            warnings: Vec::new(),
        }
    }

    /// Columns of the matrix (odd).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Rows of the matrix (odd).
    pub fn height(&self) -> usize {
        self.height
    }
    /// What is added to every sum, in 8-bit units (engines scale it to the samples' depth).
    pub fn bias(&self) -> f32 {
        self.bias
    }

    /// The bias integer samples of `depth` take: the 8-bit bias scaled to the depth (128 is
    /// mid-grey at every depth), except under FFmpeg's arithmetic (`rdiv`), whose bias is in
    /// the samples' own units, as FFmpeg's `convolution` adds it (`0bias=128` at 10 bits
    /// adds 128, not 512).
    pub fn bias_at(&self, depth: crate::frame::SampleDepth) -> f32 {
        match self.ffmpeg_rdiv {
            Some(_) => self.bias,
            None => self.bias * depth.bias_scale(),
        }
    }
    /// The coefficients, row-major, in convolution orientation, after `divisor` or `normalize`.
    pub fn coefficients(&self) -> &[f32] {
        &self.coefficients
    }
    /// The column and row factors of a rank-one matrix; `None` when it has none.
    pub fn factors(&self) -> Option<&SeparableFactors> {
        self.factors.as_ref()
    }

    /// What engines divide each sum (each gradient magnitude) by before the bias: an integer
    /// matrix's divisor (its taps are summed whole), else 1 (the taps carry the scale).
    pub fn divisor(&self) -> f32 {
        self.whole.as_ref().map_or(1.0, |w| w.divisor)
    }

    /// The coefficients engines sum: an integer matrix's whole numbers as written (before
    /// [`Mask::divisor`]), else [`Mask::coefficients`].
    pub fn summed_coefficients(&self) -> &[f32] {
        self.whole.as_ref().map_or(&self.coefficients, |w| &w.coefficients)
    }

    /// The factors engines sum with (whole numbers for an integer matrix).
    pub fn summed_factors(&self) -> Option<&SeparableFactors> {
        match &self.whole {
            Some(whole) => whole.factors.as_ref(),
            None => self.factors.as_ref(),
        }
    }

    /// A gradient magnitude's second matrix as engines sum it.
    pub fn summed_second(&self) -> Option<&[f32]> {
        match &self.whole {
            Some(whole) => whole.second.as_deref(),
            None => self.second.as_deref(),
        }
    }
    /// Whether the coefficients sum to 0 (edge detectors, Laplacians, gradients): the
    /// result of a flat area is the bias alone.
    pub fn is_zero_sum(&self) -> bool {
        let sum: f64 = self.coefficients.iter().map(|c| f64::from(*c)).sum();
        let magnitude: f64 = self.coefficients.iter().map(|c| f64::from(c.abs())).sum();
        sum.abs() <= 1e-6 * magnitude.max(f64::MIN_POSITIVE)
    }

    /// Whether the mask gives every sample back unchanged: a single 1 at the centre, no
    /// bias. Engines may pass such a plane through without a pass (the sum of every pixel
    /// is its own value, exactly).
    pub fn is_identity(&self) -> bool {
        let centre = (self.height / 2) * self.width + self.width / 2;
        self.second.is_none()
            && self.bias == 0.0
            && self.ffmpeg_rdiv.is_none_or(|rdiv| rdiv == 1.0)
            && self
                .coefficients
                .iter()
                .enumerate()
                .all(|(i, c)| *c == if i == centre { 1.0 } else { 0.0 })
    }

    /// FFmpeg's `rdiv`, when the mask takes FFmpeg's arithmetic (see [`MaskParams::rdiv`]).
    pub fn ffmpeg_rdiv(&self) -> Option<f32> {
        self.ffmpeg_rdiv
    }

    /// Whether every coefficient is 0 (`neutral`): every sample becomes the bias alone.
    pub fn is_constant(&self) -> bool {
        self.second.is_none() && self.coefficients.iter().all(|c| *c == 0.0)
    }

    /// Whether the matrix has rank one, so a row pass and a column pass can replace the dense one.
    pub fn is_separable(&self) -> bool {
        self.factors.is_some()
    }
    /// The SPEC the mask came from, for logs and `masks show`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// What the mask does that is legal but probably not meant, with the fix.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether `other` gives the same pixels: the same numbers, however each was written
    /// (`box` and `box:size=3` are one mask).
    pub fn filters_like(&self, other: &Mask) -> bool {
        (self.width, self.height, self.bias) == (other.width, other.height, other.bias)
            && self.coefficients == other.coefficients
            && self.factors == other.factors
            && self.second == other.second
            && self.ffmpeg_rdiv == other.ffmpeg_rdiv
            && self.whole == other.whole
    }

    /// The same mask described differently (a named mask shows its name in logs).
    pub fn with_description(self, description: impl Into<String>) -> Mask {
        Mask {
            description: description.into(),
            ..self
        }
    }

    /// The same mask without its factors, so that engines take the dense path.
    pub fn dense_only(&self) -> Mask {
        Mask {
            factors: None,
            whole: self.whole.clone().map(|whole| WholeTaps { factors: None, ..whole }),
            ..self.clone()
        }
    }

    /// Whether this is a gradient magnitude: two matrices, `sqrt(a^2 + b^2)`.
    pub fn is_magnitude(&self) -> bool {
        self.second.is_some()
    }

    /// A gradient magnitude's second matrix (convolution orientation).
    pub fn second_coefficients(&self) -> Option<&[f32]> {
        self.second.as_deref()
    }

    /// A gradient magnitude's second matrix as correlation taps (see
    /// [`Mask::correlation_taps`]).
    pub fn second_correlation_taps(&self) -> Option<Vec<f32>> {
        self.summed_second().map(|c| c.iter().rev().copied().collect())
    }

    /// The summed coefficients rotated by 180 degrees: the correlation taps engines slide over
    /// the image, `out[y][x] = sum taps[i][j] * in[y + i - height/2][x + j - width/2]`, each
    /// sum then divided by [`Mask::divisor`].
    pub fn correlation_taps(&self) -> Vec<f32> {
        self.summed_coefficients().iter().rev().copied().collect()
    }

    /// The summed factors as correlation taps (each reversed), column first.
    pub fn correlation_factors(&self) -> Option<(Vec<f32>, Vec<f32>)> {
        self.summed_factors().map(|f| {
            (
                f.column.iter().rev().copied().collect(),
                f.row.iter().rev().copied().collect(),
            )
        })
    }
}

impl fmt::Display for Mask {
    /// The matrix as applied, one row per line, then the bias and separability.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} ({}x{}, width x height)",
            self.description, self.width, self.height
        )?;
        let matrix = |f: &mut fmt::Formatter<'_>, coefficients: &[f32]| -> fmt::Result {
            for row in coefficients.chunks(self.width) {
                let cells: Vec<String> = row.iter().map(|v| format!("{v:>11.6}")).collect();
                writeln!(f, "  {}", cells.join(" "))?;
            }
            Ok(())
        };
        matrix(f, &self.coefficients)?;
        if let Some(second) = &self.second {
            writeln!(f, "and, for the magnitude sqrt(a^2 + b^2) of the two sums:")?;
            matrix(f, second)?;
        }
        writeln!(f, "bias: {}", self.bias)?;
        if self.divisor() != 1.0 {
            writeln!(
                f,
                "applied as: the whole numbers above times {0}, each sum divided by {0} (exact halves round away from zero)",
                self.divisor()
            )?;
        }
        writeln!(f, "sum: {}", self.coefficients.iter().map(|v| *v as f64).sum::<f64>())?;
        match &self.factors {
            Some(fac) => {
                let fmt_vec = |v: &[f32]| v.iter().map(|x| format!("{x:.6}")).collect::<Vec<_>>().join(" ");
                writeln!(f, "separable: yes")?;
                writeln!(f, "  column factor: {}", fmt_vec(&fac.column))?;
                write!(f, "  row factor:    {}", fmt_vec(&fac.row))
            }
            None => write!(f, "separable: no"),
        }
    }
}

fn custom_matrix(params: &MaskParams, base_dir: Option<&Path>, errors: &mut Vec<MaskError>) -> Option<Vec<Vec<f64>>> {
    let rows = match (&params.matrix, &params.file) {
        (Some(rows), None) => rows.clone(),
        (None, Some(file)) => {
            let path = match base_dir {
                Some(dir) if file.is_relative() => dir.join(file),
                _ => file.clone(),
            };
            let text = match read_mask_file(&path) {
                Ok(text) => text,
                Err(reason) => {
                    errors.push(MaskError::File {
                        path: crate::text::quoted(&path.display().to_string()),
                        reason,
                    });
                    return None;
                }
            };
            match presets::parse_matrix_text(&text, &path.display().to_string()) {
                Ok(rows) => rows,
                Err(mut e) => {
                    errors.append(&mut e);
                    return None;
                }
            }
        }
        _ => {
            errors.push(MaskError::CustomSource);
            return None;
        }
    };
    let before = errors.len();
    let Some(first) = rows.first() else {
        errors.push(MaskError::EmptyMatrix);
        return None;
    };
    let width = first.len();
    for (i, row) in rows.iter().enumerate() {
        if row.len() != width {
            errors.push(MaskError::RaggedRow {
                row: i + 1,
                len: row.len(),
                expected: width,
            });
        }
        for (j, v) in row.iter().enumerate() {
            if !v.is_finite() {
                errors.push(MaskError::NonFiniteValue {
                    row: i + 1,
                    col: j + 1,
                    value: *v,
                });
            }
        }
    }
    let height = rows.len();
    let bad_side = |n: usize| n == 0 || n.is_multiple_of(2) || n > MAX_SIDE;
    if errors.len() == before && (bad_side(width) || bad_side(height)) {
        errors.push(MaskError::BadMatrixShape { height, width });
    }
    (errors.len() == before).then_some(rows)
}

/// Reads a mask file: only a regular file (not a device, FIFO or folder, which could block
/// or never end) of at most [`MAX_MASK_FILE_BYTES`], checked before and while reading.
fn read_mask_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let metadata = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err("not a regular file; a mask file is a text file of numbers".to_string());
    }
    let too_large = || format!("larger than {MAX_MASK_FILE_BYTES} bytes; the largest mask is {MAX_SIDE}x{MAX_SIDE}");
    if metadata.len() > MAX_MASK_FILE_BYTES {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    // Files such as those in /proc report a size of 0: the limit holds while reading too.
    let mut bytes = Vec::new();
    file.take(MAX_MASK_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_MASK_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text; a mask file is a text file of numbers".to_string())
}

/// A custom matrix applied as written (no divisor, no normalize) whose sum is neither 0
/// (an edge detector) nor 1 (keeps brightness) scales the picture's brightness by its sum:
/// FFmpeg's `convolution` filter would divide by the sum, so a kernel ported from there
/// comes out too bright (or dark) without a word.
fn custom_sum_warning(params: &MaskParams, raw: &presets::RawMask) -> Option<String> {
    if params.divisor.is_some() || params.normalize.is_some() {
        return None;
    }
    let sum: f64 = raw.rows.iter().flatten().sum();
    let magnitude: f64 = raw.rows.iter().flatten().map(|v| v.abs()).sum();
    let near = |target: f64| (sum - target).abs() <= 1e-6 * magnitude.max(1.0);
    if near(0.0) || near(1.0) {
        return None;
    }
    Some(format!(
        "the custom matrix sums to {sum}, so it scales brightness by {sum}; \
         add divisor={sum} (or normalize=true) to keep brightness as FFmpeg's convolution filter does, \
         or divisor=1 to keep the matrix as it is and silence this warning"
    ))
}

/// What the coefficients are divided by: the divisor (times the preset's own, a box's w x h),
/// the sum with normalize, else the preset's own divisor (1 for most).
fn divisor(params: &MaskParams, raw: Option<&presets::RawMask>, errors: &mut Vec<MaskError>) -> Option<f64> {
    match (params.divisor, params.normalize.unwrap_or(false)) {
        (Some(_), true) => {
            errors.push(MaskError::DivisorAndNormalize);
            None
        }
        (Some(d), false) => {
            if d.is_finite() && d != 0.0 {
                Some(d * raw.map_or(1.0, |r| r.divisor))
            } else {
                errors.push(MaskError::BadDivisor { value: d });
                None
            }
        }
        (None, true) => {
            let sum: f64 = raw?.rows.iter().flatten().sum();
            let magnitude: f64 = raw?.rows.iter().flatten().map(|v| v.abs()).sum();
            if sum.abs() <= 1e-9 * magnitude.max(1e-300) {
                errors.push(MaskError::ZeroSum { sum });
                None
            } else {
                Some(sum)
            }
        }
        (None, false) => Some(raw.map_or(1.0, |r| r.divisor)),
    }
}

/// FFmpeg's `rdiv` for a `custom` matrix (its `convolution` filter's arithmetic), or `None`
/// with the problems pushed: whole-number taps whose f32 sums stay exact at 8 bits, no
/// `divisor` or `normalize` beside it. An `rdiv` of 0 is FFmpeg's default, 1 / the taps' sum
/// (1 when they sum to 0), computed as FFmpeg computes it.
fn ffmpeg_rdiv(
    params: &MaskParams,
    rdiv: f64,
    raw: Option<&presets::RawMask>,
    errors: &mut Vec<MaskError>,
) -> Option<f32> {
    let mut refuse = |reason: &str| {
        errors.push(MaskError::FfmpegArithmetic {
            reason: reason.to_string(),
        });
        None
    };
    if params.divisor.is_some() || params.normalize.is_some() {
        return refuse("takes the place of divisor and normalize: give one of them");
    }
    if !(rdiv.is_finite() && rdiv >= 0.0 && (rdiv as f32).is_finite()) {
        return refuse("must be a number from 0 (1 / the sum of the taps, FFmpeg's default) up");
    }
    let taps: Vec<f64> = raw?.rows.iter().flatten().copied().collect();
    if taps.iter().any(|t| t.fract() != 0.0) {
        return refuse("needs whole-number taps (FFmpeg reads its matrices as integers)");
    }
    // Every partial sum of 8-bit samples stays below 2^24, so f32 holds it exactly.
    let magnitude: f64 = taps.iter().map(|t| t.abs()).sum();
    if magnitude * 255.0 > f64::from(1u32 << 24) {
        return refuse("needs taps whose magnitudes sum to at most 65793 (exact f32 sums of 8-bit samples)");
    }
    if rdiv != 0.0 {
        return Some(rdiv as f32);
    }
    // FFmpeg sums the taps in a float and takes 1. / sum in double (its `param_init`).
    let sum = taps.iter().fold(0f32, |sum, t| sum + *t as f32);
    let sum = if sum == 0.0 { 1.0 } else { sum };
    Some((1.0 / f64::from(sum)) as f32)
}

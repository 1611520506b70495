//! The built-in masks: their parameters, defaults and coefficients.
//!
//! Matrices are written in convolution orientation (as `scipy.ndimage.convolve`
//! takes them): the engine flips them before sliding them over the image.

use super::error::MaskError;
use super::limits::MAX_SIDE;
use super::params::MaskParams;

/// One preset as listed by `convstream masks`.
pub struct Preset {
    /// The name a SPEC starts with.
    pub name: &'static str,
    /// Keys the preset takes besides the universal `divisor`, `normalize` and `bias`.
    pub keys: &'static [&'static str],
    /// One line on what it does and its keys' defaults.
    pub summary: &'static str,
}

/// Every preset, in the order `convstream masks` lists them.
pub const PRESETS: &[Preset] = &[
    Preset { name: "identity", keys: &["size"], summary: "copies the plane (size: odd, default 1)" },
    Preset { name: "box", keys: &["size", "width", "height"], summary: "mean of a size x size (or width x height) window, default 3; separable" },
    Preset { name: "gaussian", keys: &["size", "sigma"], summary: "Gaussian blur, the coefficients of cv2.getGaussianKernel; size default from sigma (2*ceil(3*sigma)+1) or 5; without sigma, OpenCV's fixed taps up to size 7 and its sigma from size beyond; separable" },
    Preset { name: "sharpen", keys: &["amount"], summary: "3x3 sharpen: identity - amount * (4-neighbour Laplacian), amount default 1" },
    Preset { name: "unsharp", keys: &["size", "sigma", "amount"], summary: "unsharp mask: (1+amount)*identity - amount*gaussian(size, sigma); size 5, amount 1 by default" },
    Preset { name: "laplacian", keys: &["neighbours"], summary: "3x3 Laplacian, neighbours 4 (default) or 8" },
    Preset { name: "sobel", keys: &["rdiv"], summary: "3x3 Sobel gradient magnitude sqrt(gx^2 + gy^2), 0..1443 for 8-bit: divisor scales it (divisor=4 fits 0..255)" },
    Preset { name: "prewitt", keys: &["rdiv"], summary: "3x3 Prewitt gradient magnitude sqrt(gx^2 + gy^2), 0..1082 for 8-bit: divisor scales it" },
    Preset { name: "roberts", keys: &["rdiv"], summary: "FFmpeg's roberts: magnitude sqrt(a^2 + b^2) of a = up-left - up and b = centre - left, 0..361 for 8-bit: divisor scales it" },
    Preset { name: "sobel-x", keys: &[], summary: "3x3 Sobel, horizontal gradient; separable" },
    Preset { name: "sobel-y", keys: &[], summary: "3x3 Sobel, vertical gradient; separable" },
    Preset { name: "prewitt-x", keys: &[], summary: "3x3 Prewitt, horizontal gradient; separable" },
    Preset { name: "prewitt-y", keys: &[], summary: "3x3 Prewitt, vertical gradient; separable" },
    Preset { name: "emboss", keys: &[], summary: "3x3 emboss (sums to 1, keeps brightness)" },
    Preset { name: "motion-blur", keys: &["size", "angle"], summary: "line of size taps (default 9) through the centre at angle degrees (default 0, counter-clockwise from horizontal), each 1/size" },
    Preset { name: "edge", keys: &["size", "sigma"], summary: "Laplacian of Gaussian edge detector, zero-sum, positive lobe sums to 1; size 9, sigma 1.4 by default" },
    Preset { name: "neutral", keys: &[], summary: "mid-grey: every sample becomes 128 (a 1x1 zero mask, bias 128 unless given); for chroma, a grey-scale picture" },
    Preset { name: "custom", keys: &["matrix", "file", "rdiv"], summary: "your own matrix: inline `matrix = [[..],..]` or a text `file` (rows per line, numbers split by spaces or commas, # comments); `rdiv` takes FFmpeg's arithmetic" },
];

/// Coefficients before divisor/normalisation, with exact 1D factors when the preset knows them.
pub struct RawMask {
    pub rows: Vec<Vec<f64>>,
    /// (column factor of length height, row factor of length width): rows[i][j] == col[i] * row[j].
    pub factors: Option<(Vec<f64>, Vec<f64>)>,
    /// A gradient magnitude's second matrix (the same size): the result is
    /// sqrt(a^2 + b^2) of the two sums.
    pub second: Option<Vec<Vec<f64>>>,
    /// What the rows are divided by before any `divisor` the SPEC gives: a box's w x h (its
    /// rows are ones, so engines sum them whole and divide each sum once), else 1.
    pub divisor: f64,
}

impl RawMask {
    pub fn dense(rows: Vec<Vec<f64>>) -> Self {
        RawMask {
            rows,
            factors: None,
            second: None,
            divisor: 1.0,
        }
    }

    /// The gradient magnitude of `x` and its transpose (the vertical gradient).
    fn magnitude(x: Vec<Vec<f64>>) -> Self {
        let y = (0..x[0].len()).map(|j| x.iter().map(|row| row[j]).collect()).collect();
        RawMask {
            rows: x,
            factors: None,
            second: Some(y),
            divisor: 1.0,
        }
    }

    /// The gradient magnitude of two matrices of one size: sqrt(a^2 + b^2) of their sums.
    fn pair(a: Vec<Vec<f64>>, b: Vec<Vec<f64>>) -> Self {
        RawMask {
            rows: a,
            factors: None,
            second: Some(b),
            divisor: 1.0,
        }
    }

    /// The same mask turned by 180 degrees (a convolution's matrix as correlation taps, or
    /// back): rows and columns both reversed, factors and second matrix alike.
    pub fn turned_half_way(self) -> Self {
        let turn = |rows: Vec<Vec<f64>>| -> Vec<Vec<f64>> {
            rows.into_iter()
                .rev()
                .map(|row| row.into_iter().rev().collect())
                .collect()
        };
        RawMask {
            rows: turn(self.rows),
            factors: self
                .factors
                .map(|(col, row)| (col.into_iter().rev().collect(), row.into_iter().rev().collect())),
            second: self.second.map(turn),
            divisor: self.divisor,
        }
    }

    fn separable(col: Vec<f64>, row: Vec<f64>) -> Self {
        let rows = col.iter().map(|c| row.iter().map(|r| c * r).collect()).collect();
        RawMask {
            rows,
            factors: Some((col, row)),
            second: None,
            divisor: 1.0,
        }
    }

    /// The same rows, each sum divided by `divisor`.
    fn over(self, divisor: f64) -> Self {
        RawMask { divisor, ..self }
    }
}

/// The bias a preset adds when the SPEC gives none: mid-grey for `neutral`, else 0.
pub fn default_bias(name: &str) -> f64 {
    if name == "neutral" {
        128.0
    } else {
        0.0
    }
}

pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The sides a mask of any preset would refuse (`size = 4`), for a mask whose preset is not
/// known: said with the unknown name, so that fixing the name does not reveal a second
/// problem.
pub fn check_sides_of_any_preset(p: &MaskParams, errors: &mut Vec<MaskError>) {
    for (key, side) in [("size", p.size), ("width", p.width), ("height", p.height)] {
        if let Some(side) = side {
            check_side(key, side, errors);
        }
    }
}

fn check_side(key: &str, value: u32, errors: &mut Vec<MaskError>) -> usize {
    if value == 0 || value.is_multiple_of(2) || value as usize > MAX_SIDE {
        errors.push(MaskError::BadSide {
            key: key.to_string(),
            value,
        });
    }
    value as usize
}

fn check_positive(key: &str, value: f64, errors: &mut Vec<MaskError>) -> f64 {
    if !(value.is_finite() && value > 0.0) {
        errors.push(MaskError::NotPositive {
            key: key.to_string(),
            value,
        });
    }
    value
}

fn check_finite(key: &str, value: f64, errors: &mut Vec<MaskError>) -> f64 {
    if !value.is_finite() {
        errors.push(MaskError::NotFinite { what: key.to_string() });
    }
    value
}

/// OpenCV's fixed Gaussians for 1 to 9 taps, which `cv2.getGaussianKernel` (and so
/// `cv2.GaussianBlur`) takes when no sigma is given.
const SMALL_GAUSSIANS: [&[f64]; 5] = [
    &[1.0],
    &[0.25, 0.5, 0.25],
    &[0.0625, 0.25, 0.375, 0.25, 0.0625],
    &[0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125],
    &[
        4.0 / 256.0,
        13.0 / 256.0,
        30.0 / 256.0,
        51.0 / 256.0,
        60.0 / 256.0,
        51.0 / 256.0,
        30.0 / 256.0,
        13.0 / 256.0,
        4.0 / 256.0,
    ],
];

/// Normalised 1D Gaussian of `size` taps, exactly as `cv2.getGaussianKernel(size, sigma)`:
/// without a sigma, OpenCV's fixed table up to 9 taps and its default sigma beyond.
fn gaussian_1d(size: usize, sigma: Option<f64>) -> Vec<f64> {
    if sigma.is_none() && size % 2 == 1 && size <= 9 {
        return SMALL_GAUSSIANS[size / 2].to_vec();
    }
    let sigma = sigma.unwrap_or_else(|| default_sigma(size));
    let scale = -0.5 / (sigma * sigma);
    let centre = (size as f64 - 1.0) * 0.5;
    let taps: Vec<f64> = (0..size).map(|i| (scale * (i as f64 - centre).powi(2)).exp()).collect();
    let sum: f64 = taps.iter().sum();
    taps.into_iter().map(|t| t / sum).collect()
}

/// OpenCV's default sigma for a Gaussian of `size` taps.
fn default_sigma(size: usize) -> f64 {
    0.3 * ((size as f64 - 1.0) * 0.5 - 1.0) + 0.8
}

/// Size and sigma of a Gaussian-shaped preset, the size derived from sigma when missing;
/// a missing sigma stays missing (OpenCV derives it from the size, or takes a fixed table).
fn gaussian_shape(p: &MaskParams, default_size: u32, errors: &mut Vec<MaskError>) -> (usize, Option<f64>) {
    let sigma = p.sigma.map(|s| check_positive("sigma", s, errors));
    let size = match (p.size, sigma) {
        (Some(size), _) => check_side("size", size, errors),
        (None, Some(s)) if s.is_finite() && s > 0.0 => ((2.0 * (3.0 * s).ceil() + 1.0) as usize).min(MAX_SIDE),
        _ => default_size as usize,
    };
    (size.max(1), sigma)
}

/// The taps of a line of `size` samples through the centre of a `size` x `size` grid at
/// `angle` degrees (counter-clockwise from horizontal): one cell per step along the line's
/// longer axis (a digital line, as `cv2.line` draws it), so every angle gets `size` taps.
fn motion_line(size: usize, angle_degrees: f64) -> Vec<Vec<f64>> {
    let (sin, cos) = angle_degrees.to_radians().sin_cos();
    let c = (size / 2) as isize;
    let mut rows = vec![vec![0.0; size]; size];
    for step in -c..=c {
        // (dx, dy) with dy pointing up; the longer axis advances one cell a step.
        let (dx, dy) = if cos.abs() >= sin.abs() {
            (step as f64, step as f64 * sin / cos)
        } else {
            (step as f64 * cos / sin, step as f64)
        };
        let x = (c + dx.round() as isize) as usize;
        let y = (c - dy.round() as isize) as usize;
        rows[y][x] = 1.0 / size as f64;
    }
    rows
}

fn delta(height: usize, width: usize) -> Vec<Vec<f64>> {
    let mut rows = vec![vec![0.0; width]; height];
    if height > 0 && width > 0 {
        rows[height / 2][width / 2] = 1.0;
    }
    rows
}

/// Builds the coefficients of a preset other than `custom`. Errors are pushed, not returned,
/// so that a caller can report every problem of a mask at once.
pub fn build(name: &str, p: &MaskParams, errors: &mut Vec<MaskError>) -> Option<RawMask> {
    let before = errors.len();
    let raw = match name {
        "identity" => {
            let size = check_side("size", p.size.unwrap_or(1), errors);
            let mut col = vec![0.0; size];
            if size > 0 {
                col[size / 2] = 1.0;
            }
            RawMask::separable(col.clone(), col)
        }
        "box" => {
            // `size` is checked once even when both sides come from it.
            let size = match p.size {
                Some(size) if p.width.is_none() || p.height.is_none() => check_side("size", size, errors),
                _ => 3,
            };
            let width = p.width.map_or(size, |w| check_side("width", w, errors));
            let height = p.height.map_or(size, |h| check_side("height", h, errors));
            // Ones over w x h: the window's exact sum divided once (cv2.blur's mean), rather
            // than taps of 1 / (w x h) that each round.
            RawMask::separable(vec![1.0; height], vec![1.0; width]).over((width * height) as f64)
        }
        "gaussian" => {
            let (size, sigma) = gaussian_shape(p, 5, errors);
            let g = gaussian_1d(size, sigma);
            RawMask::separable(g.clone(), g)
        }
        "neutral" => RawMask::dense(vec![vec![0.0]]),
        "sharpen" => {
            let a = check_finite("amount", p.amount.unwrap_or(1.0), errors);
            RawMask::dense(vec![
                vec![0.0, -a, 0.0],
                vec![-a, 1.0 + 4.0 * a, -a],
                vec![0.0, -a, 0.0],
            ])
        }
        "unsharp" => {
            let (size, sigma) = gaussian_shape(p, 5, errors);
            let a = check_finite("amount", p.amount.unwrap_or(1.0), errors);
            let g = gaussian_1d(size, sigma);
            let mut rows = delta(size, size);
            for (i, row) in rows.iter_mut().enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = (1.0 + a) * *v - a * g[i] * g[j];
                }
            }
            RawMask::dense(rows)
        }
        "laplacian" => match p.neighbours.unwrap_or(4) {
            4 => RawMask::dense(vec![vec![0.0, 1.0, 0.0], vec![1.0, -4.0, 1.0], vec![0.0, 1.0, 0.0]]),
            8 => RawMask::dense(vec![vec![1.0, 1.0, 1.0], vec![1.0, -8.0, 1.0], vec![1.0, 1.0, 1.0]]),
            other => {
                errors.push(MaskError::BadNeighbours { value: other });
                return None;
            }
        },
        "sobel" => RawMask::magnitude(vec![vec![1.0, 0.0, -1.0], vec![2.0, 0.0, -2.0], vec![1.0, 0.0, -1.0]]),
        "prewitt" => RawMask::magnitude(vec![vec![1.0, 0.0, -1.0]; 3]),
        // FFmpeg's `roberts` (vf_convolution.c) takes the differences of two 2-sample pairs in
        // its 3x3 neighbourhood, c[0] - c[1] and c[4] - c[3]: (up-left - up) and (centre -
        // left). As 3x3 matrices centred on the sample, in convolution orientation (turned
        // half way), the taps sit at the centre and right of or below it; the rest is zero.
        "roberts" => RawMask::pair(
            vec![vec![0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0], vec![0.0, -1.0, 1.0]],
            vec![vec![0.0, 0.0, 0.0], vec![0.0, 1.0, -1.0], vec![0.0, 0.0, 0.0]],
        ),
        "sobel-x" => RawMask::separable(vec![1.0, 2.0, 1.0], vec![1.0, 0.0, -1.0]),
        "sobel-y" => RawMask::separable(vec![1.0, 0.0, -1.0], vec![1.0, 2.0, 1.0]),
        "prewitt-x" => RawMask::separable(vec![1.0, 1.0, 1.0], vec![1.0, 0.0, -1.0]),
        "prewitt-y" => RawMask::separable(vec![1.0, 0.0, -1.0], vec![1.0, 1.0, 1.0]),
        "emboss" => RawMask::dense(vec![vec![-2.0, -1.0, 0.0], vec![-1.0, 1.0, 1.0], vec![0.0, 1.0, 2.0]]),
        "motion-blur" => {
            let size = check_side("size", p.size.unwrap_or(9), errors);
            let angle = check_finite("angle", p.angle.unwrap_or(0.0), errors);
            if errors.len() > before {
                return None;
            }
            RawMask::dense(motion_line(size, angle))
        }
        "edge" => {
            let (size, sigma) = gaussian_shape(p, 9, errors);
            let sigma = match (sigma, p.size) {
                (Some(sigma), _) => sigma,
                (None, None) => 1.4,
                (None, Some(_)) => default_sigma(size),
            };
            let c = (size / 2) as f64;
            let mut rows = vec![vec![0.0; size]; size];
            for (y, row) in rows.iter_mut().enumerate() {
                for (x, v) in row.iter_mut().enumerate() {
                    let r2 = (x as f64 - c).powi(2) + (y as f64 - c).powi(2);
                    let q = r2 / (2.0 * sigma * sigma);
                    *v = (1.0 - q) * (-q).exp();
                }
            }
            let mean = rows.iter().flatten().sum::<f64>() / (size * size) as f64;
            rows.iter_mut().flatten().for_each(|v| *v -= mean);
            let positive: f64 = rows.iter().flatten().filter(|v| **v > 0.0).sum();
            if positive > 0.0 {
                rows.iter_mut().flatten().for_each(|v| *v /= positive);
            }
            RawMask::dense(rows)
        }
        _ => return None,
    };
    (errors.len() == before).then_some(raw)
}

/// Tokens that are not numbers quoted in the errors of one mask file; the rest are counted.
const MAX_QUOTED_TOKENS: usize = 3;

/// Reads a custom matrix from text: one row per line, numbers split by spaces or commas,
/// `#` starts a comment, blank lines are skipped.
pub fn parse_matrix_text(text: &str, origin: &str) -> Result<Vec<Vec<f64>>, Vec<MaskError>> {
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut unquoted = 0;
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("");
        let mut row = Vec::new();
        for token in content
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
        {
            match token.parse::<f64>() {
                Ok(v) => row.push(v),
                // A file that is not a mask at all is not quoted line by line: the first few
                // tokens, each cut short, say enough.
                Err(_) if errors.len() < MAX_QUOTED_TOKENS => errors.push(MaskError::BadMatrixNumber {
                    origin: origin.to_string(),
                    line: number + 1,
                    token: crate::text::quoted(token),
                }),
                Err(_) => unquoted += 1,
            }
        }
        if !row.is_empty() {
            rows.push(row);
        }
    }
    if unquoted > 0 {
        errors.push(MaskError::MoreBadNumbers {
            origin: origin.to_string(),
            count: unquoted,
        });
    }
    if errors.is_empty() {
        Ok(rows)
    } else {
        Err(errors)
    }
}

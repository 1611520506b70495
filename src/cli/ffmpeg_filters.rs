//! FFmpeg's `-vf` filter chains of the convolution family, read as convstream's masks: each
//! filter becomes a mask SPEC per plane and a border mode, so that `-vf "convolution=..."`
//! runs FFmpeg's own arithmetic and edges (`custom:...,rdiv=R` with `--border ffmpeg`). Any
//! other filter is refused by its name, with the reason.

use convstream_media::ChainFilter;

/// What a `-vf` chain becomes: a mask SPEC for each plane it filters (`y`, `u`, `v`) and the
/// border every one of them takes.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Translated {
    pub(crate) plane_masks: Vec<(&'static str, String)>,
    pub(crate) border: Option<&'static str>,
    /// What is taken differently from how it reads, as FFmpeg takes it.
    pub(crate) warnings: Vec<String>,
}

/// FFmpeg's planes in order; a fourth (alpha) has no place in convstream's frames, and is
/// set aside as FFmpeg sets aside a plane the format lacks.
const PLANES: [&str; 3] = ["y", "u", "v"];

/// Filters FFmpeg users often put in a `-vf` chain, with why convstream does not run them.
const REFUSED: &[(&str, &str)] = &[
    ("scale", "convstream keeps the input's size"),
    (
        "format",
        "convstream keeps the input's pixel format (--depth changes the bits per sample)",
    ),
    ("fps", "convstream keeps the input's frame rate"),
    ("setpts", "convstream keeps the input's timestamps"),
    ("crop", "convstream keeps the input's size"),
    ("pad", "convstream keeps the input's size"),
    ("hwupload", "convstream moves frames to the GPU itself (--device)"),
    ("hwdownload", "convstream moves frames to the GPU itself (--device)"),
    ("null", "it does nothing: leave it out"),
];

/// The filters convstream runs on its own engines, as masks.
const FAMILY: &[&str] = &[
    "convolution",
    "sobel",
    "prewitt",
    "roberts",
    "gblur",
    "boxblur",
    "unsharp",
];

/// Translates a `-vf` chain, read by libavfilter itself (so its syntax, escaping, defaults
/// and range checks are FFmpeg's). `option` is the flag as typed, for messages.
pub(crate) fn translate(option: &str, chain: &str) -> Result<Translated, String> {
    let filters = convstream_media::parse_chain(option, chain).map_err(|e| e.to_string())?;
    let mut out = Translated::default();
    for filter in &filters {
        let name = filter.name.as_str();
        if !FAMILY.contains(&name) {
            let why = REFUSED
                .iter()
                .find(|(refused, _)| *refused == name)
                .map_or("convstream runs FFmpeg's convolution family only", |(_, why)| why);
            return Err(format!(
                "{option}: FFmpeg's `{name}` filter is not one convstream runs: {why}. It takes convolution, sobel, prewitt, roberts, gblur, boxblur and unsharp (do the rest with ffmpeg before or after)"
            ));
        }
        let (masks, border) = filter_masks(option, filter, &mut out.warnings)?;
        for (plane, spec) in masks {
            if out.plane_masks.iter().any(|(p, _)| *p == plane) {
                return Err(format!(
                    "{option}: plane {plane} is filtered by two filters of the chain; convstream filters a plane once per run (run it again on the output for the second)"
                ));
            }
            out.plane_masks.push((plane, spec));
        }
        match (out.border, border) {
            (Some(had), Some(wants)) if had != wants => {
                return Err(format!(
                    "{option}: `{name}` takes FFmpeg's edges as `--border {wants}`, another filter of the chain as `--border {had}`; one run has one border"
                ))
            }
            (None, wants) => out.border = wants,
            _ => {}
        }
    }
    Ok(out)
}

type PlaneSpecs = (Vec<(&'static str, String)>, Option<&'static str>);

/// FFmpeg 5.1's `convolution` resets every plane's rdiv to 1 / the sum of its matrix when it
/// reads the matrices (`param_init`), so a given `Nrdiv` changes nothing there; it is read,
/// checked and then set aside the same way, with a warning.
const RDIV_IGNORED: &str = "is set aside, as FFmpeg 5.1's convolution sets it aside: the plane is divided by the sum of its matrix (1 when it sums to 0)";

/// The masks one filter of the family gives its planes, and the border they need, from the
/// option values FFmpeg holds for it.
fn filter_masks(option: &str, filter: &ChainFilter, warnings: &mut Vec<String>) -> Result<PlaneSpecs, String> {
    let get = Options(filter);
    match filter.name.as_str() {
        "convolution" => convolution(option, &get, warnings),
        "sobel" | "prewitt" | "roberts" => gradient(option, &filter.name, &get),
        "gblur" => gblur(option, &get),
        "boxblur" => boxblur(option, &get),
        _ => unsharp(option, &get),
    }
}

/// A filter's options by their full names, as FFmpeg holds them (defaults filled in; an
/// unset string is empty).
struct Options<'a>(&'a ChainFilter);

impl Options<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.option(key).filter(|value| !value.is_empty())
    }
}

/// A number, or a quotient of two (`1/16`), as FFmpeg's options are mostly written.
fn number(option: &str, key: &str, value: &str) -> Result<f64, String> {
    let read = |text: &str| text.trim().parse::<f64>().ok();
    let quotient = value.split_once('/').and_then(|(a, b)| Some(read(a)? / read(b)?));
    quotient
        .or_else(|| read(value))
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("{option}: {key}={value:?} is not a number (convstream reads no expressions here)"))
}

/// FFmpeg's `convolution`: a whole-number matrix per plane (square 3x3, 5x5 or 7x7, or a row
/// or column of up to 49 taps), its rdiv (0: 1 / the sum) and bias, in FFmpeg's arithmetic.
fn convolution(option: &str, o: &Options, warnings: &mut Vec<String>) -> Result<PlaneSpecs, String> {
    let mut masks = Vec::new();
    // A fourth (alpha) plane's matrix is read and checked like the others, then set aside as
    // FFmpeg sets aside the planes a format lacks: convstream's frames have none.
    for plane in 0..4 {
        let key = |what: &str| format!("{plane}{what}");
        let matrix = o.get(&key("m")).unwrap_or("0 0 0 0 1 0 0 0 0");
        let rdiv = o
            .get(&key("rdiv"))
            .map_or(Ok(0.0), |v| number(option, &key("rdiv"), v))?;
        if rdiv != 0.0 {
            warnings.push(format!("{option}: {}={rdiv} {RDIV_IGNORED}", key("rdiv")));
        }
        let rdiv = 0.0;
        let bias = o
            .get(&key("bias"))
            .map_or(Ok(0.0), |v| number(option, &key("bias"), v))?;
        let mode = o.get(&key("mode")).unwrap_or("square");
        let taps: Vec<i64> = matrix
            .split([' ', '|'])
            .filter(|t| !t.is_empty())
            .map(|t| t.parse::<i64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{option}: {}={matrix:?} is not whole numbers split by spaces", key("m")))?;
        let rows: Vec<Vec<i64>> = match (mode, taps.len()) {
            ("square" | "0", 9 | 25 | 49) => {
                let side = (taps.len() as f64).sqrt() as usize;
                taps.chunks(side).map(<[i64]>::to_vec).collect()
            }
            ("row" | "1", n) if n % 2 == 1 && n <= 49 => vec![taps.clone()],
            ("column" | "2", n) if n % 2 == 1 && n <= 49 => taps.iter().map(|t| vec![*t]).collect(),
            ("square" | "0" | "row" | "1" | "column" | "2", n) => {
                return Err(format!(
                "{option}: {}= has {n} values: a square matrix has 9, 25 or 49, a row or column an odd number up to 49",
                key("m")
            ))
            }
            (other, _) => {
                return Err(format!(
                    "{option}: {}={other:?} is none of square, row, column",
                    key("mode")
                ))
            }
        };
        let centre_only = taps
            .iter()
            .enumerate()
            .all(|(i, t)| *t == i64::from(i == taps.len() / 2));
        // FFmpeg copies a plane whose square matrix is the identity with rdiv 1 and no bias.
        if centre_only && rows.len() == rows[0].len() && bias == 0.0 {
            continue;
        }
        let Some(name) = PLANES.get(plane) else {
            continue;
        };
        let written: Vec<String> = rows
            .iter()
            .map(|row| format!("[{}]", row.iter().map(i64::to_string).collect::<Vec<_>>().join(",")))
            .collect();
        masks.push((
            *name,
            format!(
                "custom:matrix=[{}],mode=correlate,rdiv={rdiv:?},bias={bias:?}",
                written.join(",")
            ),
        ));
    }
    Ok((masks, Some("ffmpeg")))
}

/// The planes FFmpeg's `planes` bitmask (default: all) selects.
fn selected_planes(option: &str, o: &Options) -> Result<Vec<&'static str>, String> {
    let mask = match o.get("planes") {
        Some(value) => value
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|m| *m <= 15)
            .ok_or_else(|| format!("{option}: planes={value:?} is not a bitmask 0..15"))?,
        None => 15,
    };
    Ok(PLANES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, p)| *p)
        .collect())
}

/// `sobel`, `prewitt`, `roberts`: the gradient magnitude (the preset of the same name) times
/// scale plus delta, truncated as FFmpeg truncates it (a bias 0.5 lower, then rounded).
fn gradient(option: &str, name: &str, o: &Options) -> Result<PlaneSpecs, String> {
    let scale = o.get("scale").map_or(Ok(1.0), |v| number(option, "scale", v))?;
    let delta = o.get("delta").map_or(Ok(0.0), |v| number(option, "delta", v))?;
    if scale <= 0.0 {
        return Err(format!("{option}: {name} scale={scale} must be above 0"));
    }
    let spec = format!("{name}:divisor={:?},bias={:?}", 1.0 / scale, delta - 0.5);
    let planes = selected_planes(option, o)?;
    Ok((planes.into_iter().map(|p| (p, spec.clone())).collect(), Some("ffmpeg")))
}

/// `gblur`: a Gaussian of sigma (sigmaV for the vertical, which must equal it here).
fn gblur(option: &str, o: &Options) -> Result<PlaneSpecs, String> {
    let sigma = o.get("sigma").map_or(Ok(0.5), |v| number(option, "sigma", v))?;
    let vertical = o.get("sigmaV").map_or(Ok(-1.0), |v| number(option, "sigmaV", v))?;
    if vertical >= 0.0 && vertical != sigma {
        return Err(format!(
            "{option}: gblur sigmaV={vertical} differs from sigma={sigma}; convstream's gaussian has one sigma"
        ));
    }
    if sigma <= 0.0 {
        return Ok((Vec::new(), None));
    }
    let spec = format!("gaussian:sigma={sigma:?}");
    let planes = selected_planes(option, o)?;
    // FFmpeg's recursive Gaussian starts each line from its edge sample: `nearest` is closest.
    Ok((planes.into_iter().map(|p| (p, spec.clone())).collect(), Some("nearest")))
}

/// A `box` of `radius` applied `power` times: the binomial-like 1D taps, as a matrix.
fn repeated_box(radius: usize, power: usize) -> Vec<f64> {
    let mut taps = vec![1.0];
    for _ in 0..power {
        let mut next = vec![0.0; taps.len() + 2 * radius];
        for (i, t) in taps.iter().enumerate() {
            for slot in next.iter_mut().skip(i).take(2 * radius + 1) {
                *slot += t;
            }
        }
        taps = next;
    }
    taps
}

fn matrix_of(column: &[f64], row: &[f64]) -> String {
    let rows: Vec<String> = column
        .iter()
        .map(|c| {
            let values: Vec<String> = row.iter().map(|r| format!("{:?}", c * r)).collect();
            format!("[{}]", values.join(","))
        })
        .collect();
    format!("[{}]", rows.join(","))
}

/// `boxblur`: per plane group a box of `radius` taken `power` times (chroma defaults to
/// luma's); expressions are not read.
fn boxblur(option: &str, o: &Options) -> Result<PlaneSpecs, String> {
    let whole = |key: &str, default: f64| -> Result<usize, String> {
        let value = o.get(key).map_or(Ok(default), |v| number(option, key, v))?;
        if value < 0.0 || value.fract() != 0.0 || value > 31.0 {
            return Err(format!("{option}: boxblur {key}={value} must be a whole number 0..31"));
        }
        Ok(value as usize)
    };
    let luma = (whole("luma_radius", 2.0)?, whole("luma_power", 2.0)?);
    let chroma_radius = o
        .get("chroma_radius")
        .map_or(Ok(-1.0), |v| number(option, "chroma_radius", v))?;
    let chroma = match chroma_radius < 0.0 {
        true => (
            luma.0,
            // FFmpeg's -1: the luma's.
            o.get("chroma_power")
                .filter(|power| power.trim() != "-1")
                .map_or(Ok(luma.1), |_| whole("chroma_power", 2.0))?,
        ),
        false => match o.get("chroma_power").is_some_and(|power| power.trim() != "-1") {
            true => (whole("chroma_radius", 0.0)?, whole("chroma_power", luma.1 as f64)?),
            false => (whole("chroma_radius", 0.0)?, luma.1),
        },
    };
    let mut masks = Vec::new();
    for (plane, (radius, power)) in [("y", luma), ("u", chroma), ("v", chroma)] {
        if radius == 0 || power == 0 {
            continue;
        }
        let taps = repeated_box(radius, power);
        masks.push((
            plane,
            format!("custom:matrix={},normalize=true", matrix_of(&taps, &taps)),
        ));
    }
    Ok((masks, Some("reflect")))
}

/// The 2 `steps` + 1 binomial taps, `C(2 steps, k)`.
fn binomial(steps: usize) -> Vec<f64> {
    let n = 2 * steps;
    (0..=n)
        .map(|k| (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64))
        .collect()
}

/// `unsharp`: per plane group `(1 + amount) * identity - amount * blur`, the blur FFmpeg's
/// binomial one of msize_x x msize_y, edges repeated as FFmpeg repeats them.
fn unsharp(option: &str, o: &Options) -> Result<PlaneSpecs, String> {
    let mut masks = Vec::new();
    for (planes, prefix, amount_default) in [(&["y"][..], "luma", 1.0), (&["u", "v"][..], "chroma", 0.0)] {
        let size = |axis: &str| -> Result<usize, String> {
            let key = format!("{prefix}_msize_{axis}");
            let value = o.get(&key).map_or(Ok(5.0), |v| number(option, &key, v))?;
            if !(3.0..=23.0).contains(&value) || value % 2.0 != 1.0 {
                return Err(format!("{option}: unsharp {key}={value} must be odd, 3..23"));
            }
            Ok(value as usize)
        };
        let (width, height) = (size("x")?, size("y")?);
        let key = format!("{prefix}_amount");
        let amount = o.get(&key).map_or(Ok(amount_default), |v| number(option, &key, v))?;
        if amount == 0.0 {
            continue;
        }
        // FFmpeg blurs with msize / 2 steps of [1 2 1] each way: binomial taps, over 4^steps.
        let (across, down) = (binomial(width / 2), binomial(height / 2));
        let scale = 1.0 / (across.iter().sum::<f64>() * down.iter().sum::<f64>());
        let rows: Vec<Vec<f64>> = down
            .iter()
            .enumerate()
            .map(|(i, d)| {
                across
                    .iter()
                    .enumerate()
                    .map(|(j, a)| {
                        let centre = f64::from(u8::from(i == height / 2 && j == width / 2));
                        (1.0 + amount) * centre - amount * a * d * scale
                    })
                    .collect()
            })
            .collect();
        let written: Vec<String> = rows
            .iter()
            .map(|row| {
                format!(
                    "[{}]",
                    row.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        for plane in planes {
            masks.push((*plane, format!("custom:matrix=[{}]", written.join(","))));
        }
    }
    Ok((masks, Some("nearest")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convolution_becomes_ffmpeg_arithmetic_per_plane() {
        let t = translate("-vf", "convolution='1 2 1 2 4 2 1 2 1':0rdiv=1/16").unwrap();
        assert!(t.warnings[0].contains("0rdiv=0.0625"), "{:?}", t.warnings);
        let t = translate("-vf", "convolution=0m=1 2 1 2 4 2 1 2 1:0bias=3").unwrap();
        assert_eq!(
            t.plane_masks,
            vec![(
                "y",
                "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],mode=correlate,rdiv=0.0,bias=3.0".to_string()
            )]
        );
        assert_eq!(t.border, Some("ffmpeg"));
    }

    /// FFmpeg's documented examples give four matrices; the fourth (alpha) is set aside.
    #[test]
    fn a_fourth_matrix_is_set_aside_as_ffmpeg_sets_it_aside() {
        let sharpen = "0 -1 0 -1 5 -1 0 -1 0";
        let t = translate(
            "-vf",
            &format!("convolution='{sharpen}:{sharpen}:{sharpen}:{sharpen}:1:1:1:1:0:0:0:0'"),
        )
        .unwrap();
        let planes: Vec<&str> = t.plane_masks.iter().map(|(plane, _)| *plane).collect();
        assert_eq!(planes, ["y", "u", "v"]);
    }

    #[test]
    fn ffmpegs_checks_and_errors_come_first() {
        for text in ["gblur=sigma=-3", "convolution=0rdiv=-2", ",sobel,", "sobel=::::"] {
            let error = translate("-vf", text).expect_err(text);
            assert!(error.starts_with("-vf: FFmpeg refuses"), "{text}: {error}");
        }
    }

    #[test]
    fn other_filters_are_refused_by_name() {
        let error = translate("-vf", "scale=640:360").unwrap_err();
        assert!(error.contains("`scale`") && error.contains("size"), "{error}");
        let error = translate("-vf", "sobel,sobel").unwrap_err();
        assert!(error.contains("two filters"), "{error}");
    }
}

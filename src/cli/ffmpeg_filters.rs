//! FFmpeg's `-vf` filter chains of the convolution family, read as convstream's masks: each
//! filter becomes a mask SPEC per plane and a border mode, so that `-vf "convolution=..."`
//! runs FFmpeg's own arithmetic and edges (`custom:...,rdiv=R` with `--border ffmpeg`). Any
//! other filter is refused by its name, with the reason.

/// What a `-vf` chain becomes: a mask SPEC for each plane it filters (`y`, `u`, `v`) and the
/// border every one of them takes.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Translated {
    pub(crate) plane_masks: Vec<(&'static str, String)>,
    pub(crate) border: Option<&'static str>,
    /// What is taken differently from how it reads, as FFmpeg takes it.
    pub(crate) warnings: Vec<String>,
}

/// FFmpeg's planes in order; a fourth (alpha) has no place in convstream's frames.
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

/// Translates a `-vf` chain. `option` is the flag as typed, for messages.
pub(crate) fn translate(option: &str, chain: &str) -> Result<Translated, String> {
    let mut out = Translated::default();
    for filter in split_outside_quotes(chain, ',') {
        let filter = filter.trim();
        if filter.is_empty() {
            continue;
        }
        if filter.starts_with('[') || filter.contains(';') {
            return Err(format!(
                "{option}: link labels and several chains (`[in]`, `;`) are -filter_complex's; convstream runs one chain of convolution filters"
            ));
        }
        let (name, args) = filter.split_once('=').unwrap_or((filter, ""));
        let name = name.split('@').next().unwrap_or(name).trim();
        let (masks, border) = filter_masks(option, name, args, &mut out.warnings)?;
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

/// The masks one filter gives its planes, and the border they need.
fn filter_masks(option: &str, name: &str, args: &str, warnings: &mut Vec<String>) -> Result<PlaneSpecs, String> {
    let order: &[&str] = match name {
        "convolution" => &[
            "0m", "1m", "2m", "3m", "0rdiv", "1rdiv", "2rdiv", "3rdiv", "0bias", "1bias", "2bias", "3bias", "0mode",
            "1mode", "2mode", "3mode",
        ],
        "sobel" | "prewitt" | "roberts" => &["planes", "scale", "delta"],
        "gblur" => &["sigma", "steps", "planes", "sigmaV"],
        "boxblur" => &[
            "luma_radius",
            "luma_power",
            "chroma_radius",
            "chroma_power",
            "alpha_radius",
            "alpha_power",
        ],
        "unsharp" => &[
            "luma_msize_x",
            "luma_msize_y",
            "luma_amount",
            "chroma_msize_x",
            "chroma_msize_y",
            "chroma_amount",
            "alpha_msize_x",
            "alpha_msize_y",
            "alpha_amount",
        ],
        _ => {
            let why = REFUSED
                .iter()
                .find(|(refused, _)| *refused == name)
                .map_or("convstream runs FFmpeg's convolution family only", |(_, why)| why);
            return Err(format!(
                "{option}: FFmpeg's `{name}` filter is not one convstream runs: {why}. It takes convolution, sobel, prewitt, roberts, gblur, boxblur and unsharp (do the rest with ffmpeg before or after)"
            ));
        }
    };
    let options = named_options(option, name, args, order)?;
    let get = Options(options);
    match name {
        "convolution" => convolution(option, &get, warnings),
        "sobel" | "prewitt" | "roberts" => gradient(option, name, &get),
        "gblur" => gblur(option, &get),
        "boxblur" => boxblur(option, &get),
        _ => unsharp(option, &get),
    }
}

/// `key=value:key=value` or values in the filter's option order, as FFmpeg reads them;
/// FFmpeg's short aliases are taken to the long names.
fn named_options(option: &str, name: &str, args: &str, order: &[&str]) -> Result<Vec<(String, String)>, String> {
    const ALIASES: &[(&str, &str)] = &[
        ("lr", "luma_radius"),
        ("lp", "luma_power"),
        ("cr", "chroma_radius"),
        ("cp", "chroma_power"),
        ("ar", "alpha_radius"),
        ("ap", "alpha_power"),
        ("lx", "luma_msize_x"),
        ("ly", "luma_msize_y"),
        ("la", "luma_amount"),
        ("cx", "chroma_msize_x"),
        ("cy", "chroma_msize_y"),
        ("ca", "chroma_amount"),
        ("ax", "alpha_msize_x"),
        ("ay", "alpha_msize_y"),
        ("aa", "alpha_amount"),
    ];
    let mut options = Vec::new();
    for (at, part) in split_outside_quotes(args, ':').into_iter().enumerate() {
        if part.trim().is_empty() {
            continue;
        }
        let (key, value) = match part.split_once('=') {
            Some((key, value)) => (key.trim(), value),
            None => match order.get(at) {
                Some(key) => (*key, part.as_str()),
                None => return Err(format!("{option}: `{name}` takes at most {} values", order.len())),
            },
        };
        let key = ALIASES
            .iter()
            .find(|(short, _)| *short == key)
            .map_or(key, |(_, long)| long);
        if !order.contains(&key) {
            return Err(format!(
                "{option}: `{name}` has no option `{key}`; it takes {}",
                order.join(", ")
            ));
        }
        options.push((key.to_string(), unquote(value.trim())));
    }
    Ok(options)
}

/// A filter's options by their long names, as written.
struct Options(Vec<(String, String)>);

impl Options {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
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
            return Err(format!(
                "{option}: {}: convstream's frames have no fourth (alpha) plane",
                key("m")
            ));
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
            o.get("chroma_power")
                .map_or(Ok(luma.1), |_| whole("chroma_power", 2.0))?,
        ),
        false => (whole("chroma_radius", 0.0)?, whole("chroma_power", luma.1 as f64)?),
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

/// Splits at `separator` outside single quotes and backslash escapes (FFmpeg's filter
/// quoting), the quotes and escapes kept for [`unquote`].
fn split_outside_quotes(text: &str, separator: char) -> Vec<String> {
    let (mut parts, mut current, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in text.chars() {
        match c {
            _ if escaped => {
                current.push(c);
                escaped = false;
                continue;
            }
            '\\' => escaped = true,
            '\'' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
}

/// A value with FFmpeg's quotes and escapes taken off.
fn unquote(value: &str) -> String {
    let (mut out, mut escaped) = (String::new(), false);
    for c in value.chars() {
        match c {
            _ if escaped => {
                out.push(c);
                escaped = false;
            }
            '\\' => escaped = true,
            '\'' => {}
            _ => out.push(c),
        }
    }
    out
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

    #[test]
    fn other_filters_are_refused_by_name() {
        let error = translate("-vf", "scale=640:360").unwrap_err();
        assert!(error.contains("`scale`") && error.contains("size"), "{error}");
        let error = translate("-vf", "sobel,sobel").unwrap_err();
        assert!(error.contains("two filters"), "{error}");
    }
}

//! FFmpeg's `-vf` filter chains, read by libavfilter: the run of convolution filters becomes
//! convstream's masks (a mask SPEC per plane and a border mode, so that `-vf
//! "convolution=..."` runs FFmpeg's own arithmetic and edges: `custom:...,rdiv=R` with
//! `--border ffmpeg`), and the filters before and after it run as FFmpeg's own.

use convstream_media::ChainFilter;

/// What a `-vf` chain becomes: a mask SPEC for each plane it filters (`y`, `u`, `v`) and the
/// border every one of them takes.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Translated {
    pub(crate) plane_masks: Vec<(&'static str, String)>,
    pub(crate) border: Option<&'static str>,
    /// What is taken differently from how it reads, as FFmpeg takes it.
    pub(crate) warnings: Vec<String>,
    /// FFmpeg's own filters before the convolution filters, as a chain.
    pub(crate) before: Option<String>,
    /// FFmpeg's own filters after them, as a chain.
    pub(crate) after: Option<String>,
}

/// FFmpeg's planes in order; a fourth (alpha) has no place in convstream's frames, and is
/// set aside as FFmpeg sets aside a plane the format lacks.
const PLANES: [&str; 3] = ["y", "u", "v"];

/// The filters convstream runs on its own engines, as masks, with FFmpeg's arithmetic byte
/// for byte. FFmpeg's blurs (`gblur`, `boxblur`, `unsharp`) compute in ways of their own
/// (recursively, with running sums, in fixed point): they run as FFmpeg's own filters.
const ON_ENGINES: &[&str] = &["convolution", "sobel", "prewitt", "roberts"];

/// Translates a `-vf` chain, read by libavfilter itself (so its syntax, escaping, defaults
/// and range checks are FFmpeg's). `option` is the flag as typed, for messages. The filters
/// before the first of [`ON_ENGINES`] and after the last run as FFmpeg's own, in-process.
pub(crate) fn translate(option: &str, chain: &str) -> Result<Translated, String> {
    let filters = convstream_media::parse_chain(option, chain).map_err(|e| e.to_string())?;
    let on_engines = |filter: &ChainFilter| ON_ENGINES.contains(&filter.name.as_str());
    let first = filters.iter().position(on_engines).unwrap_or(filters.len());
    let last = filters.iter().rposition(on_engines).map_or(first, |at| at + 1);
    let mut out = Translated::default();
    if let Some(between) = filters[first..last].iter().find(|f| !on_engines(f)) {
        return Err(format!(
            "{option}: `{}` stands between `{}` and `{}`; convstream runs the convolution filters of a chain together, with FFmpeg's other filters before or after them (move `{}` to one end, or run the rest with a second convstream)",
            between.name,
            filters[first].name,
            filters[last - 1].name,
            between.name
        ));
    }
    let joined = |part: &[ChainFilter]| {
        (!part.is_empty()).then(|| part.iter().map(|f| f.text.as_str()).collect::<Vec<_>>().join(","))
    };
    out.before = joined(&filters[..first]);
    out.after = joined(&filters[last..]);
    for filter in &filters[first..last] {
        let name = filter.name.as_str();
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
        _ => gradient(option, &filter.name, &get),
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
    fn other_filters_run_before_and_after_as_ffmpegs_own() {
        let t = translate("-vf", "scale=64:-2,crop=32:16,sobel,gblur=sigma=2,format=gray").unwrap();
        assert_eq!(t.before.as_deref(), Some("scale=64:-2,crop=32:16"));
        assert_eq!(t.after.as_deref(), Some("gblur=sigma=2,format=gray"));
        assert_eq!(t.plane_masks.len(), 3);
        let t = translate("-vf", "unsharp").unwrap();
        assert_eq!((t.before.as_deref(), t.after), (Some("unsharp"), None));
        assert!(t.plane_masks.is_empty());
    }

    #[test]
    fn what_one_run_cannot_be_is_refused_naming_the_filters() {
        let error = translate("-vf", "sobel,scale=64:32,prewitt").unwrap_err();
        assert!(
            error.contains("`scale` stands between `sobel` and `prewitt`"),
            "{error}"
        );
        let error = translate("-vf", "sobel,sobel").unwrap_err();
        assert!(error.contains("two filters"), "{error}");
    }
}

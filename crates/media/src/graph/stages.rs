//! An FFmpeg filter chain split into what convstream runs ([`split_graph`]): the run of
//! convolution filters becomes the engine's masks (a mask SPEC per plane and a border mode,
//! so that `convolution=...` runs FFmpeg's own arithmetic and edges: `custom:...,rdiv=R`
//! with the `ffmpeg` border), and the filters before and after it run as FFmpeg's own. The
//! command line's `-vf` and a config's `filter.graph` both come here (the config crate is
//! handed [`split_graph`] as its graph reader).

use convstream_config::{EngineStage, GraphStages, MASK_PLACEHOLDER};

use super::chain::{parse_chain, ChainFilter};

/// FFmpeg's planes in order; a fourth (alpha) has no place in convstream's frames, and is
/// set aside as FFmpeg sets aside a plane the format lacks.
const PLANES: [&str; 3] = ["y", "u", "v"];

/// The filters convstream runs on its own engines, as masks, with FFmpeg's arithmetic byte
/// for byte. FFmpeg's blurs (`gblur`, `boxblur`, `unsharp`) compute in ways of their own
/// (recursively, with running sums, in fixed point): they run as FFmpeg's own filters.
const ON_ENGINES: &[&str] = &["convolution", "sobel", "prewitt", "roberts"];

/// Splits `chain`, read by libavfilter itself (so its syntax, escaping, defaults and range
/// checks are FFmpeg's). `option` is where the text came from (`-vf`, `filter.graph`), for
/// messages. The filters before the first of the convolution family that runs on the
/// engines (`convolution`, `sobel`, `prewitt`, `roberts`), or [`MASK_PLACEHOLDER`], and after
/// the last run as FFmpeg's own, in-process.
pub fn split_graph(option: &str, chain: &str) -> Result<GraphStages, String> {
    let filters = parse_chain(option, chain).map_err(|e| e.to_string())?;
    let on_engines = |filter: &ChainFilter| ON_ENGINES.contains(&filter.name.as_str());
    let joined = |part: &[ChainFilter]| {
        (!part.is_empty()).then(|| part.iter().map(|f| f.text.as_str()).collect::<Vec<_>>().join(","))
    };
    let placeholders: Vec<usize> = (0..filters.len()).filter(|at| is_placeholder(&filters[*at])).collect();
    match placeholders[..] {
        [] => {}
        [at] if !filters.iter().any(on_engines) => {
            return Ok(GraphStages {
                before: joined(&filters[..at]),
                engine: EngineStage::Mask,
                after: joined(&filters[at + 1..]),
                warnings: Vec::new(),
            })
        }
        [_] => {
            return Err(format!(
                "{option}: `{MASK_PLACEHOLDER}` marks where the mask runs in place of the convolution filters; a chain has one or the other"
            ))
        }
        _ => return Err(format!("{option}: `{MASK_PLACEHOLDER}` is written more than once; the chain has one convolution stage")),
    }
    let first = filters.iter().position(on_engines).unwrap_or(filters.len());
    let last = filters.iter().rposition(on_engines).map_or(first, |at| at + 1);
    if let Some(between) = filters[first..last].iter().find(|f| !on_engines(f)) {
        return Err(format!(
            "{option}: `{}` stands between `{}` and `{}`; convstream runs the convolution filters of a chain together, with FFmpeg's other filters before or after them (move `{}` to one end, or run the rest with a second convstream)",
            between.name,
            filters[first].name,
            filters[last - 1].name,
            between.name
        ));
    }
    let mut warnings = Vec::new();
    let mut plane_masks: Vec<(&'static str, String)> = Vec::new();
    let mut border = None;
    for filter in &filters[first..last] {
        let name = filter.name.as_str();
        let (masks, wants) = filter_masks(option, filter, &mut warnings)?;
        for (plane, spec) in masks {
            if plane_masks.iter().any(|(p, _)| *p == plane) {
                return Err(format!(
                    "{option}: plane {plane} is filtered by two filters of the chain; convstream filters a plane once per run (run it again on the output for the second)"
                ));
            }
            plane_masks.push((plane, spec));
        }
        match (border, wants) {
            (Some(had), Some(wants)) if had != wants => {
                return Err(format!(
                    "{option}: `{name}` takes FFmpeg's edges as `--border {wants}`, another filter of the chain as `--border {had}`; one run has one border"
                ))
            }
            (None, wants) => border = wants,
            _ => {}
        }
    }
    let engine = match first < last {
        true => EngineStage::Filters { plane_masks, border },
        false => EngineStage::Absent,
    };
    Ok(GraphStages {
        before: joined(&filters[..first]),
        engine,
        after: joined(&filters[last..]),
        warnings,
    })
}

/// Whether `filter` is [`MASK_PLACEHOLDER`]: FFmpeg's `null` named `mask`.
fn is_placeholder(filter: &ChainFilter) -> bool {
    let written = filter
        .text
        .split_once('=')
        .map_or(filter.text.as_str(), |(name, _)| name);
    filter.name == "null" && written.trim() == MASK_PLACEHOLDER
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
/// scale plus delta, truncated, in FFmpeg's arithmetic: `rdiv` is the scale and the bias 0.5
/// below delta, since that arithmetic adds 0.5 before it truncates; both in the samples' units.
fn gradient(option: &str, name: &str, o: &Options) -> Result<PlaneSpecs, String> {
    let scale = o.get("scale").map_or(Ok(1.0), |v| number(option, "scale", v))?;
    let delta = o.get("delta").map_or(Ok(0.0), |v| number(option, "delta", v))?;
    if scale <= 0.0 {
        return Err(format!("{option}: {name} scale={scale} must be above 0"));
    }
    let spec = format!("{name}:rdiv={scale:?},bias={:?}", delta - 0.5);
    let planes = selected_planes(option, o)?;
    Ok((planes.into_iter().map(|p| (p, spec.clone())).collect(), Some("ffmpeg")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks_of(stages: &GraphStages) -> &[(&'static str, String)] {
        match &stages.engine {
            EngineStage::Filters { plane_masks, .. } => plane_masks,
            other => panic!("no convolution filters: {other:?}"),
        }
    }

    #[test]
    fn convolution_becomes_ffmpeg_arithmetic_per_plane() {
        let t = split_graph("-vf", "convolution='1 2 1 2 4 2 1 2 1':0rdiv=1/16").unwrap();
        assert!(t.warnings[0].contains("0rdiv=0.0625"), "{:?}", t.warnings);
        let t = split_graph("-vf", "convolution=0m=1 2 1 2 4 2 1 2 1:0bias=3").unwrap();
        assert_eq!(
            t.engine,
            EngineStage::Filters {
                plane_masks: vec![(
                    "y",
                    "custom:matrix=[[1,2,1],[2,4,2],[1,2,1]],mode=correlate,rdiv=0.0,bias=3.0".to_string()
                )],
                border: Some("ffmpeg"),
            }
        );
    }

    #[test]
    fn gradients_take_ffmpegs_arithmetic_with_the_scale_as_rdiv() {
        let t = split_graph("-vf", "sobel=scale=3:delta=10:planes=1").unwrap();
        assert_eq!(masks_of(&t), [("y", "sobel:rdiv=3.0,bias=9.5".to_string())]);
        let mask = convstream_core::Mask::from_spec(&masks_of(&t)[0].1).unwrap();
        assert_eq!(mask.ffmpeg_rdiv(), Some(3.0));
    }

    /// FFmpeg's documented examples give four matrices; the fourth (alpha) is set aside.
    #[test]
    fn a_fourth_matrix_is_set_aside_as_ffmpeg_sets_it_aside() {
        let sharpen = "0 -1 0 -1 5 -1 0 -1 0";
        let t = split_graph(
            "-vf",
            &format!("convolution='{sharpen}:{sharpen}:{sharpen}:{sharpen}:1:1:1:1:0:0:0:0'"),
        )
        .unwrap();
        let planes: Vec<&str> = masks_of(&t).iter().map(|(plane, _)| *plane).collect();
        assert_eq!(planes, ["y", "u", "v"]);
    }

    #[test]
    fn ffmpegs_checks_and_errors_come_first() {
        for text in ["gblur=sigma=-3", "convolution=0rdiv=-2", ",sobel,", "sobel=::::"] {
            let error = split_graph("-vf", text).expect_err(text);
            assert!(error.starts_with("-vf: FFmpeg refuses"), "{text}: {error}");
        }
    }

    #[test]
    fn other_filters_run_before_and_after_as_ffmpegs_own() {
        let t = split_graph("-vf", "scale=64:-2,crop=32:16,sobel,gblur=sigma=2,format=gray").unwrap();
        assert_eq!(t.before.as_deref(), Some("scale=64:-2,crop=32:16"));
        assert_eq!(t.after.as_deref(), Some("gblur=sigma=2,format=gray"));
        assert_eq!(masks_of(&t).len(), 3);
        let t = split_graph("-vf", "unsharp").unwrap();
        assert_eq!((t.before.as_deref(), t.after), (Some("unsharp"), None));
        assert_eq!(t.engine, EngineStage::Absent);
    }

    #[test]
    fn the_placeholder_marks_where_the_mask_runs() {
        let t = split_graph("filter.graph", "scale=1280:-2,null@mask,format=gray").unwrap();
        assert_eq!(t.engine, EngineStage::Mask);
        assert_eq!(t.before.as_deref(), Some("scale=1280:-2"));
        assert_eq!(t.after.as_deref(), Some("format=gray"));
        assert_eq!(t.with_mask_placeholder(), "scale=1280:-2,null@mask,format=gray");
        let t = split_graph("filter.graph", "null@mask").unwrap();
        assert_eq!((t.before, t.engine, t.after), (None, EngineStage::Mask, None));
        // A plain `null` is FFmpeg's filter, run before the engine.
        assert_eq!(split_graph("-vf", "null").unwrap().engine, EngineStage::Absent);
        for text in ["null@mask,sobel", "null@mask,null@mask"] {
            let error = split_graph("filter.graph", text).unwrap_err();
            assert!(error.starts_with("filter.graph: `null@mask`"), "{error}");
        }
    }

    #[test]
    fn what_one_run_cannot_be_is_refused_naming_the_filters() {
        let error = split_graph("-vf", "sobel,scale=64:32,prewitt").unwrap_err();
        assert!(
            error.contains("`scale` stands between `sobel` and `prewitt`"),
            "{error}"
        );
        let error = split_graph("-vf", "sobel,sobel").unwrap_err();
        assert!(error.contains("two filters"), "{error}");
    }
}

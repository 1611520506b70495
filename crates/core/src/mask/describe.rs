//! The mask catalogue as text: the preset list `convstream masks` prints, what
//! `convstream masks show SPEC` prints for one mask, and the refusal of a bad SPEC. The
//! command line and the Python module both print these, so they are written once, here.

use std::fmt;

use super::{Mask, MaskError, MaskMode, MaskParams, PRESETS};

/// A SPEC that does not make a mask, with every error found in it. Displayed as one line
/// per error, `mask "SPEC": what is wrong`, the text the command line and Python show.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecRefused {
    /// The SPEC as given.
    pub spec: String,
    /// Every error found in it, in the order found.
    pub errors: Vec<MaskError>,
}

impl SpecRefused {
    /// The refusal of `spec` for `errors` (as [`MaskParams::parse_spec`] and [`Mask::build`]
    /// return them).
    pub fn new(spec: &str, errors: Vec<MaskError>) -> SpecRefused {
        SpecRefused {
            spec: spec.to_string(),
            errors,
        }
    }
}

impl fmt::Display for SpecRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "mask {:?}: {error}", self.spec)?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecRefused {}

/// What `convstream masks` prints: one line per preset (name, the keys it takes, what it
/// does) between a line on SPEC syntax and a pointer to `masks show`.
pub fn preset_list() -> String {
    let mut text = String::from(
        "Presets (SPEC: name or name:key=value,...; every mask also takes divisor, normalize, bias and mode = convolve|correlate):\n",
    );
    for preset in PRESETS {
        let keys = if preset.keys.is_empty() {
            "-".to_string()
        } else {
            preset.keys.join(", ")
        };
        text.push_str(&format!(
            "  {:<12} keys: {:<22} {}\n",
            preset.name, keys, preset.summary
        ));
    }
    text.push_str("Show the exact matrix with: convstream masks show SPEC\n");
    text
}

/// What `convstream masks show SPEC` prints: the matrix (convolution orientation), for
/// `mode=correlate` the taps as written, then one `warning:` line per warning.
pub fn show_spec(spec: &str) -> Result<String, SpecRefused> {
    let refused = |errors| SpecRefused::new(spec, errors);
    let params = MaskParams::parse_spec(spec).map_err(refused)?;
    let mask = Mask::build(&params, None).map_err(refused)?;
    Ok(show_mask(&mask, params.mode))
}

/// What `masks show` prints for a mask already built, made in `mode`: the matrix, the taps
/// as written for `correlate`, then one `warning:` line per warning. The server's mask
/// preview shows the same text.
pub fn show_mask(mask: &Mask, mode: Option<MaskMode>) -> String {
    let mut text = format!("{mask}\n");
    if mode == Some(MaskMode::Correlate) && !mask.is_magnitude() {
        // The matrix above is in convolution orientation (turned half way); the taps as
        // written are what FFmpeg's convolution filter and cv2.filter2D would be given.
        text.push_str("as written (mode=correlate: slid over the picture unflipped, as FFmpeg and OpenCV do):\n");
        let as_written: Vec<f32> = mask.coefficients().iter().rev().copied().collect();
        for row in as_written.chunks(mask.width()) {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:>11.6}")).collect();
            text.push_str(&format!("  {}\n", cells.join(" ")));
        }
    }
    for warning in mask.warnings() {
        text.push_str(&format!("warning: {warning}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preset_list_names_every_preset_between_its_two_lines() {
        let text = preset_list();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), PRESETS.len() + 2);
        assert!(lines[0].starts_with("Presets (SPEC: "));
        assert_eq!(
            lines[lines.len() - 1],
            "Show the exact matrix with: convstream masks show SPEC"
        );
        for (line, preset) in lines[1..].iter().zip(PRESETS) {
            assert!(line.starts_with(&format!("  {:<12} keys: ", preset.name)), "{line}");
        }
    }

    #[test]
    fn a_refusal_says_the_spec_on_every_line() {
        let refused = show_spec("box:size=4,width=2").unwrap_err();
        assert!(refused.errors.len() >= 2, "{refused:?}");
        for line in refused.to_string().lines() {
            assert!(line.starts_with("mask \"box:size=4,width=2\": "), "{line}");
        }
    }

    #[test]
    fn correlate_shows_the_taps_as_written() {
        let text = show_spec("custom:matrix=[[1,2,3]],mode=correlate").unwrap();
        assert!(text.contains("as written (mode=correlate"), "{text}");
        assert!(!show_spec("custom:matrix=[[1,2,3]]").unwrap().contains("as written"));
    }
}

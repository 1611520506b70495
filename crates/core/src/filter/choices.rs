//! The filter's named choices: how samples beyond a plane's edges are taken
//! ([`BorderMode`]) and which planes are filtered ([`PlaneSelection`]), read from their names
//! ([`UnknownName`] when a text is none of them) and written back.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::format::PixelFormat;

/// How samples outside the plane are taken, with SciPy's names and meanings
/// (`scipy.ndimage.convolve(mode=..., cval=0)`), for a row `a b c d`. Other tools' names for
/// the same meaning are accepted too: OpenCV's `replicate` and `reflect_101`, NumPy's `edge`
/// and `symmetric`, `clamp`, `zero`, `periodic` (OpenCV's `reflect` is SciPy's, the same here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BorderMode {
    /// `0 0 0 | a b c d | 0 0 0`
    #[serde(alias = "zero", alias = "zeros")]
    Constant,
    /// `a a a | a b c d | d d d`
    #[serde(alias = "replicate", alias = "edge", alias = "clamp")]
    Nearest,
    /// `c b a | a b c d | d c b` (half-sample symmetric)
    #[default]
    #[serde(alias = "symmetric")]
    Reflect,
    /// `d c b | a b c d | c b a` (whole-sample symmetric)
    #[serde(alias = "reflect_101", alias = "reflect101", alias = "reflect-101")]
    Mirror,
    /// `b c d | a b c d | a b c`
    #[serde(alias = "periodic", alias = "circular")]
    Wrap,
    /// FFmpeg's `convolution` filter (libavfilter's `vf_convolution.c`): with a 3x3 mask
    /// `c b | a b c d | d c` (whole-sample symmetric before the start, half-sample symmetric
    /// past the end); with any other mask `mirror`, as FFmpeg's 5x5, 7x7, row and column
    /// matrices take it ([`BorderMode::for_mask`]).
    Ffmpeg,
}

impl BorderMode {
    /// Every mode, in the order help texts list them.
    pub const ALL: [BorderMode; 6] = [
        BorderMode::Constant,
        BorderMode::Nearest,
        BorderMode::Reflect,
        BorderMode::Mirror,
        BorderMode::Wrap,
        BorderMode::Ffmpeg,
    ];

    /// The modes' names ([`BorderMode::name`]), in the order of [`BorderMode::ALL`].
    pub const NAMES: [&'static str; 6] = ["constant", "nearest", "reflect", "mirror", "wrap", "ffmpeg"];

    /// The mode a `width` x `height` mask takes: `ffmpeg` is FFmpeg's two-sided rule at 3x3
    /// only (its `setup_3x3`); every other size of FFmpeg's mirrors on both sides
    /// (`avpriv_mirror` in its `setup_5x5`, `setup_7x7`, `setup_row`, `setup_column`).
    pub fn for_mask(self, width: usize, height: usize) -> BorderMode {
        match self {
            BorderMode::Ffmpeg if (width, height) != (3, 3) => BorderMode::Mirror,
            mode => mode,
        }
    }

    /// Maps a possibly out-of-range index onto `0..len`; `None` means "the constant 0".
    /// Works for any distance from the edge, so masks larger than the plane are fine.
    pub fn map(self, index: isize, len: usize) -> Option<usize> {
        let n = len as isize;
        if (0..n).contains(&index) {
            return Some(index as usize);
        }
        let mapped = match self {
            BorderMode::Constant => return None,
            BorderMode::Nearest => index.clamp(0, n - 1),
            BorderMode::Reflect => {
                let period = 2 * n;
                let i = index.rem_euclid(period);
                if i < n {
                    i
                } else {
                    period - 1 - i
                }
            }
            BorderMode::Mirror => {
                if n == 1 {
                    0
                } else {
                    let period = 2 * n - 2;
                    let i = index.rem_euclid(period);
                    if i < n {
                        i
                    } else {
                        period - i
                    }
                }
            }
            BorderMode::Wrap => index.rem_euclid(n),
            // FFmpeg's 3x3 rule, `|x|` before the start and `2n - 1 - x` past the end, taken
            // on as mirror and reflect for indices further out.
            BorderMode::Ffmpeg if index < 0 => return BorderMode::Mirror.map(index, len),
            BorderMode::Ffmpeg => return BorderMode::Reflect.map(index, len),
        };
        Some(mapped as usize)
    }

    /// The name this mode has in other tools that means the same (`cv2.BORDER_*` first),
    /// for help texts and the table of docs/masks.md.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            BorderMode::Constant => &["zero", "zeros"],
            BorderMode::Nearest => &["replicate", "edge", "clamp"],
            BorderMode::Reflect => &["symmetric"],
            BorderMode::Mirror => &["reflect_101", "reflect101", "reflect-101"],
            BorderMode::Wrap => &["periodic", "circular"],
            BorderMode::Ffmpeg => &[],
        }
    }

    /// What the mode takes beyond the edges of a row `a b c d`, for help texts.
    pub fn meaning(self) -> &'static str {
        match self {
            BorderMode::Constant => "`0 0 0 | a b c d | 0 0 0`",
            BorderMode::Nearest => "`a a a | a b c d | d d d`",
            BorderMode::Reflect => "`c b a | a b c d | d c b` (half-sample symmetric)",
            BorderMode::Mirror => "`d c b | a b c d | c b a` (whole-sample symmetric)",
            BorderMode::Wrap => "`b c d | a b c d | a b c`",
            BorderMode::Ffmpeg => "`c b | a b c d | d c` with a 3x3 mask, else as mirror (FFmpeg's convolution filter)",
        }
    }

    /// The mode's own name, SciPy's (`reflect`), as configs and flags write it.
    pub fn name(self) -> &'static str {
        match self {
            BorderMode::Constant => "constant",
            BorderMode::Nearest => "nearest",
            BorderMode::Reflect => "reflect",
            BorderMode::Mirror => "mirror",
            BorderMode::Wrap => "wrap",
            BorderMode::Ffmpeg => "ffmpeg",
        }
    }
}

impl fmt::Display for BorderMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode by its name or one of its [`aliases`](BorderMode::aliases), exactly as written
/// (`reflect_101`, not `Reflect_101`).
impl FromStr for BorderMode {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<BorderMode, UnknownName> {
        BorderMode::ALL
            .into_iter()
            .find(|mode| mode.name() == text || mode.aliases().contains(&text))
            .ok_or_else(|| UnknownName::new(text, "border mode", &BorderMode::NAMES))
    }
}

/// Which planes of a frame are filtered; the others are copied through unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PlaneSelection {
    /// Every plane (the default).
    #[default]
    All,
    /// The luma plane (Y) only.
    Luma,
    /// The chroma planes (U and V) only.
    Chroma,
}

impl PlaneSelection {
    /// Every selection, in the order help texts list them.
    pub const ALL: [PlaneSelection; 3] = [PlaneSelection::All, PlaneSelection::Luma, PlaneSelection::Chroma];

    /// The selections' names ([`PlaneSelection::name`]), in the order of [`PlaneSelection::ALL`].
    pub const NAMES: [&'static str; 3] = ["all", "luma", "chroma"];

    /// Whether plane `index` of a frame in `format` is filtered. Packed RGB has one plane
    /// holding every channel, so only `all` selects it (checked when a pipeline starts).
    pub fn selects(self, format: PixelFormat, index: usize) -> bool {
        match (self, format.has_luma_plane()) {
            (PlaneSelection::All, _) => true,
            (_, false) => false,
            (PlaneSelection::Luma, true) => index == 0,
            (PlaneSelection::Chroma, true) => index > 0,
        }
    }

    /// The selection's name (`luma`), as configs and flags write it.
    pub fn name(self) -> &'static str {
        match self {
            PlaneSelection::All => "all",
            PlaneSelection::Luma => "luma",
            PlaneSelection::Chroma => "chroma",
        }
    }
}

impl fmt::Display for PlaneSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A selection by its name, exactly as written (`luma`, not `Luma`).
impl FromStr for PlaneSelection {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<PlaneSelection, UnknownName> {
        PlaneSelection::ALL
            .into_iter()
            .find(|selection| selection.name() == text)
            .ok_or_else(|| UnknownName::new(text, "plane selection", &PlaneSelection::NAMES))
    }
}

/// A text that is none of a choice's names (nor aliases): what was written, what it was
/// meant to name, and the names there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a {what}; possible values: {}", names.join(", "))]
pub struct UnknownName {
    text: String,
    what: &'static str,
    names: &'static [&'static str],
}

impl UnknownName {
    fn new(text: &str, what: &'static str, names: &'static [&'static str]) -> UnknownName {
        UnknownName {
            text: crate::text::quoted(text),
            what,
            names,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_read_their_names_and_aliases_and_write_their_names() {
        assert_eq!(BorderMode::NAMES, BorderMode::ALL.map(BorderMode::name));
        assert_eq!(PlaneSelection::NAMES, PlaneSelection::ALL.map(PlaneSelection::name));
        for mode in BorderMode::ALL {
            for name in std::iter::once(mode.name()).chain(mode.aliases().iter().copied()) {
                assert_eq!(name.parse::<BorderMode>(), Ok(mode), "{name}");
            }
            assert_eq!(mode.to_string().parse::<BorderMode>(), Ok(mode));
        }
        for selection in PlaneSelection::ALL {
            assert_eq!(selection.to_string().parse::<PlaneSelection>(), Ok(selection));
        }
        // Exactly as written, as the command line has always taken them.
        assert!("Reflect".parse::<BorderMode>().is_err());
        assert!("LUMA".parse::<PlaneSelection>().is_err());
        let error = "blur".parse::<BorderMode>().unwrap_err().to_string();
        assert_eq!(
            error,
            "`blur` is not a border mode; possible values: constant, nearest, reflect, mirror, wrap, ffmpeg"
        );
    }
}

//! What a pipeline computes, independent of the engine that computes it: the mask,
//! the border mode and which planes are filtered.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::frame::PixelFormat;
use crate::mask::Mask;

/// How samples outside the plane are taken, with SciPy's names and meanings
/// (`scipy.ndimage.convolve(mode=..., cval=0)`), for a row `a b c d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BorderMode {
    /// `0 0 0 | a b c d | 0 0 0`
    Constant,
    /// `a a a | a b c d | d d d`
    Nearest,
    /// `c b a | a b c d | d c b` (half-sample symmetric)
    #[default]
    Reflect,
    /// `d c b | a b c d | c b a` (whole-sample symmetric)
    Mirror,
    /// `b c d | a b c d | a b c`
    Wrap,
}

impl BorderMode {
    pub const ALL: [BorderMode; 5] = [
        BorderMode::Constant,
        BorderMode::Nearest,
        BorderMode::Reflect,
        BorderMode::Mirror,
        BorderMode::Wrap,
    ];

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
        };
        Some(mapped as usize)
    }

    pub fn name(self) -> &'static str {
        match self {
            BorderMode::Constant => "constant",
            BorderMode::Nearest => "nearest",
            BorderMode::Reflect => "reflect",
            BorderMode::Mirror => "mirror",
            BorderMode::Wrap => "wrap",
        }
    }
}

impl fmt::Display for BorderMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which planes of a frame are filtered; the others are copied through unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PlaneSelection {
    #[default]
    All,
    Luma,
    Chroma,
}

impl PlaneSelection {
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

/// Everything an engine needs to know to filter frames.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterSpec {
    pub mask: Mask,
    pub border: BorderMode,
    pub planes: PlaneSelection,
}

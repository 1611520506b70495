//! What every CPU path shares about rows: which source row or column a padded position reads
//! under a border mode ([`index_map`]), and how few rows a parallel task takes.

use crate::filter::BorderMode;

/// Output rows a parallel task takes at least: enough work to pay for the hand-off.
pub(super) const MIN_ROWS_PER_TASK: usize = 4;

/// Source index for each padded position `-(taps/2) .. len + taps/2`; `None` reads as 0.
pub(super) fn index_map(len: usize, taps: usize, border: BorderMode) -> Vec<Option<usize>> {
    let centre = (taps / 2) as isize;
    (0..len + taps - 1)
        .map(|p| border.map(p as isize - centre, len))
        .collect()
}

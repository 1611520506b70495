//! What every CPU path shares about rows: which source row or column a padded position reads
//! under a border mode ([`EdgeMap`]), how few rows a parallel task takes, and how many
//! samples of a row a band works on at once ([`TILE_SAMPLES`]).

use crate::filter::BorderMode;

/// Output rows a parallel task takes at least: enough work to pay for the hand-off.
pub(super) const MIN_ROWS_PER_TASK: usize = 4;

/// The most samples (columns times channels) of a row a band converts and sums at once.
/// Wider rows are taken in column tiles of this many, so what a band holds stays a few
/// megabytes whatever the width: a row of 2^27 samples would otherwise cost gigabytes of
/// lanes. Each tile converts `mask width - 1` columns more than it writes, a tenth of a
/// percent at most.
pub(super) const TILE_SAMPLES: usize = 1 << 16;

/// Which source index each padded position `0 .. len + taps - 1` reads (position `p` stands
/// for index `p - taps / 2`; `None` reads as 0). Positions inside the plane map to
/// themselves, so only the `taps - 1` positions beyond the edges are kept: a table of every
/// position would take 16 bytes a sample, more than the plane itself.
pub(super) struct EdgeMap {
    len: usize,
    centre: usize,
    before: Vec<Option<usize>>,
    after: Vec<Option<usize>>,
}

impl EdgeMap {
    pub(super) fn new(len: usize, taps: usize, border: BorderMode) -> EdgeMap {
        let centre = taps / 2;
        let map = |p: usize| border.map(p as isize - centre as isize, len);
        EdgeMap {
            len,
            centre,
            before: (0..centre).map(map).collect(),
            after: (centre + len..len + taps - 1).map(map).collect(),
        }
    }

    /// The source index padded position `p` reads.
    #[inline]
    pub(super) fn get(&self, p: usize) -> Option<usize> {
        if p < self.centre {
            self.before[p]
        } else if p - self.centre < self.len {
            Some(p - self.centre)
        } else {
            self.after[p - self.centre - self.len]
        }
    }

    /// The positions that read the plane itself, at their own index: `centre .. centre + len`.
    pub(super) fn inside(&self) -> std::ops::Range<usize> {
        self.centre..self.centre + self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_map_reads_what_a_table_of_every_position_reads() {
        for border in BorderMode::ALL {
            for len in [1usize, 2, 3, 7, 40] {
                for taps in [1usize, 3, 5, 13, 63] {
                    let map = EdgeMap::new(len, taps, border);
                    for p in 0..len + taps - 1 {
                        let expected = border.map(p as isize - (taps / 2) as isize, len);
                        assert_eq!(map.get(p), expected, "{border:?}, len {len}, taps {taps}, position {p}");
                    }
                }
            }
        }
    }
}

//! Every CPU convolution ([`convolve_bands`]): the output rows are shared out over the cores
//! in bands (a small plane asked for from outside rayon's pool is one band on the calling
//! thread, [`WORK_ON_ONE_THREAD`]), and each band takes its source rows one at a time (those the mask reaches above
//! and below it too), converts them into a ring of the last few rows in lanes of its own
//! (`lanes.rs`; for a rank-one mask, row-filtered into the ring), sums each output row's taps
//! over the ring once it holds them, and finishes the row (`finish::write_row`: divisor, bias,
//! rounding; or an integer finish). What a band works on stays a few rows, in the core's
//! nearest caches; a row wider than `rows::TILE_SAMPLES` samples is taken in column tiles, one
//! after the other, so that holds for any width (each output's sum is the same taps in the
//! same order in a tile as in a whole row: the samples do not change). Which lanes and taps a
//! mask takes, and why integer lanes give the f32 sums' samples, is in `band_mask.rs`.
//! float32 values out, side by side, are summed straight into the output and finished as they
//! are stored, with no buffer between ([`direct_rows`]).
//!
//! One job at some length (about 700 lines, 150 of them tests): a band's loop and the helpers
//! only it calls.

use std::ops::Range;

use rayon::prelude::*;

use super::band_mask::{BandMask, Lanes, Taps};
use super::finish::{magnitude, write_row, Finish};
use super::lanes::{
    as_floats_mut, pad_row, split_rows, sum_blocked, sum_blocked_then, sum_column_group, BandBuffers, Lane, LaneRow,
    LaneTaps,
};
use super::rows::{EdgeMap, TILE_SAMPLES};
use super::view::PlaneView;
use crate::filter::BorderMode;

/// Output rows a band takes: a few bands a core (so a busy core's share moves to an idle
/// one), and several times the rows the mask adds above and below, which a band converts
/// (and, for a rank-one mask, row-filters) a second time.
fn band_rows(height: usize, mask_height: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    height
        .div_ceil(4 * threads)
        .max(4 * (mask_height - 1))
        .max(16)
        .min(height.max(1))
}

/// Planes of less work (samples times taps) asked for from outside the pool are filtered on
/// the calling thread, in one band: waking the pool's threads and waiting for them takes tens
/// of microseconds, as long as such a plane's work. On a 2-core machine a 128 x 256 float
/// plane through a 3x3 Sobel (5 taps a sample) took 24 us this way against 47 us over the
/// pool, while a 128 x 256 x 3 image through a 5x5 Gaussian (10 taps) was as fast either way.
const WORK_ON_ONE_THREAD: usize = 1 << 19;

/// Where the results go: rows `stride` bytes apart, pixels `pixel` bytes apart within a row
/// (each pixel's channels side by side); the bytes between them are left as they are.
#[derive(Debug, Clone, Copy)]
pub(super) struct OutLayout {
    pub(super) stride: usize,
    pub(super) pixel: usize,
}

/// Convolves every channel of `src` with `mask` into `out`: `src.height` rows of samples of
/// `src`'s kind, laid out as `layout` says.
pub(super) fn convolve_bands(src: &PlaneView, mask: &BandMask, border: BorderMode, out: &mut [u8], layout: OutLayout) {
    // A small plane from outside the pool is one band on the calling thread: handing bands
    // to the pool's threads and waiting for them would cost more than its work. Inside the
    // pool (the planes of a batch side by side) bands cost no hand-off and even out the load.
    let outside_the_pool = rayon::current_thread_index().is_none();
    let work = src.width * src.height * src.channels * mask.taps_per_sample();
    let one_thread = rayon::current_num_threads() == 1 || (outside_the_pool && work < WORK_ON_ONE_THREAD);
    convolve_tiled(src, mask, border, out, layout, (TILE_SAMPLES, one_thread));
}

/// [`convolve_bands`] with rows taken `tile_samples` samples (rounded down to whole pixels)
/// at a time, in one band on this thread or in bands over the pool's.
fn convolve_tiled(
    src: &PlaneView,
    mask: &BandMask,
    border: BorderMode,
    out: &mut [u8],
    layout: OutLayout,
    (tile_samples, one_thread): (usize, bool),
) {
    let tile = (tile_samples / src.channels.max(1)).max(1);
    let bands = (tile, one_thread);
    match mask.lanes {
        Lanes::I16 => convolve_lanes::<i16>(src, mask, border, out, layout, bands),
        Lanes::U16 => convolve_lanes::<u16>(src, mask, border, out, layout, bands),
        Lanes::I32 => convolve_lanes::<i32>(src, mask, border, out, layout, bands),
        Lanes::F32 => convolve_lanes::<f32>(src, mask, border, out, layout, bands),
    }
}

fn as_lanes<T: Lane>(rows: &[Taps]) -> Vec<Vec<(usize, T)>> {
    rows.iter()
        .map(|taps| taps.iter().map(|&(offset, w)| (offset, T::tap(w))).collect())
        .collect()
}

/// What every band of one plane shares: the source, the mask's taps as lanes, the border
/// index maps and the sizes.
struct BandPlan<'a, T> {
    src: &'a PlaneView<'a>,
    mask: &'a BandMask,
    rows: Vec<Vec<(usize, T)>>,
    second: Option<Vec<Vec<(usize, T)>>>,
    /// A rank-one mask's column taps (offset 0, one per mask row) and row taps.
    factors: Option<(LaneTaps<T>, LaneTaps<T>)>,
    /// The taps without zeros, for rows of finite values (see `band_mask::SparseTaps`).
    sparse: Option<SparseLanes<T>>,
    xmap: EdgeMap,
    ymap: EdgeMap,
    band: usize,
    /// Output columns a tile takes at most.
    tile: usize,
    /// Bytes of a pixel's samples.
    pixel_bytes: usize,
    /// Bytes from an output row's first sample to just past its last.
    row_bytes: usize,
    /// Bytes between output rows (at least `row_bytes`).
    out_stride: usize,
    /// Bytes between output pixels (at least `pixel_bytes`).
    out_pixel: usize,
    /// The finish makes a zero sum's output whatever its sign, so sums may start from a tap's
    /// value (`Finish::zero_sign_free`, `lanes::FROM_ZERO`).
    zero_sign_free: bool,
}

/// `band_mask::SparseTaps` as lanes.
struct SparseLanes<T> {
    rows: Vec<Vec<(usize, T)>>,
    second: Option<Vec<Vec<(usize, T)>>>,
    across: Option<LaneTaps<T>>,
}

/// Where a band works: output rows from `first` on, output columns `columns` of them.
struct Area {
    first: usize,
    columns: Range<usize>,
}

fn convolve_lanes<T: Lane>(
    src: &PlaneView,
    mask: &BandMask,
    border: BorderMode,
    out: &mut [u8],
    layout: OutLayout,
    (tile, one_thread): (usize, bool),
) {
    let pixel_bytes = src.channels * src.samples().bytes();
    let out_pixel = layout.pixel.max(pixel_bytes);
    let row_bytes = (src.width.max(1) - 1) * out_pixel + pixel_bytes;
    let factors = mask.factors.as_ref().map(|(column, row)| {
        let column: Vec<(usize, T)> = column.iter().map(|w| (0, T::tap(*w))).collect();
        (column, as_lanes::<T>(std::slice::from_ref(row)).remove(0))
    });
    let plan = BandPlan {
        src,
        mask,
        rows: as_lanes::<T>(&mask.rows),
        second: mask.second.as_deref().map(as_lanes::<T>),
        factors,
        sparse: mask.sparse.as_ref().map(|sparse| SparseLanes {
            rows: as_lanes::<T>(&sparse.rows),
            second: sparse.second.as_deref().map(as_lanes::<T>),
            across: sparse
                .across
                .as_ref()
                .map(|across| as_lanes::<T>(std::slice::from_ref(across)).remove(0)),
        }),
        xmap: EdgeMap::new(src.width, mask.width, border),
        ymap: EdgeMap::new(src.height, mask.height, border),
        band: if one_thread {
            src.height.max(1)
        } else {
            band_rows(src.height, mask.height)
        },
        tile,
        pixel_bytes,
        row_bytes: row_bytes.max(1),
        out_stride: layout.stride.max(row_bytes).max(1),
        out_pixel,
        zero_sign_free: mask.finish.zero_sign_free(),
    };
    let band = |(index, out): (usize, &mut [u8])| {
        T::with_buffers(|buffers| {
            for x in (0..src.width).step_by(plan.tile) {
                let area = Area {
                    first: index * plan.band,
                    columns: x..(x + plan.tile).min(src.width),
                };
                filter_band(&plan, buffers, &area, out);
            }
        })
    };
    let chunk = plan.out_stride * plan.band;
    if one_thread {
        out.chunks_mut(chunk).enumerate().for_each(band);
    } else if rayon::current_thread_index().is_none() {
        with_the_caller(out.chunks_mut(chunk).enumerate(), band);
    } else {
        out.par_chunks_mut(chunk).enumerate().for_each(band);
    }
}

/// Every band, taken in turn by the calling thread (outside the pool) and by the pool's
/// threads but one: the caller works rather than sleeps while the pool does it all, and one
/// thread fewer is woken and waited for. On two cores a 720p float32 Sobel from Python took
/// 0.31 ms a call this way against 0.43 with the pool's threads alone (medians of 30 rounds).
fn with_the_caller<'a>(
    chunks: impl Iterator<Item = (usize, &'a mut [u8])> + Send,
    band: impl Fn((usize, &'a mut [u8])) + Sync,
) {
    let queue = std::sync::Mutex::new(chunks);
    // The lock is held only while the next band is taken, never while one is filtered, so it
    // is poisoned only by a panic in the iterator (none: it splits a slice); then no band is left.
    let next = || queue.lock().ok().and_then(|mut chunks| chunks.next());
    let take_bands = || {
        while let Some(chunk) = next() {
            band(chunk);
        }
    };
    rayon::in_place_scope(|scope| {
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(|_| take_bands());
        }
        take_bands();
    });
}

/// [`filter_band_with`] compiled for the widest vectors the CPU has: the conversion, the
/// sums and the integer finish all vectorise within it.
fn filter_band<T: Lane>(plan: &BandPlan<T>, buffers: &mut BandBuffers<T>, area: &Area, out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = std::is_x86_feature_detected!("fma");
        if fma && std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512F and BW and FMA, the features the function is
            // compiled for.
            unsafe { filter_band_avx512(plan, buffers, area, out) };
            return;
        }
        if fma && std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 and FMA, the features the function is compiled for.
            unsafe { filter_band_avx2(plan, buffers, area, out) };
            return;
        }
    }
    filter_band_with::<T, 16, 16>(plan, buffers, area, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
unsafe fn filter_band_avx512<T: Lane>(plan: &BandPlan<T>, buffers: &mut BandBuffers<T>, area: &Area, out: &mut [u8]) {
    // Eight 512-bit accumulators whatever the lane: enough independent sums to keep both
    // vector units busy through an FMA's latency.
    if std::mem::size_of::<T>() == 2 {
        filter_band_with::<T, 256, 128>(plan, buffers, area, out);
    } else {
        filter_band_with::<T, 128, 64>(plan, buffers, area, out);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn filter_band_avx2<T: Lane>(plan: &BandPlan<T>, buffers: &mut BandBuffers<T>, area: &Area, out: &mut [u8]) {
    // Eight 256-bit accumulators for 32-bit lanes: an FMA takes 4 or 5 cycles and two can
    // start each cycle, so fewer independent sums leave the units waiting (four made a 3x3
    // float Laplacian 1.3x slower). Two for 16-bit lanes, whose adds take one cycle.
    if std::mem::size_of::<T>() == 4 {
        filter_band_with::<T, 64, 16>(plan, buffers, area, out);
    } else {
        filter_band_with::<T, 32, 16>(plan, buffers, area, out);
    }
}

/// Output rows a rank-one mask's column pass makes at once (see `lanes::sum_column_group`).
const COLUMN_GROUP: usize = 4;

/// The output rows `out` of one band, from output row `first` on. Source rows are taken one
/// at a time, top to bottom (those the mask reaches above and below the band too), each
/// converted into a ring of the last `mask height + COLUMN_GROUP - 1` rows (for a rank-one
/// mask: converted, then row-filtered into the ring); once the ring holds an output row's
/// rows, that row is summed and finished (a rank-one mask's, `COLUMN_GROUP` rows at a time
/// while there are as many). What a band works on stays a few rows, in the core's nearest
/// caches.
#[inline(always)]
fn filter_band_with<T: Lane, const BLOCK: usize, const COLUMN_BLOCK: usize>(
    plan: &BandPlan<T>,
    buffers: &mut BandBuffers<T>,
    area: &Area,
    out: &mut [u8],
) {
    let (src, mask) = (plan.src, plan.mask);
    let (channels, height) = (src.channels, mask.height);
    let row_len = area.columns.len() * channels;
    let padded_len = (area.columns.len() + mask.width - 1) * channels;
    // The tile's bytes within an output row.
    let tile_bytes = area.columns.start * plan.out_pixel..(area.columns.end - 1) * plan.out_pixel + plan.pixel_bytes;
    // The last band's last row may end at its samples, without the stride's padding.
    let outputs = (out.len() + plan.out_stride - plan.row_bytes) / plan.out_stride;
    // The source rows the band reads: padded position `area.first + i` for i in 0..span.
    let span = outputs + height - 1;
    let source = |i: usize| plan.ymap.get(area.first + i);
    let ring_len = if plan.factors.is_some() { row_len } else { padded_len };
    // A rank-one mask keeps the rows of a whole group of outputs.
    let ring_rows = if plan.factors.is_some() {
        height + COLUMN_GROUP - 1
    } else {
        height
    };
    buffers.ring.resize(ring_rows * ring_len, T::default());
    buffers.padded.resize(padded_len, T::default());
    buffers.sums.resize(COLUMN_GROUP * row_len, T::default());
    if plan.second.is_some() {
        buffers.second.resize(row_len, T::default());
    }
    buffers.finite.resize(ring_rows, false);
    let mut next = 0;
    let x0 = area.columns.start;
    for i in 0..span {
        if let Some(sy) = source(i) {
            let slot = &mut buffers.ring[(i % ring_rows) * ring_len..(i % ring_rows + 1) * ring_len];
            match &plan.factors {
                Some((_, across)) => {
                    let finite = pad_row(src, sy, &plan.xmap, x0, &mut buffers.padded);
                    let taps = row_taps(plan, finite, across).as_slice();
                    sum_blocked::<T, BLOCK>(&[(&buffers.padded, taps)], slot, plan.zero_sign_free);
                }
                None => {
                    buffers.finite[i % ring_rows] = pad_row(src, sy, &plan.xmap, x0, slot);
                }
            }
        }
        // Output rows whose source rows have all been converted.
        let ready = (i + 1).saturating_sub(height - 1);
        while next < ready {
            let ring = (&buffers.ring[..], ring_len, ring_rows);
            let out_row = |r: usize| r * plan.out_stride + tile_bytes.start..r * plan.out_stride + tile_bytes.end;
            let second_sums = match (&plan.factors, &plan.second) {
                (Some((column, _)), _) if ready - next >= COLUMN_GROUP => {
                    let weights: Vec<T> = column.iter().map(|(_, w)| *w).collect();
                    let rows: Vec<Option<&[T]>> = (next..next + COLUMN_GROUP + height - 1)
                        .map(|j| source(j).map(|_| ring_slot(ring, j)))
                        .collect();
                    let spare = (&mut buffers.sums[..], &mut buffers.floats, &mut buffers.spread);
                    column_group::<T, COLUMN_BLOCK>(plan, (&rows, &weights), out, (next, &tile_bytes), spare);
                    next += COLUMN_GROUP;
                    continue;
                }
                (Some((column, _)), _) if i + 1 == span => {
                    let columns: Vec<&[(usize, T)]> = (0..height).map(|k| &column[k..k + 1]).collect();
                    let tap_rows = ring_tap_rows(ring, next, source, &columns);
                    if let Some([direct]) = direct_rows::<T, 1>(plan, out, next, &tile_bytes) {
                        blocked_finished::<T, BLOCK>(&tap_rows, direct, plan.mask.finish);
                        next += 1;
                        continue;
                    }
                    sum_blocked::<T, BLOCK>(&tap_rows, &mut buffers.sums[..row_len], plan.zero_sign_free);
                    None
                }
                // A rank-one mask waits for a whole group until the band's last rows.
                (Some(_), _) => break,
                (None, second) => {
                    // Rows of finite values alone take the taps without zeros.
                    let finite = || (next..next + height).all(|j| source(j).is_none() || buffers.finite[j % ring_rows]);
                    let (taps, second) = match &plan.sparse {
                        Some(sparse) if finite() => (&sparse.rows, sparse.second.as_ref()),
                        _ => (&plan.rows, second.as_ref()),
                    };
                    let rows: Vec<&[(usize, T)]> = taps.iter().map(Vec::as_slice).collect();
                    let tap_rows = ring_tap_rows(ring, next, source, &rows);
                    if second.is_none() {
                        if let Some([direct]) = direct_rows::<T, 1>(plan, out, next, &tile_bytes) {
                            blocked_finished::<T, BLOCK>(&tap_rows, direct, plan.mask.finish);
                            next += 1;
                            continue;
                        }
                    }
                    sum_blocked::<T, BLOCK>(&tap_rows, &mut buffers.sums[..row_len], plan.zero_sign_free);
                    second.map(|second| {
                        let rows: Vec<&[(usize, T)]> = second.iter().map(Vec::as_slice).collect();
                        let rows = ring_tap_rows(ring, next, source, &rows);
                        sum_blocked::<T, BLOCK>(&rows, &mut buffers.second, plan.zero_sign_free);
                        buffers.second.as_slice()
                    })
                }
            };
            let range = out_row(next);
            let spare = (&mut buffers.floats, &mut buffers.spread);
            finish_into(plan, &mut out[range], &buffers.sums[..row_len], second_sums, spare);
            next += 1;
        }
    }
}

/// Rank-one output rows `next..next + COLUMN_GROUP` of the tile `tile_bytes`: their column
/// pass over the ring's `rows` with `weights`, summed straight into the output where it takes
/// float32 values ([`direct_rows`]), else into the band's `sums` and finished from there.
#[inline(always)]
fn column_group<T: Lane, const COLUMN_BLOCK: usize>(
    plan: &BandPlan<T>,
    (rows, weights): (&[Option<&[T]>], &[T]),
    out: &mut [u8],
    (next, tile_bytes): (usize, &Range<usize>),
    (sums, floats, spread): (&mut [T], &mut Vec<f32>, &mut Vec<u8>),
) {
    if let Some(mut outs) = direct_rows::<T, COLUMN_GROUP>(plan, out, next, tile_bytes) {
        column_group_finished::<T, COLUMN_BLOCK, COLUMN_GROUP>(rows, weights, &mut outs, plan.mask.finish);
        return;
    }
    let row_len = sums.len() / COLUMN_GROUP;
    let mut outs = split_rows::<T, COLUMN_GROUP>(sums, row_len);
    sum_column_group::<T, COLUMN_BLOCK, COLUMN_GROUP>(rows, weights, &mut outs, row_len, |s| s);
    for (g, sums) in outs.iter().enumerate() {
        let row = (next + g) * plan.out_stride;
        let range = row + tile_bytes.start..row + tile_bytes.end;
        finish_into(plan, &mut out[range], sums, None, (&mut *floats, &mut *spread));
    }
}

/// A rank-one mask's row factor for a source row: its taps without zeros where the row's
/// values are all `finite` and the mask has any, else every tap.
#[inline(always)]
fn row_taps<'p, T>(plan: &'p BandPlan<T>, finite: bool, across: &'p LaneTaps<T>) -> &'p LaneTaps<T> {
    match plan.sparse.as_ref().and_then(|sparse| sparse.across.as_ref()) {
        Some(sparse) if finite => sparse,
        _ => across,
    }
}

/// Output rows `first..first + G` of the band's tile as lanes to sum straight into, where the
/// output takes float32 values side by side at their alignment (so the lanes are f32): each
/// sum is finished as it is stored ([`column_group_finished`], [`blocked_finished`]) instead
/// of being summed into a buffer and copied out, a pass over every value saved. `None`
/// otherwise.
fn direct_rows<'o, T: Lane, const G: usize>(
    plan: &BandPlan<T>,
    out: &'o mut [u8],
    first: usize,
    tile: &Range<usize>,
) -> Option<[&'o mut [T]; G]> {
    if !plan.mask.finish.float || plan.out_pixel != plan.pixel_bytes {
        return None;
    }
    let rows: Option<Vec<&mut [T]>> = out[first * plan.out_stride..]
        .chunks_mut(plan.out_stride)
        .take(G)
        .map(|row| as_floats_mut(&mut row[tile.clone()]).and_then(T::from_floats_mut))
        .collect();
    rows?.try_into().ok()
}

/// [`sum_column_group`] into float32 values, each finished as it is stored: as
/// `finish::write_row` makes float32 values (divided, a divisor of 1 skipped, plus the bias),
/// the same operations on the same sums. Inlined, as every loop of a band, into the band's
/// function compiled for the CPU's vectors.
#[inline(always)]
fn column_group_finished<T: Lane, const BLOCK: usize, const G: usize>(
    rows: &[Option<&[T]>],
    weights: &[T],
    outs: &mut [&mut [T]; G],
    finish: Finish,
) {
    let (divisor, bias, len) = (finish.divisor, finish.bias, outs[0].len());
    if divisor == 1.0 {
        sum_column_group::<T, BLOCK, G>(rows, weights, outs, len, move |s| T::float(s.to_f32() + bias));
    } else {
        let then = move |s: T| T::float(s.to_f32() / divisor + bias);
        sum_column_group::<T, BLOCK, G>(rows, weights, outs, len, then);
    }
}

/// [`sum_blocked`] into float32 values, each finished as it is stored (as
/// [`column_group_finished`]).
#[inline(always)]
fn blocked_finished<T: Lane, const BLOCK: usize>(rows: &[LaneRow<T>], out: &mut [T], finish: Finish) {
    let (divisor, bias, zero_sign_free) = (finish.divisor, finish.bias, finish.zero_sign_free());
    if divisor == 1.0 {
        sum_blocked_then::<T, BLOCK>(rows, out, (move |s| T::float(s.to_f32() + bias), zero_sign_free));
    } else {
        let then = move |s: T| T::float(s.to_f32() / divisor + bias);
        sum_blocked_then::<T, BLOCK>(rows, out, (then, zero_sign_free));
    }
}

/// Source row `j` of a band (padded position `first + j`) in the ring.
fn ring_slot<T>((ring, slot_len, ring_rows): (&[T], usize, usize), j: usize) -> &[T] {
    let slot = j % ring_rows;
    &ring[slot * slot_len..(slot + 1) * slot_len]
}

/// The tap rows of output row `r`: mask row `k`'s taps over source row `r + k` in the ring,
/// for each mask row whose source row (`source(r + k)`) is inside the plane.
fn ring_tap_rows<'a, T>(
    ring: (&'a [T], usize, usize),
    r: usize,
    source: impl Fn(usize) -> Option<usize>,
    taps: &[&'a [(usize, T)]],
) -> Vec<LaneRow<'a, T>> {
    (0..taps.len())
        .filter(|k| source(r + k).is_some())
        .map(|k| (ring_slot(ring, r + k), taps[k]))
        .collect()
}

/// One row of a tile's sums written as samples where the output's pixels are: straight into
/// `out` when they are side by side, else finished into `spread` and copied a pixel at a
/// time (`floats`: the finish's own buffer).
#[inline(always)]
fn finish_into<T: Lane>(
    plan: &BandPlan<T>,
    out: &mut [u8],
    sums: &[T],
    second: Option<&[T]>,
    (floats, spread): (&mut Vec<f32>, &mut Vec<u8>),
) {
    if plan.out_pixel == plan.pixel_bytes {
        return finish_row(out, sums, second, plan.mask, floats);
    }
    spread.resize(sums.len() / plan.src.channels * plan.pixel_bytes, 0);
    finish_row(spread, sums, second, plan.mask, floats);
    for (pixel, at) in spread.chunks_exact(plan.pixel_bytes).zip((0..).step_by(plan.out_pixel)) {
        out[at..at + plan.pixel_bytes].copy_from_slice(pixel);
    }
}

/// One row of sums (and a gradient magnitude's second sums) written as samples.
#[inline(always)]
fn finish_row<T: Lane>(out: &mut [u8], sums: &[T], second: Option<&[T]>, mask: &BandMask, floats: &mut Vec<f32>) {
    if let Some(integers) = mask.integer_finish {
        return integers.write_row(out, sums);
    }
    if let (None, Some(sums)) = (second, T::as_floats(sums)) {
        return write_row(out, sums, mask.finish);
    }
    // Integer lanes' sums as the f32 sums they are: times 2^-scale_bits, exact.
    let scale = 1.0 / (1u32 << mask.scale_bits) as f32;
    floats.resize(sums.len(), 0.0);
    match second {
        Some(second) => {
            for ((f, a), b) in floats.iter_mut().zip(sums).zip(second) {
                *f = magnitude(a.to_f32() * scale, b.to_f32() * scale);
            }
        }
        None => {
            for (f, s) in floats.iter_mut().zip(sums) {
                *f = s.to_f32() * scale;
            }
        }
    }
    write_row(out, floats, mask.finish);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::view::{Pitches, ViewSamples};
    use crate::format::{PlaneShape, SampleDepth};
    use crate::frame::Plane;
    use crate::mask::Mask;

    /// A plane of `shape` with samples spread over the depth's range, the same every run.
    fn plane(shape: PlaneShape) -> Plane {
        let mut plane = Plane::new(shape);
        let max = u64::from(shape.depth.max_value());
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for sample in plane.data.chunks_exact_mut(shape.depth.bytes()) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = ((state >> 11) % (max + 1)) as u16;
            if sample.len() == 2 {
                sample.copy_from_slice(&(value << shape.depth.shift).to_le_bytes());
            } else {
                sample[0] = value as u8;
            }
        }
        plane
    }

    /// float32 values taken in column tiles of any width give the bits whole rows give, the
    /// sums written straight into the output: an infinity and a NaN in the rows, one and
    /// three channels, every border.
    #[test]
    fn float_tiles_give_the_bits_of_whole_rows() {
        let (width, height) = (53, 29);
        for channels in [1, 3] {
            let source = plane(PlaneShape {
                width: width * channels * 4,
                height,
                channels: 1,
                depth: SampleDepth::EIGHT,
            });
            let mut values: Vec<f32> = source.data.iter().map(|b| (f32::from(*b) - 99.0) * 0.731).collect();
            values.truncate(width * height * channels);
            values[3 * width * channels + 7] = f32::INFINITY;
            values[11 * width * channels] = f32::NAN;
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let pixel = channels * 4;
            let pitches = Pitches {
                row: (width * pixel) as isize,
                pixel: pixel as isize,
                channel: 4,
            };
            let view =
                PlaneView::new(&bytes, 0, (width, height, channels), pitches, ViewSamples::Float32).expect("inside");
            for spec in [
                "sobel-x",
                "gaussian:size=7,sigma=2",
                "box:width=9,height=3",
                "laplacian",
                "emboss",
            ] {
                let mask = Mask::from_spec(spec).expect("a mask");
                let band_mask = BandMask::of_floats(&mask, channels);
                for border in BorderMode::ALL {
                    let border = border.for_mask(mask.width(), mask.height());
                    let layout = OutLayout {
                        stride: width * pixel,
                        pixel,
                    };
                    let mut whole = vec![0xA5u8; bytes.len()];
                    convolve_tiled(&view, &band_mask, border, &mut whole, layout, (usize::MAX, true));
                    for (tile_samples, one_thread) in [(1, true), (3, false), (8, true), (24, false), (100, true)] {
                        let mut tiled = vec![0xA5u8; bytes.len()];
                        convolve_tiled(
                            &view,
                            &band_mask,
                            border,
                            &mut tiled,
                            layout,
                            (tile_samples, one_thread),
                        );
                        assert!(
                            tiled == whole,
                            "{spec}, {border:?}, {channels} channel(s), tiles of {tile_samples}, one thread: {one_thread}"
                        );
                    }
                }
            }
        }
    }

    /// Rows taken in column tiles of any width, in one band on this thread or in bands over
    /// the pool's, give the samples whole rows in one band give, byte for byte: every lane
    /// kind (f32, rank-one, gradient pairs, integer), every border, several channels and
    /// depths, tiles narrower than the mask included.
    #[test]
    fn column_tiles_give_the_samples_of_whole_rows_bit_for_bit() {
        let specs = [
            "box:size=3",
            "gaussian:size=7,sigma=2",
            "sharpen",
            "sobel",
            "edge:size=9",
            "custom:matrix=[[1,2,0],[0,-1,3],[1,0,1]]",
            "custom:matrix=[[0.5,1.25,-0.75,2,0.1]]",
        ];
        let depths = [
            SampleDepth::EIGHT,
            SampleDepth { bits: 10, shift: 0 },
            SampleDepth { bits: 16, shift: 0 },
        ];
        for spec in specs {
            let mask = Mask::from_spec(spec).expect("a mask");
            for border in BorderMode::ALL {
                let border = border.for_mask(mask.width(), mask.height());
                for (channels, depth) in [(1, depths[0]), (3, depths[0]), (1, depths[1]), (2, depths[2])] {
                    let src = plane(PlaneShape {
                        width: 67,
                        // Tall enough for several bands of the pool's threads.
                        height: 61,
                        channels,
                        depth,
                    });
                    let band_mask = BandMask::of(&mask, depth, channels);
                    let stride = src.row_bytes() + 3;
                    let len = stride * (src.height - 1) + src.row_bytes();
                    let layout = OutLayout {
                        stride,
                        pixel: channels * depth.bytes(),
                    };
                    let view = PlaneView::of_plane(&src);
                    let mut whole = vec![0xA5u8; len];
                    convolve_tiled(&view, &band_mask, border, &mut whole, layout, (usize::MAX, true));
                    for (tile_samples, one_thread) in [(1, true), (2, false), (5, true), (16, false), (64, false)] {
                        let mut tiled = vec![0xA5u8; len];
                        let bands = (tile_samples, one_thread);
                        convolve_tiled(&view, &band_mask, border, &mut tiled, layout, bands);
                        assert!(
                            tiled == whole,
                            "{spec}, {border:?}, {channels} channel(s) of {} bits, tiles of {tile_samples}, \
                             one thread: {one_thread}",
                            depth.bits
                        );
                    }
                }
            }
        }
    }
}

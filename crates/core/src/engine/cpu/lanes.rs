//! The lanes the band loops sum in ([`Lane`]: i16, u16 and i32 for exact sums, f32 with one fused
//! multiply-add per tap), their inner loop ([`sum_blocked`]: blocks of outputs held in
//! registers while every tap passes over them, in the taps' order), source rows converted
//! into lanes with their borders ([`pad_row`]), and each thread's band buffers.
//!
//! One job at some length (about 785 lines, 170 of them tests): the lanes and the loops that
//! sum in them, kept beside each other because each loop is written for what a lane can do.
//!
//! Every loop here is inlined into each band function (one per lane type, vector width and
//! finish), so a constant parameter added to one multiplies what the compiler makes. The sums'
//! start is such a constant in the row loop of f32 lanes alone (about 30 s of this crate's
//! 4-minute release build on two cores); given to every loop of every lane, it took 13 minutes.

use super::rows::EdgeMap;
use super::view::{PlaneView, ViewSamples};

/// What a band works in, kept from one band to the next on a thread.
#[derive(Default)]
pub(super) struct BandBuffers<T> {
    /// The last `mask height` source rows with their borders (for a rank-one mask: their row
    /// pass), each in slot `row % height`.
    pub(super) ring: Vec<T>,
    /// A source row with its borders, before a rank-one mask's row pass.
    pub(super) padded: Vec<T>,
    pub(super) sums: Vec<T>,
    pub(super) second: Vec<T>,
    pub(super) floats: Vec<f32>,
    /// A row's samples before they are spread to an output whose pixels are apart.
    pub(super) spread: Vec<u8>,
    /// Whether each ring slot's values are all finite (float values with sparse taps only).
    pub(super) finite: Vec<bool>,
}

/// The lanes sums are made in: i16, u16 or i32 (exact sums) or f32.
pub(super) trait Lane: Copy + Default + Send + Sync + 'static {
    /// A sample's value.
    fn sample(value: u16) -> Self;
    /// A float value's (f32 lanes only take float values).
    fn float(value: f32) -> Self;
    /// A tap's weight.
    fn tap(weight: f32) -> Self;
    /// `self + weight * value`: exact in integers, one fused multiply-add in f32.
    fn add_product(self, weight: Self, value: Self) -> Self;
    /// Whether sums in this lane may start from a tap's value ([`FROM_FIRST`], [`FROM_SECOND`]):
    /// for f32 only, where the multiply-add saved is the costly part. An integer lane's sum
    /// starts from 0 always, which keeps two more copies of its loops out of the build.
    const STARTS_FROM_A_TAP: bool;
    /// Whether this weight is 1, whose product is the value itself.
    fn is_one(self) -> bool;
    /// Whether this weight is -1, whose product is the value negated, exactly.
    fn is_minus_one(self) -> bool;
    /// An integer lane's value (exact sums only).
    fn get(self) -> i32;
    /// The value as an f32 (exact for the integer lanes' sums, which stay within 2^24).
    fn to_f32(self) -> f32;
    /// f32 lanes' sums as they are, for the finishing step (integer lanes: `None`).
    fn as_floats(sums: &[Self]) -> Option<&[f32]>;
    /// float32 values to sum into as f32 lanes (integer lanes: `None`).
    fn from_floats_mut(values: &mut [f32]) -> Option<&mut [Self]>;
    /// Whether every value is finite (integer lanes always are).
    fn all_finite(values: &[Self]) -> bool;
    /// Runs `work` with this thread's band buffers for these lanes, kept from one band (and
    /// one plane) to the next: a band's rows are converted into memory already in the cache
    /// instead of into new, zeroed buffers.
    fn with_buffers<R>(work: impl FnOnce(&mut BandBuffers<Self>) -> R) -> R;
}

/// Declares the thread's band buffers of one lane type and runs `work` with them; a nested
/// call (none is made today) would get buffers of its own.
macro_rules! with_thread_buffers {
    ($lane:ty, $work:expr) => {{
        thread_local! {
            static BUFFERS: std::cell::RefCell<BandBuffers<$lane>> = std::cell::RefCell::new(BandBuffers::default());
        }
        BUFFERS.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buffers) => $work(&mut buffers),
            Err(_) => $work(&mut BandBuffers::default()),
        })
    }};
}

/// The integer lanes, whose sums are exact (see `band_mask.rs`): i16, u16 (taps none of which
/// is below zero, sums up to 65,535) and i32. The arithmetic wraps, which it never does: the
/// mask's partial sums were bounded before its lanes were chosen.
macro_rules! integer_lane {
    ($lane:ty) => {
        impl Lane for $lane {
            const STARTS_FROM_A_TAP: bool = false;
            #[inline(always)]
            fn sample(value: u16) -> $lane {
                value as $lane
            }
            #[inline(always)]
            fn float(value: f32) -> $lane {
                value as $lane
            }
            #[inline(always)]
            fn tap(weight: f32) -> $lane {
                weight as $lane
            }
            #[inline(always)]
            fn add_product(self, weight: $lane, value: $lane) -> $lane {
                self.wrapping_add(weight.wrapping_mul(value))
            }
            #[inline(always)]
            fn is_one(self) -> bool {
                self == 1
            }
            #[inline(always)]
            fn is_minus_one(self) -> bool {
                // A u16 lane is never -1 (as an i32, 65,535 at most).
                self as i32 == -1
            }
            #[inline(always)]
            fn get(self) -> i32 {
                self as i32
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            fn as_floats(_sums: &[$lane]) -> Option<&[f32]> {
                None
            }
            fn from_floats_mut(_values: &mut [f32]) -> Option<&mut [$lane]> {
                None
            }
            fn all_finite(_values: &[$lane]) -> bool {
                true
            }
            fn with_buffers<R>(work: impl FnOnce(&mut BandBuffers<$lane>) -> R) -> R {
                with_thread_buffers!($lane, work)
            }
        }
    };
}

integer_lane!(i16);
integer_lane!(u16);
integer_lane!(i32);

impl Lane for f32 {
    const STARTS_FROM_A_TAP: bool = true;
    #[inline(always)]
    fn sample(value: u16) -> f32 {
        f32::from(value)
    }
    #[inline(always)]
    fn float(value: f32) -> f32 {
        value
    }
    #[inline(always)]
    fn tap(weight: f32) -> f32 {
        weight
    }
    #[inline(always)]
    fn add_product(self, weight: f32, value: f32) -> f32 {
        weight.mul_add(value, self)
    }
    #[inline(always)]
    fn is_one(self) -> bool {
        self == 1.0
    }
    #[inline(always)]
    fn is_minus_one(self) -> bool {
        self == -1.0
    }
    #[inline(always)]
    fn get(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    fn as_floats(sums: &[f32]) -> Option<&[f32]> {
        Some(sums)
    }
    fn from_floats_mut(values: &mut [f32]) -> Option<&mut [f32]> {
        Some(values)
    }
    #[inline(always)]
    fn all_finite(values: &[f32]) -> bool {
        values.iter().fold(0, |largest, v| largest.max(magnitude_bits(*v))) < INFINITY_BITS
    }
    fn with_buffers<R>(work: impl FnOnce(&mut BandBuffers<f32>) -> R) -> R {
        with_thread_buffers!(f32, work)
    }
}

/// An f32's bits without its sign: below [`INFINITY_BITS`] for a finite value, at or above for
/// an infinity or a NaN. Whether values are finite is asked as whether the largest of these is
/// below: a fold of integer maxima (one instruction for a vector of values, and no early exit
/// as `all` has) where a fold of `is_finite` packs each vector's comparisons into bytes first.
#[inline(always)]
fn magnitude_bits(value: f32) -> u32 {
    value.to_bits() & 0x7fff_ffff
}

/// [`magnitude_bits`] of an infinity.
const INFINITY_BITS: u32 = 0x7f80_0000;

/// Taps as lanes: `(offset in samples, weight)`.
pub(super) type LaneTaps<T> = Vec<(usize, T)>;

/// The taps one source row adds to an output row: `weights` (offset, weight) over `row`.
pub(super) type LaneRow<'a, T> = (&'a [T], &'a [(usize, T)]);

/// How a block's sums start. The definition starts each from +0 and adds every tap in order
/// ([`FROM_ZERO`]). Where the first tap's weight is 1, its product is its value, so the sum
/// may start from that value ([`FROM_FIRST`]), one multiply-add fewer; where the first row's
/// first two weights are -1 then 1, both products are exact and their sum is rounded once in
/// either order, so it may start from the second's value and add the first ([`FROM_SECOND`]).
/// Each sum is then the definition's value; only a zero's sign can differ (+0 + -0 is +0),
/// and the finish makes either zero the same output (adding a bias other than -0, or rounding
/// to a sample), so the callers ask for these starts only where it does (see
/// `bands::BandPlan::zero_sign_free`). NaNs stay NaNs (their payloads are not specified).
/// The column group ([`sum_column_group`]) always starts from +0: its loops are unrolled for
/// each mask height, and a start there doubled the release build of this crate (3.6 to 6.6
/// minutes on two cores) while the float32 Sobel it was for ran no faster.
const FROM_ZERO: u8 = 0;
/// See [`FROM_ZERO`].
const FROM_FIRST: u8 = 1;
/// See [`FROM_ZERO`].
const FROM_SECOND: u8 = 2;

/// The start [`sum_blocked`]'s `rows` may take (see [`FROM_ZERO`]).
#[inline(always)]
fn start_of<T: Lane>(rows: &[LaneRow<T>]) -> u8 {
    match rows.first().map(|(_, taps)| *taps) {
        Some([(_, first), ..]) if first.is_one() => FROM_FIRST,
        Some([(_, first), (_, second), ..]) if first.is_minus_one() && second.is_one() => FROM_SECOND,
        _ => FROM_ZERO,
    }
}

/// `out[e] = sum of weight * row[e + offset]` over every tap of every row, in the rows' then
/// the taps' order: blocks of `BLOCK` outputs kept in registers while the taps pass over
/// them, then blocks of 16, then the block of 16 that ends the row (or, in a row of fewer,
/// one output at a time). Each output's arithmetic is the same in all of them, so one made
/// twice is the same value twice. `zero_sign_free`: the sums may take a start other than +0
/// (see [`FROM_ZERO`]).
#[inline(always)]
pub(super) fn sum_blocked<T: Lane, const BLOCK: usize>(rows: &[LaneRow<T>], out: &mut [T], zero_sign_free: bool) {
    sum_blocked_then::<T, BLOCK>(rows, out, (|sum| sum, zero_sign_free));
}

/// [`sum_blocked`] with `then` taken on each sum before it is stored: the finish of float32
/// values summed straight into the output (see `bands::direct_rows`), done while the sums are
/// still in registers.
#[inline(always)]
pub(super) fn sum_blocked_then<T: Lane, const BLOCK: usize>(
    rows: &[LaneRow<T>],
    out: &mut [T],
    (then, zero_sign_free): (impl Fn(T) -> T + Copy, bool),
) {
    // A constant condition: for a lane without starts the other loops are never compiled.
    if !T::STARTS_FROM_A_TAP {
        return sum_blocked_from::<T, BLOCK, FROM_ZERO>(rows, out, then);
    }
    match if zero_sign_free { start_of(rows) } else { FROM_ZERO } {
        FROM_FIRST => sum_blocked_from::<T, BLOCK, FROM_FIRST>(rows, out, then),
        FROM_SECOND => sum_blocked_from::<T, BLOCK, FROM_SECOND>(rows, out, then),
        _ => sum_blocked_from::<T, BLOCK, FROM_ZERO>(rows, out, then),
    }
}

/// [`sum_blocked_then`] with its blocks' sums starting as `START` says.
#[inline(always)]
fn sum_blocked_from<T: Lane, const BLOCK: usize, const START: u8>(
    rows: &[LaneRow<T>],
    out: &mut [T],
    then: impl Fn(T) -> T + Copy,
) {
    let blocked = sum_blocks::<T, BLOCK, START>(rows, out, 0, then);
    let mut start = sum_blocks::<T, 16, START>(rows, out, blocked, then);
    if start < out.len() && out.len() >= 16 {
        // The last few outputs as the block of 16 that ends with them, some made again: one
        // block's work rather than a sum at a time.
        start = sum_blocks::<T, 16, START>(rows, out, out.len() - 16, then);
    }
    for (e, slot) in out.iter_mut().enumerate().skip(start) {
        let mut acc = T::default();
        for (row, taps) in rows {
            for &(offset, weight) in *taps {
                acc = acc.add_product(weight, row[e + offset]);
            }
        }
        *slot = then(acc);
    }
}

/// The whole blocks of `BLOCK` outputs from `start` on, their sums starting as `START` says;
/// returns where they end.
#[inline(always)]
fn sum_blocks<T: Lane, const BLOCK: usize, const START: u8>(
    rows: &[LaneRow<T>],
    out: &mut [T],
    mut start: usize,
    then: impl Fn(T) -> T + Copy,
) -> usize {
    while start + BLOCK <= out.len() {
        let mut acc = [T::default(); BLOCK];
        for (r, (row, taps)) in rows.iter().enumerate() {
            let block = |offset: usize| -> &[T; BLOCK] {
                let at = start + offset;
                row[at..at + BLOCK].try_into().expect("a block")
            };
            let taps = match START {
                FROM_FIRST if r == 0 => {
                    acc = *block(taps[0].0);
                    &taps[1..]
                }
                FROM_SECOND if r == 0 => {
                    acc = *block(taps[1].0);
                    add_products(&mut acc, taps[0].1, block(taps[0].0));
                    &taps[2..]
                }
                _ => taps,
            };
            for &(offset, weight) in taps {
                add_products(&mut acc, weight, block(offset));
            }
        }
        for (slot, a) in out[start..start + BLOCK].iter_mut().zip(acc) {
            *slot = then(a);
        }
        start += BLOCK;
    }
    start
}

/// `acc[e] += weight * values[e]`, one multiply-add each.
#[inline(always)]
fn add_products<T: Lane, const BLOCK: usize>(acc: &mut [T; BLOCK], weight: T, values: &[T; BLOCK]) {
    for (a, v) in acc.iter_mut().zip(values) {
        *a = a.add_product(weight, *v);
    }
}

/// `G` output rows of a column pass at once: output `g` sums `weights[k] * rows[g + k]` over
/// `k` in order (a row that is `None` lies outside the plane and adds nothing), so each
/// output's arithmetic is [`sum_blocked`]'s; but each source row is loaded once a block for
/// every output that reads it, not once an output. `outs` holds the `G` output rows, `len`
/// samples each; `then` is taken on each sum before it is stored (as in [`sum_blocked_then`]).
#[inline(always)]
pub(super) fn sum_column_group<T: Lane, const BLOCK: usize, const G: usize>(
    rows: &[Option<&[T]>],
    weights: &[T],
    outs: &mut [&mut [T]; G],
    len: usize,
    then: impl Fn(T) -> T + Copy,
) {
    let blocked = column_blocks::<T, BLOCK, G>(rows, weights, outs, len, (0, then));
    let mut start = column_blocks::<T, 16, G>(rows, weights, outs, len, (blocked, then));
    if start < len && len >= 16 {
        // As in `sum_blocked_then`: the last outputs as one block, some made again.
        start = column_blocks::<T, 16, G>(rows, weights, outs, len, (len - 16, then));
    }
    for e in start..len {
        for (g, out) in outs.iter_mut().enumerate() {
            let mut acc = T::default();
            for (k, weight) in weights.iter().enumerate() {
                if let Some(row) = rows[g + k] {
                    acc = acc.add_product(*weight, row[e]);
                }
            }
            out[e] = then(acc);
        }
    }
}

/// The whole blocks of `BLOCK` outputs of [`sum_column_group`] from `start` on; returns where
/// they end. The odd heights of short masks (see [`SHORT_MASK`]) are passed on as constants,
/// so that their loops unroll and which output reads which source row is known when
/// compiling: in the loop for any height those checks cost as much as a short mask's
/// multiply-adds. A taller mask's loops make no such checks. Its heights as constants too
/// (9 to 15) unrolled them whole: the 13-row Gaussians of `vs_opencv.py` took 7% less time
/// than they do now, but this crate's release build took 9 minutes rather than 3.
#[inline(always)]
fn column_blocks<T: Lane, const BLOCK: usize, const G: usize>(
    rows: &[Option<&[T]>],
    weights: &[T],
    outs: &mut [&mut [T]; G],
    len: usize,
    (start, then): (usize, impl Fn(T) -> T + Copy),
) -> usize {
    let at = (len, start);
    match weights.len() {
        3 => column_blocks_high::<T, BLOCK, G>(rows, outs, at, (weights, 3), then),
        5 => column_blocks_high::<T, BLOCK, G>(rows, outs, at, (weights, 5), then),
        7 => column_blocks_high::<T, BLOCK, G>(rows, outs, at, (weights, 7), then),
        height => column_blocks_high::<T, BLOCK, G>(rows, outs, at, (weights, height), then),
    }
}

/// [`column_blocks`] for a mask `height` rows high. Each source row of a block is loaded once
/// and added to every output that reads it (output `g` reads row `j` with mask row `j - g`).
/// A short mask's rows are taken in one loop, which the compiler unrolls whole. A taller
/// mask's (more than [`SHORT_MASK`] rows) was not unrolled, and the choice of outputs left in
/// that loop made it split its vectors and branch at every row; its rows are taken in three
/// loops instead: the first and last `G - 1` rows, each to the outputs that read it, and the
/// rows between them to all `G`, with no choice. (Loading each row again for each output, with
/// no choice at all, made most 720p rows of `vs_opencv.py` 5-45% slower.)
#[inline(always)]
fn column_blocks_high<T: Lane, const BLOCK: usize, const G: usize>(
    rows: &[Option<&[T]>],
    outs: &mut [&mut [T]; G],
    (len, mut start): (usize, usize),
    (weights, height): (&[T], usize),
    then: impl Fn(T) -> T + Copy,
) -> usize {
    let (rows, weights) = (&rows[..G + height - 1], &weights[..height]);
    while start + BLOCK <= len {
        let mut acc = [[T::default(); BLOCK]; G];
        if height <= SHORT_MASK {
            for (j, row) in rows.iter().enumerate() {
                let Some(row) = row else {
                    continue;
                };
                let values: &[T; BLOCK] = row[start..start + BLOCK].try_into().expect("a block");
                add_to_outputs_reading(&mut acc, (values, j), (weights, height));
            }
        } else {
            // A closure that only slices: it needs none of the band function's CPU features.
            let block = |j: usize| -> Option<&[T; BLOCK]> {
                rows[j].map(|row| row[start..start + BLOCK].try_into().expect("a block"))
            };
            // The first `G - 1` rows: row `j` is read by outputs `0..=j` (the mask is taller
            // than `G`, so each reaches it).
            for j in 0..G - 1 {
                if let Some(values) = block(j) {
                    for (g, acc) in acc.iter_mut().enumerate() {
                        if g <= j {
                            add_products(acc, weights[j - g], values);
                        }
                    }
                }
            }
            // Rows `G - 1..height`, read by every output `g` with mask row `j - g`: the `G`
            // weights up to `j`'s, last first, taken as a window that needs no index checks.
            for (row, window) in rows[G - 1..height].iter().zip(weights.windows(G)) {
                let Some(row) = row else {
                    continue;
                };
                let values: &[T; BLOCK] = row[start..start + BLOCK].try_into().expect("a block");
                for (acc, weight) in acc.iter_mut().zip(window.iter().rev()) {
                    add_products(acc, *weight, values);
                }
            }
            // The last `G - 1` rows: row `height + i` is read by outputs `i + 1..G`.
            for i in 0..G - 1 {
                if let Some(values) = block(height + i) {
                    for (g, acc) in acc.iter_mut().enumerate() {
                        if g > i {
                            add_products(acc, weights[height + i - g], values);
                        }
                    }
                }
            }
        }
        for (out, acc) in outs.iter_mut().zip(&acc) {
            for (slot, a) in out[start..start + BLOCK].iter_mut().zip(acc) {
                *slot = then(*a);
            }
        }
        start += BLOCK;
    }
    start
}

/// The tallest mask whose column group is taken in one loop over its rows (see
/// [`column_blocks_high`]): at least `G - 1`, which a taller mask's loops take for granted.
const SHORT_MASK: usize = 7;

/// Source row `j`'s `values` added to the outputs of [`column_blocks_high`] that read it.
/// (A function, not a closure: a closure is compiled on its own, without the CPU features of
/// the band function it is called from.)
#[inline(always)]
fn add_to_outputs_reading<T: Lane, const BLOCK: usize, const G: usize>(
    acc: &mut [[T; BLOCK]; G],
    (values, j): (&[T; BLOCK], usize),
    (weights, height): (&[T], usize),
) {
    for (g, acc) in acc.iter_mut().enumerate() {
        if j >= g && j - g < height {
            add_products(acc, weights[j - g], values);
        }
    }
}

/// The first `G` rows of `len` values of `buffer`, to be written side by side.
pub(super) fn split_rows<T, const G: usize>(buffer: &mut [T], len: usize) -> [&mut [T]; G] {
    let mut rest = buffer;
    std::array::from_fn(|_| {
        let (row, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        row
    })
}

/// `bytes` as the f32 values they hold, when they start on a value's alignment and hold whole
/// values (NumPy's float32 arrays do): read as one slice, the conversion vectorises; bytes
/// one at a time do not.
#[inline(always)]
pub(super) fn as_floats(bytes: &[u8]) -> Option<&[f32]> {
    // SAFETY: every bit pattern of four bytes is an f32, and `align_to` puts only whole
    // values at their alignment in the middle slice.
    let (head, values, tail) = unsafe { bytes.align_to::<f32>() };
    (head.is_empty() && tail.is_empty()).then_some(values)
}

/// `bytes` as the little-endian 16-bit words they hold, on a little-endian CPU when they
/// start on a word's alignment: as [`as_floats`], one slice whose conversion vectorises.
#[inline(always)]
fn as_words(bytes: &[u8]) -> Option<&[u16]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    // SAFETY: every bit pattern of two bytes is a u16, and `align_to` puts only whole words
    // at their alignment in the middle slice.
    let (head, words, tail) = unsafe { bytes.align_to::<u16>() };
    (head.is_empty() && tail.is_empty()).then_some(words)
}

/// [`as_floats`] for bytes to be written.
#[inline(always)]
pub(super) fn as_floats_mut(bytes: &mut [u8]) -> Option<&mut [f32]> {
    // SAFETY: as in `as_floats`; any f32 written is four bytes of the slice.
    let (head, values, tail) = unsafe { bytes.align_to_mut::<f32>() };
    (head.is_empty() && tail.is_empty()).then_some(values)
}

/// Sample `c` of pixel `x` of row `y` of `src` as a lane.
#[inline(always)]
fn read_value<T: Lane>(src: &PlaneView, y: usize, x: usize, c: usize) -> T {
    let bytes = src.sample_bytes(y, x, c);
    match src.samples() {
        ViewSamples::Integer(depth) if depth.bytes() == 2 => {
            T::sample(u16::from_le_bytes([bytes[0], bytes[1]]) >> depth.shift)
        }
        ViewSamples::Integer(_) => T::sample(u16::from(bytes[0])),
        ViewSamples::Float32 => T::float(f32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
    }
}

/// Padded positions `first ..` of row `y` of `src` as lanes in `padded` (as many positions
/// as it holds, `channels` lanes each): the row's own samples where `xmap` reads them in
/// place, its border samples beyond the edges. A packed row converts one slice; any other
/// layout is read sample by sample. Returns whether every value written is finite (float
/// values are checked as they are copied, saving a pass; integer samples always are).
#[inline(always)]
pub(super) fn pad_row<T: Lane>(src: &PlaneView, y: usize, xmap: &EdgeMap, first: usize, padded: &mut [T]) -> bool {
    let channels = src.channels;
    let last = first + padded.len() / channels;
    // The positions that read the row in place, clipped to those asked for.
    let inside = xmap.inside();
    let start = inside.start.clamp(first, last);
    let end = inside.end.clamp(start, last);
    let pixels = start - inside.start..end - inside.start;
    let slots = &mut padded[(start - first) * channels..(end - first) * channels];
    let mut finite = true;
    if src.packed() {
        let row = src.packed_row(y);
        match src.samples() {
            ViewSamples::Integer(depth) if depth.bytes() == 2 => {
                let bytes = &row[2 * channels * pixels.start..2 * channels * pixels.end];
                match as_words(bytes) {
                    Some(words) => {
                        for (value, word) in slots.iter_mut().zip(words) {
                            *value = T::sample(*word >> depth.shift);
                        }
                    }
                    None => {
                        for (value, bytes) in slots.iter_mut().zip(bytes.chunks_exact(2)) {
                            *value = T::sample(u16::from_le_bytes([bytes[0], bytes[1]]) >> depth.shift);
                        }
                    }
                }
            }
            ViewSamples::Integer(_) => {
                for (value, byte) in slots
                    .iter_mut()
                    .zip(&row[channels * pixels.start..channels * pixels.end])
                {
                    *value = T::sample(u16::from(*byte));
                }
            }
            ViewSamples::Float32 => {
                let bytes = &row[4 * channels * pixels.start..4 * channels * pixels.end];
                let mut largest = 0;
                match as_floats(bytes) {
                    Some(values) => {
                        for (slot, value) in slots.iter_mut().zip(values) {
                            *slot = T::float(*value);
                            largest = largest.max(magnitude_bits(*value));
                        }
                    }
                    None => {
                        for (slot, bytes) in slots.iter_mut().zip(bytes.chunks_exact(4)) {
                            let value = f32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                            *slot = T::float(value);
                            largest = largest.max(magnitude_bits(value));
                        }
                    }
                }
                finite = largest < INFINITY_BITS;
            }
        }
    } else {
        for (pixel, x) in slots.chunks_exact_mut(channels).zip(pixels) {
            for (c, value) in pixel.iter_mut().enumerate() {
                *value = read_value(src, y, x, c);
            }
        }
        finite = T::all_finite(slots);
    }
    for p in (first..start).chain(end..last) {
        let x = xmap.get(p);
        for c in 0..channels {
            let value = x.map_or(T::default(), |x| read_value(src, y, x, c));
            finite &= value.to_f32().is_finite();
            padded[(p - first) * channels + c] = value;
        }
    }
    finite
}

#[cfg(test)]
mod tests {
    use super::*;
    /// The plain definition: per output, rows then taps in order, one FMA each.
    fn reference(rows: &[LaneRow<f32>], len: usize) -> Vec<f32> {
        (0..len)
            .map(|e| {
                rows.iter().fold(0f32, |acc, (row, taps)| {
                    taps.iter()
                        .fold(acc, |acc, (offset, w)| w.mul_add(row[e + offset], acc))
                })
            })
            .collect()
    }

    #[test]
    fn f32_sums_equal_the_definition_bit_for_bit_whatever_the_block() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 510.0 - 255.0
        };
        let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
        for len in [0usize, 1, 7, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 1923] {
            for (rows_count, taps, stride) in [(1, 1, 1), (1, 3, 1), (3, 3, 3), (5, 13, 2), (13, 13, 1), (2, 1, 4)] {
                let row_len = len + (taps - 1) * stride;
                let data: Vec<Vec<f32>> = (0..rows_count)
                    .map(|_| (0..row_len).map(|_| next()).collect())
                    .collect();
                let weights: Vec<Vec<(usize, f32)>> = (0..rows_count)
                    .map(|_| (0..taps).map(|j| (j * stride, next() / 100.0)).collect())
                    .collect();
                let rows: Vec<LaneRow<f32>> = data.iter().zip(&weights).map(|(r, w)| (&r[..], &w[..])).collect();
                let expected = bits(&reference(&rows, len));
                let mut out = vec![f32::NAN; len];
                sum_blocked::<f32, 128>(&rows, &mut out, false);
                assert_eq!(bits(&out), expected, "block 128, len {len}");
                sum_blocked::<f32, 32>(&rows, &mut out, false);
                assert_eq!(bits(&out), expected, "block 32, len {len}");
                sum_blocked::<f32, 16>(&rows, &mut out, false);
                assert_eq!(bits(&out), expected, "block 16, len {len}");
            }
        }
    }

    /// Sums that may start from a tap's value (a first weight of 1, or -1 then 1) are the
    /// definition's values: the same bits once a zero's sign is set aside (by adding +0, as
    /// the finish does). Rows with zeros of either sign, so that such sums are zero.
    #[test]
    fn sums_started_from_a_value_are_the_definitions_but_for_a_zeros_sign() {
        let mut state = 0x6a09_e667_f3bc_c908u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match state % 5 {
                0 => 0.0,
                1 => -0.0,
                _ => (state >> 40) as f32 / (1u64 << 24) as f32 * 510.0 - 255.0,
            }
        };
        let without_zero_sign = |values: &[f32]| values.iter().map(|v| (v + 0.0).to_bits()).collect::<Vec<u32>>();
        for len in [1usize, 15, 16, 17, 64, 65, 200, 1923] {
            for (first, taps) in [
                (&[1.0][..], 1),
                (&[1.0], 3),
                (&[-1.0, 1.0], 2),
                (&[-1.0, 1.0], 5),
                (&[1.0, -1.0], 3),
            ] {
                for rows_count in [1, 3] {
                    let row_len = len + taps - 1;
                    let data: Vec<Vec<f32>> = (0..rows_count)
                        .map(|_| (0..row_len).map(|_| next()).collect())
                        .collect();
                    let weights: Vec<Vec<(usize, f32)>> = (0..rows_count)
                        .map(|r| {
                            let weight = |j: usize| {
                                if r == 0 && j < first.len() {
                                    first[j]
                                } else {
                                    0.37 * j as f32 - 0.5
                                }
                            };
                            (0..taps.max(first.len())).map(|j| (j, weight(j))).collect()
                        })
                        .collect();
                    let rows: Vec<LaneRow<f32>> = data.iter().zip(&weights).map(|(r, w)| (&r[..], &w[..])).collect();
                    let expected = without_zero_sign(&reference(&rows, len));
                    let mut out = vec![f32::NAN; len];
                    sum_blocked::<f32, 64>(&rows, &mut out, true);
                    assert_eq!(
                        without_zero_sign(&out),
                        expected,
                        "{first:?}, {taps} taps, {rows_count} rows, len {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_column_group_equals_one_output_row_at_a_time_bit_for_bit() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 510.0 - 255.0
        };
        let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
        for (len, height) in [
            (1usize, 1usize),
            (17, 3),
            (200, 13),
            (1923, 5),
            (130, 7),
            (64, 9),
            (97, 11),
            (300, 15),
            (40, 2),
            (70, 21),
        ] {
            let data: Vec<Vec<f32>> = (0..height + 3).map(|_| (0..len).map(|_| next()).collect()).collect();
            let weights: Vec<f32> = (0..height).map(|_| next() / 100.0).collect();
            // Source rows outside the plane (a constant border's) add nothing: none, the
            // second, the top rows of a group at the plane's top edge, the bottom ones at its
            // bottom edge (in a tall mask's first, middle and last loops).
            let top = height / 2 + 1;
            let outside: [&dyn Fn(usize) -> bool; 4] =
                [&|_| false, &|j| j == 1, &|j| j < top, &|j| j + top > height + 2];
            for (pattern, outside) in outside.iter().enumerate() {
                let rows: Vec<Option<&[f32]>> = data
                    .iter()
                    .enumerate()
                    .map(|(j, r)| (!outside(j)).then_some(&r[..]))
                    .collect();
                let mut group = vec![f32::NAN; 4 * len];
                {
                    let mut outs: [&mut [f32]; 4] = split_rows(&mut group, len);
                    sum_column_group::<f32, 64, 4>(&rows, &weights, &mut outs, len, |sum| sum);
                }
                for g in 0..4 {
                    let taps: Vec<Vec<(usize, f32)>> = weights.iter().map(|w| vec![(0, *w)]).collect();
                    let one: Vec<LaneRow<f32>> = (0..height)
                        .filter_map(|k| rows[g + k].map(|row| (row, &taps[k][..])))
                        .collect();
                    let mut out = vec![f32::NAN; len];
                    sum_blocked::<f32, 128>(&one, &mut out, false);
                    let which = format!("row {g}, len {len}, height {height}, outside rows {pattern}");
                    assert_eq!(bits(&group[g * len..(g + 1) * len]), bits(&out), "{which}");
                }
            }
        }
    }
}

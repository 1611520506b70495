//! Float planes on the CPU: float32 values filtered with the GPU kernels' float arithmetic
//! (f32 sums with fused multiply-adds, taps added mask row by mask row, left to right; a
//! separable mask's row pass, then its column pass; a gradient magnitude's
//! `sqrt(fma(a, a, b * b))`; then divided by the mask's divisor (an integer mask sums its whole
//! taps, see `Mask::divisor`) and + bias, neither rounded nor clamped), so a float array
//! gives the same values on either device. Integer samples take the CPU engine instead.
//!
//! The plane is cut into areas of outputs (at most [`AREA_COLUMNS`] wide, a few per thread,
//! each of at most [`AREA_VALUES`] values), filtered in parallel (rayon), each from a padded
//! copy of the source it reads: what a call holds beside the arrays is a few areas' worth
//! whatever the plane's shape, and taken fallibly (`MemoryError`, not an abort). Every
//! output sums the same values in the same order whichever area it falls in.

use std::ops::Range;

use convstream_core::BorderMode;
use convstream_core::Mask;
use pyo3::PyResult;
use rayon::prelude::*;

use crate::host_array::{try_zeroed, PlaneAt};

/// Output columns of an area: enough that the `mask width - 1` columns an area pads beyond
/// its own stay a small share.
const AREA_COLUMNS: usize = 4096;

/// The most outputs an area takes: each of its three buffers is then at most 4 MB or so.
const AREA_VALUES: usize = 1 << 20;

/// Output rows of an area of `columns` columns: a few areas a thread, and several times the
/// `mask_h - 1` rows an area pads (and, for a separable mask, row-filters) beyond its own.
fn area_rows(height: usize, columns: usize, mask_h: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let most = (AREA_VALUES / columns.max(1)).max(1);
    height.div_ceil(4 * threads).max(4 * (mask_h - 1)).max(16).min(most)
}

/// The source around one area of outputs with its border, as the kernels' shared tiles hold
/// it: `rows + mask_h - 1` rows of `columns + mask_w - 1` values.
struct Padded {
    values: Vec<f32>,
    width: usize,
}

/// One area of outputs: rows `rows` and columns `columns` of the plane.
struct Area {
    rows: Range<usize>,
    columns: Range<usize>,
}

/// Reads what `area` of the plane at `from` needs, with `border` applied `mask_w / 2` columns
/// and `mask_h / 2` rows beyond each edge of the plane.
///
/// # Safety
///
/// `from` holds `height` rows of `width` float32 values at its pitches.
unsafe fn padded(
    from: PlaneAt,
    border: BorderMode,
    mask: &Mask,
    (height, width): (usize, usize),
    area: &Area,
) -> PyResult<Padded> {
    let (mask_w, mask_h) = (mask.width(), mask.height());
    let padded_w = area.columns.len() + mask_w - 1;
    let padded_h = area.rows.len() + mask_h - 1;
    let mapped = |index: usize, half: usize, len: usize| border.map(index as isize - half as isize, len);
    // The source column of each padded column, found once for all the area's rows.
    let mut columns = try_zeroed::<Option<usize>>(padded_w, || "the border columns of an area".to_string())?;
    for (column, x) in columns.iter_mut().enumerate() {
        *x = mapped(area.columns.start + column, mask_w / 2, width);
    }
    let mut values = try_zeroed::<f32>(padded_w * padded_h, || "the padded source of an area".to_string())?;
    for (row, line) in values.chunks_exact_mut(padded_w).enumerate() {
        let Some(y) = mapped(area.rows.start + row, mask_h / 2, height) else {
            continue;
        };
        let start = from.address + y * from.row_pitch;
        for (value, x) in line.iter_mut().zip(&columns) {
            if let Some(x) = x {
                // SAFETY: (x, y) lies inside the source plane the caller vouches for; NumPy
                // may place float32 values at any byte, so the read asks for no alignment.
                *value = unsafe { ((start + x * from.sample_pitch) as *const f32).read_unaligned() };
            }
        }
    }
    Ok(Padded {
        values,
        width: padded_w,
    })
}

/// The dense sum of `taps` (row-major, `mask_w` a row) for the output at (x, y) of an area.
fn dense_sum(padded: &Padded, taps: &[f32], mask_w: usize, x: usize, y: usize) -> f32 {
    let mut sum = 0.0f32;
    for (i, row_taps) in taps.chunks_exact(mask_w).enumerate() {
        let line = &padded.values[(y + i) * padded.width + x..];
        for (tap, value) in row_taps.iter().zip(line) {
            sum = tap.mul_add(*value, sum);
        }
    }
    sum
}

/// The filtered values of an area, `rows` rows of `columns`, before the bias.
fn sums(mask: &Mask, padded: &Padded, rows: usize, columns: usize) -> PyResult<Vec<f32>> {
    let mask_w = mask.width();
    let mut out = try_zeroed::<f32>(columns * rows, || "the sums of an area".to_string())?;
    match (mask.second_correlation_taps(), mask.correlation_factors()) {
        (Some(second), _) => {
            let first = mask.correlation_taps();
            for (y, row) in out.chunks_exact_mut(columns).enumerate() {
                for (x, value) in row.iter_mut().enumerate() {
                    let a = dense_sum(padded, &first, mask_w, x, y);
                    let b = dense_sum(padded, &second, mask_w, x, y);
                    *value = a.mul_add(a, b * b).sqrt();
                }
            }
        }
        (None, Some((column_taps, row_taps))) => {
            // The row pass over every padded row, then the column pass over its sums.
            let padded_rows = rows + mask.height() - 1;
            let mut across = try_zeroed::<f32>(columns * padded_rows, || "the row sums of an area".to_string())?;
            for (sums, line) in across
                .chunks_exact_mut(columns)
                .zip(padded.values.chunks_exact(padded.width))
            {
                for (x, sum) in sums.iter_mut().enumerate() {
                    *sum = row_taps
                        .iter()
                        .zip(&line[x..])
                        .fold(0.0f32, |sum, (tap, value)| tap.mul_add(*value, sum));
                }
            }
            for (y, row) in out.chunks_exact_mut(columns).enumerate() {
                for (x, value) in row.iter_mut().enumerate() {
                    *value = column_taps
                        .iter()
                        .enumerate()
                        .fold(0.0f32, |sum, (i, tap)| tap.mul_add(across[(y + i) * columns + x], sum));
                }
            }
        }
        (None, None) => {
            let taps = mask.correlation_taps();
            for (y, row) in out.chunks_exact_mut(columns).enumerate() {
                for (x, value) in row.iter_mut().enumerate() {
                    *value = dense_sum(padded, &taps, mask_w, x, y);
                }
            }
        }
    }
    Ok(out)
}

/// The areas of a `height x width` plane under a mask `mask_h` rows high, row by row.
fn areas(height: usize, width: usize, mask_h: usize) -> Vec<Area> {
    let span = |len: usize, step: usize| (0..len).step_by(step).map(move |start| start..(start + step).min(len));
    let rows = area_rows(height, width.min(AREA_COLUMNS), mask_h);
    span(height, rows)
        .flat_map(|rows| {
            span(width, AREA_COLUMNS).map(move |columns| Area {
                rows: rows.clone(),
                columns,
            })
        })
        .collect()
}

/// Filters the `height x width` float32 plane at `from` into `to` with `mask`, `border`
/// applied beyond the edges. `MemoryError` where an area's buffers cannot be had (the areas
/// written before it keep their values).
///
/// # Safety
///
/// Both places hold `height` rows of `width` float32 values at their pitches; `from` stays
/// unwritten and `to` untouched by anyone else during the call, and the two do not overlap.
pub unsafe fn filter_float_plane(
    mask: &Mask,
    border: BorderMode,
    from: PlaneAt,
    to: PlaneAt,
    height: usize,
    width: usize,
) -> PyResult<()> {
    let (bias, divisor) = (mask.bias(), mask.divisor());
    // As the kernels' `divided_plus_bias`: one IEEE division, skipped for a divisor of 1.
    let finish = |sum: f32| {
        let divided = if divisor == 1.0 { sum } else { sum / divisor };
        divided + bias
    };
    areas(height, width, mask.height()).par_iter().try_for_each(|area| {
        // SAFETY: the caller vouches for `from`.
        let padded = unsafe { padded(from, border, mask, (height, width), area)? };
        let sums = sums(mask, &padded, area.rows.len(), area.columns.len())?;
        for (row, y) in sums.chunks_exact(area.columns.len()).zip(area.rows.clone()) {
            for (value, x) in row.iter().zip(area.columns.clone()) {
                let at = to.address + y * to.row_pitch + x * to.sample_pitch;
                // SAFETY: (x, y) lies inside the output plane the caller vouches for, and in
                // this area alone, so no other task writes it; no alignment is assumed.
                unsafe { (at as *mut f32).write_unaligned(finish(*value)) };
            }
        }
        Ok(())
    })
}

//! The CPU reference engine: a direct convolution, parallel across rows, correct for
//! every border mode, mask size and sample depth (8 to 16 bits). GPU results are checked against it.

use rayon::prelude::*;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::trace::CPU_STAGE;
use super::{Engine, EngineError, StageTimes, TraceSpan};
use crate::filter::{BorderMode, FilterSpec};
use crate::frame::{Frame, Plane, SampleDepth};
use crate::mask::Mask;

/// Filters each frame synchronously on `submit`; `receive` hands them back in order.
pub struct CpuEngine {
    filter: FilterSpec,
    done: VecDeque<(Frame, Duration)>,
    last_time: Option<Duration>,
    /// When tracing: the engine's start, which span times count from, and the spans.
    trace: Option<(Instant, Vec<TraceSpan>)>,
}

impl CpuEngine {
    pub fn new(filter: FilterSpec) -> CpuEngine {
        CpuEngine {
            filter,
            done: VecDeque::new(),
            last_time: None,
            trace: None,
        }
    }

    /// The same engine, recording each frame's filtering for a Chrome trace
    /// ([`Engine::take_trace`]), as the CUDA engine records its stages.
    pub fn traced(self) -> CpuEngine {
        CpuEngine {
            trace: Some((Instant::now(), Vec::new())),
            ..self
        }
    }

    /// Filters one frame: each plane with its mask (see [`FilterSpec::mask_for`]); planes
    /// without one are copied.
    pub fn filter_frame(filter: &FilterSpec, frame: &Frame) -> Frame {
        let planes = frame
            .planes
            .iter()
            .enumerate()
            .map(|(i, plane)| match filter.mask_for(frame.format, i) {
                Some(mask) => convolve_plane(plane, mask, filter.border),
                None => plane.clone(),
            })
            .collect();
        frame.with_planes(planes)
    }
}

impl Engine for CpuEngine {
    fn name(&self) -> String {
        "cpu".to_string()
    }
    fn capacity(&self) -> usize {
        1
    }
    fn in_flight(&self) -> usize {
        self.done.len()
    }
    fn submit(&mut self, frame: Frame) -> Result<(), EngineError> {
        if frame.device.is_some() {
            // Only an engine that says so (`device_pictures_on`) is given such frames.
            return Err(EngineError::Internal(
                "a picture in GPU memory was given to the CPU engine".into(),
            ));
        }
        let started = Instant::now();
        let mut filtered = CpuEngine::filter_frame(&self.filter, &frame);
        // Filtered in place of queueing: the engine's part is the filtering itself, from
        // `started` (its work begins as soon as it is handed over) to `done`.
        let done = Instant::now();
        if let Some((origin, spans)) = &mut self.trace {
            spans.push(TraceSpan {
                stream: 0,
                frame: frame.index,
                stage: CPU_STAGE,
                start_us: started.saturating_duration_since(*origin).as_secs_f64() * 1e6,
                duration_us: (done - started).as_secs_f64() * 1e6,
            });
        }
        filtered.timeline.enqueued = Some(started);
        filtered.timeline.finished = Some(done);
        self.done.push_back((filtered, done - started));
        Ok(())
    }
    fn receive(&mut self) -> Result<Option<Frame>, EngineError> {
        Ok(self.done.pop_front().map(|(frame, time)| {
            self.last_time = Some(time);
            frame
        }))
    }
    fn device(&self) -> String {
        "cpu".to_string()
    }
    fn last_stage_times(&self) -> Option<StageTimes> {
        self.last_time.map(|filter| StageTimes::Cpu { filter })
    }
    fn set_filter(&mut self, filter: FilterSpec) -> Result<(), EngineError> {
        self.filter = filter;
        Ok(())
    }
    fn take_trace(&mut self) -> Vec<TraceSpan> {
        self.trace
            .as_mut()
            .map(|(_, spans)| std::mem::take(spans))
            .unwrap_or_default()
    }
}

/// Final step shared by every path: add the bias, round half away from zero, clamp to
/// 0..=`max` (255 at 8 bits, 2^bits - 1 above).
#[inline]
pub fn to_sample(sum: f32, bias: f32, max: f32) -> u16 {
    (sum + bias).round().clamp(0.0, max) as u16
}

/// Writes one row of results as samples of `depth` (bytes, or little-endian words shifted
/// into place), with the bias (given in 8-bit units) scaled to the depth.
fn write_row(out: &mut [u8], acc: &[f32], bias: f32, depth: SampleDepth) {
    let (bias, max) = (bias * depth.bias_scale(), depth.max_value() as f32);
    if depth.bytes() == 1 {
        out.iter_mut()
            .zip(acc)
            .for_each(|(o, a)| *o = to_sample(*a, bias, max) as u8);
    } else {
        out.chunks_exact_mut(2).zip(acc).for_each(|(o, a)| {
            o.copy_from_slice(&(to_sample(*a, bias, max) << depth.shift).to_le_bytes());
        });
    }
}

/// `acc[k] = fma(t, src[k], acc[k])`: one rounding per tap, as the GPU kernels' `fmaf`,
/// so that both engines give bit-identical sums when they add taps in the same order.
fn fused_axpy(acc: &mut [f32], t: f32, src: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has FMA and AVX2, the features the function is compiled for.
        unsafe { fused_axpy_fma(acc, t, src) };
        return;
    }
    fused_axpy_portable(acc, t, src);
}

#[inline(always)]
fn fused_axpy_portable(acc: &mut [f32], t: f32, src: &[f32]) {
    acc.iter_mut().zip(src).for_each(|(a, v)| *a = t.mul_add(*v, *a));
}

/// The same loop compiled with FMA enabled, so `mul_add` becomes vector `vfmadd`
/// instructions instead of calls into libm.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fused_axpy_fma(acc: &mut [f32], t: f32, src: &[f32]) {
    fused_axpy_portable(acc, t, src);
}

/// Source index for each padded position `-(taps/2) .. len + taps/2`; `None` reads as 0.
fn index_map(len: usize, taps: usize, border: BorderMode) -> Vec<Option<usize>> {
    let centre = (taps / 2) as isize;
    (0..len + taps - 1)
        .map(|p| border.map(p as isize - centre, len))
        .collect()
}

/// Copies source row `row` into `padded` (as f32 sample values) with `mask_width - 1`
/// border pixels around it.
fn pad_row(row: &[u8], channels: usize, depth: SampleDepth, xmap: &[Option<usize>], padded: &mut [f32]) {
    let wide = depth.bytes() == 2;
    let read = |i: usize| -> f32 {
        if wide {
            (u16::from_le_bytes([row[2 * i], row[2 * i + 1]]) >> depth.shift) as f32
        } else {
            row[i] as f32
        }
    };
    for (p, source) in xmap.iter().enumerate() {
        for c in 0..channels {
            padded[p * channels + c] = source.map_or(0.0, |x| read(x * channels + c));
        }
    }
}

/// Convolves every channel of `src`; the result has tightly packed rows. Sums are f32 with
/// fused multiply-adds in tap order: rank-one masks take a row pass then a column pass
/// (over the f32 row sums), others add every tap of a pixel, mask row by mask row.
pub fn convolve_plane(src: &Plane, mask: &Mask, border: BorderMode) -> Plane {
    match mask.correlation_factors() {
        Some((column, row)) => convolve_separable(src, &column, &row, mask.bias(), border),
        None => convolve_dense(src, mask, border),
    }
}

/// Dense masks, and gradient magnitudes (two dense sums `a` and `b` of the same taps' order,
/// then `sqrt(fma(a, a, b * b))`, each step rounded once as the GPU kernels do).
fn convolve_dense(src: &Plane, mask: &Mask, border: BorderMode) -> Plane {
    let (mw, mh) = (mask.width(), mask.height());
    let taps = mask.correlation_taps();
    let second_taps = mask.second_correlation_taps();
    let (ch, depth) = (src.channels, src.depth);
    let row_len = src.width * ch;
    let xmap = index_map(src.width, mw, border);
    let ymap = index_map(src.height, mh, border);
    let second_len = if second_taps.is_some() { row_len } else { 0 };
    let mut dst = Plane::new(src.shape());
    dst.data
        .par_chunks_mut(src.row_bytes().max(1))
        .enumerate()
        .for_each_init(
            || {
                (
                    vec![0f32; (src.width + mw - 1) * ch],
                    vec![0f32; row_len],
                    vec![0f32; second_len],
                )
            },
            |(padded, acc, second), (y, out)| {
                acc.fill(0.0);
                second.fill(0.0);
                for i in 0..mh {
                    let Some(sy) = ymap[y + i] else { continue };
                    pad_row(src.row(sy), ch, depth, &xmap, padded);
                    for j in 0..mw {
                        let shifted = &padded[j * ch..j * ch + row_len];
                        fused_axpy(acc, taps[i * mw + j], shifted);
                        if let Some(second_taps) = &second_taps {
                            fused_axpy(second, second_taps[i * mw + j], shifted);
                        }
                    }
                }
                if second_taps.is_some() {
                    acc.iter_mut()
                        .zip(second.iter())
                        .for_each(|(a, b)| *a = magnitude(*a, *b));
                }
                write_row(out, acc, mask.bias(), depth);
            },
        );
    dst
}

/// The gradient magnitude of two sums, `sqrt(fma(a, a, b * b))`: the kernels' `magnitude`.
#[inline]
pub fn magnitude(a: f32, b: f32) -> f32 {
    a.mul_add(a, b * b).sqrt()
}

fn convolve_separable(src: &Plane, column: &[f32], row: &[f32], bias: f32, border: BorderMode) -> Plane {
    let (mw, mh) = (row.len(), column.len());
    let (ch, depth) = (src.channels, src.depth);
    let row_len = src.width * ch;
    let xmap = index_map(src.width, mw, border);
    let ymap = index_map(src.height, mh, border);
    // Row pass over every source row, kept in f32.
    let mut horizontal = vec![0f32; row_len * src.height];
    horizontal.par_chunks_mut(row_len.max(1)).enumerate().for_each_init(
        || vec![0f32; (src.width + mw - 1) * ch],
        |padded, (y, out)| {
            pad_row(src.row(y), ch, depth, &xmap, padded);
            out.fill(0.0);
            for (j, t) in row.iter().enumerate() {
                let shifted = &padded[j * ch..j * ch + row_len];
                fused_axpy(out, *t, shifted);
            }
        },
    );
    // Column pass.
    let mut dst = Plane::new(src.shape());
    dst.data
        .par_chunks_mut(src.row_bytes().max(1))
        .enumerate()
        .for_each_init(
            || vec![0f32; row_len],
            |acc, (y, out)| {
                acc.fill(0.0);
                for (i, t) in column.iter().enumerate() {
                    let Some(sy) = ymap[y + i] else { continue };
                    let source = &horizontal[sy * row_len..(sy + 1) * row_len];
                    fused_axpy(acc, *t, source);
                }
                write_row(out, acc, bias, depth);
            },
        );
    dst
}

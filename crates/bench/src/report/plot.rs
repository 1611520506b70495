//! The plots of a report, drawn by plotters onto any backend (SVG, and PNG through `png.rs`):
//! kernel time, frames/s against streams, the scale suite; the e2e plot is `e2e_plot.rs`.
//! Their shared styling, with the font embedded so no system font is needed, is `style.rs`.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{legend, Sizes, COLOURS};
use crate::results::{BenchReport, OverlapRow, ScaleRow};

#[derive(Debug, Clone, Copy)]
pub(super) enum Plot {
    Kernel,
    Overlap,
    Scale,
    /// Whole commands of the e2e suite: FFmpeg's CLI against `convstream run`.
    E2e,
}

impl Plot {
    pub(super) fn name(self) -> &'static str {
        match self {
            Plot::Kernel => "kernel",
            Plot::Overlap => "overlap",
            Plot::Scale => "scale",
            Plot::E2e => "e2e",
        }
    }

    pub(super) fn has_figures(self, report: &BenchReport) -> bool {
        match self {
            Plot::Kernel => !report.kernel.is_empty(),
            Plot::Overlap => !report.overlap.is_empty(),
            Plot::Scale => !report.scale.rows.is_empty(),
            Plot::E2e => !super::e2e_plot::compared(report).is_empty(),
        }
    }

    /// Draws onto any backend; `scale` multiplies every size given in pixels.
    pub(super) fn draw<DB: DrawingBackend>(
        self,
        report: &BenchReport,
        root: &DrawingArea<DB, Shift>,
        scale: u32,
    ) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        match self {
            Plot::Kernel => kernel_plot(report, root, Sizes::new(scale)),
            Plot::Overlap => overlap_plot(report, root, Sizes::new(scale)),
            Plot::Scale => scale_plot(report, root, Sizes::new(scale)),
            Plot::E2e => super::e2e_plot::draw(report, root, Sizes::new(scale)),
        }
    }
}

/// The kernel plot's lines: one per plane size, sample depth (named when the report has
/// more than one) and path, each point a mask side and its median time, in side order. A
/// line that mixed depths would zig-zag between them at every side.
pub(super) fn kernel_series(report: &BenchReport) -> Vec<(String, Vec<(f64, f64)>)> {
    let depths = report
        .kernel
        .iter()
        .map(|k| k.bits)
        .collect::<std::collections::BTreeSet<_>>();
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for k in &report.kernel {
        let name = if depths.len() > 1 {
            format!("{} {}-bit {}", k.plane, k.bits, k.path)
        } else {
            format!("{} {}", k.plane, k.path)
        };
        let point = (k.size as f64, k.median_us);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, points)) => points.push(point),
            None => series.push((name, vec![point])),
        }
    }
    for (_, points) in &mut series {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// Labels for a logarithmic time axis from `low` to `high`: 1, 2 and 5 times each power of
/// ten in between, or every multiple when that gives fewer than three. Plotters' own
/// labels start at the first power of ten, so a range of 150 to 900 us had none.
pub(super) fn time_ticks(low: f64, high: f64) -> Vec<f64> {
    if !(low > 0.0 && high > low && high.is_finite()) {
        return Vec::new();
    }
    let decades = low.log10().floor() as i32..=high.log10().ceil() as i32;
    let within = |steps: &[f64]| -> Vec<f64> {
        decades
            .clone()
            .flat_map(|exponent| steps.iter().map(move |step| step * 10f64.powi(exponent)))
            .filter(|tick| (low..=high).contains(tick))
            .collect()
    };
    let ticks = within(&[1.0, 2.0, 5.0]);
    if ticks.len() >= 3 {
        ticks
    } else {
        within(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    }
}

/// A time axis label: whole microseconds, or as many digits as a tick under one has.
fn time_label(us: &f64) -> String {
    if *us >= 1.0 {
        format!("{us:.0}")
    } else {
        format!("{us}")
    }
}

/// Median kernel time against mask size, one line per (plane, depth, path), log-scaled time.
fn kernel_plot<DB: DrawingBackend>(
    report: &BenchReport,
    root: &DrawingArea<DB, Shift>,
    sizes: Sizes,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let series = kernel_series(report);
    let max_size = report.kernel.iter().map(|k| k.size).max().unwrap_or(3) as f64;
    let (min_t, max_t) = report.kernel.iter().fold((f64::MAX, 0f64), |(lo, hi), k| {
        (lo.min(k.median_us), hi.max(k.median_us))
    });
    let mut chart = ChartBuilder::on(root)
        .caption(format!("kernel time, {}", report.run.device), sizes.font(22))
        .margin(sizes.px(15))
        .x_label_area_size(sizes.px(50))
        .y_label_area_size(sizes.px(80))
        .build_cartesian_2d(
            0f64..max_size + 2.0,
            (min_t * 0.8..max_t * 1.25)
                .log_scale()
                .with_key_points(time_ticks(min_t * 0.8, max_t * 1.25)),
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("mask side")
        .y_desc("median microseconds")
        .y_label_formatter(&time_label)
        .label_style(sizes.font(14))
        .axis_desc_style(sizes.font(16))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (name, points)) in series.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let line = colour.stroke_width(sizes.px(2));
        let (legend_line, dot) = (sizes.legend_line(), sizes.px(3));
        chart
            .draw_series(LineSeries::new(points.clone(), line))
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + legend_line, y)], line));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, dot, colour.filled())))
            .map_err(|e| e.to_string())?;
    }
    // Time grows with mask size: the upper left stays clear.
    legend(&mut chart, sizes, SeriesLabelPosition::UpperLeft)
}

/// Frames/s against streams, measured and ideal, one pair of lines per frame size.
fn overlap_plot<DB: DrawingBackend>(
    report: &BenchReport,
    root: &DrawingArea<DB, Shift>,
    sizes: Sizes,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let max_streams = report.overlap.iter().map(|o| o.streams).max().unwrap_or(1) as f64;
    let max_fps = report
        .overlap
        .iter()
        .map(|o| o.fps.max(o.ideal_fps))
        .fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("frames/s through the lanes, {}", report.run.device),
            sizes.font(22),
        )
        .margin(sizes.px(15))
        .x_label_area_size(sizes.px(50))
        .y_label_area_size(sizes.px(80))
        .build_cartesian_2d(0f64..max_streams + 1.0, 0f64..max_fps * 1.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("CUDA streams")
        .y_desc("frames/s")
        .label_style(sizes.font(14))
        .axis_desc_style(sizes.font(16))
        .draw()
        .map_err(|e| e.to_string())?;
    let mut series: Vec<String> = report.overlap.iter().map(OverlapRow::series).collect();
    series.dedup();
    for (i, frame) in series.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let measured_line = colour.stroke_width(sizes.px(2));
        let ideal_line = colour.mix(0.4).stroke_width(sizes.px(1));
        let (legend_line, dot) = (sizes.legend_line(), sizes.px(3));
        let rows: Vec<_> = report.overlap.iter().filter(|o| o.series() == frame).collect();
        let measured: Vec<(f64, f64)> = rows.iter().map(|o| (o.streams as f64, o.fps)).collect();
        let ideal: Vec<(f64, f64)> = rows.iter().map(|o| (o.streams as f64, o.ideal_fps)).collect();
        chart
            .draw_series(LineSeries::new(measured.clone(), measured_line))
            .map_err(|e| e.to_string())?
            .label(format!("{frame} measured"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + legend_line, y)], measured_line));
        chart
            .draw_series(measured.into_iter().map(|p| Circle::new(p, dot, colour.filled())))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(ideal, ideal_line))
            .map_err(|e| e.to_string())?
            .label(format!("{frame} ideal (1 / busiest stage)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + legend_line, y)], ideal_line));
    }
    // Frames/s grows with streams: the lower right stays clear.
    legend(&mut chart, sizes, SeriesLabelPosition::LowerRight)
}

/// The scale suite: the slowest pipeline's frames/s (top) and the worst p99 latency
/// (bottom) against the number of pipelines, one line per decoder.
fn scale_plot<DB: DrawingBackend>(
    report: &BenchReport,
    root: &DrawingArea<DB, Shift>,
    sizes: Sizes,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let rows = &report.scale.rows;
    let max_n = rows.iter().map(|r| r.pipelines).max().unwrap_or(1) as f64;
    let mut decoders: Vec<&str> = rows.iter().map(|r| r.decoder.as_str()).collect();
    decoders.dedup();
    let panels = root.split_evenly((2, 1));
    type Figure = fn(&ScaleRow) -> f64;
    let figures: [(&str, &str, Figure); 2] = [
        ("slowest pipeline's frames/s", "frames/s", |r| r.fps_min),
        ("p99 latency, all pipelines", "ms", |r| r.latency_p99_ms),
    ];
    for (panel, (title, unit, figure)) in panels.iter().zip(figures) {
        let top = rows.iter().map(figure).fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{title} against pipelines, {}", report.run.device),
                sizes.font(18),
            )
            .margin(sizes.px(12))
            .x_label_area_size(sizes.px(40))
            .y_label_area_size(sizes.px(70))
            .build_cartesian_2d(0f64..max_n * 1.05, 0f64..top * 1.15)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("pipelines")
            .y_desc(unit)
            .label_style(sizes.font(13))
            .axis_desc_style(sizes.font(15))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, decoder) in decoders.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let line = colour.stroke_width(sizes.px(2));
            let (legend_line, dot) = (sizes.legend_line(), sizes.px(3));
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.decoder == *decoder)
                .map(|r| (r.pipelines as f64, figure(r)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), line))
                .map_err(|e| e.to_string())?
                .label(decoder.to_string())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + legend_line, y)], line));
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, dot, colour.filled())))
                .map_err(|e| e.to_string())?;
        }
        legend(&mut chart, sizes, SeriesLabelPosition::LowerLeft)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::style::{register_plot_font, PLOT_SIZE};
    use super::*;

    /// Kernel rows of the published high-bit-depth run: 8- and 16-bit planes of two sizes.
    fn two_depths() -> BenchReport {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../benchmarks/results/2026-11-24-high-bit-depth/kernel-results.json");
        let text = std::fs::read_to_string(&path).expect("the published report reads");
        serde_json::from_str(&text).expect("the published report parses")
    }

    #[test]
    fn each_depth_is_a_line_of_its_own_in_mask_side_order() {
        let report = two_depths();
        let series = kernel_series(&report);
        let names: Vec<&str> = series.iter().map(|(name, _)| name.as_str()).collect();
        assert!(
            names.contains(&"1920x1080 8-bit dense") && names.contains(&"1920x1080 16-bit dense"),
            "{names:?}"
        );
        assert_eq!(series.len(), 2 * 2 * 3, "plane sizes x depths x paths: {names:?}");
        for (name, points) in &series {
            assert!(
                points.windows(2).all(|w| w[0].0 < w[1].0),
                "{name} goes back and forth: {points:?}"
            );
        }
        let rows = report.kernel.len();
        assert_eq!(
            series.iter().map(|(_, p)| p.len()).sum::<usize>(),
            rows,
            "every row drawn once"
        );
        // One depth: the names stay as they were.
        let mut eight = report.clone();
        eight.kernel.retain(|k| k.bits == 8);
        assert!(kernel_series(&eight).iter().any(|(name, _)| name == "1920x1080 dense"));
    }

    #[test]
    fn the_time_axis_is_labelled_below_the_first_power_of_ten() {
        // 200 and 500 alone are too few: every hundred.
        assert_eq!(
            time_ticks(150.0, 900.0),
            [200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0]
        );
        assert_eq!(
            time_ticks(7.0, 11_000.0),
            [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10_000.0]
        );
        assert!(time_ticks(0.0, 10.0).is_empty() && time_ticks(5.0, 5.0).is_empty());

        // Drawn: a report whose times lie between 150 and 9000 us labels 200 and 500.
        register_plot_font().unwrap();
        let mut report = two_depths();
        report.kernel.retain(|k| (150.0..9000.0).contains(&k.median_us));
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area();
            Plot::Kernel.draw(&report, &root, 1).unwrap();
            root.present().unwrap();
        }
        let labels: Vec<&str> = svg
            .split("</text>")
            .filter_map(|chunk| chunk.rsplit('>').next())
            .map(str::trim)
            .collect();
        for label in ["200", "500", "1000", "5000"] {
            assert!(labels.contains(&label), "no `{label}` on the time axis: {labels:?}");
        }
    }
}

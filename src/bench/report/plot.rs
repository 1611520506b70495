//! The plots of a report, drawn by plotters as SVG and as PNG. PNG text is drawn with a font
//! embedded in the binary, so no system font is needed.

use plotters::coord::Shift;
use plotters::prelude::*;

use std::sync::OnceLock;

use crate::bench::{BenchError, BenchReport, OverlapRow};

/// Pixels, for both formats; the PNG is drawn at this size times [`PNG_SCALE`].
pub(super) const PLOT_SIZE: (u32, u32) = (900, 600);
/// The PNG is drawn at twice the SVG's size so that it stays sharp on high-density screens.
pub(super) const PNG_SCALE: u32 = 2;
/// DejaVu Sans 2.37 (license in `assets/fonts/LICENSE-DejaVu.txt`), registered as `sans-serif`.
pub(super) static PLOT_FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Registers the embedded font once per process; plotters looks fonts up by family name.
pub(super) fn register_plot_font() -> Result<(), BenchError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let parsed =
        *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, PLOT_FONT).is_ok());
    if parsed {
        Ok(())
    } else {
        Err(BenchError::Other("the embedded plot font does not parse".into()))
    }
}

const COLOURS: [RGBColor; 6] = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];

#[derive(Debug, Clone, Copy)]
pub(super) enum Plot {
    Kernel,
    Overlap,
    Scale,
}

impl Plot {
    pub(super) fn name(self) -> &'static str {
        match self {
            Plot::Kernel => "kernel",
            Plot::Overlap => "overlap",
            Plot::Scale => "scale",
        }
    }

    pub(super) fn has_figures(self, report: &BenchReport) -> bool {
        match self {
            Plot::Kernel => !report.kernel.is_empty(),
            Plot::Overlap => !report.overlap.is_empty(),
            Plot::Scale => !report.scale.rows.is_empty(),
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
        }
    }
}

/// Sizes in pixels shared by both plots, at one scale.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    scale: u32,
}

impl Sizes {
    fn new(scale: u32) -> Self {
        Self { scale }
    }
    fn px(self, pixels: u32) -> u32 {
        pixels * self.scale
    }
    fn font(self, pixels: u32) -> (&'static str, u32) {
        ("sans-serif", pixels * self.scale)
    }
    fn legend_line(self) -> i32 {
        20 * self.scale as i32
    }
}

/// Median kernel time against mask size, one line per (plane, path), log-scaled time.
fn kernel_plot<DB: DrawingBackend>(
    report: &BenchReport,
    root: &DrawingArea<DB, Shift>,
    sizes: Sizes,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for k in &report.kernel {
        let name = format!("{} {}", k.plane, k.path);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, points)) => points.push((k.size as f64, k.median_us)),
            None => series.push((name, vec![(k.size as f64, k.median_us)])),
        }
    }
    let max_size = report.kernel.iter().map(|k| k.size).max().unwrap_or(3) as f64;
    let (min_t, max_t) = report.kernel.iter().fold((f64::MAX, 0f64), |(lo, hi), k| {
        (lo.min(k.median_us), hi.max(k.median_us))
    });
    let mut chart = ChartBuilder::on(root)
        .caption(format!("kernel time, {}", report.run.device), sizes.font(22))
        .margin(sizes.px(15))
        .x_label_area_size(sizes.px(50))
        .y_label_area_size(sizes.px(80))
        .build_cartesian_2d(0f64..max_size + 2.0, (min_t * 0.8..max_t * 1.25).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("mask side")
        .y_desc("median microseconds")
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
    type Figure = fn(&crate::bench::ScaleRow) -> f64;
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

/// The legend box, at `position` inside the plotting area.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    sizes: Sizes,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font(sizes.font(14))
        .legend_area_size(sizes.px(30))
        .margin(sizes.px(10))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.stroke_width(sizes.px(1)))
        .draw()
        .map_err(|e| e.to_string())
}

//! Writes a benchmark report: `results.json` (every figure), `results.md` (tables) and plots
//! of kernel time against mask size and of frames/s against streams, each as SVG and as PNG.
//! PNG text is drawn with a font embedded in the binary, so no system font is needed.

use ab_glyph::{Font as _, FontRef, ScaleFont as _};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{BenchError, BenchReport, OverlapRow};

/// Pixels, for both formats; the PNG is drawn at this size times [`PNG_SCALE`].
const PLOT_SIZE: (u32, u32) = (900, 600);
/// The PNG is drawn at twice the SVG's size so that it stays sharp on high-density screens.
const PNG_SCALE: u32 = 2;
/// DejaVu Sans 2.37 (license in `assets/fonts/LICENSE-DejaVu.txt`), registered as `sans-serif`.
static PLOT_FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Writes every output into `dir` and returns their paths.
pub fn write_outputs(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let write = |name: &str, text: String| -> Result<PathBuf, BenchError> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| write_error(&path, e))?;
        Ok(path)
    };
    let json = serde_json::to_string_pretty(report).map_err(|e| BenchError::Other(e.to_string()))?;
    let mut written = vec![write("results.json", json)?, write("results.md", markdown(report))?];
    written.extend(write_plots(report, dir)?);
    let trace = dir.join("overlap-trace.json");
    if trace.exists() {
        written.push(trace);
    }
    Ok(written)
}

/// Reads a `results.json` that [`write_outputs`] wrote, so that its plots can be drawn again
/// (with [`write_plots`]) without measuring again.
pub fn read_report(path: &Path) -> Result<BenchReport, BenchError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| BenchError::Other(format!("reading {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| BenchError::Other(format!("{}: not a bench report: {e}", path.display())))
}

/// Draws every plot the report has figures for into `dir` as `NAME.svg` and `NAME.png`, and
/// returns their paths.
pub fn write_plots(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    register_plot_font()?;
    let mut written = Vec::new();
    for plot in [Plot::Kernel, Plot::Overlap] {
        if !plot.has_figures(report) {
            continue;
        }
        let svg = dir.join(format!("{}.svg", plot.name()));
        let root = SVGBackend::new(&svg, PLOT_SIZE).into_drawing_area();
        plot.draw(report, &root, 1)
            .and_then(|()| root.present().map_err(|e| e.to_string()))
            .map_err(|reason| write_error(&svg, reason))?;
        drop(root);
        written.push(svg);

        let png = dir.join(format!("{}.png", plot.name()));
        let bytes = render_png(plot, report).map_err(|reason| write_error(&png, reason))?;
        std::fs::write(&png, bytes).map_err(|e| write_error(&png, e))?;
        written.push(png);
    }
    Ok(written)
}

fn write_error(path: &Path, reason: impl ToString) -> BenchError {
    BenchError::Write {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// Registers the embedded font once per process; plotters looks fonts up by family name.
fn register_plot_font() -> Result<(), BenchError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let parsed =
        *REGISTERED.get_or_init(|| plotters::style::register_font("sans-serif", FontStyle::Normal, PLOT_FONT).is_ok());
    if parsed {
        Ok(())
    } else {
        Err(BenchError::Other("the embedded plot font does not parse".into()))
    }
}

/// Draws the plot into an RGB buffer and encodes it as PNG.
fn render_png(plot: Plot, report: &BenchReport) -> Result<Vec<u8>, String> {
    let (width, height) = (PLOT_SIZE.0 * PNG_SCALE, PLOT_SIZE.1 * PNG_SCALE);
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let canvas = PngCanvas {
            bitmap: BitMapBackend::with_buffer(&mut pixels, (width, height)),
            font: FontRef::try_from_slice(PLOT_FONT).map_err(|e| format!("the embedded plot font: {e}"))?,
        };
        let root = canvas.into_drawing_area();
        plot.draw(report, &root, PNG_SCALE)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&pixels).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// The bitmap backend with text rasterised here rather than by plotters 0.3.7, whose ab_glyph
/// text drops each glyph's left side bearing and so spaces letters unevenly ("yu v420p").
/// Layout (text size, anchors, rotation) stays plotters' own, so both formats place text alike.
struct PngCanvas<'a> {
    bitmap: BitMapBackend<'a>,
    font: FontRef<'static>,
}

type CanvasResult<'a> = Result<(), DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>>;

impl<'a> DrawingBackend for PngCanvas<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.bitmap.get_size()
    }
    fn ensure_prepared(&mut self) -> CanvasResult<'a> {
        self.bitmap.ensure_prepared()
    }
    fn present(&mut self) -> CanvasResult<'a> {
        self.bitmap.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> CanvasResult<'a> {
        self.bitmap.draw_pixel(point, color)
    }
    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> CanvasResult<'a> {
        self.bitmap.draw_line(from, to, style)
    }
    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> CanvasResult<'a> {
        self.bitmap.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> CanvasResult<'a> {
        self.bitmap.draw_path(path, style)
    }
    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> CanvasResult<'a> {
        self.bitmap.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> CanvasResult<'a> {
        self.bitmap.fill_polygon(vertices, style)
    }
    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> CanvasResult<'a> {
        self.bitmap.blit_bitmap(pos, size, src)
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> CanvasResult<'a> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Center => -(max_x - min_x) / 2,
            HPos::Right => -(max_x - min_x),
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -(max_y - min_y) / 2,
            VPos::Bottom => -(max_y - min_y),
        };
        let size = style.size() as f32;
        let font = self.font.as_scaled(size);
        let mut coverage = Vec::new();
        let mut caret = 0f32;
        let mut previous = None;
        for c in text.chars() {
            let glyph = font.glyph_id(c);
            if let Some(previous) = previous {
                caret += font.kern(previous, glyph);
            }
            previous = Some(glyph);
            if let Some(outline) = font.outline_glyph(glyph.with_scale_and_position(size, ab_glyph::point(caret, 0.0)))
            {
                // px_bounds already include the side bearing; the baseline sits half the size
                // below the top, where plotters' layout box puts it.
                let bounds = outline.px_bounds();
                let (left, top) = (bounds.min.x as i32, (size / 2.0 + bounds.min.y) as i32);
                outline.draw(|x, y, c| coverage.push((left + x as i32, top + y as i32, c)));
            }
            caret += font.h_advance(glyph);
        }
        let transform = style.transform();
        let (width, height) = self.get_size();
        for (x, y, c) in coverage {
            let (x, y) = transform.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if (0..width as i32).contains(&x) && (0..height as i32).contains(&y) {
                self.bitmap.draw_pixel((x, y), colour.mix(f64::from(c.min(1.0))))?;
            }
        }
        Ok(())
    }
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The report as Markdown tables.
pub fn markdown(report: &BenchReport) -> String {
    let r = &report.run;
    let mut md = String::new();
    let _ = writeln!(md, "# convstream bench\n");
    let _ = writeln!(
        md,
        "Device: {}; driver: {}; FP32 peak: {} TFLOP/s; commit {}; {}; {} host threads; suites: {}{}.\n",
        r.device,
        r.driver.as_deref().unwrap_or("-"),
        opt(r.fp32_peak_tflops, 1),
        r.commit,
        r.date,
        r.host_threads,
        r.suites,
        if r.quick {
            " (quick: a smoke test, not a speed claim)"
        } else {
            ""
        }
    );
    if !report.kernel.is_empty() {
        let _ = writeln!(md, "## Kernel (one 8-bit plane, reflect border; medians)\n");
        let _ = writeln!(
            md,
            "| plane | mask | path | median us | p10-p90 us | Gpixel/s | FP32 peak | vs baseline | checked against |"
        );
        let _ = writeln!(md, "|---|---|---|---:|---:|---:|---:|---:|---|");
        for k in &report.kernel {
            let _ = writeln!(
                md,
                "| {} | {}x{} | {} | {:.1} | {:.1}-{:.1} | {:.2} | {} | {} | {} |",
                k.plane,
                k.size,
                k.size,
                k.path,
                k.median_us,
                k.p10_us,
                k.p90_us,
                k.gpixels_per_s,
                k.fraction_of_fp32_peak
                    .map_or("-".into(), |f| format!("{:.0}%", f * 100.0)),
                k.speedup_vs_baseline.map_or("-".into(), |s| format!("{s:.1}x")),
                k.checked_against
            );
        }
        md.push('\n');
    }
    if !report.transfer.is_empty() {
        let _ = writeln!(md, "## Transfer (one yuv420p frame; medians)\n");
        let _ = writeln!(
            md,
            "| bytes | host memory | H2D us | D2H us | both at once us | H2D GB/s | D2H GB/s | both GB/s |"
        );
        let _ = writeln!(md, "|---:|---|---:|---:|---:|---:|---:|---:|");
        for t in &report.transfer {
            let _ = writeln!(
                md,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                t.bytes, t.memory, t.h2d_us, t.d2h_us, t.both_us, t.h2d_gb_s, t.d2h_gb_s, t.both_gb_s
            );
        }
        md.push('\n');
    }
    if !report.overlap.is_empty() {
        let _ = writeln!(
            md,
            "## Overlap (synthetic frames through the lanes, 13x13 dense on every plane)\n"
        );
        let _ = writeln!(md, "| frame | frames in | streams | frames/stream | frames/s | vs 1 stream | copy in us | upload us | kernels us | download us | copy out us | ideal frames/s (1 / busiest stage) | pinned bytes |");
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for o in &report.overlap {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.2}x | {:.0} | {} | {} | {} | {:.0} | {:.0} | {} |",
                o.frame,
                o.frames_in,
                o.streams,
                o.frames_per_stream,
                o.fps,
                o.speedup_vs_one_stream,
                o.host_copy_in_us,
                opt(o.upload_us, 0),
                opt(o.kernels_us, 0),
                opt(o.download_us, 0),
                o.host_copy_out_us,
                o.ideal_fps,
                o.pinned_bytes
            );
        }
        md.push('\n');
    }
    if !report.e2e.is_empty() {
        let _ = writeln!(
            md,
            "## End to end (file -> decode -> filter -> null sink, against decode-only in the same run)\n"
        );
        let _ = writeln!(md, "| input | decoder | frames | decode-only frames/s | filtered frames/s | ratio | latency p50 ms | p99 ms | engine |");
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---|");
        for e in &report.e2e {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.0} | {:.0} | {:.0}% | {} | {} | {} |",
                e.input,
                e.decoder,
                e.frames,
                e.decode_only_fps,
                e.filtered_fps,
                e.ratio * 100.0,
                opt(e.latency_p50_ms, 2),
                opt(e.latency_p99_ms, 2),
                e.engine
            );
        }
        md.push('\n');
        for e in report.e2e.iter().filter(|e| !e.latency_slowest.is_empty()) {
            let _ = writeln!(md, "- slowest frames, {} {}:", e.input, e.decoder);
            for frame in &e.latency_slowest {
                let _ = writeln!(md, "  - {}", frame.describe());
            }
        }
        md.push('\n');
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(md, "## Not measured\n");
        for s in &report.skipped {
            let _ = writeln!(md, "- {s}");
        }
    }
    md
}

const COLOURS: [RGBColor; 6] = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];

#[derive(Debug, Clone, Copy)]
enum Plot {
    Kernel,
    Overlap,
}

impl Plot {
    fn name(self) -> &'static str {
        match self {
            Plot::Kernel => "kernel",
            Plot::Overlap => "overlap",
        }
    }

    fn has_figures(self, report: &BenchReport) -> bool {
        match self {
            Plot::Kernel => !report.kernel.is_empty(),
            Plot::Overlap => !report.overlap.is_empty(),
        }
    }

    /// Draws onto any backend; `scale` multiplies every size given in pixels.
    fn draw<DB: DrawingBackend>(
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

//! PNG output: plotters' bitmap backend with text rasterised from the embedded font.

use ab_glyph::{Font as _, FontRef, ScaleFont as _};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind};

use super::plot::Plot;
use super::style::{PLOT_FONT, PLOT_SIZE, PNG_SCALE};
use crate::results::BenchReport;

/// Draws the plot into an RGB buffer and encodes it as PNG.
pub(super) fn render_png(plot: Plot, report: &BenchReport) -> Result<Vec<u8>, String> {
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

//! What every plot shares: the canvas size, the PNG's scale, the embedded font, the line
//! colours, sizes at a scale and the legend box.

use plotters::prelude::*;
use std::sync::OnceLock;

use crate::error::BenchError;

/// Pixels, for both formats; the PNG is drawn at this size times [`PNG_SCALE`].
pub(super) const PLOT_SIZE: (u32, u32) = (900, 600);
/// The PNG is drawn at twice the SVG's size so that it stays sharp on high-density screens.
pub(super) const PNG_SCALE: u32 = 2;
/// DejaVu Sans 2.37 (license in `assets/fonts/LICENSE-DejaVu.txt`), registered as `sans-serif`.
pub(super) static PLOT_FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

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

pub(super) const COLOURS: [RGBColor; 6] = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];

/// Sizes in pixels shared by every plot, at one scale.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizes {
    scale: u32,
}

impl Sizes {
    pub(super) fn new(scale: u32) -> Self {
        Self { scale }
    }
    pub(super) fn px(self, pixels: u32) -> u32 {
        pixels * self.scale
    }
    pub(super) fn font(self, pixels: u32) -> (&'static str, u32) {
        ("sans-serif", pixels * self.scale)
    }
    pub(super) fn legend_line(self) -> i32 {
        20 * self.scale as i32
    }
}

/// The legend box, at `position` inside the plotting area.
pub(super) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
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

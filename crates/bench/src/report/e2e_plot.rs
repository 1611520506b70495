//! The e2e suite's whole-command plot: per clip and decoder, FFmpeg's CLI decoding alone and
//! `convstream run` filtering, wall-clock (start-up included) and steady-state frames/s, as
//! horizontal bars so that the clips' names fit beside them.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{legend, Sizes, COLOURS};
use crate::results::{BenchReport, CliComparison, CliMeasure, E2eRow};

/// The rows with a whole-command figure, and their comparisons.
pub(super) fn compared(report: &BenchReport) -> Vec<(&E2eRow, &CliComparison)> {
    report
        .e2e
        .iter()
        .filter_map(|row| Some((row, row.cli.as_ref()?)))
        .filter(|(_, cli)| {
            [&cli.ffmpeg, &cli.convstream]
                .into_iter()
                .flatten()
                .any(|m| m.wall_fps.is_some() || m.steady_fps.is_some())
        })
        .collect()
}

/// A row's name on the axis: the clip without its extension and trailing frame count
/// (`textured-1920x1080-600.mp4` reads `textured 1920x1080`), and the decoder.
pub(super) fn row_label(row: &E2eRow) -> String {
    let stem = row.input.rsplit_once('.').map_or(row.input.as_str(), |(stem, _)| stem);
    let mut words: Vec<&str> = stem.split('-').collect();
    if words.len() > 1 && words.last().is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())) {
        words.pop();
    }
    format!("{} {}", words.join(" "), row.decoder)
}

/// The four bars of a row, top to bottom: name and the figure they show.
type Figure = fn(&CliComparison) -> Option<f64>;
const BARS: [(&str, Figure); 4] = [
    ("FFmpeg decode-only, wall-clock", |c| c.ffmpeg.as_ref()?.wall_fps),
    ("FFmpeg decode-only, steady", |c| c.ffmpeg.as_ref()?.steady_fps),
    ("convstream filtered, wall-clock", |c| c.convstream.as_ref()?.wall_fps),
    ("convstream filtered, steady", |c| c.convstream.as_ref()?.steady_fps),
];

pub(super) fn draw<DB: DrawingBackend>(
    report: &BenchReport,
    root: &DrawingArea<DB, Shift>,
    sizes: Sizes,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let rows = compared(report);
    let labels: Vec<String> = rows.iter().map(|(row, _)| row_label(row)).collect();
    let most = rows
        .iter()
        .flat_map(|(_, cli)| BARS.iter().filter_map(|(_, figure)| figure(cli)))
        .fold(1.0f64, f64::max);
    // Plotters formats integer axes only: each row's group is GROUP units tall, row i's
    // spanning [top(i) - GROUP, top(i)), the first row on top.
    const GROUP: i32 = 100;
    let count = rows.len() as i32;
    let top = |i: usize| (count - i as i32) * GROUP;
    let centres: Vec<i32> = (0..rows.len()).map(|i| top(i) - GROUP / 2).collect();
    let label_of = |y: &i32| {
        let i = count - 1 - y.div_euclid(GROUP);
        usize::try_from(i)
            .ok()
            .and_then(|i| labels.get(i))
            .cloned()
            .unwrap_or_default()
    };
    let rounds = rows
        .iter()
        .filter_map(|(_, cli)| [&cli.ffmpeg, &cli.convstream].into_iter().flatten().next())
        .map(|m: &CliMeasure| m.rounds.len())
        .max()
        .unwrap_or(0);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("whole commands, medians of {rounds} rounds, {}", report.run.device),
            sizes.font(22),
        )
        .margin(sizes.px(15))
        .x_label_area_size(sizes.px(50))
        .y_label_area_size(sizes.px(190))
        .build_cartesian_2d(0f64..most * 1.45, (0..count * GROUP).with_key_points(centres))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("frames/s")
        .x_label_formatter(&|fps: &f64| format!("{fps:.0}"))
        .y_label_formatter(&label_of)
        .label_style(sizes.font(13))
        .axis_desc_style(sizes.font(16))
        .draw()
        .map_err(|e| e.to_string())?;
    let bar = GROUP * 8 / 10 / BARS.len() as i32;
    for (k, (name, figure)) in BARS.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let style = if k % 2 == 0 {
            colour.mix(0.45).filled()
        } else {
            colour.filled()
        };
        let bars: Vec<Rectangle<(f64, i32)>> = rows
            .iter()
            .enumerate()
            .filter_map(|(i, (_, cli))| {
                let upper = top(i) - GROUP / 10 - k as i32 * bar;
                Some(Rectangle::new(
                    [(0.0, upper), (figure(cli)?, upper - bar * 9 / 10)],
                    style,
                ))
            })
            .collect();
        let legend_size = sizes.px(6) as i32;
        chart
            .draw_series(bars)
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - legend_size), (x + 2 * legend_size, y + legend_size)], style)
            });
    }
    legend(&mut chart, sizes, SeriesLabelPosition::LowerRight)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_named_by_clip_and_decoder() {
        let row = |input: &str| E2eRow {
            input: input.into(),
            decoder: "nvdec".into(),
            frames: 0,
            decode_only_fps: 0.0,
            filtered_fps: 0.0,
            ratio: 0.0,
            latency_p50_ms: None,
            latency_p99_ms: None,
            latency_slowest: Vec::new(),
            mask: String::new(),
            engine: String::new(),
            cli: None,
        };
        assert_eq!(
            row_label(&row("textured-1920x1080-600.mp4")),
            "textured 1920x1080 nvdec"
        );
        assert_eq!(row_label(&row("h264-2160p.mp4")), "h264 2160p nvdec");
        assert_eq!(row_label(&row("clip")), "clip nvdec");
    }
}

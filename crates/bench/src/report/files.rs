//! Writing a report: `results.json`, `results.md`, the plots as SVG and PNG; and reading a
//! `results.json` back to draw its plots again.

use plotters::prelude::*;
use std::path::{Path, PathBuf};

use super::markdown::markdown;
use super::plot::Plot;
use super::png::render_png;
use super::style::{register_plot_font, PLOT_SIZE};
use crate::error::BenchError;
use crate::results::BenchReport;

/// Writes every output into `dir` and returns their paths.
pub fn write_outputs(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let write = |name: &str, text: String| -> Result<PathBuf, BenchError> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| write_error(&path, e))?;
        Ok(path)
    };
    let json = serde_json::to_string_pretty(report).map_err(|e| BenchError::Other(e.to_string()))?;
    let mut written = vec![write("results.json", json)?, write("results.md", markdown(report))?];
    if let Some(seats) = &report.scale.nvdec_seats {
        written.push(write("nvdec-seats.toml", seats.to_file_text())?);
    }
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

fn write_error(path: &Path, reason: impl ToString) -> BenchError {
    BenchError::Write {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

/// Draws every plot the report has figures for into `dir` as `NAME.svg` and `NAME.png`, and
/// returns their paths.
pub fn write_plots(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    register_plot_font()?;
    let mut written = Vec::new();
    for plot in [Plot::Kernel, Plot::Overlap, Plot::Scale, Plot::E2e] {
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

//! Writes a benchmark report: `results.json` (every figure), `results.md` (tables) and SVG
//! plots of kernel time against mask size and of frames/s against streams.

use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{BenchError, BenchReport};

/// Writes every output into `dir` and returns their paths.
pub fn write_outputs(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let write = |name: &str, text: String| -> Result<PathBuf, BenchError> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(path)
    };
    let json = serde_json::to_string_pretty(report).map_err(|e| BenchError::Other(e.to_string()))?;
    let mut written = vec![write("results.json", json)?, write("results.md", markdown(report))?];
    if !report.kernel.is_empty() {
        let path = dir.join("kernel.svg");
        kernel_plot(report, &path).map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            reason: e,
        })?;
        written.push(path);
    }
    if !report.overlap.is_empty() {
        let path = dir.join("overlap.svg");
        overlap_plot(report, &path).map_err(|e| BenchError::Write {
            path: path.display().to_string(),
            reason: e,
        })?;
        written.push(path);
    }
    let trace = dir.join("overlap-trace.json");
    if trace.exists() {
        written.push(trace);
    }
    Ok(written)
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
        let _ = writeln!(md, "| frame | streams | frames/s | vs 1 stream | copy in us | upload us | kernels us | download us | copy out us | ideal frames/s | pinned bytes |");
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for o in &report.overlap {
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {:.2}x | {:.0} | {} | {} | {} | {:.0} | {:.0} | {} |",
                o.frame,
                o.streams,
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

/// Median kernel time against mask size, one line per (plane, path), log-scaled time.
fn kernel_plot(report: &BenchReport, path: &Path) -> Result<(), String> {
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
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("kernel time, {}", report.run.device), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..max_size + 2.0, (min_t * 0.8..max_t * 1.25).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("mask side")
        .y_desc("median microseconds")
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (name, points)) in series.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, colour.filled())))
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

/// Frames/s against streams, measured and ideal, one pair of lines per frame size.
fn overlap_plot(report: &BenchReport, path: &Path) -> Result<(), String> {
    let max_streams = report.overlap.iter().map(|o| o.streams).max().unwrap_or(1) as f64;
    let max_fps = report
        .overlap
        .iter()
        .map(|o| o.fps.max(o.ideal_fps))
        .fold(1.0, f64::max);
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("frames/s through the lanes, {}", report.run.device),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..max_streams + 1.0, 0f64..max_fps * 1.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("streams (lanes)")
        .y_desc("frames/s")
        .draw()
        .map_err(|e| e.to_string())?;
    let mut frames: Vec<&str> = report.overlap.iter().map(|o| o.frame.as_str()).collect();
    frames.dedup();
    for (i, frame) in frames.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let rows: Vec<_> = report.overlap.iter().filter(|o| o.frame == frame).collect();
        let measured: Vec<(f64, f64)> = rows.iter().map(|o| (o.streams as f64, o.fps)).collect();
        let ideal: Vec<(f64, f64)> = rows.iter().map(|o| (o.streams as f64, o.ideal_fps)).collect();
        chart
            .draw_series(LineSeries::new(measured, colour.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(format!("{frame} measured"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(ideal, colour.mix(0.4).stroke_width(1)))
            .map_err(|e| e.to_string())?
            .label(format!("{frame} ideal (1 / slowest stage)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.mix(0.4).stroke_width(1)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

//! `results.md`: the report as Markdown, one section per suite that has figures.

use std::fmt::Write as _;

use crate::results::{BenchReport, E2eRow, KernelRow, OverlapRow, RunInfo, ScaleResults, TransferRow};
use crate::suites::E2E_MASK;

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The report as Markdown tables.
pub fn markdown(report: &BenchReport) -> String {
    let mut md = String::new();
    run_markdown(&report.run, &mut md);
    if !report.kernel.is_empty() {
        kernel_markdown(&report.kernel, &mut md);
    }
    if !report.transfer.is_empty() {
        transfer_markdown(&report.transfer, &mut md);
    }
    if !report.overlap.is_empty() {
        overlap_markdown(&report.overlap, &mut md);
    }
    if !report.e2e.is_empty() {
        e2e_markdown(&report.e2e, &mut md);
    }
    if !report.scale.rows.is_empty() {
        scale_markdown(&report.scale, &mut md);
    }
    if !report.skipped.is_empty() {
        skipped_markdown(&report.skipped, &mut md);
    }
    md
}

/// The title, and where and how the figures were taken.
fn run_markdown(r: &RunInfo, md: &mut String) {
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
    if let Some(cpu) = &r.host_cpu {
        let _ = writeln!(md, "Host {cpu}.\n");
    }
    if !r.tuning.is_default() {
        let _ = writeln!(md, "GPU tuning (bench flags): {}.\n", r.tuning.describe());
    }
}

/// The kernel suite's table.
fn kernel_markdown(rows: &[KernelRow], md: &mut String) {
    let _ = writeln!(md, "## Kernel (one plane, reflect border; medians)\n");
    let _ = writeln!(
        md,
        "| plane | bits | mask | path | median us | p10-p90 us | queued us | queued GB/s | Gpixel/s | GFLOP/s | FP32 peak | vs baseline | time vs 8-bit | checked against |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for k in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {}x{} | {} | {:.1} | {:.1}-{:.1} | {} | {} | {:.2} | {} | {} | {} | {} | {} |",
            k.plane,
            k.bits,
            k.size,
            k.size,
            k.path,
            k.median_us,
            k.p10_us,
            k.p90_us,
            k.queued_us.map_or("-".into(), |q| format!("{q:.1}")),
            k.queued_gbytes_per_s.map_or("-".into(), |g| format!("{g:.0}")),
            k.gpixels_per_s,
            k.gflop_per_s.map_or("-".into(), |g| format!("{g:.1}")),
            k.fraction_of_fp32_peak
                .map_or("-".into(), |f| format!("{:.0}%", f * 100.0)),
            k.speedup_vs_baseline.map_or("-".into(), |s| format!("{s:.1}x")),
            k.time_vs_eight_bit.map_or("-".into(), |r| format!("{r:.2}x")),
            k.checked_against
        );
    }
    md.push('\n');
}

/// The transfer suite's table.
fn transfer_markdown(rows: &[TransferRow], md: &mut String) {
    let _ = writeln!(md, "## Transfer (one yuv420p frame; medians)\n");
    let _ = writeln!(
        md,
        "| bytes | host memory | H2D us | D2H us | both at once us | H2D GB/s | D2H GB/s | both GB/s |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|---:|---:|---:|");
    for t in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            t.bytes, t.memory, t.h2d_us, t.d2h_us, t.both_us, t.h2d_gb_s, t.d2h_gb_s, t.both_gb_s
        );
    }
    md.push('\n');
}

/// The overlap suite's table.
fn overlap_markdown(rows: &[OverlapRow], md: &mut String) {
    let _ = writeln!(
        md,
        "## Overlap (synthetic frames through the lanes, 13x13 dense on every plane)\n"
    );
    let _ = writeln!(md, "| frame | frames in | streams | frames/stream | frames/s | vs 1 stream | copy in us | upload us | kernels us | download us | copy out us | ideal frames/s (1 / busiest stage) | pinned bytes |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for o in rows {
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

/// The e2e suite's table, its slowest frames, and its whole commands.
fn e2e_markdown(rows: &[E2eRow], md: &mut String) {
    let _ = writeln!(
        md,
        "## End to end (file -> decode -> filter -> null sink, against decode-only in the same run)\n"
    );
    let _ = writeln!(md, "| input | decoder | frames | decode-only frames/s | filtered frames/s | ratio | latency p50 ms | p99 ms | engine |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---|");
    for e in rows {
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
    for e in rows.iter().filter(|e| !e.latency_slowest.is_empty()) {
        let _ = writeln!(md, "- slowest frames, {} {}:", e.input, e.decoder);
        for frame in &e.latency_slowest {
            let _ = writeln!(md, "  - {}", frame.describe());
        }
    }
    md.push('\n');
    cli_markdown(rows, md);
}

/// What could not be measured here, and why.
fn skipped_markdown(skipped: &[String], md: &mut String) {
    let _ = writeln!(md, "## Not measured\n");
    for s in skipped {
        let _ = writeln!(md, "- {s}");
    }
}

/// The e2e suite's whole commands: FFmpeg's CLI decoding alone against `convstream run`
/// filtering, wall-clock (start-up included) and steady-state, medians of the rounds.
fn cli_markdown(rows: &[E2eRow], md: &mut String) {
    let compared: Vec<_> = rows
        .iter()
        .filter_map(|e| e.cli.as_ref().map(|cli| (e, cli)))
        .filter(|(_, cli)| cli.ffmpeg.is_some() || cli.convstream.is_some())
        .collect();
    let Some((_, first)) = compared.first() else {
        return;
    };
    let rounds = compared
        .iter()
        .filter_map(|(_, cli)| Some(cli.ffmpeg.as_ref().or(cli.convstream.as_ref())?.rounds.len()))
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        md,
        "### Whole commands: FFmpeg's CLI decoding alone against `convstream run` filtering (medians of {rounds} rounds, alternating)\n"
    );
    if let Some(version) = &first.ffmpeg_version {
        let _ = writeln!(md, "FFmpeg: {version}.\n");
    }
    let _ = writeln!(
        md,
        "| input | decoder | FFmpeg wall s | FFmpeg wall frames/s | FFmpeg steady frames/s | convstream wall s | convstream wall frames/s | convstream steady frames/s | wall vs FFmpeg | steady vs FFmpeg |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let percent = |ratio: Option<f64>| ratio.map_or("-".into(), |r| format!("{:.0}%", r * 100.0));
    for (e, cli) in &compared {
        let (f, c) = (cli.ffmpeg.as_ref(), cli.convstream.as_ref());
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            e.input,
            e.decoder,
            opt(f.and_then(|m| m.wall_seconds), 2),
            opt(f.and_then(|m| m.wall_fps), 0),
            opt(f.and_then(|m| m.steady_fps), 0),
            opt(c.and_then(|m| m.wall_seconds), 2),
            opt(c.and_then(|m| m.wall_fps), 0),
            opt(c.and_then(|m| m.steady_fps), 0),
            percent(cli.wall_ratio),
            percent(cli.steady_ratio),
        );
    }
    md.push('\n');
    let _ = writeln!(
        md,
        "Wall: frames over the whole process, spawn to exit (start-up included). Steady: FFmpeg's frames over its `-benchmark` rtime, convstream's `--stats-json` fps (set-up excluded). vs FFmpeg: convstream's rate over FFmpeg's. The commands, for the first row (`STATS` is each round's stats file):\n"
    );
    for measure in [&first.ffmpeg, &first.convstream].into_iter().flatten() {
        let _ = writeln!(md, "    {}", measure.command);
    }
    md.push('\n');
}

/// The scale suite's table: one row per step, then the most pipelines each decoder held.
fn scale_markdown(scale: &ScaleResults, md: &mut String) {
    let _ = writeln!(
        md,
        "## Streams per host (paced live pipelines, {} -> null; a step passes at >= 99% of the frame rate, 0 drops, p99 <= 50 ms)\n",
        E2E_MASK
    );
    let _ = writeln!(md, "| decoder | pipelines (per device) | devices | fps min | fps median | dropped | p50 ms | p99 ms | host CPU | GPU busy | RSS MB | pinned MB | started in s | result |");
    let _ = writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for r in &scale.rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.2} | {:.2} | {} | {:.1} | {:.1} | {:.0}% | {} | {:.0} | {:.0} | {:.1} | {} |",
            r.decoder,
            r.pipelines,
            r.gpus,
            r.fps_min,
            r.fps_median,
            r.frames_dropped,
            r.latency_p50_ms,
            r.latency_p99_ms,
            r.host_cpu_percent,
            r.gpu_busy_percent.map_or("-".to_string(), |b| format!("{b:.0}%")),
            r.resident_bytes as f64 / 1048576.0,
            r.pinned_bytes as f64 / 1048576.0,
            r.start_seconds,
            r.failure.as_deref().unwrap_or("ok"),
        );
    }
    md.push('\n');
    for (decoder, max) in &scale.max_pipelines {
        let _ = writeln!(md, "- max_pipelines, {decoder} decoder: **{max}** per device");
    }
    for c in &scale.decode_capacity {
        let _ = writeln!(
            md,
            "- the host's own decode capacity, {}: {} unpaced decodes at once{}, {:.0} fps in all = **{:.1}** live streams",
            c.decoder,
            c.parallel,
            c.on_gpus(),
            c.frames_per_second,
            c.live_streams
        );
    }
    if let Some(seats) = &scale.nvdec_seats {
        for (model, seats) in &seats.seats_per_gpu {
            let _ = writeln!(
                md,
                "- NVDEC seats per {model}: **{seats}** (`nvdec-seats.toml`: `[server] nvdec_seats_file` takes it)"
            );
        }
    }
    md.push('\n');
}

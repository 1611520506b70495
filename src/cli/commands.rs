//! The subcommands other than `run`: `serve`, `check`, `masks`, `bench`, `demo`, and the
//! printing of `doctor`'s report.

use anyhow::Context;
use std::path::{Path, PathBuf};

use super::args::BenchArgs;
use super::logging::init_logging;
use super::run::run_settings;
use super::{config_failure, usage, Failure};
use convstream_config::{ConfigError, ConfigFile, LogConfig, Overrides};
use convstream_media::output_problems;

pub(crate) fn serve(config_path: PathBuf, listen: Option<String>, shard: Option<String>) -> Result<(), Failure> {
    use convstream_server::{ServeError, ServeOptions};
    let mut file = ConfigFile::load(&config_path, output_problems).map_err(config_failure)?;
    if shard.is_some() {
        // Laid over the file as [server] shard, so that validation and reloads see it.
        file.server.shard = shard;
    }
    let settings = file
        .validate_for_serve(config_path.parent(), output_problems)
        .map_err(config_failure)?;
    init_logging(&settings.log);
    convstream_server::serve(
        file,
        ServeOptions {
            config_path,
            listen,
            commit: env!("CONVSTREAM_COMMIT"),
        },
    )
    .map_err(|e| match e {
        ServeError::Config(e) => config_failure(e),
        ServeError::MissingToken(_) | ServeError::NoToken(_) | ServeError::NotAnAddress(_) | ServeError::Shard(_) => {
            usage(e)
        }
        other => anyhow::Error::new(other).into(),
    })
}

/// Writes to stdout; a reader that went away (`convstream masks | head`) is a normal end.
pub(crate) fn print_out(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to stdout").into())
        }
        _ => Ok(()),
    }
}

pub(crate) fn check(path: &Path, shards: Option<usize>) -> Result<(), Failure> {
    use convstream_server::shard::MAX_SHARDS;
    if let Some(count) = shards.filter(|count| !(1..=MAX_SHARDS).contains(count)) {
        return Err(usage(anyhow::anyhow!("--shards {count}: allowed 1..={MAX_SHARDS}")));
    }
    // Inputs that are not there are warned of whatever else is wrong, in the same pass.
    let table = convstream_config::read_config_bytes(path)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| toml::from_str::<toml::Table>(&text).ok());
    for warning in table.iter().flat_map(convstream_config::missing_inputs) {
        eprintln!("warning: {}", convstream_core::for_display(&warning));
    }
    let file = ConfigFile::load(path, output_problems).map_err(config_failure)?;
    // Everything `run` and `serve` would refuse, in one list.
    let mut problems = convstream_config::config_file_problems(path, &file.pipelines);
    problems.extend(file.server.open_api_problem());
    // A config without pipelines is a server's whose pipelines all come through the API.
    let settings = match file.validate_for_serve(path.parent(), output_problems) {
        Ok(settings) if problems.is_empty() => settings,
        Ok(_) => return Err(config_failure(ConfigError::Invalid(problems))),
        Err(ConfigError::Invalid(more)) => {
            problems.extend(more);
            return Err(config_failure(ConfigError::Invalid(problems)));
        }
        Err(other) => return Err(config_failure(other)),
    };
    let mut text = format!("{}: ok, {} pipeline(s)\n", path.display(), settings.pipelines.len());
    if settings.pipelines.is_empty() {
        text.push_str("  none: `serve` runs it as an API-only server; `run` needs at least one\n");
    }
    for pipeline in &settings.pipelines {
        text.push_str(&format!("  {}\n", pipeline.describe()));
        // Legal but likely not meant (a custom matrix that changes brightness): said here,
        // before a run, as well as when the pipeline starts.
        for warning in pipeline
            .graph_warnings
            .iter()
            .cloned()
            .chain(pipeline.filter.mask_warnings())
        {
            eprintln!(
                "warning: {}",
                convstream_core::for_display(&format!("pipeline {:?}: {warning}", pipeline.name))
            );
        }
    }
    if let Some(count) = shards.or(file.server.shards) {
        text.push_str(&shard_assignment(&settings, count));
    }
    print_out(&convstream_core::for_terminal(&text))
}

/// `check --shards N`: each shard's pipelines, as a sharded `serve` would run them.
fn shard_assignment(settings: &convstream_config::Settings, count: usize) -> String {
    let mut shards = vec![Vec::new(); count];
    for pipeline in &settings.pipelines {
        shards[convstream_server::shard::owner(&pipeline.name, count)].push(pipeline.name.as_str());
    }
    let mut text = format!("assignment over {count} shard(s) (rendezvous hashing of the names):\n");
    for (index, names) in shards.iter().enumerate() {
        let list = if names.is_empty() {
            "-".to_string()
        } else {
            names.join(", ")
        };
        text.push_str(&format!(
            "  shard {index}/{count}: {} pipeline(s): {list}\n",
            names.len()
        ));
    }
    text
}

pub(crate) fn list_masks() -> Result<(), Failure> {
    print_out(&convstream_core::preset_list())
}

pub(crate) fn show_mask(spec: &str) -> Result<(), Failure> {
    let text = convstream_core::show_spec(spec).map_err(|refused| usage(anyhow::anyhow!("{refused}")))?;
    print_out(&text)
}

pub(crate) fn bench(args: BenchArgs) -> Result<(), Failure> {
    init_logging(&LogConfig::default());
    let device = convstream_core::DeviceChoice::parse(&args.device).ok_or_else(|| {
        usage(anyhow::anyhow!(
            "--device {}: use auto, cpu, cuda or cuda:N",
            args.device
        ))
    })?;
    let options = convstream_bench::BenchOptions {
        suite: args.suite,
        device,
        input: args.input,
        quick: args.quick,
        out: args.out,
        mask_sizes: args.mask_sizes,
        planes: args.plane_sizes,
        depths: args.depths,
        channels: usize::from(args.channels),
        tuning: convstream_core::GpuTuning {
            spin_us: Some(args.spin_us),
            dense_tiling: args.dense_tiling,
            separable_tiling: args.separable_tiling,
        },
        decoder: args.decoder,
        gpus: args.gpus.as_deref().map(parse_gpu_set).transpose()?,
        pipelines: args.pipelines,
        max_pipelines: args.max_pipelines,
        scale_seconds: args.scale_seconds,
        ffmpeg: args.ffmpeg,
        commit: env!("CONVSTREAM_COMMIT"),
        rounds: usize::from(args.rounds),
    };
    let report = convstream_bench::run(&options).map_err(anyhow::Error::new)?;
    let written = convstream_bench::write_outputs(&report, &options.out).map_err(anyhow::Error::new)?;
    let mut text = convstream_bench::report::markdown(&report);
    text.push_str("Written:\n");
    for path in written {
        text.push_str(&format!("  {}\n", path.display()));
    }
    print_out(&text)
}

/// `--gpus`: `all` (every GPU the driver shows) or distinct ordinals such as `0,1`, each one
/// the host has.
fn parse_gpu_set(text: &str) -> Result<Vec<usize>, Failure> {
    let present = convstream_core::gpu_inventory().len();
    let wanted: Vec<usize> = if text.trim() == "all" {
        (0..present).collect()
    } else {
        let parsed: Result<Vec<usize>, _> = text.split(',').map(|n| n.trim().parse::<usize>()).collect();
        parsed.map_err(|_| {
            usage(anyhow::anyhow!(
                "--gpus {}: use all or GPU ordinals such as 0,1",
                convstream_core::quoted(text)
            ))
        })?
    };
    if wanted.is_empty() {
        return Err(usage(anyhow::anyhow!("--gpus {text}: this host shows no GPU")));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(bad) = wanted.iter().find(|&&n| n >= present || !seen.insert(n)) {
        return Err(usage(anyhow::anyhow!(
            "--gpus: GPU {bad} is named twice or not on this host, which shows {present} GPU(s)"
        )));
    }
    Ok(wanted)
}

pub(crate) fn demo(dir: &Path, device: Option<String>) -> Result<(), Failure> {
    let mut file = ConfigFile::builtin_default();
    let sample = dir.join("sample.mp4");
    let output = dir.join("filtered.mp4");
    let overrides = Overrides {
        input: Some(sample.display().to_string()),
        output: Some(output.display().to_string()),
        device,
        // The demo writes into its own folder: running it again replaces its own result.
        overwrite: true,
        ..Overrides::default()
    };
    overrides.apply(&mut file, None).map_err(config_failure)?;
    let settings = file.validate(None, output_problems).map_err(config_failure)?;
    init_logging(&settings.log);
    if !sample.exists() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        tracing::info!("generating the sample clip {}", sample.display());
        convstream_media::generate_sample(&sample, Default::default()).map_err(anyhow::Error::msg)?;
    }
    run_settings(&settings, true, None, None, Default::default())?;
    print_out(&format!("filtered video written to {}\n", output.display()))
}

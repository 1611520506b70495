//! The Dockerfile: build and CUDA runtime stages, non-root user, entry point, health check,
//! volumes, build steps as scripts CI can check; and .dockerignore.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use super::*;

/// One Dockerfile instruction, continuation lines joined and comment lines dropped.
#[derive(Debug, Clone)]
struct Instruction {
    keyword: String,
    args: String,
}

fn dockerfile_instructions() -> Vec<Instruction> {
    let mut instructions = Vec::new();
    let mut pending = String::new();
    for line in read("Dockerfile").lines() {
        let trimmed = line.trim();
        // Comment and empty lines are dropped even inside a continuation, as Docker does.
        if trimmed.starts_with('#') || trimmed.is_empty() {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                pending.push_str(part);
                pending.push(' ');
            }
            None => {
                pending.push_str(trimmed);
                let (keyword, args) = pending.split_once(char::is_whitespace).unwrap_or((&pending, ""));
                instructions.push(Instruction {
                    keyword: keyword.to_ascii_uppercase(),
                    args: args.trim().to_string(),
                });
                pending.clear();
            }
        }
    }
    assert!(pending.is_empty(), "the Dockerfile ends inside a continuation line");
    instructions
}

/// The Dockerfile's stages: each starts with its FROM instruction.
fn dockerfile_stages() -> Vec<Vec<Instruction>> {
    let mut stages: Vec<Vec<Instruction>> = Vec::new();
    for instruction in dockerfile_instructions() {
        // ARGs before the first FROM only parameterise the FROM lines.
        if stages.is_empty() && instruction.keyword == "ARG" {
            continue;
        }
        if instruction.keyword == "FROM" {
            stages.push(Vec::new());
        }
        let stage = stages.last_mut().expect("the Dockerfile starts with FROM (ARGs aside)");
        stage.push(instruction);
    }
    stages
}

fn runtime_stage() -> Vec<Instruction> {
    dockerfile_stages().pop().expect("the Dockerfile has a stage")
}

/// The defaults of the ARGs declared before the first FROM, which FROM lines may name.
fn dockerfile_global_args() -> Vec<(String, String)> {
    dockerfile_instructions()
        .into_iter()
        .take_while(|i| i.keyword != "FROM")
        .filter(|i| i.keyword == "ARG")
        .filter_map(|i| {
            let (name, default) = i.args.split_once('=')?;
            Some((name.to_string(), default.trim_matches('"').to_string()))
        })
        .collect()
}

/// The image (a global ARG's default where it names one, as a plain build uses) and the stage
/// name of a FROM instruction.
fn from_image(from: &Instruction) -> (String, Option<String>) {
    let words: Vec<&str> = from.args.split_whitespace().filter(|w| !w.starts_with("--")).collect();
    let mut image = words.first().expect("FROM names an image").to_string();
    for (name, default) in dockerfile_global_args() {
        image = image.replace(&format!("${{{name}}}"), &default);
    }
    let name = match words.as_slice() {
        [_, as_word, name] if as_word.eq_ignore_ascii_case("as") => Some(name.to_string()),
        _ => None,
    };
    (image, name)
}

/// The single instruction `keyword` of a stage (the last one counts, as in Docker).
fn last<'a>(stage: &'a [Instruction], keyword: &str) -> &'a Instruction {
    stage
        .iter()
        .rev()
        .find(|i| i.keyword == keyword)
        .unwrap_or_else(|| panic!("the runtime stage has no {keyword}"))
}

fn position(stage: &[Instruction], keyword: &str) -> usize {
    stage
        .iter()
        .rposition(|i| i.keyword == keyword)
        .unwrap_or_else(|| panic!("the runtime stage has no {keyword}"))
}

fn exec_form(instruction: &Instruction) -> Vec<String> {
    serde_json::from_str(&instruction.args).unwrap_or_else(|e| {
        panic!(
            "{} must be in exec (JSON) form, got {:?}: {e}",
            instruction.keyword, instruction.args
        )
    })
}

/// The variables set by the stage's ENV instructions (`K=V K2=V2` and the old `K V` form).
fn env_vars(stage: &[Instruction]) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for env in stage.iter().filter(|i| i.keyword == "ENV") {
        let first = env.args.split_whitespace().next().unwrap_or("");
        if first.contains('=') {
            for pair in env.args.split_whitespace() {
                let (key, value) = pair.split_once('=').expect("ENV K=V pairs");
                vars.push((key.to_string(), value.trim_matches('"').to_string()));
            }
        } else {
            vars.push((first.to_string(), env.args[first.len()..].trim().to_string()));
        }
    }
    vars
}

fn env_var(stage: &[Instruction], key: &str) -> String {
    env_vars(stage)
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("the runtime stage does not set {key}"))
}

fn volumes(stage: &[Instruction]) -> Vec<String> {
    stage
        .iter()
        .filter(|i| i.keyword == "VOLUME")
        .flat_map(|v| {
            if v.args.starts_with('[') {
                exec_form(v)
            } else {
                v.args.split_whitespace().map(str::to_string).collect()
            }
        })
        .collect()
}

/// Sources and destination of a COPY (flags such as --from and --chown left out).
fn copy_paths(copy: &Instruction) -> (Vec<String>, String) {
    let mut words: Vec<String> = copy
        .args
        .split_whitespace()
        .filter(|w| !w.starts_with("--"))
        .map(str::to_string)
        .collect();
    let destination = words.pop().expect("COPY has a destination");
    (words, destination)
}

/// scripts/*.sh named in a RUN instruction.
fn scripts_in(run: &Instruction) -> Vec<String> {
    run.args
        .split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
        .map(|w| w.trim_start_matches("./"))
        .filter(|w| w.starts_with("scripts/") && w.ends_with(".sh"))
        .map(str::to_string)
        .collect()
}

#[test]
fn dockerfile_has_a_build_stage_and_a_cuda_runtime_stage() {
    let stages = dockerfile_stages();
    assert!(
        stages.len() >= 2,
        "the Dockerfile must be multi-stage, it has {} FROM",
        stages.len()
    );

    let (build_image, build_name) = from_image(&stages[0][0]);
    let build_name = build_name.expect("the build stage is named (FROM ... AS build)");
    assert!(
        build_image.starts_with("rust:"),
        "the build stage builds with a Rust image, not {build_image}"
    );

    let runtime = stages.last().expect("checked above");
    let (image, _) = from_image(&runtime[0]);
    let (repository, tag) = image.split_once(':').expect("the runtime image has an explicit tag");
    assert_eq!(
        repository, "nvidia/cuda",
        "the runtime stage must start from NVIDIA's CUDA image"
    );
    assert!(
        tag.contains("-runtime-"),
        "{image}: a CUDA *runtime* image (it has libnvrtc; base does not, devel is huge)"
    );
    // The binary loads libnvrtc.so.13 or .12.
    assert!(
        tag.starts_with("12.") || tag.starts_with("13."),
        "{image}: CUDA 12 or 13 for libnvrtc.so.12/.13"
    );

    // Straight from the build stage, or through a stage that starts from it by default.
    let build_aliases: Vec<String> = stages
        .iter()
        .map(|stage| from_image(&stage[0]))
        .filter_map(|(image, name)| name.filter(|_| image == build_name))
        .chain([build_name.clone()])
        .collect();
    let binary_copied = runtime.iter().any(|i| {
        i.keyword == "COPY"
            && build_aliases
                .iter()
                .any(|alias| i.args.contains(&format!("--from={alias} ")))
            && copy_paths(i).1 == "/usr/local/bin/convstream"
    });
    assert!(
        binary_copied,
        "the runtime stage copies the binary from stage {build_name} to /usr/local/bin/convstream"
    );
}

#[test]
fn dockerfile_runs_serve_as_a_non_root_user() {
    let runtime = runtime_stage();
    let user = &last(&runtime, "USER").args;
    let name = user.split(':').next().unwrap_or("");
    assert!(name != "root" && name != "0" && !name.is_empty(), "USER {user} is root");
    assert_eq!(
        name.parse::<i64>().ok(),
        Some(RUNTIME_UID),
        "USER is the numeric uid 10001 (runAsNonRoot can check it)"
    );
    assert!(
        position(&runtime, "USER") < position(&runtime, "ENTRYPOINT"),
        "USER must come before ENTRYPOINT"
    );

    assert_eq!(exec_form(last(&runtime, "ENTRYPOINT")), ["convstream"]);
    assert_eq!(exec_form(last(&runtime, "CMD")), ["serve", "--config", IMAGE_CONFIG]);
    let config_copied = runtime.iter().any(|i| {
        i.keyword == "COPY" && copy_paths(i) == (vec!["deploy/config.toml".to_string()], IMAGE_CONFIG.to_string())
    });
    assert!(
        config_copied,
        "the runtime stage copies deploy/config.toml to {IMAGE_CONFIG}"
    );
}

#[test]
fn dockerfile_asks_for_the_gpu_driver_capabilities() {
    let runtime = runtime_stage();
    let capabilities = env_var(&runtime, "NVIDIA_DRIVER_CAPABILITIES");
    let capabilities: BTreeSet<&str> = capabilities.split(',').map(str::trim).collect();
    if !capabilities.contains("all") {
        for needed in ["compute", "utility", "video"] {
            assert!(
                capabilities.contains(needed),
                "NVIDIA_DRIVER_CAPABILITIES lacks {needed}: {capabilities:?}"
            );
        }
    }
}

#[test]
fn dockerfile_exposes_the_api_and_checks_its_health() {
    let runtime = runtime_stage();
    let exposed: Vec<&str> = runtime
        .iter()
        .filter(|i| i.keyword == "EXPOSE")
        .flat_map(|i| i.args.split_whitespace())
        .collect();
    assert!(
        exposed.iter().any(|p| p.trim_end_matches("/tcp") == "8686"),
        "EXPOSE 8686 missing: {exposed:?}"
    );

    let healthcheck = &last(&runtime, "HEALTHCHECK").args;
    let command = healthcheck
        .split_once("CMD")
        .map(|(_, c)| c.trim())
        .expect("HEALTHCHECK ... CMD ...");
    assert!(
        command.contains("127.0.0.1:8686/healthz"),
        "the health check asks /healthz on port 8686: {command}"
    );
    // The CUDA runtime image has neither curl nor wget: the stage must install the one it uses.
    for tool in ["curl", "wget"] {
        if command.contains(tool) {
            let installed = runtime.iter().any(|i| {
                i.keyword == "RUN"
                    && i.args
                        .split_once("install")
                        .is_some_and(|(_, rest)| rest.split_whitespace().any(|w| w == tool))
            });
            assert!(
                installed,
                "the health check uses {tool}, which the runtime stage does not install"
            );
        }
    }
}

#[test]
fn dockerfile_keeps_state_in_volumes() {
    let runtime = runtime_stage();
    let volumes = volumes(&runtime);
    let kernel_cache = env_var(&runtime, "CONVSTREAM_KERNEL_CACHE");
    assert!(
        kernel_cache.starts_with('/'),
        "CONVSTREAM_KERNEL_CACHE is an absolute path: {kernel_cache}"
    );
    assert!(
        volumes.iter().any(|v| is_under(&kernel_cache, v)),
        "the kernel cache {kernel_cache} is in no VOLUME: {volumes:?}"
    );
    let config_dir = Path::new(IMAGE_CONFIG)
        .parent()
        .and_then(Path::to_str)
        .expect("an absolute path");
    assert!(
        volumes.iter().any(|v| v == config_dir),
        "the config folder {config_dir} is no VOLUME: {volumes:?}"
    );
    for sink in pipeline_urls(&deployed_config(), "sink")
        .into_iter()
        .filter(|s| s.starts_with('/'))
    {
        assert!(
            volumes.iter().any(|v| is_under(sink, v)),
            "the output {sink} is in no VOLUME: {volumes:?}"
        );
    }
}

#[test]
fn dockerfile_build_steps_are_scripts_that_ci_can_check() {
    let mut checked = 0;
    for stage in dockerfile_stages() {
        for (index, run) in stage.iter().enumerate().filter(|(_, i)| i.keyword == "RUN") {
            for script in scripts_in(run) {
                let path = repo_path(&script);
                let mode = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{script}, run by the Dockerfile: {e}"));
                assert!(
                    std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o111 != 0,
                    "{script} is run by the Dockerfile but is not executable"
                );
                let syntax = Command::new("bash")
                    .arg("-n")
                    .arg(&path)
                    .output()
                    .expect("running bash -n");
                assert!(
                    syntax.status.success(),
                    "bash -n {script}: {}",
                    String::from_utf8_lossy(&syntax.stderr)
                );
                // The script must be in the image before the RUN that calls it.
                let copied_before = stage[..index].iter().any(|i| {
                    i.keyword == "COPY"
                        && copy_paths(i)
                            .0
                            .iter()
                            .any(|s| s == "." || is_under(&script, s.trim_end_matches('/')))
                });
                assert!(
                    copied_before,
                    "{script} is run before any COPY brings it into the stage"
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked > 0,
        "no RUN of the Dockerfile calls a scripts/*.sh: the build steps belong in a script"
    );
}

#[test]
fn dockerignore_leaves_out_build_outputs_but_not_the_sources() {
    let patterns: Vec<String> = read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_start_matches('/').trim_end_matches('/').to_string())
        .collect();
    let ignored = |path: &str| patterns.iter().any(|p| !p.starts_with('!') && is_under(path, p));
    for path in ["target", ".git", "dist"] {
        assert!(ignored(path), ".dockerignore does not leave out {path}/");
    }
    for path in [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "src",
        "crates",
        "kernels",
        "gst",
        "config",
        "tests",
        "scripts",
        "deploy/config.toml",
    ] {
        assert!(
            !ignored(path),
            ".dockerignore leaves out {path}, which the image build needs"
        );
    }
}

//! The deployment files, checked without Docker or a cluster: the Dockerfile's rules (stages,
//! CUDA runtime base, non-root user, entry point, health check, volumes), .dockerignore,
//! docker-compose.yml, the Kubernetes manifests in deploy/k8s/ and the configs they carry.
//! scripts/check-deploy.sh lints the same files with hadolint and kustomize.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

const API_PORT: i64 = 8686;
const IMAGE_CONFIG: &str = "/etc/convstream/config.toml";
const RUNTIME_UID: i64 = 10001;

// ---------------------------------------------------------------------------------------------
// Reading the files
// ---------------------------------------------------------------------------------------------

fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(relative: &str) -> String {
    let path = repo_path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn yaml_documents(relative: &str) -> Vec<Yaml> {
    YamlLoader::load_from_str(&read(relative)).unwrap_or_else(|e| panic!("{relative}: not YAML: {e}"))
}

/// Every YAML document of deploy/k8s/*.yaml, with the file it came from.
fn k8s_documents() -> Vec<(String, Yaml)> {
    let dir = repo_path("deploy/k8s");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| {
            entry
                .expect("listing deploy/k8s")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "deploy/k8s has no .yaml files");
    files
        .into_iter()
        .flat_map(|name| {
            let relative = format!("deploy/k8s/{name}");
            yaml_documents(&relative)
                .into_iter()
                .map(move |doc| (relative.clone(), doc))
        })
        .collect()
}

fn k8s_objects(kind: &str) -> Vec<Yaml> {
    k8s_documents()
        .into_iter()
        .filter(|(_, doc)| str_at(doc, &["kind"]) == Some(kind))
        .map(|(_, doc)| doc)
        .collect()
}

fn the_deployment() -> Yaml {
    let mut deployments = k8s_objects("Deployment");
    assert_eq!(deployments.len(), 1, "deploy/k8s should hold exactly one Deployment");
    deployments.remove(0)
}

/// The convstream container of a pod spec.
fn convstream_container(pod_spec: &Yaml) -> &Yaml {
    let containers = at(pod_spec, &["containers"])
        .as_vec()
        .expect("the pod spec has containers");
    containers
        .iter()
        .find(|c| str_at(c, &["name"]) == Some("convstream"))
        .expect("a container named convstream")
}

// ---------------------------------------------------------------------------------------------
// YAML helpers
// ---------------------------------------------------------------------------------------------

/// The node at `keys` (BadValue when a key is missing: compare, don't unwrap).
fn at<'a>(node: &'a Yaml, keys: &[&str]) -> &'a Yaml {
    keys.iter().fold(node, |node, key| &node[*key])
}

fn str_at<'a>(node: &'a Yaml, keys: &[&str]) -> Option<&'a str> {
    at(node, keys).as_str()
}

fn items<'a>(node: &'a Yaml, keys: &[&str]) -> &'a [Yaml] {
    at(node, keys).as_vec().map(Vec::as_slice).unwrap_or(&[])
}

/// An integer written as `1` or `"1"` (Kubernetes quantities are often quoted).
fn integer(node: &Yaml) -> Option<i64> {
    node.as_i64().or_else(|| node.as_str().and_then(|s| s.parse().ok()))
}

// ---------------------------------------------------------------------------------------------
// The configs (deploy/config.toml and the ConfigMap's)
// ---------------------------------------------------------------------------------------------

/// Parses a serve config and checks what every deployed one needs: the API on all interfaces
/// (probes and published ports cannot reach a loopback address) and at least one pipeline.
fn check_serve_config(text: &str, what: &str) -> toml::Table {
    let config: toml::Table = text.parse().unwrap_or_else(|e| panic!("{what}: not TOML: {e}"));
    assert_eq!(
        toml_str(&config, &["server", "listen"]),
        Some("0.0.0.0:8686"),
        "{what}: [server] listen must be \"0.0.0.0:8686\" for the published port and the probes"
    );
    let pipelines = pipelines(&config);
    assert!(!pipelines.is_empty(), "{what}: no [[pipeline]]");
    for pipeline in pipelines {
        let name = toml_str(pipeline, &["name"]);
        assert!(name.is_some_and(|n| !n.is_empty()), "{what}: a pipeline without a name");
        for part in ["source", "sink"] {
            let url = toml_str(pipeline, &[part, "url"]);
            assert!(
                url.is_some_and(|u| !u.is_empty()),
                "{what}: pipeline {name:?} has no {part}.url"
            );
        }
    }
    config
}

/// The string at `keys` of a TOML table, e.g. `["server", "listen"]`.
fn toml_str<'a>(table: &'a toml::Table, keys: &[&str]) -> Option<&'a str> {
    let (first, rest) = keys.split_first()?;
    rest.iter()
        .try_fold(table.get(*first)?, |value, key| value.get(*key))?
        .as_str()
}

fn pipelines(config: &toml::Table) -> Vec<&toml::Table> {
    config
        .get("pipeline")
        .and_then(|p| p.as_array())
        .map(|a| a.iter().filter_map(|p| p.as_table()).collect())
        .unwrap_or_default()
}

fn pipeline_urls<'a>(config: &'a toml::Table, part: &str) -> Vec<&'a str> {
    pipelines(config)
        .into_iter()
        .filter_map(|p| toml_str(p, &[part, "url"]))
        .collect()
}

/// UDP ports the pipelines listen on (`udp://0.0.0.0:5000` and the like).
fn udp_listen_ports(config: &toml::Table) -> Vec<u16> {
    pipeline_urls(config, "source")
        .into_iter()
        .filter_map(|url| url.strip_prefix("udp://"))
        .filter_map(|rest| rest.split(['?', '/']).next()?.rsplit(':').next()?.parse().ok())
        .collect()
}

fn shutdown_timeout(config: &toml::Table) -> f64 {
    config
        .get("server")
        .and_then(|s| s.get("shutdown_timeout"))
        .and_then(|t| t.as_float().or_else(|| t.as_integer().map(|i| i as f64)))
        .unwrap_or(10.0)
}

fn deployed_config() -> toml::Table {
    check_serve_config(&read("deploy/config.toml"), "deploy/config.toml")
}

fn configmap_config() -> toml::Table {
    let configmaps = k8s_objects("ConfigMap");
    let configmap = configmaps
        .iter()
        .find(|c| str_at(c, &["data", "config.toml"]).is_some())
        .expect("a ConfigMap in deploy/k8s with a config.toml key");
    let text = str_at(configmap, &["data", "config.toml"]).expect("checked above");
    check_serve_config(text, "the ConfigMap's config.toml")
}

/// Whether `path` lies in `dir` (or is it).
fn is_under(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path == dir || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

#[test]
fn deployed_config_is_a_serve_config_writing_to_the_output_volume() {
    let config = deployed_config();
    for sink in pipeline_urls(&config, "sink") {
        if sink.starts_with('/') {
            assert!(
                is_under(sink, "/data/out"),
                "sink {sink} is outside the output volume /data/out"
            );
        }
    }
    assert!(shutdown_timeout(&config) > 0.0);
}

// ---------------------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------------------

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
        "kernels",
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

// ---------------------------------------------------------------------------------------------
// docker-compose.yml
// ---------------------------------------------------------------------------------------------

fn compose_service() -> Yaml {
    let documents = yaml_documents("docker-compose.yml");
    assert_eq!(documents.len(), 1, "docker-compose.yml is one document");
    let services = at(&documents[0], &["services"])
        .as_hash()
        .expect("docker-compose.yml has services");
    assert_eq!(services.len(), 1, "docker-compose.yml runs one service");
    services.values().next().expect("checked above").clone()
}

/// Seconds of a Compose duration such as `30s`, `1m30s` or `1m`.
fn compose_seconds(duration: &str) -> f64 {
    let mut total = 0.0;
    let mut number = String::new();
    let mut chars = duration.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let value: f64 = number.parse().unwrap_or_else(|_| panic!("bad duration {duration:?}"));
        number.clear();
        total += match c {
            'h' => value * 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                value / 1000.0
            }
            'm' => value * 60.0,
            's' => value,
            _ => panic!("bad duration {duration:?}"),
        };
    }
    assert!(number.is_empty(), "duration {duration:?} lacks a unit");
    total
}

#[test]
fn compose_reserves_one_nvidia_gpu() {
    let service = compose_service();
    let devices = items(&service, &["deploy", "resources", "reservations", "devices"]);
    let gpu = devices
        .iter()
        .find(|d| items(d, &["capabilities"]).iter().any(|c| c.as_str() == Some("gpu")))
        .expect("deploy.resources.reservations.devices has an entry with capabilities [gpu]");
    assert_eq!(str_at(gpu, &["driver"]), Some("nvidia"));
    let count = integer(&gpu["count"]);
    assert!(
        count == Some(1) || !items(gpu, &["device_ids"]).is_empty(),
        "reserve one GPU (count: 1) or name it"
    );
}

#[test]
fn compose_mounts_the_config_read_only_and_keeps_outputs() {
    let service = compose_service();
    let mounts = items(&service, &["volumes"]);
    // Long syntax (type/source/target/read_only) or short syntax (SRC:DST:ro).
    let mount = |target: &str| -> Option<(String, bool)> {
        mounts.iter().find_map(|m| match m.as_str() {
            Some(short) => {
                let parts: Vec<&str> = short.split(':').collect();
                (parts.get(1) == Some(&target)).then(|| (parts[0].to_string(), parts.get(2) == Some(&"ro")))
            }
            None => (str_at(m, &["target"]) == Some(target)).then(|| {
                (
                    str_at(m, &["source"]).unwrap_or("").to_string(),
                    m["read_only"].as_bool() == Some(true),
                )
            }),
        })
    };
    let (source, read_only) = mount(IMAGE_CONFIG).expect("the config is mounted at /etc/convstream/config.toml");
    assert!(read_only, "the config mount must be read-only");
    assert!(
        repo_path(&source).is_file(),
        "the mounted config {source} does not exist"
    );
    let mounted = check_serve_config(&read(source.trim_start_matches("./")), &source);

    for sink in pipeline_urls(&mounted, "sink")
        .into_iter()
        .filter(|s| s.starts_with('/'))
    {
        let dir = Path::new(sink)
            .parent()
            .and_then(Path::to_str)
            .expect("an absolute path");
        assert!(
            mount(dir).is_some_and(|(_, ro)| !ro),
            "the output folder {dir} is not a writable volume"
        );
    }
}

#[test]
fn compose_publishes_the_api_on_loopback_only() {
    let service = compose_service();
    let ports: Vec<&str> = items(&service, &["ports"])
        .iter()
        .map(|p| p.as_str().expect("ports in short syntax"))
        .collect();
    let api: Vec<&&str> = ports
        .iter()
        .filter(|p| p.trim_end_matches("/tcp").ends_with(":8686"))
        .collect();
    assert!(!api.is_empty(), "the API port 8686 is not published: {ports:?}");
    for port in api {
        assert!(
            port.starts_with("127.0.0.1:"),
            "the API must be bound to the host's loopback: {port}"
        );
    }
    // Every TCP port: an unauthenticated API must not be reachable from the network.
    for port in ports.iter().filter(|p| !p.ends_with("/udp")) {
        assert!(
            port.starts_with("127.0.0.1:"),
            "TCP port {port} is published on every interface"
        );
    }
    for udp in udp_listen_ports(&deployed_config()) {
        let published = ports.iter().any(|p| p.ends_with(&format!(":{udp}/udp")));
        assert!(
            published,
            "the pipeline listens on UDP {udp}, which compose does not publish: {ports:?}"
        );
    }
}

#[test]
fn compose_stops_gracefully_and_restarts() {
    let service = compose_service();
    let grace = str_at(&service, &["stop_grace_period"]).expect("stop_grace_period is set");
    let timeout = shutdown_timeout(&deployed_config());
    assert!(
        compose_seconds(grace) > timeout,
        "stop_grace_period {grace} must exceed shutdown_timeout {timeout} s"
    );
    let restart = str_at(&service, &["restart"]).expect("a restart policy");
    assert!(
        ["always", "unless-stopped", "on-failure"].contains(&restart),
        "restart: {restart}"
    );

    let environment = &service["environment"];
    let token_passed = match environment.as_vec() {
        Some(list) => list.iter().any(|e| {
            e.as_str()
                .is_some_and(|e| e.split('=').next() == Some("CONVSTREAM_TOKEN"))
        }),
        None => !environment["CONVSTREAM_TOKEN"].is_badvalue(),
    };
    assert!(token_passed, "CONVSTREAM_TOKEN is not passed to the container");
}

#[test]
fn compose_duration_parser() {
    assert_eq!(compose_seconds("30s"), 30.0);
    assert_eq!(compose_seconds("1m30s"), 90.0);
    assert_eq!(compose_seconds("1h"), 3600.0);
    assert_eq!(compose_seconds("500ms"), 0.5);
}

// ---------------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------------

#[test]
fn k8s_configmap_holds_a_serve_config() {
    let config = configmap_config();
    assert!(shutdown_timeout(&config) > 0.0);
}

#[test]
fn k8s_deployment_asks_for_one_gpu_and_bounded_resources() {
    let deployment = the_deployment();
    let container = convstream_container(at(&deployment, &["spec", "template", "spec"]));
    let resources = &container["resources"];
    assert_eq!(
        integer(at(resources, &["limits", "nvidia.com/gpu"])),
        Some(1),
        "limits: nvidia.com/gpu: 1"
    );
    for (kind, key) in [
        ("requests", "cpu"),
        ("requests", "memory"),
        ("limits", "cpu"),
        ("limits", "memory"),
    ] {
        let value = &resources[kind][key];
        assert!(
            value.as_str().is_some() || value.as_i64().is_some(),
            "resources.{kind}.{key} is not set"
        );
    }
}

#[test]
fn k8s_probes_use_healthz_and_readyz() {
    let deployment = the_deployment();
    let container = convstream_container(at(&deployment, &["spec", "template", "spec"]));
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &container[probe]["httpGet"];
        assert_eq!(str_at(get, &["path"]), Some(path), "{probe} path");
        assert_eq!(integer(&get["port"]), Some(API_PORT), "{probe} port");
    }
    let ports = items(container, &["ports"]);
    assert!(
        ports.iter().any(|p| integer(&p["containerPort"]) == Some(API_PORT)),
        "containerPort 8686 missing"
    );
    for udp in udp_listen_ports(&configmap_config()) {
        let declared = ports
            .iter()
            .any(|p| integer(&p["containerPort"]) == Some(i64::from(udp)) && str_at(p, &["protocol"]) == Some("UDP"));
        assert!(
            declared,
            "the pipeline listens on UDP {udp}, which the container does not declare"
        );
    }
}

#[test]
fn k8s_container_is_locked_down() {
    let deployment = the_deployment();
    let container = convstream_container(at(&deployment, &["spec", "template", "spec"]));
    let security = &container["securityContext"];
    assert_eq!(security["runAsNonRoot"].as_bool(), Some(true), "runAsNonRoot");
    assert_eq!(security["runAsUser"].as_i64(), Some(RUNTIME_UID), "runAsUser");
    assert_eq!(
        security["readOnlyRootFilesystem"].as_bool(),
        Some(true),
        "readOnlyRootFilesystem"
    );
    assert_eq!(
        security["allowPrivilegeEscalation"].as_bool(),
        Some(false),
        "allowPrivilegeEscalation"
    );
    let dropped = items(security, &["capabilities", "drop"]);
    assert!(
        dropped.iter().any(|c| c.as_str() == Some("ALL")),
        "capabilities.drop must contain ALL"
    );
}

/// The volume mounts of the container with, for each, whether it is writable.
fn mounts(container: &Yaml) -> Vec<(String, String, bool)> {
    items(container, &["volumeMounts"])
        .iter()
        .map(|m| {
            assert!(
                m["subPath"].is_badvalue(),
                "subPath mounts never see ConfigMap updates: {m:?}"
            );
            (
                str_at(m, &["name"]).expect("a mount has a name").to_string(),
                str_at(m, &["mountPath"]).expect("a mount has a path").to_string(),
                m["readOnly"].as_bool() != Some(true),
            )
        })
        .collect()
}

fn env_value<'a>(container: &'a Yaml, name: &str) -> Option<&'a Yaml> {
    items(container, &["env"])
        .iter()
        .find(|e| str_at(e, &["name"]) == Some(name))
}

#[test]
fn k8s_writable_places_are_volumes() {
    let deployment = the_deployment();
    let pod = at(&deployment, &["spec", "template", "spec"]);
    let container = convstream_container(pod);
    let mounts = mounts(container);
    let volume = |name: &str| {
        items(pod, &["volumes"])
            .iter()
            .find(|v| str_at(v, &["name"]) == Some(name))
            .cloned()
    };
    let writable_mount = |path: &str| {
        mounts
            .iter()
            .find(|(_, dir, writable)| *writable && is_under(path, dir))
    };

    let tmp = writable_mount("/tmp").expect("/tmp is a writable volume (the root file system is read-only)");
    assert!(
        !volume(&tmp.0).expect("a volume for /tmp")["emptyDir"].is_badvalue(),
        "/tmp is an emptyDir"
    );

    let cache = env_value(container, "CONVSTREAM_KERNEL_CACHE").expect("CONVSTREAM_KERNEL_CACHE is set");
    let cache = str_at(cache, &["value"]).expect("CONVSTREAM_KERNEL_CACHE has a value");
    let (cache_volume, _, _) =
        writable_mount(cache).unwrap_or_else(|| panic!("the kernel cache {cache} is not writable"));
    assert!(
        !volume(cache_volume).expect("a volume for the cache")["emptyDir"].is_badvalue(),
        "the cache is an emptyDir"
    );

    for sink in pipeline_urls(&configmap_config(), "sink")
        .into_iter()
        .filter(|s| s.starts_with('/'))
    {
        assert!(
            writable_mount(sink).is_some(),
            "the output {sink} is not on a writable volume"
        );
    }
}

#[test]
fn k8s_config_comes_from_the_configmap_as_a_folder() {
    let deployment = the_deployment();
    let pod = at(&deployment, &["spec", "template", "spec"]);
    let container = convstream_container(pod);
    let (name, _, writable) = mounts(container)
        .into_iter()
        .find(|(_, dir, _)| dir == "/etc/convstream")
        .expect("a volume mounted at /etc/convstream");
    assert!(!writable, "the config folder is mounted readOnly");
    let volume = items(pod, &["volumes"])
        .iter()
        .find(|v| str_at(v, &["name"]) == Some(&name))
        .expect("the config volume");
    let configmap = str_at(volume, &["configMap", "name"]).expect("the config volume is a configMap");
    let exists = k8s_objects("ConfigMap")
        .iter()
        .any(|c| str_at(c, &["metadata", "name"]) == Some(configmap));
    assert!(exists, "ConfigMap {configmap} is not in deploy/k8s");
    let args: Vec<&str> = items(container, &["args"]).iter().filter_map(Yaml::as_str).collect();
    assert!(
        args.is_empty() || args == ["serve", "--config", IMAGE_CONFIG],
        "args: {args:?}"
    );
}

#[test]
fn k8s_shutdown_and_token() {
    let deployment = the_deployment();
    let pod = at(&deployment, &["spec", "template", "spec"]);
    let config = configmap_config();
    let grace = integer(&pod["terminationGracePeriodSeconds"]).expect("terminationGracePeriodSeconds is set");
    assert!(
        grace as f64 > shutdown_timeout(&config),
        "terminationGracePeriodSeconds must exceed shutdown_timeout"
    );
    assert_eq!(
        str_at(&deployment, &["spec", "strategy", "type"]),
        Some("Recreate"),
        "one pod at a time per GPU/volume"
    );

    let container = convstream_container(pod);
    let token = env_value(container, "CONVSTREAM_TOKEN").expect("CONVSTREAM_TOKEN is in the env");
    let secret = at(token, &["valueFrom", "secretKeyRef"]);
    assert!(
        str_at(secret, &["name"]).is_some() && str_at(secret, &["key"]).is_some(),
        "the token comes from a Secret"
    );
    // When the config requires a token, the variable it names must be the one set here.
    if let Some(name) = toml_str(&config, &["server", "token_env"]) {
        assert!(
            env_value(container, name).is_some(),
            "server.token_env names {name}, which the pod does not set"
        );
    }
}

#[test]
fn k8s_service_reaches_the_api() {
    let deployment = the_deployment();
    let pod_labels = at(&deployment, &["spec", "template", "metadata", "labels"]);
    let services = k8s_objects("Service");
    let api = services
        .iter()
        .find(|s| {
            items(s, &["spec", "ports"])
                .iter()
                .any(|p| integer(&p["port"]) == Some(API_PORT))
        })
        .expect("a Service with port 8686");
    assert_eq!(
        str_at(api, &["spec", "type"]).unwrap_or("ClusterIP"),
        "ClusterIP",
        "the API stays inside the cluster"
    );
    let selector = at(api, &["spec", "selector"])
        .as_hash()
        .expect("the Service has a selector");
    assert!(!selector.is_empty(), "an empty selector");
    for (key, value) in selector {
        let key = key.as_str().expect("selector keys are strings");
        assert_eq!(
            &pod_labels[key], value,
            "the Service selects {key}, which the pods do not carry"
        );
    }
}

#[test]
fn k8s_kustomization_lists_every_manifest() {
    let documents = k8s_documents();
    let kustomization = documents
        .iter()
        .find(|(_, d)| str_at(d, &["kind"]) == Some("Kustomization"))
        .map(|(_, d)| d)
        .expect("deploy/k8s/kustomization.yaml");
    let listed: BTreeSet<&str> = items(kustomization, &["resources"])
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    let files: BTreeSet<&str> = documents
        .iter()
        .filter(|(_, d)| str_at(d, &["kind"]) != Some("Kustomization"))
        .map(|(file, _)| file.trim_start_matches("deploy/k8s/"))
        .collect();
    assert_eq!(
        listed, files,
        "kustomization.yaml resources and the manifests in deploy/k8s differ"
    );
}

// ---------------------------------------------------------------------------------------------
// The configs validate as convstream itself validates them; the systemd unit
// ---------------------------------------------------------------------------------------------

/// Validates `text` with convstream's own config checks (every problem listed on failure).
fn assert_valid_convstream_config(text: &str, what: &str) -> convstream::config::Settings {
    let file = convstream::config::ConfigFile::parse(text, what).unwrap_or_else(|e| panic!("{e}"));
    file.validate(None).unwrap_or_else(|e| panic!("{what}: {e}"))
}

#[test]
fn shipped_configs_pass_convstream_validation() {
    let deployed = assert_valid_convstream_config(&read("deploy/config.toml"), "deploy/config.toml");
    assert_eq!(
        deployed.server.listen, "0.0.0.0:8686",
        "a container must listen beyond loopback"
    );
    let configmaps = k8s_objects("ConfigMap");
    let text = configmaps
        .iter()
        .find_map(|c| str_at(c, &["data", "config.toml"]))
        .expect("a ConfigMap with config.toml");
    let from_configmap = assert_valid_convstream_config(text, "the ConfigMap's config.toml");
    assert!(!from_configmap.pipelines.is_empty());
    for example in ["config/default.toml", "config/examples/edge-udp.toml"] {
        assert_valid_convstream_config(&read(example), example);
    }
}

/// `Key=value` lines of one section of a systemd unit.
fn unit_section(unit: &str, section: &str) -> Vec<(String, String)> {
    let header = format!("[{section}]");
    unit.lines()
        .map(str::trim)
        .skip_while(|line| *line != header)
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn systemd_unit_runs_serve_reloads_on_sighup_and_waits_for_the_drain() {
    let unit = read("deploy/convstream.service");
    let service = unit_section(&unit, "Service");
    let value = |key: &str| {
        service
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("[Service] has {key}"))
    };
    assert_eq!(
        value("ExecStart"),
        "/usr/local/bin/convstream serve --config /etc/convstream/config.toml"
    );
    assert_eq!(value("ExecReload"), "/bin/kill -HUP $MAINPID");
    assert_eq!(value("KillSignal"), "SIGTERM");
    assert_ne!(value("User"), "root", "runs as its own user");
    let stop: f64 = value("TimeoutStopSec").parse().expect("TimeoutStopSec in seconds");
    assert!(
        stop > shutdown_timeout(&deployed_config()),
        "systemd waits longer than serve's own shutdown_timeout"
    );
    assert!(
        value("Environment").contains("CONVSTREAM_KERNEL_CACHE="),
        "a writable kernel cache"
    );
    let install = unit_section(&unit, "Install");
    assert!(install.iter().any(|(k, v)| k == "WantedBy" && v == "multi-user.target"));
}

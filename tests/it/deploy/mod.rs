//! The deployment files, checked without Docker or a cluster: the Dockerfile's rules (stages,
//! CUDA runtime base, non-root user, entry point, health check, volumes), .dockerignore,
//! docker-compose.yml, the Kubernetes manifests in deploy/k8s/ and the configs they carry.
//! scripts/check-deploy.sh lints the same files with hadolint and kustomize.
//!
//! One module per target (`dockerfile`, `compose`, `k8s`, `systemd`); here, reading the files
//! and the configs they carry (deploy/config.toml and the ConfigMap's).

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

mod compose;
mod dockerfile;
mod k8s;
mod statefulset;
mod systemd;

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
// The configs validate as convstream itself validates them
// ---------------------------------------------------------------------------------------------

/// Validates `text` with convstream's own config checks (every problem listed on failure).
fn assert_valid_convstream_config(text: &str, what: &str) -> convstream_config::Settings {
    let file = convstream_config::ConfigFile::parse(text, what, convstream_media::output_problems)
        .unwrap_or_else(|e| panic!("{e}"));
    file.validate(None, convstream_media::output_problems)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
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

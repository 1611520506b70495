//! The Kubernetes manifests in deploy/k8s/: the ConfigMap's config, one GPU and bounded
//! resources, probes, a locked-down container, volumes, the Service and the kustomization.

use std::collections::BTreeSet;

use super::*;

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

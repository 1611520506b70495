//! deploy/k8s/statefulset/: one ConfigMap sharded over a StatefulSet. The count the pods are
//! given is the number of replicas, each replica asks for one GPU and avoids the others'
//! nodes, the disruption budget and the headless Service select the pods, and the config is
//! a sharded one that convstream validates and spreads over every replica.

use super::*;

const DIR: &str = "deploy/k8s/statefulset";

fn objects(kind: &str) -> Vec<Yaml> {
    let mut documents = Vec::new();
    for file in ["configmap.yaml", "service.yaml", "statefulset.yaml", "pdb.yaml"] {
        documents.extend(yaml_documents(&format!("{DIR}/{file}")));
    }
    documents
        .into_iter()
        .filter(|doc| str_at(doc, &["kind"]) == Some(kind))
        .collect()
}

fn the(kind: &str) -> Yaml {
    let mut found = objects(kind);
    assert_eq!(found.len(), 1, "{DIR} should hold exactly one {kind}");
    found.remove(0)
}

fn env_value<'a>(container: &'a Yaml, name: &str) -> Option<&'a str> {
    items(container, &["env"])
        .iter()
        .find(|e| str_at(e, &["name"]) == Some(name))
        .and_then(|e| str_at(e, &["value"]))
}

#[test]
fn statefulset_gives_each_replica_the_count_one_gpu_and_a_node_of_its_own() {
    let set = the("StatefulSet");
    let replicas = integer(at(&set, &["spec", "replicas"])).expect("spec.replicas");
    let pod = at(&set, &["spec", "template", "spec"]);
    let container = convstream_container(pod);
    assert_eq!(
        env_value(container, "CONVSTREAM_SHARDS").and_then(|v| v.parse::<i64>().ok()),
        Some(replicas),
        "CONVSTREAM_SHARDS must equal spec.replicas"
    );
    assert_eq!(
        integer(at(container, &["resources", "limits", "nvidia.com/gpu"])),
        Some(1)
    );
    let anti = items(
        pod,
        &[
            "affinity",
            "podAntiAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
    );
    assert!(
        anti.iter()
            .any(|term| str_at(term, &["topologyKey"]) == Some("kubernetes.io/hostname")),
        "replicas must avoid each other's nodes"
    );
    let labels = at(&set, &["spec", "selector", "matchLabels"]);
    for other in [the("PodDisruptionBudget"), the("Service")] {
        let selector = if str_at(&other, &["kind"]) == Some("Service") {
            at(&other, &["spec", "selector"])
        } else {
            at(&other, &["spec", "selector", "matchLabels"])
        };
        assert_eq!(selector, labels, "{:?} selects other pods", str_at(&other, &["kind"]));
    }
    let service = the("Service");
    assert_eq!(
        str_at(&service, &["spec", "clusterIP"]),
        Some("None"),
        "a headless Service"
    );
    assert_eq!(
        str_at(&set, &["spec", "serviceName"]),
        str_at(&service, &["metadata", "name"])
    );
    let annotations = at(&set, &["spec", "template", "metadata", "annotations"]);
    assert_eq!(str_at(annotations, &["prometheus.io/scrape"]), Some("true"));
    assert!(
        !items(&set, &["spec", "volumeClaimTemplates"]).is_empty(),
        "each replica writes to a volume of its own"
    );
}

#[test]
fn statefulset_config_is_sharded_and_every_replica_gets_pipelines() {
    let map = the("ConfigMap");
    let text = str_at(&map, &["data", "config.toml"]).expect("config.toml in the ConfigMap");
    check_serve_config(text, "the StatefulSet's config.toml");
    let settings = assert_valid_convstream_config(text, "the StatefulSet's config.toml");
    assert_eq!(settings.server.shard.as_deref(), Some("auto"));
    let set = the("StatefulSet");
    let replicas = integer(at(&set, &["spec", "replicas"])).expect("spec.replicas") as usize;
    let mut loads = vec![0; replicas];
    for pipeline in &settings.pipelines {
        loads[convstream_server::shard::owner(&pipeline.name, replicas)] += 1;
        let sink = &pipeline.sink.url;
        assert!(
            sink.starts_with("/data/out/"),
            "{}: writes {sink}, not the replica's volume",
            pipeline.name
        );
    }
    assert!(loads.iter().all(|&n| n > 0), "a replica would run nothing: {loads:?}");
}

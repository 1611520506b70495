//! docker-compose.yml: one GPU, the config mounted read-only, outputs kept, the API on
//! loopback, a graceful stop and restarts.

use std::path::Path;

use super::*;

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

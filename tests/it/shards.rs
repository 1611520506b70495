//! One config over several `serve` replicas: `--shard INDEX/COUNT` and `shard = "auto"` run
//! only the pipelines rendezvous hashing gives the replica, requests about another shard's
//! pipeline get 421 naming the owner, `/pipelines` and `/metrics` say which shard this is,
//! a reload keeps to the shard, and `check --shards N` prints the assignment. CPU engine.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::server::Server;
use common::{convstream, make_clip, Clip};
use convstream_server::shard::owner;
use convstream_testkit::tempdir;

const NAMES: [&str; 9] = [
    "lobby",
    "dock-east",
    "dock-west",
    "gate",
    "parking",
    "roof",
    "hall",
    "yard",
    "stairs",
];

/// A config of `names`, each looping the clip at its frame rate into `null`.
fn config(server: &str, names: &[&str]) -> String {
    let mut text = format!("[server]\nallow_paths = [\".\"]\nshutdown_timeout = 5.0\n{server}\n");
    for name in names {
        text.push_str(&format!(
            "[[pipeline]]\nname = \"{name}\"\n[pipeline.source]\nurl = \"clip.y4m\"\nloop = true\nrealtime = true\n\
             [pipeline.filter]\nmask = \"box:size=3\"\ndevice = \"cpu\"\n[pipeline.sink]\nurl = \"null\"\n\n"
        ));
    }
    text
}

fn owned(names: &[&str], index: usize, count: usize) -> BTreeSet<String> {
    names
        .iter()
        .filter(|name| owner(name, count) == index)
        .map(|name| name.to_string())
        .collect()
}

fn running(server: &Server) -> BTreeSet<String> {
    server.names().into_iter().collect()
}

#[test]
fn a_replica_runs_only_its_shard_and_sends_requests_for_others_to_their_owner() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    std::fs::write(dir.path().join("config.toml"), config("", &NAMES)).unwrap();
    let server = Server::start_with(dir.path(), &["--shard", "1/3"], &[("HOSTNAME", "convstream-1")]);
    let mine = owned(&NAMES, 1, 3);
    assert!(!mine.is_empty() && mine.len() < NAMES.len(), "{mine:?}");
    assert_eq!(running(&server), mine);

    let listing = server.get("/pipelines");
    let shard = &listing["shard"];
    assert_eq!(
        (shard["index"].as_u64(), shard["count"].as_u64()),
        (Some(1), Some(3)),
        "{listing}"
    );
    assert_eq!(shard["pod"], "convstream-1", "{listing}");
    assert_eq!(shard["configured_pipelines"], 9, "{listing}");
    let runs: BTreeSet<String> = shard["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert_eq!(runs, mine);
    let log = server.log_text();
    assert!(
        log.contains(&format!(
            "shard 1 of 3 (pod convstream-1) runs {} of the config's 9 pipelines",
            mine.len()
        )),
        "{log}"
    );

    // Every request about another shard's pipeline: 421, naming the owner.
    let other = NAMES.iter().find(|name| owner(name, 3) != 1).unwrap();
    let index = owner(other, 3);
    let expected = format!("belongs to shard {index} of 3 (pod convstream-{index})");
    for (method, path, body) in [
        ("GET", format!("/pipelines/{other}"), None),
        ("DELETE", format!("/pipelines/{other}"), None),
        (
            "PUT",
            format!("/pipelines/{other}/filter"),
            Some(r#"{"mask":"sharpen"}"#),
        ),
    ] {
        let (status, answer) = match body {
            Some(body) => server.json(method, &path, body),
            None => server.request(method, &path, None),
        };
        assert_eq!(status, 421, "{method} {path}: {answer}");
        assert!(answer.contains(&expected), "{method} {path}: {answer}");
        let json: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(json["owner"]["index"].as_u64(), Some(index as u64), "{answer}");
        assert_eq!(json["owner"]["pod"], format!("convstream-{index}"), "{answer}");
    }
    let (_, mine_answer) = server.request("GET", &format!("/pipelines/{}", mine.first().unwrap()), None);
    assert!(mine_answer.contains("\"state\""), "{mine_answer}");

    // A new pipeline goes to the shard its name hashes to.
    let new_names: Vec<String> = (0..40).map(|i| format!("api-cam-{i}")).collect();
    let here = new_names.iter().find(|n| owner(n, 3) == 1).unwrap();
    let elsewhere = new_names.iter().find(|n| owner(n, 3) == 2).unwrap();
    let body = |name: &str| {
        format!(
            r#"{{"name":"{name}","source":{{"url":"clip.y4m","loop":true,"realtime":true}},"filter":{{"mask":"box:size=3","device":"cpu"}},"sink":{{"url":"null"}}}}"#
        )
    };
    let (status, answer) = server.json("POST", "/pipelines", &body(elsewhere));
    assert_eq!(status, 421, "{answer}");
    assert!(
        answer.contains("belongs to shard 2 of 3 (pod convstream-2)"),
        "{answer}"
    );
    let (status, answer) = server.json("POST", "/pipelines", &body(here));
    assert_eq!(status, 201, "{answer}");
    // A body that is no pipeline still gets the handler's 400, not a 421.
    let (status, answer) = server.json("POST", "/pipelines", "{not json");
    assert_eq!(status, 400, "{answer}");

    // Every series carries the shard; the info gauge names it.
    let scrape = server.scrape();
    assert!(scrape.samples.iter().all(|s| s.labels.get("shard") == Some("1/3")));
    let info = scrape
        .samples
        .iter()
        .find(|s| s.metric == "convstream_shard_info")
        .expect("convstream_shard_info");
    assert_eq!(info.labels.get("index"), Some("1"));
    assert_eq!(info.labels.get("count"), Some("3"));
    assert_eq!(info.labels.get("pod"), Some("convstream-1"));
    let pipelines = scrape
        .samples
        .iter()
        .find(|s| s.metric == "convstream_shard_pipelines")
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        });
    assert_eq!(pipelines, Some(mine.len() as f64));
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn auto_takes_the_index_from_the_hostname_and_a_reload_keeps_to_the_shard() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 25);
    let first = &NAMES[..6];
    std::fs::write(dir.path().join("config.toml"), config("shard = \"auto\"", first)).unwrap();
    let env = [("HOSTNAME", "cams-2"), ("CONVSTREAM_SHARDS", "3")];
    let server = Server::start_with(dir.path(), &[], &env);
    assert_eq!(running(&server), owned(first, 2, 3));
    assert_eq!(server.get("/pipelines")["shard"]["pod"], "cams-2");

    // Every name added: shard 2 starts its own and no other.
    let temporary = dir.path().join("config.toml.new");
    std::fs::write(&temporary, config("shard = \"auto\"", &NAMES)).unwrap();
    std::fs::rename(&temporary, dir.path().join("config.toml")).unwrap();
    let wanted = owned(&NAMES, 2, 3);
    server.wait_for(
        "the reload to start shard 2's new pipelines",
        Duration::from_secs(20),
        || running(&server) == wanted,
    );
    server.terminate();
}

#[test]
fn a_shard_that_cannot_be_placed_is_refused_with_every_problem() {
    let dir = tempdir();
    std::fs::write(dir.path().join("config.toml"), config("shard = \"auto\"", &NAMES)).unwrap();
    let output = convstream()
        .args(["serve", "--config", "config.toml", "--listen", "127.0.0.1:0"])
        .env("HOSTNAME", "worker")
        .env_remove("CONVSTREAM_SHARDS")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs the number of shards"), "{stderr}");
    assert!(stderr.contains("`worker` does not end in `-N`"), "{stderr}");

    let output = convstream()
        .args([
            "serve",
            "--config",
            "config.toml",
            "--listen",
            "127.0.0.1:0",
            "--shard",
            "3/3",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("server.shard: the index 3 is not below the count 3"),
        "{stderr}"
    );
}

#[test]
fn check_prints_which_shard_runs_each_pipeline() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 2);
    std::fs::write(dir.path().join("config.toml"), config("", &NAMES)).unwrap();
    let run = common::run_in(dir.path(), &["check", "--config", "config.toml", "--shards", "3"]).success();
    let text = run.stdout_text();
    assert!(text.contains("assignment over 3 shard(s)"), "{text}");
    for index in 0..3 {
        let names: Vec<&str> = NAMES.iter().copied().filter(|n| owner(n, 3) == index).collect();
        let line = format!("  shard {index}/3: {} pipeline(s): {}", names.len(), names.join(", "));
        assert!(text.contains(&line), "no line {line:?} in:\n{text}");
    }
    check_refuses(dir.path());
}

fn check_refuses(dir: &Path) {
    let run = common::run_in(dir, &["check", "--config", "config.toml", "--shards", "0"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}

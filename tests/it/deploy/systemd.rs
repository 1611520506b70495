//! deploy/convstream.service: runs serve, reloads on SIGHUP, waits for the drain.

use super::*;

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

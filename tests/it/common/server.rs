//! A running `convstream serve` on a free loopback port, driven over HTTP: the harness of
//! the `serve` and `api_safety` tests. Requests go through `ureq` ([`Server::request`]) or
//! are written by hand over TCP ([`Server::send`]), so every header can be the test's own.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::convstream;

pub fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `convstream serve`; killed if a test fails before stopping it.
pub struct Server {
    pub child: Option<Child>,
    pub port: u16,
    pub log: PathBuf,
    pub agent: ureq::Agent,
    pub token: Option<String>,
}

impl Server {
    /// Starts `serve --config config.toml` in `dir` on a free port. `env` is added to its
    /// environment.
    pub fn start(dir: &Path, env: &[(&str, &str)]) -> Server {
        Server::start_with(dir, &[], env)
    }

    /// [`Server::start`] with more arguments to `serve`.
    pub fn start_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let port = free_tcp_port();
        let log = dir.join("serve.log");
        let child = convstream()
            .args([
                "serve",
                "--config",
                "config.toml",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("convstream starts");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let server = Server {
            child: Some(child),
            port,
            log,
            agent,
            token: None,
        };
        server.wait_for("the API to answer", Duration::from_secs(20), || {
            server.request("GET", "/healthz", None).0 == 200
        });
        server
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sends a request with the server's token (if set); returns status and body.
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        self.request_with(method, path, body, self.token.as_deref())
    }

    pub fn request_with(&self, method: &str, path: &str, body: Option<&str>, token: Option<&str>) -> (u16, String) {
        let url = self.url(path);
        let auth = token.map(|t| format!("Bearer {t}"));
        let result = match (method, body) {
            ("GET", _) => {
                let mut request = self.agent.get(&url);
                if let Some(auth) = &auth {
                    request = request.header("Authorization", auth);
                }
                request.call()
            }
            ("DELETE", _) => {
                let mut request = self.agent.delete(&url);
                if let Some(auth) = &auth {
                    request = request.header("Authorization", auth);
                }
                request.call()
            }
            (method, body) => {
                let mut request = match method {
                    "POST" => self.agent.post(&url),
                    "PUT" => self.agent.put(&url),
                    other => panic!("method {other} is not used here"),
                };
                if let Some(auth) = &auth {
                    request = request.header("Authorization", auth);
                }
                request
                    .header("Content-Type", "application/json")
                    .send(body.unwrap_or(""))
            }
        };
        match result {
            Ok(mut response) => {
                let status = response.status().as_u16();
                let text = response.body_mut().read_to_string().unwrap_or_default();
                (status, text)
            }
            Err(_) => (0, String::new()), // not listening (yet, or any more)
        }
    }

    /// One request, written as given: `headers` are sent as they are (a `Host` among them
    /// replaces the default one); the token, when set, is added unless an Authorization is
    /// given. Returns the status (0 when nothing answered) and the body.
    pub fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, String) {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.host()));
        }
        if let (Some(token), false) = (
            &self.token,
            headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")),
        ) {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        for (key, value) in headers {
            head.push_str(&format!("{key}: {value}\r\n"));
        }
        let body = body.unwrap_or("");
        if !body.is_empty() || matches!(method, "POST" | "PUT") {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        if stream.write_all(head.as_bytes()).is_err() || stream.write_all(body.as_bytes()).is_err() {
            return (0, String::new());
        }
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    /// A JSON request written by hand, as a well-behaved client sends it.
    pub fn json(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        self.send(method, path, &[("Content-Type", "application/json")], Some(body))
    }

    /// GET `path`, which must answer 200 with JSON.
    pub fn get(&self, path: &str) -> Value {
        let (status, body) = self.request("GET", path, None);
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path} is not JSON ({e}): {body}"))
    }

    pub fn pipeline(&self, name: &str) -> Value {
        self.get(&format!("/pipelines/{name}"))
    }

    /// The names of the pipelines, in the API's order.
    pub fn names(&self) -> Vec<String> {
        self.get("/pipelines")["pipelines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn counter(&self, name: &str, counter: &str) -> u64 {
        self.pipeline(name)["counters"][counter].as_u64().unwrap()
    }

    /// The value of `metric` for `pipeline` in a fresh scrape of /metrics.
    pub fn metric(&self, metric: &str, pipeline: &str) -> Option<f64> {
        let scrape = self.scrape();
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && s.labels.get("pipeline") == Some(pipeline))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    }

    pub fn scrape(&self) -> prometheus_parse::Scrape {
        let (status, body) = self.request("GET", "/metrics", None);
        assert_eq!(status, 200, "GET /metrics: {body}");
        let lines = body.lines().map(|l| Ok(l.to_string()));
        prometheus_parse::Scrape::parse(lines).expect("/metrics is Prometheus text")
    }

    pub fn wait_for(&self, what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
        let started = Instant::now();
        while !done() {
            if started.elapsed() > limit {
                panic!("timed out waiting for {what}; server log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// The process's threads, by name (from /proc/PID/task).
    pub fn threads(&self) -> Vec<String> {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.pid())).expect("the process is alive");
        tasks
            .filter_map(|t| t.ok())
            .map(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
            .collect()
    }

    pub fn signal(&self, signal: &str) {
        let pid = self.pid().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Sends SIGTERM and waits for the exit; returns the exit code and the whole log, which
    /// must hold no panic.
    pub fn terminate(self) -> (Option<i32>, String) {
        let (code, log) = self.terminate_within(Duration::from_secs(30));
        assert!(!log.contains("panicked"), "serve panicked:\n{log}");
        (code, log)
    }

    /// Sends SIGTERM and waits (at most `limit`); returns the exit code and the log, which
    /// may hold panics (tests that inject them look for them).
    pub fn terminate_within(mut self, limit: Duration) -> (Option<i32>, String) {
        self.signal("-TERM");
        let mut child = self.child.take().unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve did not stop within {limit:?} of SIGTERM:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        (status.code(), self.log_text())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

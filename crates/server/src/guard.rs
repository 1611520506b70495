//! What a request must carry before any handler sees it, so that a web page the operator
//! visits cannot drive the API: a `Host` that is this server (no DNS rebinding), no
//! `Origin` but those allowed (no cross-site requests), and a JSON content type on every
//! request with a body (no form or text/plain posts, which browsers send without asking),
//! nothing another site's page sends without an `Origin` (`Sec-Fetch-Site`, `Referer`), and
//! `Cross-Origin-Resource-Policy: same-origin` on every answer.
//! Refusals are logged at a limited rate, so a flood cannot fill the disk.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use convstream_config::ServerConfig;
use convstream_core::quoted;

/// Refusals logged per window; the rest are counted and summed up in the next line.
const LOGGED_PER_WINDOW: u32 = 5;
const LOG_WINDOW: Duration = Duration::from_secs(10);

/// Lets a few log lines through per window and counts the others.
#[derive(Debug)]
pub struct LogLimiter {
    window: Mutex<(Instant, u32, u64)>,
}

impl Default for LogLimiter {
    fn default() -> Self {
        LogLimiter {
            window: Mutex::new((Instant::now(), 0, 0)),
        }
    }
}

impl LogLimiter {
    /// Whether to log this event; when a new window opens after events were held back,
    /// also how many were.
    pub fn admit(&self) -> (bool, u64) {
        let mut window = self.window.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (started, logged, held_back) = &mut *window;
        let mut reported = 0;
        if started.elapsed() >= LOG_WINDOW {
            reported = std::mem::take(held_back);
            *started = Instant::now();
            *logged = 0;
        }
        if *logged < LOGGED_PER_WINDOW {
            *logged += 1;
            (true, reported)
        } else {
            *held_back += 1;
            (false, reported)
        }
    }
}

/// The `Host` and `Origin` values a request may carry.
#[derive(Debug)]
pub struct RequestGuard {
    listen: SocketAddr,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    /// Whether the console is served at `/`: its own page's requests (Origin is this very
    /// server, by a Host already found to be this server) are then served too.
    pub console: bool,
    pub refusals: LogLimiter,
}

impl RequestGuard {
    pub fn new(listen: SocketAddr, server: &ServerConfig) -> RequestGuard {
        RequestGuard {
            listen,
            allowed_hosts: server.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
            allowed_origins: server
                .allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            console: server.console.unwrap_or(listen.ip().is_loopback()),
            refusals: LogLimiter::default(),
        }
    }

    /// Whether a `Host` value names this server: the listen address, a localhost form of it,
    /// any IP literal with its port when listening on every address (an IP cannot be
    /// rebound to another site), or an `allowed_hosts` entry (`name` for any port, or
    /// `name:port`).
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if self.allowed_hosts.contains(&host) {
            return true;
        }
        let (name, port) = split_host(&host);
        if self.allowed_hosts.iter().any(|allowed| allowed == name) {
            return true;
        }
        if port.unwrap_or(80) != self.listen.port() {
            return false;
        }
        if name == "localhost" {
            return true;
        }
        match name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => ip == self.listen.ip() || ip.is_loopback() || self.listen.ip().is_unspecified(),
            Err(_) => false,
        }
    }

    pub fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        self.allowed_origins.contains(&origin)
    }

    /// Whether `origin` is the console's own page: this server, by the `host` the request
    /// was sent to (which [`RequestGuard::host_allowed`] has let through).
    pub fn is_console_origin(&self, origin: &str, host: &str) -> bool {
        self.console && origin.eq_ignore_ascii_case(&format!("http://{host}"))
    }
}

/// `name` and port of a Host value (`[::1]:8686`, `localhost`, `10.0.0.1:80`).
fn split_host(host: &str) -> (&str, Option<u16>) {
    let split_at = if host.starts_with('[') {
        host.find("]:").map(|i| i + 1)
    } else {
        host.rfind(':').filter(|_| host.matches(':').count() == 1)
    };
    match split_at {
        Some(i) => match host[i + 1..].parse() {
            Ok(port) => (&host[..i], Some(port)),
            Err(_) => (host, None),
        },
        None => (host, None),
    }
}

fn refuse(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// Logs a refused request, at a limited rate. User values are quoted, escaped and cut.
pub fn log_refusal(guard: &RequestGuard, what: std::fmt::Arguments<'_>) {
    let (log, held_back) = guard.refusals.admit();
    if held_back > 0 {
        tracing::warn!("{held_back} more refused requests were not logged");
    }
    if log {
        tracing::warn!("{what}");
    }
}

/// Whether the request carries a body (or says it will). A POST, PUT or PATCH with neither
/// a length above 0, a chunked body nor a media type has none (`curl -X POST`, a client's
/// bare POST to `/stop`, one that sends an empty `Content-Type:`); one that names a type has
/// one, even an empty one, as every form a page posts does, so the JSON check still stands
/// in front of it.
fn has_body(method: &Method, headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().parse::<u64>());
    let typed = matches!(*method, Method::POST | Method::PUT | Method::PATCH) && names_a_type(headers);
    // A length that is no number says a body is there all the same.
    typed || length.is_some_and(|n| n.map_or(true, |n| n > 0)) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// Whether a `Content-Type` names anything: an empty or blank one (some clients send the
/// header on every request) says nothing of a body.
fn names_a_type(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONTENT_TYPE)
        .iter()
        .any(|value| !value.as_bytes().trim_ascii().is_empty())
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case("application/json"))
}

/// Refuses requests from elsewhere (Host, Origin, another site's page) and bodies that are
/// not JSON, before any handler runs (so a refused snapshot spends no budget). Every answer,
/// refusals too, carries `Cross-Origin-Resource-Policy: same-origin`: no other site's page
/// may even embed one, so an `<img>` of a snapshot tells that page nothing (not whether it
/// loaded, nor its size).
pub async fn check_request(State(guard): State<Arc<RequestGuard>>, request: Request, next: Next) -> Response {
    let mut response = match refusal(&guard, &request) {
        Some(refused) => refused,
        None => next.run(request).await,
    };
    response.headers_mut().insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// Why `request` is refused, as its answer; `None` when it may go on. `/healthz` answers any
/// Host and any page, for probes that call it by a name the server does not know.
fn refusal(guard: &RequestGuard, request: &Request) -> Option<Response> {
    let headers = request.headers();
    let path = request.uri().path();
    if path != "/healthz" {
        let host = headers
            .get(header::HOST)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let Some(host) = host.filter(|h| guard.host_allowed(h)) else {
            let shown = headers
                .get(header::HOST)
                .map_or("(none)".to_string(), |h| quoted(&String::from_utf8_lossy(h.as_bytes())));
            log_refusal(
                guard,
                format_args!(
                    "refused {} {}: Host `{shown}` is not this server",
                    request.method(),
                    quoted(path)
                ),
            );
            return Some(refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "the Host header `{shown}` does not name this server; use {} or localhost:{}, or add it to [server] allowed_hosts",
                    guard.listen,
                    guard.listen.port()
                ),
            ));
        };
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            if !guard.origin_allowed(&origin) && !guard.is_console_origin(&origin, &host) {
                let shown = quoted(&origin);
                log_refusal(
                    guard,
                    format_args!(
                        "refused {} {}: Origin `{shown}` is not allowed",
                        request.method(),
                        quoted(path)
                    ),
                );
                return Some(refuse(
                    StatusCode::FORBIDDEN,
                    format!("requests from web pages at `{shown}` are not allowed; add the origin to [server] allowed_origins to allow them"),
                ));
            }
        } else if let Some(site) = another_sites_page(guard, headers, &host) {
            log_refusal(
                guard,
                format_args!(
                    "refused {} {}: sent by another site's page ({site})",
                    request.method(),
                    quoted(path)
                ),
            );
            return Some(refuse(
                StatusCode::FORBIDDEN,
                format!("requests from another site's page are not allowed ({site}); add its origin to [server] allowed_origins to allow them"),
            ));
        }
    }
    if has_body(request.method(), headers) && !is_json(headers) {
        return Some(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a request with a body must be JSON: send `Content-Type: application/json`".into(),
        ));
    }
    None
}

/// What shows that a request without an `Origin` (an `<img>`, a link, a plain GET) was sent
/// by another site's page: the browser's `Sec-Fetch-Site` saying `cross-site` or
/// `same-site` (another port of this host is another origin), or a `Referer` that is
/// neither this server (by the `host` it was sent to) nor an allowed origin.
fn another_sites_page(guard: &RequestGuard, headers: &HeaderMap, host: &str) -> Option<String> {
    let text = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    if let Some(site) = text("sec-fetch-site") {
        let site = site.trim().to_ascii_lowercase();
        if site == "cross-site" || site == "same-site" {
            return Some(format!("Sec-Fetch-Site `{}`", quoted(&site)));
        }
    }
    let referer = text(header::REFERER.as_str())?;
    let origin = origin_of_url(&referer);
    let own = ["http", "https"]
        .iter()
        .any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")));
    (!own && !guard.origin_allowed(&origin)).then(|| format!("Referer `{}`", quoted(&origin)))
}

/// `scheme://authority` of a URL (what an `Origin` header would say), the whole text when
/// it has no `://`.
fn origin_of_url(url: &str) -> String {
    match url.find("://") {
        Some(at) => {
            let rest = &url[at + 3..];
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            format!("{}://{}", &url[..at], &rest[..end])
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(listen: &str, hosts: &[&str], origins: &[&str]) -> RequestGuard {
        let server = ServerConfig {
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            ..ServerConfig::default()
        };
        RequestGuard::new(listen.parse().unwrap(), &server)
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    #[test]
    fn an_empty_content_type_is_no_body_and_a_named_one_or_a_length_is() {
        let bare = [
            headers(&[]),
            headers(&[(header::CONTENT_TYPE, "")]),
            headers(&[(header::CONTENT_TYPE, "  ")]),
            headers(&[(header::CONTENT_TYPE, ""), (header::CONTENT_LENGTH, "0")]),
        ];
        for sent in &bare {
            assert!(!has_body(&Method::POST, sent), "{sent:?}");
        }
        let with_body = [
            // An empty form names its type: the JSON check stands in front of it.
            headers(&[(header::CONTENT_TYPE, "application/x-www-form-urlencoded")]),
            headers(&[(header::CONTENT_TYPE, ""), (header::CONTENT_LENGTH, "2")]),
            headers(&[(header::CONTENT_TYPE, ""), (header::TRANSFER_ENCODING, "chunked")]),
            headers(&[(header::CONTENT_LENGTH, "many")]),
        ];
        for sent in &with_body {
            assert!(has_body(&Method::POST, sent), "{sent:?}");
            assert!(!is_json(sent), "{sent:?}");
        }
    }

    #[test]
    fn hosts_are_the_listen_address_its_localhost_forms_or_allowed_ones() {
        let g = guard("127.0.0.1:8686", &["video.example", "proxy.example:443"], &[]);
        for ok in [
            "127.0.0.1:8686",
            "localhost:8686",
            "LOCALHOST:8686",
            "[::1]:8686",
            "video.example",
            "video.example:9",
            "proxy.example:443",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for refused in [
            "evil.example:8686",
            "localhost:8687",
            "127.0.0.1",
            "10.0.0.1:8686",
            "proxy.example:8686",
            "",
            "127.0.0.1:8686:1",
        ] {
            assert!(!g.host_allowed(refused), "{refused}");
        }
        let any = guard("0.0.0.0:8686", &[], &[]);
        assert!(any.host_allowed("10.1.2.3:8686"));
        assert!(any.host_allowed("[fe80::1]:8686"));
        assert!(!any.host_allowed("rebound.example:8686"));
    }

    #[test]
    fn origins_must_be_listed() {
        let g = guard("127.0.0.1:8686", &[], &["http://localhost:3000/"]);
        assert!(g.origin_allowed("http://localhost:3000"));
        assert!(g.origin_allowed("HTTP://LOCALHOST:3000"));
        assert!(!g.origin_allowed("http://evil.example"));
        assert!(!g.origin_allowed("null"));
    }

    #[test]
    fn the_consoles_own_origin_is_served_only_with_the_console() {
        let g = guard("127.0.0.1:8686", &[], &[]);
        assert!(g.console, "on by default on loopback");
        assert!(g.is_console_origin("http://127.0.0.1:8686", "127.0.0.1:8686"));
        assert!(!g.is_console_origin("http://evil.example", "127.0.0.1:8686"));
        assert!(!g.is_console_origin("https://127.0.0.1:8686", "127.0.0.1:8686"));
        assert!(!g.is_console_origin("http://127.0.0.1:8686.evil.example", "127.0.0.1:8686"));
        let elsewhere = guard("0.0.0.0:8686", &[], &[]);
        assert!(!elsewhere.console, "off by default beyond loopback");
        assert!(!elsewhere.is_console_origin("http://10.0.0.1:8686", "10.0.0.1:8686"));
    }

    #[test]
    fn pages_of_other_sites_are_known_by_their_fetch_site_or_referer() {
        let g = guard("127.0.0.1:8686", &[], &["http://localhost:3000"]);
        let host = "127.0.0.1:8686";
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_static(value));
            }
            another_sites_page(&g, &headers, host)
        };
        for foreign in [
            &[("sec-fetch-site", "cross-site")][..],
            &[("sec-fetch-site", "same-site")],
            &[("referer", "http://evil.example/page.html")],
            &[("referer", "http://127.0.0.1:9999/")],
            &[("referer", "http://127.0.0.1:8686.evil.example/")],
        ] {
            assert!(with(foreign).is_some(), "{foreign:?}");
        }
        for own in [
            &[][..],
            &[("sec-fetch-site", "same-origin")],
            &[("sec-fetch-site", "none")],
            &[("referer", "http://127.0.0.1:8686/")],
            &[("referer", "http://localhost:3000/dashboard?x=1")],
        ] {
            assert!(with(own).is_none(), "{own:?}");
        }
    }

    #[test]
    fn a_flood_of_refusals_logs_a_few_lines() {
        let limiter = LogLimiter::default();
        let logged = (0..1000).filter(|_| limiter.admit().0).count();
        assert_eq!(logged, LOGGED_PER_WINDOW as usize);
    }
}

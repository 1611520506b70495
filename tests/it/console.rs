//! The operator console and the snapshot endpoint against a real `convstream serve` on
//! the CPU engine: snapshots in both formats, at the width and stage asked for, refused
//! without the token, beyond the rate limit and for unknown pipelines, never outliving a
//! DELETE; the console's page served with a strict Content-Security-Policy and its own
//! Origin served only while it is on; and the console driven in headless Chromium
//! (`tests/console/drive_console.py`, selenium with Debian's chromium and chromium-driver,
//! which scripts/install-deps.sh installs), with its screenshots kept under target/.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::server::Server;
use crate::common::{ffmpeg, make_clip, Clip};
use convstream_testkit::tempdir;

const TOKEN: &str = "console-test-token";

/// A markup-laden name that a page building HTML from data would run.
const INJECTED_INPUT: &str = "<img src=x onerror=window.injected=1>.y4m";
const INJECTED_MASK: &str = "<img src=x onerror=document.title=1>";

fn write_config(dir: &Path, text: &str) {
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// `serve` with a token and `pipelines` (TOML), once `first` has written `frames` frames.
fn server_with(dir: &Path, server: &str, pipelines: &str, first: &str) -> Server {
    write_config(
        dir,
        &format!("[server]\ntoken_env = \"CONSOLE_TOKEN\"\n{server}\n{pipelines}"),
    );
    let mut server = Server::start(dir, &[("CONSOLE_TOKEN", TOKEN)]);
    server.token = Some(TOKEN.to_string());
    server.wait_for("frames to flow", Duration::from_secs(30), || {
        server.counter(first, "frames_written") >= 10
    });
    server
}

fn looping_pipeline(name: &str, input: &str, mask: &str) -> String {
    format!(
        "[[pipeline]]\nname = \"{name}\"\nsource = {{ url = '{input}', loop = true, realtime = true }}\n\
         filter = {{ mask = '{mask}', device = \"cpu\" }}\nsink = {{ url = \"null\" }}\n"
    )
}

/// A GET with `headers`; returns the status, the headers asked for, and the body's bytes.
fn get(server: &Server, path: &str, headers: &[(&str, &str)], wanted: &[&str]) -> (u16, Vec<Option<String>>, Vec<u8>) {
    let mut request = server.agent.get(server.url(path));
    for (key, value) in headers {
        request = request.header(*key, *value);
    }
    let mut response = request.call().expect("the server answers");
    let found = wanted
        .iter()
        .map(|h| {
            response
                .headers()
                .get(*h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .collect();
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_vec().unwrap_or_default();
    (status, found, body)
}

fn authorized() -> (&'static str, String) {
    ("Authorization", format!("Bearer {TOKEN}"))
}

fn snapshot(server: &Server, query: &str) -> (u16, Vec<Option<String>>, Vec<u8>) {
    let (key, value) = authorized();
    let wanted = ["content-type", "x-frame-index", "x-frame-stage", "retry-after"];
    get(
        server,
        &format!("/pipelines/cam/snapshot{query}"),
        &[(key, &value)],
        &wanted,
    )
}

/// The width and height in a PNG's header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

#[test]
fn snapshots_come_as_jpeg_or_png_of_the_stage_and_width_asked_for_and_only_with_the_token() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 160, 96, 50);
    let server = server_with(dir.path(), "", &looping_pipeline("cam", "clip.y4m", "box"), "cam");

    let (status, headers, body) = snapshot(&server, "");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers[0].as_deref(), Some("image/jpeg"));
    assert_eq!(&body[..2], b"\xFF\xD8", "a JPEG");
    let index: u64 = headers[1].as_deref().unwrap().parse().unwrap();
    assert!(index >= 10, "a frame of the running pipeline: {index}");
    assert_eq!(headers[2].as_deref(), Some("output"));

    let (status, headers, body) = snapshot(&server, "?stage=input&format=png&width=80");
    assert_eq!(status, 200);
    assert_eq!(headers[0].as_deref(), Some("image/png"));
    assert_eq!(headers[2].as_deref(), Some("input"));
    assert_eq!(png_size(&body), (80, 48), "scaled to the width, the aspect kept");
    let (_, _, body) = snapshot(&server, "?format=png&width=4000");
    assert_eq!(png_size(&body), (160, 96), "never larger than the frame");

    for bad in ["?stage=middle", "?format=gif", "?width=0", "?width=abc", "?colour=red"] {
        let (status, _, body) = snapshot(&server, bad);
        assert_eq!(status, 400, "{bad}: {}", String::from_utf8_lossy(&body));
    }
    let (key, value) = authorized();
    let (status, _, _) = get(&server, "/pipelines/nobody/snapshot", &[(key, &value)], &[]);
    assert_eq!(status, 404);
    let (status, _, _) = get(&server, "/pipelines/%3Cimg%3E/snapshot", &[(key, &value)], &[]);
    assert_eq!(status, 404);
    let (status, headers, _) = get(&server, "/pipelines/cam/snapshot", &[], &["www-authenticate"]);
    assert_eq!((status, headers[0].as_deref()), (401, Some("Bearer")), "no token");
    let (status, _, _) = get(
        &server,
        "/pipelines/cam/snapshot",
        &[("Authorization", "Bearer wrong")],
        &[],
    );
    assert_eq!(status, 401, "a wrong token");
    let origin = [(key, value.as_str()), ("Origin", "http://evil.example")];
    let (status, _, _) = get(&server, "/pipelines/cam/snapshot", &origin, &[]);
    assert_eq!(status, 403, "a page elsewhere");

    // A burst beyond the limit: some answered, the rest 429 with Retry-After.
    let statuses: Vec<(u16, Option<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..30)
            .map(|_| {
                scope.spawn(|| {
                    let (status, headers, _) = snapshot(&server, "?width=32");
                    (status, headers[3].clone())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let served = statuses.iter().filter(|(s, _)| *s == 200).count();
    let limited: Vec<_> = statuses.iter().filter(|(s, _)| *s == 429).collect();
    assert!(served >= 1 && !limited.is_empty(), "{statuses:?}");
    assert!(
        limited.iter().all(|(_, retry)| retry.as_deref() == Some("1")),
        "{statuses:?}"
    );
    assert_eq!(served + limited.len(), statuses.len(), "{statuses:?}");

    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_snapshot_waiting_for_a_frame_ends_when_its_pipeline_is_deleted() {
    let dir = tempdir();
    // One frame every two seconds: a snapshot request waits for the next.
    ffmpeg(
        dir.path(),
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=1/2",
            "-frames:v",
            "20",
            "-pix_fmt",
            "yuv420p",
            "slow.y4m",
        ],
    );
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 50);
    let pipelines = looping_pipeline("cam", "clip.y4m", "box") + &looping_pipeline("slow", "slow.y4m", "box");
    let server = server_with(dir.path(), "", &pipelines, "cam");
    server.wait_for("the slow pipeline's first frame", Duration::from_secs(10), || {
        server.counter("slow", "frames_written") >= 1
    });
    let (key, value) = authorized();
    let (waited, status) = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            let started = Instant::now();
            let (status, _, _) = get(&server, "/pipelines/slow/snapshot", &[(key, &value)], &[]);
            (started.elapsed(), status)
        });
        std::thread::sleep(Duration::from_millis(200));
        let (status, body) = server.request("DELETE", "/pipelines/slow", None);
        assert_eq!(status, 200, "{body}");
        waiting.join().unwrap()
    });
    assert!(
        matches!(status, 200 | 503),
        "a frame, or none with the pipeline stopping: {status}"
    );
    assert!(waited < Duration::from_millis(2500), "the wait is bounded: {waited:?}");
    let (status, _, _) = get(&server, "/pipelines/slow/snapshot", &[(key, &value)], &[]);
    assert_eq!(status, 404, "a deleted pipeline has no snapshots");
    // Snapshots of the other pipeline, while it is being polled, cost it no frames.
    for _ in 0..5 {
        assert_eq!(snapshot(&server, "?width=32").0, 200);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(server.counter("cam", "frames_dropped"), 0);
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn the_console_page_is_embedded_with_a_strict_policy_and_its_origin_served_only_while_on() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 50);
    let server = server_with(dir.path(), "", &looping_pipeline("cam", "clip.y4m", "box"), "cam");
    let wanted = ["content-security-policy", "x-content-type-options", "content-type"];
    let (status, headers, page) = get(&server, "/", &[], &wanted);
    assert_eq!(status, 200, "the page needs no token: it holds no data");
    let policy = headers[0].clone().expect("a Content-Security-Policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob:",
    ] {
        assert!(policy.contains(directive), "{policy}");
    }
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(headers[1].as_deref(), Some("nosniff"));
    let page = String::from_utf8(page).unwrap();
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "no inline script or style"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "nothing from elsewhere"
    );
    let (status, _, script) = get(&server, "/console/console.js", &[], &[]);
    assert_eq!(status, 200);
    let script = String::from_utf8(script).unwrap();
    for unsafe_call in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(
            !script.contains(unsafe_call),
            "the script builds no markup from data: {unsafe_call}"
        );
    }

    // Data needs the token; the page's own Origin is served, others are not.
    assert_eq!(get(&server, "/console/status", &[], &[]).0, 401);
    let (key, value) = authorized();
    let own = format!("http://{}", server.host());
    let (status, _, body) = get(&server, "/console/status", &[(key, &value), ("Origin", &own)], &[]);
    assert_eq!(status, 200);
    let status_json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status_json["pipelines"][0]["name"], "cam");
    assert!(status_json["presets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "custom"));
    let (status, body) = server.send(
        "PUT",
        "/pipelines/cam/filter",
        &[("Content-Type", "application/json"), ("Origin", &own)],
        Some(r#"{"mask": "sharpen"}"#),
    );
    assert_eq!(status, 200, "the console's own switch: {body}");
    for foreign in ["http://evil.example", "null", &format!("https://{}", server.host())] {
        let (status, _, _) = get(&server, "/console/status", &[(key, &value), ("Origin", foreign)], &[]);
        assert_eq!(status, 403, "Origin {foreign}");
        let (status, _) = server.send(
            "PUT",
            "/pipelines/cam/filter",
            &[("Content-Type", "application/json"), ("Origin", foreign)],
            Some(r#"{"mask": "box"}"#),
        );
        assert_eq!(status, 403, "a switch from {foreign}");
    }
    // A reload asked for by the console is SIGHUP's.
    let (status, body) = server.json("POST", "/console/reload", "{}");
    assert_eq!(status, 202, "{body}");
    server.wait_for("the reload", Duration::from_secs(10), || {
        server.log_text().contains("SIGHUP: reloading")
    });
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");

    // Off: no page, and the server's own Origin is a foreign one again.
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 64, 48, 50);
    let server = server_with(
        dir.path(),
        "console = false",
        &looping_pipeline("cam", "clip.y4m", "box"),
        "cam",
    );
    assert_eq!(get(&server, "/", &[], &[]).0, 404);
    assert_eq!(get(&server, "/console/console.js", &[], &[]).0, 404);
    assert_eq!(server.json("POST", "/console/reload", "{}").0, 404);
    let own = format!("http://{}", server.host());
    let (status, _, _) = get(&server, "/pipelines", &[(key, &value), ("Origin", &own)], &[]);
    assert_eq!(status, 403);
    let (status, _, _) = get(&server, "/pipelines/cam/snapshot", &[(key, &value)], &[]);
    assert_eq!(status, 200, "snapshots are part of the API, console or not");
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

/// Where the browser test keeps its screenshots (CI keeps the folder as an artifact).
fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots")
}

#[test]
fn the_console_works_in_headless_chromium() {
    let dir = tempdir();
    make_clip(dir.path(), "clip.y4m", Clip::Y4m, 320, 180, 100);
    std::fs::copy(dir.path().join("clip.y4m"), dir.path().join(INJECTED_INPUT)).unwrap();
    let masks = format!("[masks.'{INJECTED_MASK}']\npreset = \"gaussian\"\nsize = 5\n");
    let pipelines = looping_pipeline("cam-north", "clip.y4m", "box")
        + &looping_pipeline("cam-south", INJECTED_INPUT, INJECTED_MASK)
        + &looping_pipeline("cam-broken", "absent-input.y4m", "box");
    let server = server_with(dir.path(), &masks, &pipelines, "cam-north");
    let shots = screenshot_dir();
    let _ = std::fs::remove_dir_all(&shots);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console/drive_console.py");
    let output = Command::new("python3")
        .arg(script)
        .args([
            &server.url(""),
            TOKEN,
            shots.to_str().unwrap(),
            "cam-north",
            "cam-south",
            "cam-broken",
        ])
        .env("CONSOLE_INJECTED", "1")
        .env("CONSOLE_FAILED", "cam-broken=absent-input.y4m")
        .output()
        .expect("python3 runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{said}");
    // Past the test harness's capture, so that a passing run names the folder too.
    let _ = writeln!(std::io::stderr(), "console screenshots: {}", shots.display());
    assert!(
        output.status.success(),
        "the console failed in Chromium (scripts/install-deps.sh installs chromium, chromium-driver and selenium):\n{said}\nserver log:\n{}",
        server.log_text()
    );
    assert!(
        shots.join("02-previews.png").is_file(),
        "screenshots saved in {}",
        shots.display()
    );
    let (code, log) = server.terminate();
    assert_eq!(code, Some(0), "{log}");
}

//! The layers as crates: each package depends only on the layers below it (core knows no
//! FFmpeg, config no FFmpeg and no media, the GStreamer element no FFmpeg, the server and the
//! benchmarks not each other), no front end reads a configuration problem back out of its
//! text (problems are typed, with their place), and each crate compiles in only its own files.

use std::collections::BTreeSet;

use syn::visit::Visit;

use super::{rust_files, shown, workspace, PACKAGES};

/// Every package's allowed dependencies among the workspace's crates and on FFmpeg's
/// bindings; a package not listed here fails the test until it is.
const ALLOWED: &[(&str, &[&str])] = &[
    ("crates/core", &[]),
    ("crates/config", &["convstream-core"]),
    ("crates/media", &["convstream-core", "convstream-config", "ffmpeg-next"]),
    (
        "crates/server",
        &["convstream-core", "convstream-config", "convstream-media"],
    ),
    (
        "crates/bench",
        &[
            "convstream-core",
            "convstream-config",
            "convstream-media",
            "ffmpeg-next",
        ],
    ),
    ("crates/testkit", &["convstream-core"]),
    ("gst", &["convstream-core", "convstream-config"]),
    ("python", &["convstream-core", "convstream-config", "convstream-media"]),
    (
        ".",
        &[
            "convstream-core",
            "convstream-config",
            "convstream-media",
            "convstream-server",
            "convstream-bench",
            "ffmpeg-next",
        ],
    ),
];

/// The dependencies this test keeps to their layers.
fn is_layered(name: &str) -> bool {
    name.starts_with("convstream-") || name == "ffmpeg-next" || name.starts_with("ffmpeg-sys")
}

/// The layered crates a package's `[dependencies]` name (not its dev-dependencies: tests
/// may use any layer).
fn dependencies(package: &str) -> BTreeSet<String> {
    let manifest = workspace().join(package).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("reading a manifest");
    let table: toml::Table = toml::from_str(&text).expect("a manifest is TOML");
    table
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .map(|deps| deps.keys().filter(|name| is_layered(name)).cloned().collect())
        .unwrap_or_default()
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let root: toml::Table = toml::from_str(&std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap()).unwrap();
    let members: BTreeSet<&str> = root["workspace"]["members"]
        .as_array()
        .expect("[workspace] members")
        .iter()
        .filter_map(toml::Value::as_str)
        .collect();
    assert_eq!(
        members,
        PACKAGES.into_iter().collect(),
        "PACKAGES lists the workspace's members"
    );
    let mut report = Vec::new();
    for package in PACKAGES {
        let Some((_, allowed)) = ALLOWED.iter().find(|(name, _)| *name == package) else {
            report.push(format!("  {package}: no allowed layers listed in this test"));
            continue;
        };
        for found in dependencies(package) {
            if !allowed.contains(&found.as_str()) {
                report.push(format!("  {package} depends on {found}; allowed: {allowed:?}"));
            }
        }
    }
    assert!(
        report.is_empty(),
        "dependencies across the layers:\n{}",
        report.join("\n")
    );
}

/// String methods that take a text apart.
const PARSING: [&str; 6] = [
    "strip_prefix",
    "split_once",
    "split",
    "find",
    "trim_start_matches",
    "rsplit_once",
];

/// Finds calls that take a text apart at a problem's place (`pipeline "main": `,
/// `pipeline #2: `): what a front end did before problems were typed.
#[derive(Default)]
struct ProblemParsing {
    found: Vec<usize>,
}

impl<'ast> Visit<'ast> for ProblemParsing {
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let method = call.method.to_string();
        if PARSING.contains(&method.as_str()) {
            for arg in &call.args {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) = arg
                {
                    if text.value().starts_with("pipeline ") {
                        self.found.push(text.span().start().line);
                    }
                }
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

#[test]
fn no_front_end_reads_a_config_problem_back_from_its_text() {
    // The control-test: the pattern is found where it is written.
    let mut probe = ProblemParsing::default();
    probe.visit_file(&syn::parse_file(r#"fn f(p: &str) { p.strip_prefix("pipeline \"main\": "); }"#).unwrap());
    assert_eq!(probe.found, vec![1], "the check finds what it looks for");

    let mut report = Vec::new();
    for file in rust_files() {
        let path = shown(&file);
        if path.starts_with("crates/config/") || path.starts_with("tests/") || path.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {path}: {e}"));
        let mut parsing = ProblemParsing::default();
        parsing.visit_file(&syntax);
        report.extend(parsing.found.iter().map(|line| format!("  {path}:{line}")));
    }
    assert!(
        report.is_empty(),
        "a problem's place read back from its text (match on convstream_config::Problem instead):\n{}",
        report.join("\n")
    );
}

/// The package folder a source file belongs to: the longest of [`PACKAGES`] it is under.
fn package_of(relative: &str) -> &'static str {
    PACKAGES
        .iter()
        .filter(|package| **package != "." && relative.starts_with(&format!("{package}/")))
        .max_by_key(|package| package.len())
        .copied()
        .unwrap_or(".")
}

#[test]
fn files_compiled_in_are_inside_their_own_crate() {
    // `include_str!`/`include_bytes!` of a file outside the package (the kernels, the default
    // config) breaks `cargo package`: each crate carries what it compiles in.
    let mut report = Vec::new();
    let mut seen = 0;
    for file in rust_files() {
        let relative = shown(&file);
        let package = workspace()
            .join(package_of(&relative))
            .canonicalize()
            .expect("a package folder");
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        for target in includes(&text) {
            seen += 1;
            let resolved = file.parent().expect("a folder").join(&target).canonicalize();
            match resolved {
                Ok(path) if path.starts_with(&package) => {}
                Ok(path) => report.push(format!("  {relative}: `{target}` is {}", path.display())),
                Err(e) => report.push(format!("  {relative}: `{target}`: {e}")),
            }
        }
    }
    assert!(seen >= 5, "only {seen} files compiled in were found");
    assert!(
        report.is_empty(),
        "files compiled in from outside their crate:\n{}",
        report.join("\n")
    );
}

/// The paths that `include_str!` and `include_bytes!` name in a source text.
fn includes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for macro_name in ["include_str!(\"", "include_bytes!(\""] {
        for (at, _) in text.match_indices(macro_name) {
            let rest = &text[at + macro_name.len()..];
            if let Some(end) = rest.find('"') {
                found.push(rest[..end].to_string());
            }
        }
    }
    found
}

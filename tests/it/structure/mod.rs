//! The workspace's shape, checked on its sources: no circle of imports among the files of
//! any crate, no function over 120 lines, no file over 600 lines whose header does not
//! say why it is kept whole (and a header that states a length states it truly), and (in
//! `crates`) each crate on the layers below it only.

mod crates;
mod imports;

use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// Longest function, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 120;
/// Longest file without a reason at its top.
const MAX_FILE_LINES: usize = 600;
/// What a long file's `//!` header says when it is one job kept whole on purpose: "kept
/// whole", or "at some length (about N lines)".
const REASONS: [&str; 2] = ["kept whole", "at some length"];
/// How far a header's "about N lines" may be from the file's length.
const LENGTH_SLACK: f64 = 0.1;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's packages, as `[workspace] members` lists them.
const PACKAGES: [&str; 9] = [
    ".",
    "crates/core",
    "crates/config",
    "crates/media",
    "crates/server",
    "crates/bench",
    "crates/testkit",
    "gst",
    "python",
];

/// The root file of every crate in the workspace: libraries, binaries and test targets.
fn crate_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for package in PACKAGES {
        let dir = workspace().join(package);
        roots.extend(
            ["src/lib.rs", "src/main.rs"]
                .iter()
                .map(|f| dir.join(f))
                .filter(|f| f.exists()),
        );
        let Ok(entries) = std::fs::read_dir(dir.join("tests")) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs") {
                roots.push(path);
            } else if path.join("main.rs").exists() {
                roots.push(path.join("main.rs"));
            }
        }
    }
    roots.sort();
    roots
}

/// Every Rust file of the workspace (not `target/`).
fn rust_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() && !path.is_symlink() && name != "target" && !name.to_string_lossy().starts_with('.') {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&workspace(), &mut files);
    files.sort();
    files
}

fn shown(path: &Path) -> String {
    path.strip_prefix(workspace()).unwrap_or(path).display().to_string()
}

#[test]
fn no_import_circles_among_the_files_of_any_crate() {
    let roots = crate_roots();
    assert!(
        roots.iter().any(|r| r.ends_with("crates/core/src/lib.rs")),
        "crate roots not found: {roots:?}"
    );
    let mut report = Vec::new();
    for root in &roots {
        let krate = imports::Crate::parse(root).unwrap_or_else(|e| panic!("parsing {}: {e}", shown(root)));
        let edges = krate.edges();
        for circle in imports::circles(&edges) {
            let mut lines = vec![format!("a circle in the crate of {}:", shown(root))];
            for edge in circle {
                lines.push(format!(
                    "  {}:{} -> {} ({})",
                    shown(&edge.from),
                    edge.line,
                    shown(&edge.to),
                    edge.path
                ));
            }
            report.push(lines.join("\n"));
        }
    }
    assert!(
        report.is_empty(),
        "{} import circle(s) among files:\n{}",
        report.len(),
        report.join("\n")
    );
}

/// Finds functions and methods with a body, with the lines they span.
#[derive(Default)]
struct FunctionLengths {
    long: Vec<(String, usize, usize)>,
}

impl FunctionLengths {
    fn measure(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span.start().line;
        let lines = block.span().end().line + 1 - start;
        if lines > MAX_FUNCTION_LINES {
            self.long.push((name.to_string(), start, lines));
        }
    }
}

impl<'ast> Visit<'ast> for FunctionLengths {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.measure(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.measure(&f.sig.ident, &f.sig.fn_token, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.measure(&f.sig.ident, &f.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

#[test]
fn no_function_is_longer_than_120_lines() {
    let files = rust_files();
    assert!(files.len() > 100, "only {} Rust files found", files.len());
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("reading a source file");
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", shown(file)));
        let mut lengths = FunctionLengths::default();
        lengths.visit_file(&syntax);
        long.extend(
            lengths
                .long
                .into_iter()
                .map(|(name, line, lines)| format!("  {}:{line} {name}: {lines} lines", shown(file))),
        );
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them along their steps):\n{}",
        long.join("\n")
    );
}

#[test]
fn files_over_600_lines_say_why_at_their_top() {
    let mut unexplained = Vec::new();
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        let lines = text.lines().count();
        let header = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        if lines > MAX_FILE_LINES && !REASONS.iter().any(|reason| header.contains(reason)) {
            unexplained.push(format!("  {}: {lines} lines, no reason", shown(&file)));
        }
        if let Some(said) = stated_length(&header) {
            if (said as f64 - lines as f64).abs() > LENGTH_SLACK * lines as f64 {
                unexplained.push(format!(
                    "  {}: {lines} lines, its header says about {said}",
                    shown(&file)
                ));
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "files over {MAX_FILE_LINES} lines need a `//!` line saying why ({REASONS:?}), and a stated length must be true:\n{}",
        unexplained.join("\n")
    );
}

/// The N of "about N lines" in a header (commas allowed).
fn stated_length(header: &str) -> Option<usize> {
    header.match_indices("about ").find_map(|(at, word)| {
        let rest = &header[at + word.len()..];
        let number: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
        rest[number.len()..]
            .starts_with(" lines")
            .then(|| number.replace(',', "").parse().ok())
            .flatten()
    })
}

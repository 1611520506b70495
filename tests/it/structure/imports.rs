//! The import graph between the files of one crate: which file each `use` (and each
//! `crate::`/`super::`/`self::` path in code) resolves to, found by parsing the sources with
//! syn and following modules, definitions and re-exports the way rustc does for plain paths.
//!
//! A path is resolved to the file that *defines* the item, so `use super::Lane` in a child
//! whose parent re-exports `lanes::Lane` is an edge to `lanes.rs`, not to the parent: a
//! `mod.rs` that only declares and re-exports is never the far end of a child's import.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One module of the crate: a file, or an inline `mod x { ... }` inside one.
#[derive(Default)]
struct Module {
    file: PathBuf,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Names of items (not modules) defined here.
    items: BTreeSet<String>,
    /// `use` bindings: the name in scope and the path it stands for.
    uses: Vec<(String, Vec<String>)>,
    /// `use path::*`: the paths whose names are all in scope.
    globs: Vec<Vec<String>>,
    /// Paths named in this module's `use` lines and code, with the line they are on.
    paths: Vec<(Vec<String>, usize)>,
}

/// A resolved path: a module, or an item defined in a file.
#[derive(Clone, Copy)]
enum Target {
    Module(usize),
    Item(usize),
}

/// The modules of one crate, parsed from its root file.
pub struct Crate {
    modules: Vec<Module>,
}

/// An import from one file to another, with the line that makes it.
pub struct Edge {
    pub from: PathBuf,
    pub to: PathBuf,
    pub line: usize,
    pub path: String,
}

impl Crate {
    /// Parses the crate whose root is `root` (a `lib.rs` or `main.rs`) and every file its
    /// `mod` declarations reach.
    pub fn parse(root: &Path) -> Result<Crate, String> {
        let mut krate = Crate { modules: Vec::new() };
        krate.add_file(root, None, None)?;
        Ok(krate)
    }

    fn add_file(&mut self, file: &Path, parent: Option<usize>, name: Option<&str>) -> Result<usize, String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let syntax = syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let id = self.new_module(file, parent, name);
        // A crate root (`tests/x.rs` too) finds its modules beside it, like a `mod.rs`.
        let dir = if parent.is_none() {
            file.parent().unwrap_or(Path::new("")).to_path_buf()
        } else {
            children_dir(file)
        };
        self.add_items(id, &syntax.items, &dir)?;
        Ok(id)
    }

    fn new_module(&mut self, file: &Path, parent: Option<usize>, name: Option<&str>) -> usize {
        let id = self.modules.len();
        self.modules.push(Module {
            file: file.to_path_buf(),
            parent,
            ..Module::default()
        });
        if let (Some(parent), Some(name)) = (parent, name) {
            self.modules[parent].children.insert(name.to_string(), id);
        }
        id
    }

    fn add_items(&mut self, id: usize, items: &[syn::Item], dir: &Path) -> Result<(), String> {
        for item in items {
            match item {
                syn::Item::Mod(module) => self.add_module(id, module, dir)?,
                syn::Item::Use(item_use) => {
                    let mut collector = PathCollector::default();
                    collector.visit_item_use(item_use);
                    self.modules[id].paths.extend(collector.paths);
                    let mut bindings = Vec::new();
                    flatten_use(&item_use.tree, &mut Vec::new(), &mut bindings);
                    for binding in bindings {
                        match binding {
                            Binding::Name(name, path) => self.modules[id].uses.push((name, path)),
                            Binding::Glob(path) => self.modules[id].globs.push(path),
                        }
                    }
                }
                other => {
                    if let Some(name) = defined_name(other) {
                        self.modules[id].items.insert(name);
                    }
                    let mut collector = PathCollector::default();
                    collector.visit_item(other);
                    self.modules[id].paths.extend(collector.paths);
                }
            }
        }
        Ok(())
    }

    fn add_module(&mut self, parent: usize, module: &syn::ItemMod, dir: &Path) -> Result<(), String> {
        let name = module.ident.to_string();
        match &module.content {
            Some((_, items)) => {
                let file = self.modules[parent].file.clone();
                let id = self.new_module(&file, Some(parent), Some(&name));
                self.add_items(id, items, &dir.join(&name))
            }
            None => {
                // Rust reads `#[path]` of a module declared at a file's top level from that
                // file's own folder, and inside inline modules from their folder.
                let declaring = &self.modules[parent].file;
                let at_top = dir == children_dir(declaring);
                let base = match declaring.parent() {
                    Some(folder) if at_top => folder.to_path_buf(),
                    _ => dir.to_path_buf(),
                };
                let file = path_attribute(module)
                    .map(|path| base.join(path))
                    .or_else(|| {
                        [dir.join(format!("{name}.rs")), dir.join(&name).join("mod.rs")]
                            .into_iter()
                            .find(|f| f.exists())
                    })
                    .ok_or_else(|| {
                        format!(
                            "module {name} declared in {} has no file",
                            self.modules[parent].file.display()
                        )
                    })?;
                self.add_file(&file, Some(parent), Some(&name)).map(|_| ())
            }
        }
    }

    /// Every import that crosses from one file to another.
    pub fn edges(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        for (id, module) in self.modules.iter().enumerate() {
            let mut add = |target: Option<Target>, line: usize, path: &[String]| {
                let to = match target {
                    Some(Target::Module(m)) | Some(Target::Item(m)) => &self.modules[m].file,
                    None => return,
                };
                if *to != module.file {
                    edges.push(Edge {
                        from: module.file.clone(),
                        to: to.clone(),
                        line,
                        path: path.join("::"),
                    });
                }
            };
            // `use` lines and paths in code alike; a glob of another file's module takes in
            // all of it, so that file is depended on.
            for (path, line) in &module.paths {
                add(self.resolve(id, path, &mut Vec::new()), *line, path);
            }
        }
        edges
    }

    /// `visiting` holds the (module, name) lookups under way, so re-exports that go round
    /// (globs of each other) end.
    fn resolve(&self, from: usize, path: &[String], visiting: &mut Vec<(usize, String)>) -> Option<Target> {
        if path.is_empty() {
            return None;
        }
        let mut current = from;
        let mut rest = path;
        // Leading `crate`, `self`, `super`: where the walk starts.
        while let Some(first) = rest.first() {
            match first.as_str() {
                "crate" => current = 0,
                "self" => {}
                "super" => current = self.modules[current].parent?,
                _ => break,
            }
            rest = &rest[1..];
        }
        if rest.is_empty() {
            return Some(Target::Module(current));
        }
        for (index, segment) in rest.iter().enumerate() {
            let last = index + 1 == rest.len();
            match self.lookup(current, segment, last, visiting)? {
                Target::Module(module) => current = module,
                item @ Target::Item(_) => return Some(item),
            }
        }
        Some(Target::Module(current))
    }

    /// A name in a module's scope: a child module, an item defined there, a `use`
    /// binding, or a name brought in by a glob.
    fn lookup(&self, module: usize, name: &str, last: bool, visiting: &mut Vec<(usize, String)>) -> Option<Target> {
        if visiting.iter().any(|(m, n)| *m == module && n == name) {
            return None;
        }
        visiting.push((module, name.to_string()));
        let found = self.lookup_in_scope(module, name, last, visiting);
        visiting.pop();
        found
    }

    fn lookup_in_scope(
        &self,
        module: usize,
        name: &str,
        last: bool,
        visiting: &mut Vec<(usize, String)>,
    ) -> Option<Target> {
        let scope = &self.modules[module];
        let child = scope.children.get(name).copied().map(Target::Module);
        if scope.items.contains(name) && (last || child.is_none()) {
            return Some(Target::Item(module));
        }
        if child.is_some() {
            return child;
        }
        if let Some((_, path)) = scope.uses.iter().find(|(bound, _)| bound == name) {
            return self.resolve(module, path, visiting);
        }
        scope
            .globs
            .iter()
            .find_map(|glob| match self.resolve(module, glob, visiting)? {
                Target::Module(source) if source != module => self.lookup(source, name, last, visiting),
                _ => None,
            })
    }
}

/// The folder where `mod x;` declared in `file` finds `x.rs`.
fn children_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => dir,
        _ => dir.join(file.file_stem().unwrap_or_default()),
    }
}

fn path_attribute(module: &syn::ItemMod) -> Option<String> {
    module
        .attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

fn defined_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

enum Binding {
    Name(String, Vec<String>),
    Glob(Vec<String>),
}

fn flatten_use(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Binding>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                out.push(Binding::Name(last.clone(), prefix.clone()));
            }
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(Binding::Name(n.ident.to_string(), path));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push(Binding::Name(r.rename.to_string(), path));
        }
        syn::UseTree::Glob(_) => out.push(Binding::Glob(prefix.clone())),
        syn::UseTree::Group(g) => g.items.iter().for_each(|item| flatten_use(item, prefix, out)),
    }
}

/// Collects the `crate::`/`super::`/`self::` paths of one item's code, and the `use`
/// declarations inside its blocks, without entering nested modules (they are modules of
/// their own).
#[derive(Default)]
struct PathCollector {
    paths: Vec<(Vec<String>, usize)>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut bindings = Vec::new();
        flatten_use(&item.tree, &mut Vec::new(), &mut bindings);
        let line = item.use_token.span.start().line;
        for binding in bindings {
            let (Binding::Name(_, path) | Binding::Glob(path)) = binding;
            self.paths.push((path, line));
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 && matches!(segments[0].as_str(), "crate" | "super" | "self") {
            let line = path.segments[0].ident.span().start().line;
            self.paths.push((segments, line));
        }
        syn::visit::visit_path(self, path);
    }
}

/// The groups of files that import each other round a circle (strongly connected
/// components of more than one file), each with the edges inside it.
pub fn circles(edges: &[Edge]) -> Vec<Vec<&Edge>> {
    let mut graph: BTreeMap<&Path, BTreeSet<&Path>> = BTreeMap::new();
    for edge in edges {
        graph.entry(&edge.from).or_default().insert(&edge.to);
        graph.entry(&edge.to).or_default();
    }
    let nodes: Vec<&Path> = graph.keys().copied().collect();
    let reach = |from: &Path| -> BTreeSet<&Path> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(node) = stack.pop() {
            for next in &graph[node] {
                if seen.insert(*next) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&Path, BTreeSet<&Path>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut assigned = BTreeSet::new();
    let mut groups = Vec::new();
    for node in &nodes {
        if assigned.contains(node) {
            continue;
        }
        let group: BTreeSet<&Path> = nodes
            .iter()
            .copied()
            .filter(|other| other == node || (reachable[node].contains(other) && reachable[other].contains(node)))
            .collect();
        assigned.extend(group.iter().copied());
        if group.len() > 1 {
            let inside = edges
                .iter()
                .filter(|e| group.contains(e.from.as_path()) && group.contains(e.to.as_path()))
                .collect();
            groups.push(inside);
        }
    }
    groups
}

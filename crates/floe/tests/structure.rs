//! The structure of every crate of the workspace, checked on its source:
//!
//! - the modules of each crate (its top-level modules, and the children of each module) form
//!   a DAG by their `crate::`, `super::` and `self::` imports;
//! - no source file has more than [`MAX_LINES`] lines of code (non-blank, non-comment lines
//!   outside `#[cfg(test)]` modules), generated code and integration tests (`tests/`
//!   directories of a package) aside.
//!
//! Comments, string literals and `#[cfg(test)]` modules are left out of both checks. Each
//! failure names every violation: the crate and the cycle, or the file and its count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines of code a source file may have.
const MAX_LINES: usize = 800;

/// Generated code, relative to the workspace root, that the line count leaves out.
const GENERATED: &[&str] = &["crates/floe-slice/tests/golden"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The `members` of the root `Cargo.toml`.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let start = manifest.find("\nmembers").expect("the workspace lists its members");
    let list = &manifest[start..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    let members: Vec<String> =
        list.split(',').map(|m| m.trim().trim_matches('"').to_string()).filter(|m| !m.is_empty()).collect();
    assert!(members.len() > 5, "too few workspace members parsed: {members:?}");
    // floe for Python is a workspace of its own (maturin builds it) and is held to the same rules.
    members.into_iter().chain(["python".to_string()]).collect()
}

/// A source file with its comments removed (`code`), and the same with the contents of string
/// and character literals blanked too (`bare`). Both keep the file's line breaks and byte
/// offsets; `#[cfg(test)]` modules are blanked in both.
struct Source {
    code: String,
    bare: String,
    /// Modules declared `#[cfg(test)] mod name;`, whose files are test code.
    test_mods: BTreeSet<String>,
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn lex(text: &str) -> Source {
    let b = text.as_bytes();
    let mut code = b.to_vec();
    let mut bare = b.to_vec();
    let blank = |v: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut v[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
                blank(&mut code, i, end);
                blank(&mut bare, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut code, i, j);
                blank(&mut bare, i, j);
                i = j;
            }
            b'r' if (i == 0 || !is_ident(b[i - 1]) || b[i - 1] == b'b')
                && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let open = i + 2 + hashes;
                let close = format!("\"{}", "#".repeat(hashes));
                let end = text[open..].find(&close).map_or(b.len(), |e| open + e);
                blank(&mut bare, open, end);
                i = (end + close.len()).min(b.len());
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(b.len());
                blank(&mut bare, i + 1, end);
                i = end + 1;
            }
            b'\'' => {
                // A character literal ('a', '\n', '\u{7f}'), or else a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    let end = text.get(i + 3..).and_then(|t| t.find('\'')).map_or(b.len(), |e| i + 3 + e);
                    blank(&mut bare, i + 1, end);
                    i = end + 1;
                } else if let Some(c) = text[i + 1..].chars().next() {
                    if text[i + 1 + c.len_utf8()..].starts_with('\'') {
                        blank(&mut bare, i + 1, i + 1 + c.len_utf8());
                        i += 2 + c.len_utf8();
                    } else {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    let mut source = Source {
        code: String::from_utf8_lossy(&code).into_owned(),
        bare: String::from_utf8_lossy(&bare).into_owned(),
        test_mods: BTreeSet::new(),
    };
    strip_test_modules(&mut source);
    source
}

/// Blanks every `#[cfg(test)] mod name { ... }` and `#[cfg(test)] mod name;`.
fn strip_test_modules(source: &mut Source) {
    let mut from = 0;
    while let Some(at) = source.bare[from..].find("#[cfg(test)]").map(|i| from + i) {
        from = at + 1;
        let b = source.bare.as_bytes();
        // Skip whitespace, further attributes and a visibility to reach `mod`.
        let mut j = at + "#[cfg(test)]".len();
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if b[j..].starts_with(b"#[") {
                j += source.bare[j..].find(']').map_or(b.len() - j, |e| e + 1);
            } else if b[j..].starts_with(b"pub(") {
                j += source.bare[j..].find(')').map_or(b.len() - j, |e| e + 1);
            } else if b[j..].starts_with(b"pub ") {
                j += 4;
            } else {
                break;
            }
        }
        if !b[j..].starts_with(b"mod ") {
            continue;
        }
        let name_start = j + 4;
        let name: String =
            source.bare[name_start..].trim_start().chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
        let Some(next) = source.bare[name_start..].find(['{', ';']).map(|e| name_start + e) else { continue };
        let end = if b[next] == b';' {
            source.test_mods.insert(name);
            next + 1
        } else {
            let (mut depth, mut k) = (0usize, next);
            while k < b.len() {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
            (k + 1).min(b.len())
        };
        for text in [&mut source.code, &mut source.bare] {
            let blanked: String = text[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
            text.replace_range(at..end, &blanked);
        }
    }
}

/// The lines of code of a source: non-blank lines once comments and test modules are gone.
fn lines_of_code(source: &Source) -> usize {
    source.code.lines().filter(|l| !l.trim().is_empty()).count()
}

/// Every path that starts with `crate::`, `super::` or `self::`, as its segments, with the
/// items of a `{a, b::c}` group each as a path of its own.
fn local_paths(bare: &str) -> Vec<Vec<String>> {
    let b = bare.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = ["crate::", "super::", "self::"].iter().any(|p| b[i..].starts_with(p.as_bytes()));
        let after_boundary = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':' || b[i - 1] == b'$');
        if starts && after_boundary {
            let (paths, end) = parse_path(b, i, Vec::new());
            out.extend(paths);
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Parses `seg::seg::{group}` at `i`, prefixed by `prefix`; returns the paths and where it ends.
fn parse_path(b: &[u8], mut i: usize, mut prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i < b.len() && b[i] == b'{' {
            let mut paths = Vec::new();
            i += 1;
            loop {
                skip_ws(&mut i);
                if i >= b.len() || b[i] == b'}' {
                    return (paths, i + 1);
                }
                if b[i] == b',' {
                    i += 1;
                    continue;
                }
                let (inner, end) = parse_path(b, i, prefix.clone());
                paths.extend(inner);
                // Skip to the next item of this group (past `as name`, `*`).
                i = end;
                while i < b.len() && b[i] != b',' && b[i] != b'}' && b[i] != b'{' {
                    i += 1;
                }
                if i < b.len() && b[i] == b'{' {
                    return (paths, i);
                }
            }
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i == start {
            return (vec![prefix], i);
        }
        prefix.push(String::from_utf8_lossy(&b[start..i]).into_owned());
        let mut j = i;
        skip_ws(&mut j);
        if b[j..].starts_with(b"::") {
            i = j + 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// Resolves a local path seen in the module `module` to absolute segments from the crate root.
fn resolve(module: &[String], path: &[String]) -> Vec<String> {
    let mut base: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            base = module.to_vec();
            rest = &path[1..];
        }
        _ => base = module.to_vec(),
    }
    while let Some("super") = rest.first().map(String::as_str) {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    base
}

/// One crate (a library, a binary) of a package: its module files by module path.
struct Crate {
    name: String,
    modules: BTreeMap<Vec<String>, PathBuf>,
}

/// The module `name` declared in `file` (whose own children live in `dir`).
fn module_file(dir: &Path, name: &str) -> Option<PathBuf> {
    [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")].into_iter().find(|p| p.is_file())
}

/// Walks the `mod name;` declarations from a crate root.
fn load_crate(name: String, root: &Path) -> Crate {
    let mut modules = BTreeMap::new();
    let mut todo = vec![(Vec::<String>::new(), root.to_path_buf(), root.parent().unwrap().to_path_buf())];
    while let Some((path, file, dir)) = todo.pop() {
        let source = lex(&std::fs::read_to_string(&file).unwrap());
        for decl in mod_declarations(&source) {
            let Some(child) = module_file(&dir, &decl) else { continue };
            let child_dir =
                if child.ends_with("mod.rs") { child.parent().unwrap().to_path_buf() } else { dir.join(&decl) };
            let mut child_path = path.clone();
            child_path.push(decl);
            todo.push((child_path, child, child_dir));
        }
        modules.insert(path, file);
    }
    Crate { name, modules }
}

/// The names of the `mod name;` declarations (not the inline modules) of a source.
fn mod_declarations(source: &Source) -> Vec<String> {
    let mut out = Vec::new();
    let b = source.bare.as_bytes();
    let mut from = 0;
    while let Some(at) = source.bare[from..].find("mod ").map(|i| from + i) {
        from = at + 4;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        let rest = source.bare[from..].trim_start();
        let name: String = rest.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
        if !name.is_empty() && rest[name.len()..].trim_start().starts_with(';') && !source.test_mods.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Every crate of a package: its library and its binaries.
fn crates_of(package: &Path, label: &str) -> Vec<Crate> {
    let mut roots: Vec<PathBuf> = Vec::new();
    let src = package.join("src");
    for name in ["lib.rs", "main.rs"] {
        roots.push(src.join(name));
    }
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        for entry in entries {
            let path = entry.unwrap().path();
            roots.push(if path.is_dir() { path.join("main.rs") } else { path });
        }
    }
    let manifest = std::fs::read_to_string(package.join("Cargo.toml")).unwrap();
    for line in manifest.lines() {
        if let Some(value) = line.trim().strip_prefix("path = \"") {
            roots.push(package.join(value.trim_end_matches('"')));
        }
    }
    roots.sort();
    roots.dedup();
    roots
        .into_iter()
        .filter(|r| r.is_file() && r.extension().is_some_and(|e| e == "rs"))
        .map(|root| {
            let name = format!("{label} ({})", root.strip_prefix(package).unwrap().display());
            load_crate(name, &root)
        })
        .collect()
}

/// The module graphs of a crate: for each module with children, the edges between its children
/// (`a` imports something of its sibling `b`, or of one of `b`'s descendants).
fn graphs(krate: &Crate) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for path in krate.modules.keys() {
        if let Some((last, parent)) = path.split_last() {
            graphs.entry(parent.to_vec()).or_default().entry(last.clone()).or_default();
        }
    }
    for (module, file) in &krate.modules {
        let source = lex(&std::fs::read_to_string(file).unwrap());
        for path in local_paths(&source.bare) {
            let target = resolve(module, &path);
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common >= module.len() || common >= target.len() {
                continue; // a module using its own descendants or its ancestors' items
            }
            if !krate.modules.contains_key(&target[..=common]) {
                continue; // an item of the common ancestor, not a module
            }
            let graph = graphs.entry(module[..common].to_vec()).or_default();
            graph.entry(module[common].clone()).or_default().insert(target[common].clone());
        }
    }
    graphs
}

/// The cycles of a graph: one cycle through each strongly connected component with more than
/// one node (Tarjan's algorithm), with the nodes of that component.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(Vec<String>, Vec<String>)> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top);
                    if top == node {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    let mut out = Vec::new();
    for component in tarjan.components.into_iter().filter(|c| c.len() > 1) {
        let members: BTreeSet<&str> = component.iter().copied().collect();
        // Breadth-first from the first member back to itself, inside the component.
        let start = *members.iter().next().unwrap();
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(node) = queue.pop_front() {
            for next in graph.get(node).into_iter().flatten().map(String::as_str).filter(|n| members.contains(n)) {
                if next == start {
                    last = Some(node);
                    break 'search;
                }
                if !previous.contains_key(next) {
                    previous.insert(next, node);
                    queue.push_back(next);
                }
            }
        }
        let mut back = Vec::new();
        let mut node = last.unwrap();
        while node != start {
            back.push(node.to_string());
            node = previous[node];
        }
        let mut cycle = vec![start.to_string()];
        cycle.extend(back.into_iter().rev());
        cycle.push(start.to_string());
        out.push((cycle, members.into_iter().map(str::to_string).collect()));
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_modules_of_every_crate_form_a_dag() {
    let root = workspace_root();
    let mut violations = Vec::new();
    let mut checked = 0;
    for member in members(&root) {
        for krate in crates_of(&root.join(&member), &member) {
            for (parent, graph) in graphs(&krate) {
                checked += 1;
                for (cycle, component) in cycles(&graph) {
                    let place = if parent.is_empty() {
                        "top-level modules".to_string()
                    } else {
                        format!("modules in {}", parent.join("::"))
                    };
                    let mut line =
                        format!("{}: {place} import each other in a cycle: {}", krate.name, cycle.join(" -> "));
                    if component.len() + 1 > cycle.len() {
                        line += &format!(" (modules on cycles with these: {})", component.join(", "));
                    }
                    violations.push(line);
                }
            }
        }
    }
    assert!(checked > 10, "only {checked} module graphs found");
    assert!(violations.is_empty(), "{} import cycles:\n{}", violations.len(), violations.join("\n"));
}

#[test]
fn no_source_file_has_more_than_800_lines_of_code() {
    let root = workspace_root();
    let mut violations = Vec::new();
    for member in members(&root) {
        let package = root.join(&member);
        let mut files = Vec::new();
        rust_files(&package, &mut files);
        for file in files {
            let rel = file.strip_prefix(&root).unwrap();
            let in_tests = file.strip_prefix(&package).unwrap().components().any(|c| c.as_os_str() == "tests");
            if in_tests || GENERATED.iter().any(|g| rel.starts_with(g)) {
                continue;
            }
            let count = lines_of_code(&lex(&std::fs::read_to_string(&file).unwrap()));
            if count > MAX_LINES {
                violations.push(format!("{}: {count} lines of code", rel.display()));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "{} source files with more than {MAX_LINES} lines of code:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// Every module of every package says in its first lines (`//!`) what lives there.
#[test]
fn every_module_starts_with_its_doc() {
    let root = workspace_root();
    let mut missing = Vec::new();
    for member in members(&root) {
        for krate in crates_of(&root.join(&member), &member) {
            for file in krate.modules.values() {
                let text = std::fs::read_to_string(file).unwrap();
                let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                if !first.starts_with("//!") && !first.starts_with("#![doc") {
                    missing.push(file.strip_prefix(&root).unwrap().display().to_string());
                }
            }
        }
    }
    assert!(missing.is_empty(), "modules without a `//!` doc at the top:\n{}", missing.join("\n"));
}

#[test]
fn the_checkers_see_what_they_check() {
    let source = lex(concat!(
        "use crate::{a::b, c, d::{e, f}};\n",
        "// use crate::commented;\n",
        "let s = \"crate::in_a_string\";\n",
        "let c = '\"'; let q = '\\''; let l: &'static str = super::super::g::h();\n",
        "/* block\n crate::nope */\n",
        "#[cfg(test)]\nmod tests {\n    use super::tested;\n}\n",
        "#[cfg(test)]\nmod extra;\nmod kept;\n",
    ));
    let paths: Vec<String> = local_paths(&source.bare).iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["crate::a::b", "crate::c", "crate::d::e", "crate::d::f", "super::super::g::h"]);
    assert_eq!(mod_declarations(&source), ["kept"]);
    assert_eq!(lines_of_code(&source), 4);
    let module = ["x".to_string(), "y".to_string()];
    let path: Vec<String> = ["super", "z", "w"].iter().map(|s| s.to_string()).collect();
    assert_eq!(resolve(&module, &path), ["x", "z", "w"]);
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
        .iter()
        .map(|(n, deps)| (n.to_string(), deps.iter().map(|d| d.to_string()).collect()))
        .collect();
    let found = cycles(&graph);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, ["a", "b", "c", "a"]);
    assert_eq!(found[0].1, ["a", "b", "c"]);
}

#[test]
fn the_dag_check_sees_cycles_between_the_files_of_a_module() {
    let dir = std::env::temp_dir().join(format!("floe-structure-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).unwrap();
    write("lib.rs", "//! Root.\nmod a;\nmod b;\n#[cfg(test)]\nmod t;\n");
    write("a/mod.rs", "//! A.\nmod x;\nmod y;\nuse crate::b::B;\n");
    write("a/x.rs", "use super::y::Y;\npub struct X;\n");
    write("a/y.rs", "use crate::a::x::X;\npub struct Y;\n");
    write("b.rs", "pub struct B;\n");
    write("t.rs", "use crate::a::x::X;\n");
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"t\"\n").unwrap();
    let crates = crates_of(&dir, "t");
    assert_eq!(crates.len(), 1);
    let modules: Vec<String> = crates[0].modules.keys().map(|m| m.join("::")).collect();
    assert_eq!(modules, ["", "a", "a::x", "a::y", "b"]);
    let graphs = graphs(&crates[0]);
    assert!(cycles(&graphs[&Vec::new()]).is_empty());
    let found = cycles(&graphs[&vec!["a".to_string()]]);
    assert_eq!(found.iter().map(|(c, _)| c.join(" -> ")).collect::<Vec<_>>(), ["x -> y -> x"]);
    let _ = std::fs::remove_dir_all(&dir);
}

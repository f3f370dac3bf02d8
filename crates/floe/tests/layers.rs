//! The runtime's structure, checked on its source: every module uses only the modules below it
//! in the layer order of the crate's README, and the files inside a module (besides its
//! `mod.rs`) import each other without cycles. Test code (`#[cfg(test)]` modules) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate's modules from the bottom up; a module may use those before it.
const LAYERS: &[&[&str]] = &[
    &["encoding"],
    &["protocol"],
    &["error"],
    &["properties", "malloc"],
    &["stdio"],
    &["prometheus"],
    &["metrics"],
    &["transport"],
    &["reference", "response", "routing", "runtime"],
    &["connection"],
    &["settings"],
    &["instance"],
    &["proxy"],
    &["dispatch"],
    &["codegen"],
    &["adapter"],
    &["admin"],
    &["communicator"],
];

/// Items re-exported at the crate root, by the module that defines them.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("ObjectAdapter", "adapter"),
    ("Communicator", "communicator"),
    ("Connection", "connection"),
    ("Current", "dispatch"),
    ("DispatchFuture", "response"),
    ("DispatchSlot", "response"),
    ("Dispatcher", "dispatch"),
    ("IncomingRequest", "dispatch"),
    ("Located", "dispatch"),
    ("LocatorCookie", "dispatch"),
    ("Response", "response"),
    ("ServantLocator", "dispatch"),
    ("AnyClass", "encoding"),
    ("Class", "encoding"),
    ("Context", "encoding"),
    ("Identity", "encoding"),
    ("RequestContext", "encoding"),
    ("CallError", "error"),
    ("Error", "error"),
    ("ErrorKind", "error"),
    ("Result", "error"),
    ("Properties", "properties"),
    ("BatchWriter", "proxy"),
    ("ObjectPrx", "proxy"),
    ("Outcome", "proxy"),
    ("Proxy", "proxy"),
    ("CompactString", "encoding"),
    ("bytes", "encoding"),
];

fn rank(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("module {module} is missing from the layer list of tests/layers.rs"))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code before its test module, without comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The identifiers after each occurrence of `prefix` (`crate::x`, `super::y`), including
/// every item of a `prefix{a, b::c}` group.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = rel.components().next().unwrap().as_os_str().to_str().unwrap().trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        for used in paths_after(&code(file), "crate::") {
            let target = ROOT_ITEMS.iter().find(|(item, _)| *item == used).map(|(_, m)| *m).unwrap_or(&used);
            if target != module && rank(target) >= rank(module) {
                violations.push(format!("{} uses crate::{used} ({target} is not below {module})", rel.display()));
            }
        }
    }
    assert!(violations.is_empty(), "imports that point up the layers or sideways:\n{}", violations.join("\n"));
}

#[test]
fn the_files_of_a_module_import_each_other_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    // Per directory: each file (not mod.rs) and the siblings it imports through `super::`.
    let mut graphs: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let (Some(dir), Some(stem)) = (file.parent(), file.file_stem().and_then(|s| s.to_str())) else { continue };
        if dir == src || stem == "mod" {
            continue;
        }
        let siblings: BTreeSet<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.path().file_stem()?.to_str().map(str::to_string))
            .filter(|s| s != "mod" && s != stem)
            .collect();
        let imports = paths_after(&code(file), "super::").into_iter().filter(|n| siblings.contains(n)).collect();
        graphs.entry(dir.to_path_buf()).or_default().insert(stem.to_string(), imports);
    }
    assert!(graphs.keys().any(|d| d.ends_with("connection")), "the connection module is a directory of files");
    for (dir, graph) in graphs {
        // Kahn's algorithm: whatever cannot be ordered is on a cycle.
        let mut left = graph.clone();
        while let Some(free) =
            left.iter().find(|(_, deps)| deps.iter().all(|d| !left.contains_key(d))).map(|(f, _)| f.clone())
        {
            left.remove(&free);
        }
        assert!(left.is_empty(), "files of {} import each other in a cycle: {:?}", dir.display(), left);
    }
}

#[test]
fn the_checker_sees_imports_that_point_up() {
    // The parser the two tests above rely on finds plain, nested and grouped paths.
    let code = "use crate::{Communicator, proxy::ObjectPrx};\nlet x = crate::adapter::thing();\nuse super::{state::Phase, Connection};";
    assert_eq!(paths_after(code, "crate::"), ["Communicator", "proxy", "adapter"]);
    assert_eq!(paths_after(code, "super::"), ["state", "Connection"]);
    assert!(rank("communicator") > rank("connection"));
}

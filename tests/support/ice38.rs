//! Ice 3.8 peers for tests: builds ZeroC Ice 3.8's C++ core once (`scripts/build-ice38`,
//! cached under `target/ice38/`) and compiles test programs of floe's own against it.
//! Included with `#[path = ".../tests/support/ice38.rs"] mod ice38;`.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The repository's root.
fn repository() -> PathBuf {
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !dir.join("scripts/build-ice38").exists() {
        assert!(dir.pop(), "no scripts/build-ice38 above {}", env!("CARGO_MANIFEST_DIR"));
    }
    dir
}

/// The `cpp` directory of the built Ice 3.8 tree (its `include/`, `include/generated/`,
/// `lib/<triplet>/` and `bin/slice2cpp`); builds it on first use (about five minutes on two
/// cores).
pub fn cpp_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = repository();
        let out = Command::new("bash")
            .arg(root.join("scripts/build-ice38"))
            .current_dir(&root)
            .output()
            .expect("cannot run scripts/build-ice38");
        assert!(
            out.status.success(),
            "scripts/build-ice38 failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let dir = PathBuf::from(stdout.lines().last().expect("build-ice38 printed nothing").trim());
        assert!(dir.join("include/Ice/Ice.h").exists(), "no Ice 3.8 headers in {}", dir.display());
        dir
    })
}

/// The directory of the built libIce.
pub fn lib_dir() -> PathBuf {
    let lib = cpp_dir().join("lib");
    std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("no {}: {e}", lib.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("libIce.so").exists())
        .unwrap_or_else(|| panic!("no libIce.so under {}", lib.display()))
}

/// The program `name` compiled from `sources` (paths relative to the repository) against Ice
/// 3.8; compiled again when a source is newer than it. One compilation at a time per name in
/// a process, and a finished binary appears at once (renamed into place), so that test
/// programs running side by side never see half of one.
pub fn program(name: &str, sources: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    let root = repository();
    let cpp = cpp_dir();
    let out_dir = cpp.parent().and_then(Path::parent).expect("a cache directory").join("programs");
    std::fs::create_dir_all(&out_dir).unwrap();
    let binary = out_dir.join(name);
    let sources: Vec<PathBuf> = sources.iter().map(|s| root.join(s)).collect();
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = modified(&binary).is_some_and(|b| sources.iter().all(|s| modified(s).is_some_and(|m| m <= b)));
    if !fresh {
        let lib = lib_dir();
        let partial = out_dir.join(format!("{name}.{}.partial", std::process::id()));
        let out = Command::new("g++")
            .args(["-std=c++17", "-O1", "-pthread"])
            .arg(format!("-I{}", cpp.join("include").display()))
            .arg(format!("-I{}", cpp.join("include/generated").display()))
            .args(&sources)
            .arg(format!("-L{}", lib.display()))
            .arg("-lIce")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-o")
            .arg(&partial)
            .output()
            .expect("cannot run g++");
        assert!(out.status.success(), "g++ failed for {name}:\n{}", String::from_utf8_lossy(&out.stderr));
        std::fs::rename(&partial, &binary).unwrap();
    }
    built.insert(name.to_string(), binary.clone());
    binary
}

//! Fetches the test sources of ZeroC Ice 3.7.8 from Debian's source package (`apt-get source
//! zeroc-ice`, with a private deb-src list so the machine's apt configuration is untouched),
//! extracts only the suites the conformance servers need into `target/ice-conformance/`, and
//! generates floe code from each suite's Test.ice.
//!
//! `FLOE_ICE_TEST_SOURCES=DIR` uses an already extracted `ice-3.7.8` tree instead.
//!
//! When Ice 3.8.2's source tarball is there (`FLOE_ICE38_TARBALL`, else
//! `../shared/ice-3.8/ice-3.8.2-src.tar.gz` beside the repository, else
//! `/work/shared/ice-3.8/ice-3.8.2-src.tar.gz`, as `scripts/build-ice38` looks for it), it also
//! extracts the Slice files of 3.8's C++ suites (`cpp/test/Ice/*/*.ice`) into
//! `target/ice-conformance/ice-3.8.2/`, generates floe code from the Test.ice of the suites
//! whose Slice 3.8 changed (`ice38_<suite>.rs`), and sets the `floe_ice38` cfg.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Suites whose Test.ice the servers are generated from (directories under python/test/Ice),
/// with the Ice Slice files they include whose definitions the generated code uses, and the
/// suite's other Slice files the server loads (`./…`).
const SUITES: &[(&str, &[&str])] = &[
    ("enums", &[]),
    ("facets", &[]),
    ("proxy", &["Ice/Current.ice"]),
    ("exceptions", &["Ice/BuiltinSequences.ice"]),
    ("ami", &["Ice/BuiltinSequences.ice"]),
    ("timeout", &[]),
    ("inheritance", &[]),
    ("operations", &["Ice/Current.ice"]),
    ("objects", &["./Forward.ice", "./ServerPrivate.ice"]),
    ("optional", &[]),
    ("slicing/exceptions", &["./ServerPrivate.ice"]),
    ("servantLocator", &[]),
    ("binding", &[]),
    ("acm", &[]),
    ("info", &["Ice/Current.ice"]),
    ("slicing/objects", &["./ServerPrivate.ice"]),
    ("location", &["Ice/Locator.ice", "Ice/Process.ice"]),
    ("blobject", &[]),
    ("scope", &[]),
    ("faultTolerance", &[]),
    ("adapterDeactivation", &["Ice/Router.ice", "Ice/BuiltinSequences.ice"]),
    ("asyncio", &[]),
    ("dispatcher", &["Ice/BuiltinSequences.ice"]),
    ("packagemd", &["./Package.ice", "./NoPackage.ice"]),
    ("custom", &[]),
    ("admin", &["Ice/BuiltinSequences.ice", "Ice/PropertiesAdmin.ice"]),
    ("checksum", &["./STypes.ice", "Ice/SliceChecksumDict.ice"]),
    ("thread", &["Ice/PropertiesAdmin.ice"]),
];
/// Suites whose server is generated from the C++ client's Test.ice, a superset of the Python
/// client's.
const CPP_SLICE: &[&str] = &["admin"];
/// Suites whose generated code carries Slice checksums (`--checksum`, as Ice's driver builds them).
const CHECKSUM_SUITES: &[&str] = &["checksum"];
/// What is extracted from the source tarball: the Python clients and their helper, the C++
/// clients' sources (`cpp/test/Ice`), which the runner builds with slice2cpp and g++, and the
/// Java clients of some suites, which it builds with slice2java and javac.
const EXTRACT: &[&str] = &[
    "ice-3.7.8/python/test/TestHelper.py",
    "ice-3.7.8/python/test/Ice",
    "ice-3.7.8/python/test/Slice",
    "ice-3.7.8/cpp/test/Ice",
    "ice-3.7.8/cpp/test/Common/TestHelper.cpp",
    "ice-3.7.8/cpp/test/include/TestHelper.h",
    "ice-3.7.8/java/test/src/main/java/test/TestHelper.java",
    "ice-3.7.8/java/test/src/main/java/test/TestDriver.java",
    "ice-3.7.8/java/test/src/main/java/test/Ice/operations",
    "ice-3.7.8/java/test/src/main/java/test/Ice/objects",
    "ice-3.7.8/java/test/src/main/java/test/Ice/exceptions",
    "ice-3.7.8/java/test/src/main/java/test/Ice/optional",
    "ice-3.7.8/java/test/src/main/java/test/Ice/slicing/objects",
    "ice-3.7.8/java/test/src/main/java/test/Ice/slicing/exceptions",
    "ice-3.7.8/java/test/src/main/java/test/Ice/enums",
    "ice-3.7.8/java/test/src/main/java/test/Ice/inheritance",
    "ice-3.7.8/java/test/src/main/java/test/Ice/facets",
];
const VERSION: &str = "3.7.8";
/// Suites whose Ice 3.8 Test.ice (`cpp/test/Ice/<suite>`) the 3.8 servers are generated from,
/// with the Ice Slice files whose definitions the generated code uses, as for [`SUITES`]. The
/// Ice definitions come from 3.7's Slice (the same on the wire); 3.8's `Ice/Context.ice` and
/// `Ice/LocatorRegistry.ice`, which 3.7 does not have as files, are stand-ins that include
/// 3.7's `Ice/Current.ice` and `Ice/Locator.ice`.
const SUITES38: &[(&str, &[&str])] = &[
    ("exceptions", &["Ice/BuiltinSequences.ice"]),
    ("proxy", &["Ice/Current.ice"]),
    ("location", &["Ice/Locator.ice", "Ice/Process.ice"]),
    ("optional", &[]),
    ("slicing/objects", &["./ServerPrivate.ice"]),
    ("ami", &["Ice/BuiltinSequences.ice"]),
    ("scope", &[]),
    ("objects", &["./Forward.ice", "./Derived.ice", "./DerivedEx.ice"]),
];
/// The Ice 3.8 source tarball's top directory.
const VERSION38: &str = "3.8.2";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FLOE_ICE_TEST_SOURCES");
    let root = match std::env::var_os("FLOE_ICE_TEST_SOURCES") {
        Some(dir) => PathBuf::from(dir),
        None => fetch().unwrap_or_else(|e| panic!("cannot fetch the Ice {VERSION} test sources: {e}")),
    };
    println!("cargo:rustc-env=FLOE_ICE_TEST_SOURCES={}", root.display());
    let slice_dirs = ["/usr/share/ice/slice", "/usr/share/slice"];
    let includes: Vec<&str> = slice_dirs.iter().copied().filter(|d| Path::new(d).is_dir()).collect();
    let slice_root = includes.first().map(PathBuf::from).expect("zeroc-ice-slice is installed (/usr/share/ice/slice)");
    for (suite, extra) in SUITES {
        // The C++ admin suite's Test.ice adds operations to the Python one's (logging through
        // the server's logger, update callbacks added and removed on demand): the server
        // implements that superset, so that both clients play against it.
        let lang = if CPP_SLICE.contains(suite) { "cpp" } else { "python" };
        let dir = root.join(lang).join("test/Ice").join(suite);
        let ice = dir.join("Test.ice");
        let mut files = vec![ice.clone()];
        files.extend(extra.iter().map(|f| match f.strip_prefix("./") {
            Some(local) => dir.join(local),
            None => slice_root.join(f),
        }));
        let mut includes = includes.clone();
        let dir_str = dir.to_string_lossy().to_string();
        includes.push(&dir_str);
        floe_build::configure()
            .checksums(CHECKSUM_SUITES.contains(suite))
            .compile_into(&files, &includes, &format!("{}.rs", suite.replace('/', "_")))
            .unwrap_or_else(|e| panic!("{}: {e}", ice.display()));
    }
    println!("cargo::rustc-check-cfg=cfg(floe_ice38)");
    println!("cargo:rerun-if-env-changed=FLOE_ICE38_TARBALL");
    if let Some(tree) = fetch38().unwrap_or_else(|e| panic!("cannot extract the Ice {VERSION38} Slice files: {e}")) {
        generate38(&tree, &includes);
        println!("cargo:rustc-cfg=floe_ice38");
    }
}

/// Generates `ice38_<suite>.rs` from each of [`SUITES38`]'s Test.ice in `tree`.
fn generate38(tree: &Path, includes: &[&str]) {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let shims = out.join("ice38-slice");
    std::fs::create_dir_all(shims.join("Ice")).expect("create the Slice stand-ins");
    for (name, included) in [("Context", "Current"), ("LocatorRegistry", "Locator")] {
        std::fs::write(shims.join(format!("Ice/{name}.ice")), format!("#pragma once\n#include <Ice/{included}.ice>\n"))
            .expect("write a Slice stand-in");
    }
    let slice_root = PathBuf::from(includes[0]);
    for (suite, extra) in SUITES38 {
        let dir = tree.join("cpp/test/Ice").join(suite);
        let ice = dir.join("Test.ice");
        let mut files = vec![ice.clone()];
        files.extend(extra.iter().map(|f| match f.strip_prefix("./") {
            Some(local) => dir.join(local),
            None => slice_root.join(f),
        }));
        let mut dirs = vec![shims.to_string_lossy().to_string()];
        dirs.extend(includes.iter().map(|d| d.to_string()));
        dirs.push(dir.to_string_lossy().to_string());
        // Ice 3.8 keeps the unknown slices of every class received in the sliced format.
        floe_build::configure()
            .preserve_class_slices(true)
            .compile_into(&files, &dirs, &format!("ice38_{}.rs", suite.replace('/', "_")))
            .unwrap_or_else(|e| panic!("{}: {e}", ice.display()));
    }
}

/// The Ice 3.8 source tarball, where `scripts/build-ice38` looks for it.
fn tarball38() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("FLOE_ICE38_TARBALL") {
        return Some(PathBuf::from(path));
    }
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let name = format!("ice-{VERSION38}-src.tar.gz");
    let beside = manifest
        .ancestors()
        .find(|d| d.join("scripts/build-ice38").exists())
        .map(|repo| repo.join("../shared/ice-3.8").join(&name));
    beside.into_iter().chain([PathBuf::from("/work/shared/ice-3.8").join(&name)]).find(|p| p.is_file())
}

/// Extracts the Slice files of Ice 3.8's C++ suites from its tarball (once per tarball), or
/// `None` without a tarball.
fn fetch38() -> Result<Option<PathBuf>, String> {
    let Some(tarball) = tarball38() else { return Ok(None) };
    println!("cargo:rerun-if-changed={}", tarball.display());
    let cache = cache_dir();
    let tree = cache.join(format!("ice-{VERSION38}"));
    let stamp = cache.join(format!("extracted-{VERSION38}"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if tree.is_dir() && modified(&stamp).is_some_and(|s| modified(&tarball).is_some_and(|t| t <= s)) {
        return Ok(Some(tree));
    }
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let _ = std::fs::remove_dir_all(&tree);
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&cache)
        .arg("--wildcards")
        .arg(format!("ice-{VERSION38}/cpp/test/Ice/*.ice"))
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar could not extract {}", tarball.display()));
    }
    std::fs::write(&stamp, VERSION38).map_err(|e| e.to_string())?;
    Ok(Some(tree))
}

/// The cache directory: `<target>/ice-conformance`, found from OUT_DIR
/// (`<target>/<profile>/build/<pkg>/out`).
fn cache_dir() -> PathBuf {
    floe_build::ice_source::target_dir().join("ice-conformance")
}

fn fetch() -> Result<PathBuf, String> {
    floe_build::ice_source::extract(EXTRACT, &cache_dir())
}

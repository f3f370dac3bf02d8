//! Fetches the test sources of ZeroC Ice 3.7.8 from Debian's source package (`apt-get source
//! zeroc-ice`, with a private deb-src list so the machine's apt configuration is untouched),
//! extracts only the suites the conformance servers need into `target/ice-conformance/`, and
//! generates floe code from each suite's Test.ice.
//!
//! `FLOE_ICE_TEST_SOURCES=DIR` uses an already extracted `ice-3.7.8` tree instead.

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
}

/// The cache directory: `<target>/ice-conformance`, found from OUT_DIR
/// (`<target>/<profile>/build/<pkg>/out`).
fn cache_dir() -> PathBuf {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let target = out.ancestors().nth(4).map(Path::to_path_buf).unwrap_or(out);
    target.join("ice-conformance")
}

fn fetch() -> Result<PathBuf, String> {
    let cache = cache_dir();
    let tree = cache.join(format!("ice-{VERSION}"));
    // The stamp names what was extracted, so that a longer list extracts again.
    let stamp = cache.join(format!("extracted-{}", EXTRACT.join(" ").len()));
    if stamp.exists() && tree.is_dir() {
        return Ok(tree);
    }
    let download = cache.join("download");
    let lists = cache.join("apt-lists");
    let parts = cache.join("apt-sources");
    for d in [&download, &lists.join("partial"), &parts, &cache.join("apt-cache/archives/partial")] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(
        parts.join("deb-src.sources"),
        "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n\
         Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
    )
    .map_err(|e| e.to_string())?;
    let apt = |args: &[&str]| -> Result<(), String> {
        let mut cmd = Command::new("apt-get");
        cmd.current_dir(&download)
            .arg("-qq")
            .arg("-o")
            .arg("Dir::Etc::SourceList=/dev/null")
            .arg("-o")
            .arg(format!("Dir::Etc::SourceParts={}", parts.display()))
            .arg("-o")
            .arg(format!("Dir::State::Lists={}", lists.display()))
            .arg("-o")
            .arg("Debug::NoLocking=1")
            .arg("-o")
            .arg(format!("Dir::Cache={}", cache.join("apt-cache").display()))
            .arg("-o")
            .arg(format!("Dir::Cache::Archives={}", cache.join("apt-cache/archives").display()))
            .args(args);
        let out = cmd.output().map_err(|e| format!("apt-get: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("apt-get {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    };
    let tarball = download.join(format!("zeroc-ice_{VERSION}.orig.tar.xz"));
    if !tarball.exists() {
        apt(&["update"])?;
        apt(&["source", "--download-only", &format!("zeroc-ice={VERSION}-2.1")])
            .or_else(|_| apt(&["source", "--download-only", "zeroc-ice"]))?;
    }
    let _ = std::fs::remove_dir_all(&tree);
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&cache)
        .args(EXTRACT)
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar could not extract {}", tarball.display()));
    }
    std::fs::write(&stamp, VERSION).map_err(|e| e.to_string())?;
    Ok(tree)
}

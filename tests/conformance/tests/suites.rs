//! Runs ZeroC Ice 3.7.8's own test clients (unmodified, from Debian's source package) against
//! the floe servers of this crate: every Python client, with encoding 1.1, 1.0 and the sliced
//! format where Ice's driver plays them, and a fast subset of the C++ clients (the whole C++
//! matrix is `tests/cpp_matrix.rs`). See `runner/mod.rs` for how a suite is run.

#[macro_use]
mod runner;

use runner::*;
use std::path::{Path, PathBuf};

#[test]
fn enums_1_1() {
    check(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.1");
}

#[test]
fn enums_1_0() {
    check(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.0");
}

#[test]
fn facets_1_1() {
    check(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.1");
}

#[test]
fn facets_1_0() {
    check(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.0");
}

/// The proxy suite's client checks proxy strings against the 1.1 default locally
/// (`proxyToProperty`), so it fails with 1.0 against Ice's own server too: 1.1 only.
#[test]
fn proxy_1_1() {
    check(suite!("proxy", "floe-conformance-proxy", ["TestAdapter"], 1), "1.1");
}

#[test]
fn exceptions_1_1() {
    check(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
    );
}

#[test]
fn exceptions_1_0() {
    check(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.0",
    );
}

#[test]
fn ami_1_1() {
    check(suite!("ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2), "1.1");
}

/// Passes against floe; Ice's own Python client hangs at "testing batch requests with
/// communicator" against Ice's own Python server with 1.0.
#[test]
fn ami_1_0() {
    check(suite!("ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2), "1.0");
}

#[test]
fn timeout_1_1() {
    check(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.1");
}

#[test]
fn timeout_1_0() {
    check(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.0");
}

#[test]
fn inheritance_1_1() {
    check(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.1");
}

#[test]
fn inheritance_1_0() {
    check(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.0");
}

#[test]
fn operations_1_1() {
    check(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1");
}

#[test]
fn operations_1_0() {
    check(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.0");
}

#[test]
fn objects_1_1() {
    check(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.1");
}

/// The variant Ice's driver runs with the sliced format: class graphs whose slices carry
/// indirection tables.
#[test]
fn objects_1_1_sliced_format() {
    check_with(
        suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn objects_1_0() {
    check(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.0");
}

/// The suite checks 1.0 itself (operations and exceptions whose only classes are optional);
/// run as a whole with 1.0 it fails against Ice's own Python server too (1.0 drops optionals).
#[test]
fn optional_1_1() {
    check(suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1), "1.1");
}

/// The variant Ice's driver runs with the sliced format: unknown derived classes are sliced.
#[test]
fn optional_1_1_sliced_format() {
    check_with(
        suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

/// Includes relaying exceptions whose most derived type only the client knows: their slices
/// are preserved through the floe server.
#[test]
fn slicing_exceptions_1_1() {
    check(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.1");
}

#[test]
fn slicing_exceptions_1_0() {
    check(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.0");
}

/// Two checks are about Python servers (a Python exception's text, a Python locator returning
/// something that is not a servant); the suite accepts OperationNotExist / ObjectNotExist from
/// servers in other languages, which is what the floe server answers.
#[test]
fn servant_locator_1_1() {
    check(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.1");
}

#[test]
fn servant_locator_1_0() {
    check(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.0");
}

#[test]
fn acm_1_1() {
    check(suite!("acm", "floe-conformance-acm", ["TestAdapter"], 1), "1.1");
}

#[test]
fn acm_1_0() {
    check(suite!("acm", "floe-conformance-acm", ["TestAdapter"], 1), "1.0");
}

#[test]
fn binding_1_1() {
    check(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.1");
}

#[test]
fn binding_1_0() {
    check(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.0");
}

#[test]
fn info_1_1() {
    check(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.1");
}

#[test]
fn info_1_0() {
    check(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.0");
}

#[test]
fn slicing_objects_1_1() {
    check(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.1");
}

#[test]
fn slicing_objects_1_0() {
    check(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.0");
}

/// The client puts a Blobject router of its own (Python's dynamic dispatch and `ice_invoke`)
/// in front of the floe server, which sees forwarded twoway and oneway requests.
#[test]
fn blobject_1_1() {
    check(suite!("blobject", "floe-conformance-blobject", ["TestAdapter"], 1), "1.1");
}

#[test]
fn blobject_1_0() {
    check(suite!("blobject", "floe-conformance-blobject", ["TestAdapter"], 1), "1.0");
}

#[test]
fn scope_1_1() {
    check(suite!("scope", "floe-conformance-scope", ["TestAdapter"], 1), "1.1");
}

#[test]
fn scope_1_0() {
    check(suite!("scope", "floe-conformance-scope", ["TestAdapter"], 1), "1.0");
}

/// A servant locator with cookies, an `Ice::Router` servant for the client's router-backed
/// adapter, and a `deactivate` after which the server is gone. The suite uses test ports 0–10
/// (the C++ client binds port 10 twice to see the second fail).
#[test]
fn adapter_deactivation_1_1() {
    check(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 11), "1.1");
}

#[test]
fn adapter_deactivation_1_0() {
    check(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 11), "1.0");
}

/// Python's asyncio client awaiting Ice futures (and cancelling them) against a floe server.
#[test]
fn asyncio_1_1() {
    check(suite!("asyncio", "floe-conformance-asyncio", ["TestAdapter"], 1), "1.1");
}

#[test]
fn asyncio_1_0() {
    check(suite!("asyncio", "floe-conformance-asyncio", ["TestAdapter"], 1), "1.0");
}

/// The client runs its callbacks through an Ice dispatcher of its own; the server holds and
/// resumes its adapter on request, with a small receive buffer for flow control.
#[test]
fn dispatcher_1_1() {
    check(suite!("dispatcher", "floe-conformance-dispatcher", ["TestAdapter", "ControllerAdapter"], 2), "1.1");
}

#[test]
fn dispatcher_1_0() {
    check(suite!("dispatcher", "floe-conformance-dispatcher", ["TestAdapter", "ControllerAdapter"], 2), "1.0");
}

/// Classes and exceptions of three modules, which the client maps to Python packages.
#[test]
fn packagemd_1_1() {
    check(suite!("packagemd", "floe-conformance-packagemd", ["TestAdapter"], 1), "1.1");
}

#[test]
fn packagemd_1_0() {
    check(suite!("packagemd", "floe-conformance-packagemd", ["TestAdapter"], 1), "1.0");
}

/// Sequences the client maps to Python lists, tuples, arrays and memoryviews. 1.1 only, as
/// Ice's driver plays it: the client checks optional class members, which 1.0 leaves out.
#[test]
fn custom_1_1() {
    check(suite!("custom", "floe-conformance-custom", ["TestAdapter"], 1), "1.1");
}

/// The server makes communicators for the client, which calls their `Ice.Admin` objects
/// (Process, Properties with an update callback, a custom facet, `Ice.Admin.Facets`).
#[test]
fn admin_1_1() {
    check(suite!("admin", "floe-conformance-admin", ["TestAdapter"], 1), "1.1");
}

#[test]
fn admin_1_0() {
    check(suite!("admin", "floe-conformance-admin", ["TestAdapter"], 1), "1.0");
}

/// The client compares the server's Slice checksums (slice2rs's, of the server's STypes.ice)
/// with its own (slice2py's, of CTypes.ice): equal for the types named `…1`, different for the
/// others.
#[test]
fn checksum_1_1() {
    check(suite!("checksum", "floe-conformance-checksum", ["TestAdapter"], 1), "1.1");
}

#[test]
fn checksum_1_0() {
    check(suite!("checksum", "floe-conformance-checksum", ["TestAdapter"], 1), "1.0");
}

/// The same with Ice's C++ client, whose checksums slice2cpp computed from ClientTypes.ice.
#[test]
fn cpp_checksum_1_1() {
    check_cpp(suite!("checksum", "floe-conformance-checksum", ["TestAdapter"], 1), "1.1", &[]);
}

/// slice2rs computes, for every Slice file of the suite (both sides, Python's and C++'s),
/// exactly the checksums `slice2py --checksum` and `slice2cpp --checksum` compute.
#[test]
fn checksum_slice_files_match_slice2py_and_slice2cpp() {
    use std::collections::BTreeMap;
    use std::process::Command;
    let root = Path::new(floe_conformance::ICE_TEST_SOURCES);
    let out = std::env::temp_dir().join(format!("floe-checksum-types-{}", std::process::id()));
    let files = [
        "python/test/Ice/checksum/Test.ice",
        "python/test/Ice/checksum/CTypes.ice",
        "python/test/Ice/checksum/STypes.ice",
        "cpp/test/Ice/checksum/ClientTypes.ice",
        "cpp/test/Ice/checksum/ServerTypes.ice",
    ];
    let mut compared = 0;
    for f in files {
        let file = root.join(f);
        let dir = file.parent().expect("a directory");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).expect("scratch directory");
        let includes = [PathBuf::from("/usr/share/ice/slice"), dir.to_path_buf()];
        let c = floe_slice::compile(&[&file], &includes);
        let unit = c.unit.as_ref().unwrap_or_else(|| panic!("{f}: {}", c.render_diagnostics()));
        let ours = floe_slice::checksum::checksums(unit);
        let stem = file.file_stem().and_then(|s| s.to_str()).expect("a file name");
        let mut theirs: Vec<BTreeMap<String, String>> = Vec::new();
        for (compiler, generated, prefix, separator) in [
            ("slice2py", format!("{stem}_ice.py"), "Ice.sliceChecksums[\"", "\"] = \""),
            ("slice2cpp", format!("{stem}.cpp"), "\"", "\", \""),
        ] {
            let run = Command::new(compiler)
                .args(["--checksum", "-I/usr/share/ice/slice"])
                .arg(format!("-I{}", dir.display()))
                .arg("--output-dir")
                .arg(&out)
                .arg(&file)
                .output()
                .unwrap_or_else(|e| panic!("{compiler}: {e}"));
            assert!(run.status.success(), "{compiler} {f}: {}", String::from_utf8_lossy(&run.stderr));
            let text = std::fs::read_to_string(out.join(&generated)).expect("generated file");
            let mut map = BTreeMap::new();
            for line in text.lines().map(str::trim) {
                let Some((name, sum)) = line.strip_prefix(prefix).and_then(|l| l.split_once(separator)) else {
                    continue;
                };
                let sum = sum.trim_end_matches(['"', ',']);
                if name.starts_with("::") && !sum.is_empty() && sum.chars().all(|c| c.is_ascii_hexdigit()) {
                    map.insert(name.to_string(), sum.to_string());
                }
            }
            theirs.push(map);
        }
        assert_eq!(ours, theirs[0], "{f}: slice2rs (left) and slice2py (right) differ");
        assert_eq!(ours, theirs[1], "{f}: slice2rs (left) and slice2cpp (right) differ");
        compared += ours.len();
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(compared > 250, "only {compared} checksums compared");
}

/// Twelve floe servers, each on its own test port; the client aborts them one after the other
/// and checks that its retries move on.
#[test]
fn fault_tolerance() {
    let suite =
        Suite { servers: 12, ..suite!("faultTolerance", "floe-conformance-fault-tolerance", ["TestAdapter"], 13) };
    if let Err(e) = run(&suite, "1.1", &[]) {
        panic!("Ice/faultTolerance: {e}");
    }
}

/// The servers the suite starts are more communicators in the floe process; their adapters
/// register with the floe locator registry through `Ice.Default.Locator`.
#[test]
fn location() {
    // One encoding after the other: each run starts and stops nine "servers".
    check(suite!("location", "floe-conformance-location", ["ServerManager"], 40), "1.1");
    check(suite!("location", "floe-conformance-location", ["ServerManager"], 40), "1.0");
}

/// Ice's sources are fetched at build time, outside the repository, and none of them is
/// committed here: the crate holds only floe's own Rust servers and runner.
#[test]
fn sources_are_extracted_not_committed() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = Path::new(floe_conformance::ICE_TEST_SOURCES);
    assert!(!sources.starts_with(manifest), "Ice's sources must live outside the repository's tracked tree");
    assert!(sources.join("python/test/Ice/operations/Client.py").exists(), "the extracted tree is incomplete");
    let mut stack = vec![manifest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            assert!(
                matches!(ext, "rs" | "toml" | "md"),
                "{} is not floe's own Rust, manifest or documentation",
                path.display()
            );
        }
    }
}

// Ice's C++ clients that check what the Python ones do not: message size limits per adapter
// (exceptions), unsupported encodings (proxy), the sliced format (objects, optional) and 1.0
// locator requests (location). Every C++ cell is in tests/cpp_matrix.rs.

#[test]
fn cpp_proxy_1_1() {
    check_cpp(suite!("proxy", "floe-conformance-proxy", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn cpp_exceptions_1_1() {
    check_cpp(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &[],
    );
}

#[test]
fn cpp_exceptions_1_0() {
    check_cpp(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.0",
        &[],
    );
}

#[test]
fn cpp_objects_1_1_sliced_format() {
    check_cpp(
        suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn cpp_optional_1_1_sliced_format() {
    check_cpp(
        suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn cpp_location_1_1() {
    check_cpp(suite!("location", "floe-conformance-location", ["ServerManager"], 40), "1.1", &[]);
}

/// The C++ client also checks the Logger facet (`getLog` with filters, a remote logger) and
/// update callbacks removed and added again. The server leaves `Ice.AcceptClassCycles` unset
/// in the communicators it makes, as Ice for C++ does (the client counts the properties).
#[test]
fn cpp_admin_1_1() {
    check_cpp_server_with(
        suite!("admin", "floe-conformance-admin", ["TestAdapter"], 1),
        "1.1",
        &["--Test.Admin.AcceptClassCycles=0"],
    );
}

/// Suites over the secure and web transports, as Ice's driver runs them with `--protocol=ssl`
/// and `--protocol=ws`, with encoding 1.1 (every suite but `location`, whose servers are
/// started by the suite itself).
mod transports {
    use super::*;

    macro_rules! over {
        ($name:ident, $protocol:literal, $dir:literal, $bin:literal, [$($adapter:literal),*], $ports:literal) => {
            #[test]
            fn $name() {
                check_protocol(suite!($dir, $bin, [$($adapter),*], $ports), $protocol);
            }
        };
    }

    over!(operations_ssl, "ssl", "operations", "floe-conformance-operations", ["TestAdapter"], 1);
    over!(operations_ws, "ws", "operations", "floe-conformance-operations", ["TestAdapter"], 1);
    over!(
        exceptions_ssl,
        "ssl",
        "exceptions",
        "floe-conformance-exceptions",
        ["TestAdapter", "TestAdapter2", "TestAdapter3"],
        3
    );
    over!(
        exceptions_ws,
        "ws",
        "exceptions",
        "floe-conformance-exceptions",
        ["TestAdapter", "TestAdapter2", "TestAdapter3"],
        3
    );
    over!(proxy_ssl, "ssl", "proxy", "floe-conformance-proxy", ["TestAdapter"], 1);
    over!(proxy_ws, "ws", "proxy", "floe-conformance-proxy", ["TestAdapter"], 1);
    over!(objects_ssl, "ssl", "objects", "floe-conformance-objects", ["TestAdapter"], 1);
    over!(objects_ws, "ws", "objects", "floe-conformance-objects", ["TestAdapter"], 1);
    over!(ami_ssl, "ssl", "ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2);
    over!(ami_ws, "ws", "ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2);
    over!(info_ssl, "ssl", "info", "floe-conformance-info", ["TestAdapter"], 1);
    over!(info_ws, "ws", "info", "floe-conformance-info", ["TestAdapter"], 1);
    over!(enums_ssl, "ssl", "enums", "floe-conformance-enums", ["TestAdapter"], 1);
    over!(enums_ws, "ws", "enums", "floe-conformance-enums", ["TestAdapter"], 1);
    over!(facets_ssl, "ssl", "facets", "floe-conformance-facets", ["TestAdapter"], 1);
    over!(facets_ws, "ws", "facets", "floe-conformance-facets", ["TestAdapter"], 1);
    over!(timeout_ssl, "ssl", "timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2);
    over!(timeout_ws, "ws", "timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2);
    over!(inheritance_ssl, "ssl", "inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1);
    over!(inheritance_ws, "ws", "inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1);
    over!(optional_ssl, "ssl", "optional", "floe-conformance-optional", ["TestAdapter"], 1);
    over!(optional_ws, "ws", "optional", "floe-conformance-optional", ["TestAdapter"], 1);
    over!(
        slicing_exceptions_ssl,
        "ssl",
        "slicing/exceptions",
        "floe-conformance-slicing-exceptions",
        ["TestAdapter"],
        1
    );
    over!(slicing_exceptions_ws, "ws", "slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1);
    over!(slicing_objects_ssl, "ssl", "slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1);
    over!(slicing_objects_ws, "ws", "slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1);
    over!(servant_locator_ssl, "ssl", "servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1);
    over!(servant_locator_ws, "ws", "servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1);
    over!(acm_ssl, "ssl", "acm", "floe-conformance-acm", ["TestAdapter"], 1);
    over!(acm_ws, "ws", "acm", "floe-conformance-acm", ["TestAdapter"], 1);
    over!(admin_ssl, "ssl", "admin", "floe-conformance-admin", ["TestAdapter"], 1);
    over!(admin_ws, "ws", "admin", "floe-conformance-admin", ["TestAdapter"], 1);
    /// The server calls the adapters it creates itself, presenting its own certificate as a
    /// client's; the test server certificate allows server authentication only (rustls, like
    /// OpenSSL, refuses it from a client), so the server asks for no client certificates.
    #[test]
    fn binding_ssl() {
        check_protocol_with(
            suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1),
            "ssl",
            &["--IceSSL.VerifyPeer=0"],
        );
    }
    over!(binding_ws, "ws", "binding", "floe-conformance-binding", ["TestAdapter"], 1);
}

// Ice's Java clients (built once per Ice version with slice2java and javac): one variant of
// each suite here, the whole matrix in `tests/java_matrix.rs`.

#[test]
fn java_operations_1_1() {
    check_java(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_exceptions_1_0() {
    check_java(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.0",
        &[],
    );
}

#[test]
fn java_objects_1_1_sliced_format() {
    check_java(
        suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
fn java_optional_1_1() {
    check_java(suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
fn java_slicing_objects_1_1() {
    check_java(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.1", &[]);
}

/// The server makes communicators with thread hooks for the client, which makes five
/// concurrent `sleep` calls on one (each sleeps on a blocking-pool thread started for it),
/// destroys it and checks that the hooks counted a stop for every start.
#[test]
fn thread_1_1() {
    check(suite!("thread", "floe-conformance-thread", ["TestAdapter"], 1), "1.1");
}

#[test]
fn thread_1_0() {
    check(suite!("thread", "floe-conformance-thread", ["TestAdapter"], 1), "1.0");
}

//! Runs ZeroC Ice 3.7.8's own cross-language test clients (Python, unmodified, from Debian's
//! source package) against the floe servers of this crate, with encoding 1.1 and, where the
//! suite supports it, 1.0. Each run starts the floe server as Ice's test driver does (same
//! properties, waits for its `<Adapter> ready` lines), runs the client with a time limit, and
//! requires the client to exit 0 and the server to exit 0 after the client's `shutdown()`.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The Python that has Debian's python3-zeroc-ice.
const PYTHON: &str = "/usr/bin/python3";
/// Properties Ice's test driver gives clients and servers.
const DRIVER_PROPERTIES: &[&str] =
    &["--Ice.Default.Host=127.0.0.1", "--Ice.Warn.Connections=1", "--Ice.Default.Protocol=tcp", "--Ice.IPv6=0"];
/// What the driver adds for servers.
const SERVER_PROPERTIES: &[&str] = &[
    "--Ice.ThreadPool.Server.Size=1",
    "--Ice.ThreadPool.Server.SizeMax=3",
    "--Ice.ThreadPool.Server.SizeWarn=0",
    "--Ice.PrintAdapterReady=1",
];
const CLIENT_TIME_LIMIT: Duration = Duration::from_secs(180);

/// A suite: its directory under python/test/Ice, the floe server binary, and the adapters whose
/// `ready` lines the runner waits for.
struct Suite {
    dir: &'static str,
    server: &'static str,
    adapters: &'static [&'static str],
    /// Test ports the server uses (from Test.BasePort).
    ports: u16,
}

fn sources() -> PathBuf {
    PathBuf::from(floe_conformance::ICE_TEST_SOURCES).join("python/test")
}

/// Hands out bases of free port ranges so that suites running in parallel never share ports.
fn port_base(count: u16) -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(15010);
    loop {
        let base = NEXT.fetch_add(count.max(10).next_multiple_of(10), Ordering::SeqCst);
        assert!(base < 30000, "no free test ports");
        let free = (0..count).all(|k| TcpListener::bind(("127.0.0.1", base + k)).is_ok());
        if free {
            return base;
        }
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn wait_with_limit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if start.elapsed() > limit {
            kill(child);
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The test client to play against a floe server.
enum Client {
    /// `python/test/Ice/<suite>/Client.py`.
    Python,
    /// A C++ client built from `cpp/test/Ice/<suite>` (see [`cpp_client`]).
    Cpp(PathBuf),
}

/// Builds the C++ test client of a suite against Debian's libzeroc-ice-dev (slice2cpp and g++,
/// as ZeroC's makefiles do), once per build directory.
fn cpp_client(suite: &str, extra_sources: &[&str]) -> Result<PathBuf, String> {
    let src = PathBuf::from(floe_conformance::ICE_TEST_SOURCES).join("cpp/test");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cpp-{}", suite.replace('/', "-")));
    let client = out.join("client");
    if client.exists() {
        return Ok(client);
    }
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    let dir = src.join("Ice").join(suite);
    let status = Command::new("slice2cpp")
        .arg("-I/usr/share/ice/slice")
        .arg("--output-dir")
        .arg(&out)
        .arg(dir.join("Test.ice"))
        .status()
        .map_err(|e| format!("slice2cpp: {e}"))?;
    if !status.success() {
        return Err("slice2cpp failed".into());
    }
    let mut cmd = Command::new("g++");
    cmd.args(["-O0", "-std=c++11", "-DICE_CPP11_MAPPING", "-w"])
        .arg(format!("-I{}", out.display()))
        .arg(format!("-I{}", src.join("include").display()))
        .arg(format!("-I{}", dir.display()))
        .arg("-o")
        .arg(out.join("client.tmp"))
        .arg(dir.join("Client.cpp"))
        .arg(dir.join("AllTests.cpp"))
        .arg(out.join("Test.cpp"))
        .arg(src.join("Common/TestHelper.cpp"));
    for extra in extra_sources {
        cmd.arg(dir.join(extra));
    }
    let output = cmd.args(["-lIce++11", "-lpthread"]).output().map_err(|e| format!("g++: {e}"))?;
    if !output.status.success() {
        return Err(format!("g++ failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    std::fs::rename(out.join("client.tmp"), &client).map_err(|e| e.to_string())?;
    Ok(client)
}

/// Runs one suite with one encoding; `Err` carries what went wrong and the processes' output.
fn run(suite: &Suite, encoding: &str, extra: &[&str]) -> Result<(), String> {
    run_client(suite, encoding, extra, &Client::Python)
}

fn run_client(suite: &Suite, encoding: &str, extra: &[&str], client: &Client) -> Result<(), String> {
    let dir = sources().join("Ice").join(suite.dir);
    assert!(dir.join("Client.py").exists(), "{} has no Client.py", dir.display());
    let base = port_base(suite.ports);
    let mut common: Vec<String> = DRIVER_PROPERTIES.iter().map(|s| s.to_string()).collect();
    common.push(format!("--Test.BasePort={base}"));
    common.push(format!("--Ice.Default.EncodingVersion={encoding}"));
    common.extend(extra.iter().map(|s| s.to_string()));

    let mut server = Command::new(suite.server)
        .args(&common)
        .args(SERVER_PROPERTIES)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", suite.server))?;
    let stdout = server.stdout.take().expect("stdout");
    let mut server_stderr = server.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = server_stderr.read_to_string(&mut s);
        s
    });
    let mut waiting: Vec<&str> = suite.adapters.to_vec();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !waiting.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => waiting.retain(|a| line.trim() != format!("{a} ready")),
            Err(_) => {
                kill(&mut server);
                let err = stderr_reader.join().unwrap_or_default();
                return Err(format!("server never printed `{} ready`; stderr:\n{err}", waiting[0]));
            }
        }
    }

    let mut command = match client {
        Client::Python => {
            let mut c = Command::new(PYTHON);
            c.current_dir(&dir)
                .env("PYTHONPATH", format!("{}:.", sources().display()))
                .arg(sources().join("TestHelper.py"))
                .arg("Client.py");
            c
        }
        Client::Cpp(binary) => Command::new(binary),
    };
    let client = command.args(&common).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut client = match client {
        Ok(c) => c,
        Err(e) => {
            kill(&mut server);
            return Err(format!("cannot start {PYTHON}: {e}"));
        }
    };
    let mut client_out = client.stdout.take().expect("stdout");
    let mut client_err = client.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = client_out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = client_err.read_to_string(&mut s);
        s
    });
    let client_status = wait_with_limit(&mut client, CLIENT_TIME_LIMIT);
    let server_status = wait_with_limit(&mut server, Duration::from_secs(15));
    let (out, err) = (out_reader.join().unwrap_or_default(), err_reader.join().unwrap_or_default());
    let server_err = stderr_reader.join().unwrap_or_default();
    let report = |what: String| {
        format!("{what}\n--- client stdout:\n{out}\n--- client stderr:\n{err}\n--- server stderr:\n{server_err}")
    };
    match client_status {
        None => return Err(report(format!("client still running after {CLIENT_TIME_LIMIT:?}"))),
        Some(s) if !s.success() => return Err(report(format!("client failed: {s}"))),
        Some(_) => {}
    }
    match server_status {
        None => Err(report("server did not exit after the client's shutdown()".into())),
        Some(s) if !s.success() => Err(report(format!("server failed: {s}"))),
        Some(_) => {
            eprintln!("{} / encoding {encoding}: passed\n{out}", suite.dir);
            Ok(())
        }
    }
}

fn check(suite: Suite, encoding: &str) {
    check_with(suite, encoding, &[]);
}

/// Runs a suite with extra properties for both the client and the server.
fn check_with(suite: Suite, encoding: &str, extra: &[&str]) {
    if let Err(e) = run(&suite, encoding, extra) {
        panic!("Ice/{} with encoding {encoding} {extra:?}: {e}", suite.dir);
    }
}

macro_rules! suite {
    ($dir:literal, $bin:literal, [$($adapter:literal),*], $ports:literal) => {
        Suite { dir: $dir, server: env!(concat!("CARGO_BIN_EXE_", $bin)), adapters: &[$($adapter),*], ports: $ports }
    };
}

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

/// The C++ client also checks per-adapter message size limits (TestAdapter2: none,
/// TestAdapter3: 1 KB), which the Python one does not.
#[test]
fn exceptions_cpp_client() {
    let client = cpp_client("exceptions", &["ExceptionsI.cpp"]).unwrap_or_else(|e| panic!("{e}"));
    for encoding in ["1.1", "1.0"] {
        let suite =
            suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3);
        if let Err(e) = run_client(&suite, encoding, &[], &Client::Cpp(client.clone())) {
            panic!("Ice/exceptions (C++ client) with encoding {encoding}: {e}");
        }
    }
}

/// The variant Ice's driver runs with the sliced format: exceptions (and their class members)
/// in slices with sizes.
#[test]
fn exceptions_1_1_sliced_format() {
    check_with(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
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

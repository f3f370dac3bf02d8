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
    /// Server processes: with more than one, each gets its number (1, 2, …) as its argument,
    /// and the client gets them all (as Ice's driver runs faultTolerance).
    servers: u16,
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

/// How to build the C++ client of a suite (as `cpp/test/Ice/<suite>/Makefile.mk` says): the
/// Slice files it compiles, in order, and its C++ sources besides Client.cpp and AllTests.cpp.
fn cpp_client_spec(suite: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match suite {
        "exceptions" => (&["Test.ice"], &["ExceptionsI.cpp"]),
        "timeout" | "info" => (&["Test.ice"], &["TestI.cpp"]),
        "operations" => (
            &["Test.ice"],
            &[
                "Twoways.cpp",
                "Oneways.cpp",
                "TwowaysAMI.cpp",
                "OnewaysAMI.cpp",
                "BatchOneways.cpp",
                "BatchOnewaysAMI.cpp",
            ],
        ),
        "objects" => (&["Forward.ice", "Test.ice", "Derived.ice", "DerivedEx.ice"], &["TestI.cpp"]),
        "slicing/exceptions" | "slicing/objects" => (&["Test.ice", "ClientPrivate.ice"], &[]),
        "servantLocator" => (&["Test.ice"], &["ServantLocatorI.cpp"]),
        _ => (&["Test.ice"], &[]),
    }
}

/// Where built C++ clients are kept: `<target>/ice-conformance/cpp-clients/<Ice version>/`,
/// keyed by the installed Ice (`slice2cpp --version`), so that they are built once per Ice
/// release rather than once per build directory or test run.
fn cpp_cache() -> Result<PathBuf, String> {
    let out = Command::new("slice2cpp").arg("--version").output().map_err(|e| format!("slice2cpp: {e}"))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string() + String::from_utf8_lossy(&out.stderr).trim();
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
        return Err(format!("unexpected slice2cpp version {version:?}"));
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().ok_or("no target directory")?;
    Ok(target.join("ice-conformance/cpp-clients").join(version))
}

/// Builds the C++ test client of a suite against Debian's libzeroc-ice-dev (slice2cpp and g++,
/// as ZeroC's makefiles do), once per Ice version (see [`cpp_cache`]). Builds run one at a
/// time in this process, each compiling two files at once.
fn cpp_client(suite: &str) -> Result<PathBuf, String> {
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let src = PathBuf::from(floe_conformance::ICE_TEST_SOURCES).join("cpp/test");
    let out = cpp_cache()?.join(suite.replace('/', "-"));
    let client = out.join("client");
    if client.exists() {
        return Ok(client);
    }
    let started = Instant::now();
    // A directory of this process's own, renamed into place at the end: another process
    // building the same client at the same time cannot see it half done.
    let work = out.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let dir = src.join("Ice").join(suite);
    let (slices, sources) = cpp_client_spec(suite);
    let mut units: Vec<PathBuf> =
        vec![dir.join("Client.cpp"), dir.join("AllTests.cpp"), src.join("Common/TestHelper.cpp")];
    units.extend(sources.iter().map(|f| dir.join(f)));
    for slice in slices {
        let status = Command::new("slice2cpp")
            .arg("-I/usr/share/ice/slice")
            .arg(format!("-I{}", dir.display()))
            .arg("--output-dir")
            .arg(&work)
            .arg(dir.join(slice))
            .status()
            .map_err(|e| format!("slice2cpp: {e}"))?;
        if !status.success() {
            return Err(format!("slice2cpp {slice} failed"));
        }
        units.push(work.join(slice.replace(".ice", ".cpp")));
    }
    let compile = |unit: &PathBuf, k: usize| -> Result<std::process::Child, String> {
        Command::new("g++")
            .args(["-c", "-O0", "-std=c++11", "-DICE_CPP11_MAPPING", "-w"])
            .arg(format!("-I{}", work.display()))
            .arg(format!("-I{}", src.join("include").display()))
            .arg(format!("-I{}", dir.display()))
            .arg("-o")
            .arg(work.join(format!("{k}.o")))
            .arg(unit)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("g++: {e}"))
    };
    let mut objects = Vec::new();
    for (pair, chunk) in units.chunks(2).enumerate() {
        let children: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, u)| compile(u, pair * 2 + i).map(|c| (u, c)))
            .collect::<Result<_, _>>()?;
        for (unit, child) in children {
            let output = child.wait_with_output().map_err(|e| format!("g++: {e}"))?;
            if !output.status.success() {
                return Err(format!("g++ {} failed:\n{}", unit.display(), String::from_utf8_lossy(&output.stderr)));
            }
        }
        objects.extend((0..chunk.len()).map(|i| work.join(format!("{}.o", pair * 2 + i))));
    }
    let mut link = Command::new("g++");
    link.arg("-o").arg(work.join("client")).args(&objects);
    if suite == "info" {
        link.arg("-lIceSSL++11");
    }
    let output = link.args(["-lIce++11", "-lpthread"]).output().map_err(|e| format!("g++: {e}"))?;
    if !output.status.success() {
        return Err(format!("linking the {suite} client failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    for o in &objects {
        let _ = std::fs::remove_file(o);
    }
    let _ = std::fs::remove_dir_all(&out);
    std::fs::rename(&work, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("built the C++ {suite} client in {:.0?}", started.elapsed());
    Ok(client)
}

/// Runs one suite with one encoding; `Err` carries what went wrong and the processes' output.
fn run(suite: &Suite, encoding: &str, extra: &[&str]) -> Result<(), String> {
    run_client(suite, encoding, extra, &Client::Python)
}

/// Starts a server of `suite` (with `number` as its argument, if any) and waits until it said
/// its adapters are ready; returns it and a thread collecting its stderr.
fn start_server(
    suite: &Suite,
    common: &[String],
    number: Option<&String>,
) -> Result<(Child, std::thread::JoinHandle<String>), String> {
    let mut server = Command::new(suite.server)
        .args(common)
        .args(SERVER_PROPERTIES)
        .args(number)
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
    Ok((server, stderr_reader))
}

fn run_client(suite: &Suite, encoding: &str, extra: &[&str], client: &Client) -> Result<(), String> {
    let dir = sources().join("Ice").join(suite.dir);
    assert!(dir.join("Client.py").exists(), "{} has no Client.py", dir.display());
    let base = port_base(suite.ports);
    let mut common: Vec<String> = DRIVER_PROPERTIES.iter().map(|s| s.to_string()).collect();
    common.push(format!("--Test.BasePort={base}"));
    common.push(format!("--Ice.Default.EncodingVersion={encoding}"));
    common.extend(extra.iter().map(|s| s.to_string()));

    let numbers: Vec<String> =
        if suite.servers > 1 { (1..=suite.servers).map(|n| n.to_string()).collect() } else { Vec::new() };
    let mut servers: Vec<(Child, std::thread::JoinHandle<String>)> = Vec::new();
    for k in 0..usize::from(suite.servers.max(1)) {
        let started = start_server(suite, &common, numbers.get(k));
        match started {
            Ok(server) => servers.push(server),
            Err(e) => {
                for (mut server, _) in servers {
                    kill(&mut server);
                }
                return Err(e);
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
    let client = command.args(&common).args(&numbers).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut client = match client {
        Ok(c) => c,
        Err(e) => {
            for (mut server, _) in servers {
                kill(&mut server);
            }
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
    let mut server_status = Some(std::process::ExitStatus::default());
    let mut server_err = String::new();
    for (mut server, stderr_reader) in servers {
        // Several servers are not waited for, as Ice's driver does not (faultTolerance's
        // client reaches the servers on test ports 0–11, which start at 1: the last one is
        // never told to go).
        let limit = if suite.servers > 1 { Duration::from_millis(500) } else { Duration::from_secs(15) };
        let status = wait_with_limit(&mut server, limit);
        if suite.servers > 1 {
            kill(&mut server);
            server_err += &stderr_reader.join().unwrap_or_default();
            continue;
        }
        if server_status.is_some_and(|s| s.success()) {
            server_status = status;
        }
        server_err += &stderr_reader.join().unwrap_or_default();
    }
    let (out, err) = (out_reader.join().unwrap_or_default(), err_reader.join().unwrap_or_default());
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

/// Runs a suite's C++ client (built once, see [`cpp_client`]) with extra properties for both
/// the client and the server.
fn check_cpp(suite: Suite, encoding: &str, extra: &[&str]) {
    let client = cpp_client(suite.dir).unwrap_or_else(|e| panic!("building the C++ {} client: {e}", suite.dir));
    if let Err(e) = run_client(&suite, encoding, extra, &Client::Cpp(client)) {
        panic!("Ice/{} (C++ client) with encoding {encoding} {extra:?}: {e}", suite.dir);
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
        Suite { dir: $dir, server: env!(concat!("CARGO_BIN_EXE_", $bin)), adapters: &[$($adapter),*], ports: $ports, servers: 1 }
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
/// adapter, and a `deactivate` after which the server is gone.
#[test]
fn adapter_deactivation_1_1() {
    check(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 1), "1.1");
}

#[test]
fn adapter_deactivation_1_0() {
    check(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 1), "1.0");
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

// Ice's C++ clients of the same suites (built once per Ice version, see `cpp_client`). The
// default run plays a fast subset: the clients that check what the Python ones do not (message
// size limits per adapter, unsupported encodings, the sliced format, 1.0 locator requests).
// The whole matrix: `cargo test -p floe-conformance --test suites -- --include-ignored cpp_`.

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_enums_1_1() {
    check_cpp(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_enums_1_0() {
    check_cpp(suite!("enums", "floe-conformance-enums", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_facets_1_1() {
    check_cpp(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_facets_1_0() {
    check_cpp(suite!("facets", "floe-conformance-facets", ["TestAdapter"], 1), "1.0", &[]);
}

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
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_exceptions_1_1_sliced_format() {
    check_cpp(
        suite!("exceptions", "floe-conformance-exceptions", ["TestAdapter", "TestAdapter2", "TestAdapter3"], 3),
        "1.1",
        &["--Ice.Default.SlicedFormat=1"],
    );
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_ami_1_1() {
    check_cpp(suite!("ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_ami_1_0() {
    check_cpp(suite!("ami", "floe-conformance-ami", ["TestAdapter", "ControllerAdapter"], 2), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_timeout_1_1() {
    check_cpp(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_timeout_1_0() {
    check_cpp(suite!("timeout", "floe-conformance-timeout", ["TestAdapter", "ControllerAdapter"], 2), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_inheritance_1_1() {
    check_cpp(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_inheritance_1_0() {
    check_cpp(suite!("inheritance", "floe-conformance-inheritance", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_operations_1_1() {
    check_cpp(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_operations_1_0() {
    check_cpp(suite!("operations", "floe-conformance-operations", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_objects_1_1() {
    check_cpp(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_objects_1_0() {
    check_cpp(suite!("objects", "floe-conformance-objects", ["TestAdapter"], 1), "1.0", &[]);
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
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_optional_1_1() {
    check_cpp(suite!("optional", "floe-conformance-optional", ["TestAdapter"], 1), "1.1", &[]);
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
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_slicing_exceptions_1_1() {
    check_cpp(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_slicing_exceptions_1_0() {
    check_cpp(suite!("slicing/exceptions", "floe-conformance-slicing-exceptions", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_slicing_objects_1_1() {
    check_cpp(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_slicing_objects_1_0() {
    check_cpp(suite!("slicing/objects", "floe-conformance-slicing-objects", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_servant_locator_1_1() {
    check_cpp(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_servant_locator_1_0() {
    check_cpp(suite!("servantLocator", "floe-conformance-servant-locator", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_binding_1_1() {
    check_cpp(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_binding_1_0() {
    check_cpp(suite!("binding", "floe-conformance-binding", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_acm_1_1() {
    check_cpp(suite!("acm", "floe-conformance-acm", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_acm_1_0() {
    check_cpp(suite!("acm", "floe-conformance-acm", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_info_1_1() {
    check_cpp(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_info_1_0() {
    check_cpp(suite!("info", "floe-conformance-info", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
fn cpp_location_1_1() {
    check_cpp(suite!("location", "floe-conformance-location", ["ServerManager"], 40), "1.1", &[]);
}

// No cpp_location_1_0: the C++ client's "locator encoding resolution" check counts on its
// locator cache for 1.1 proxies being filled, which holds only when 1.1 is its default (Ice's
// driver runs this suite with 1.1 only).

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_scope_1_1() {
    check_cpp(suite!("scope", "floe-conformance-scope", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_scope_1_0() {
    check_cpp(suite!("scope", "floe-conformance-scope", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_adapter_deactivation_1_1() {
    check_cpp(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 1), "1.1", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_adapter_deactivation_1_0() {
    check_cpp(suite!("adapterDeactivation", "floe-conformance-adapter-deactivation", ["TestAdapter"], 1), "1.0", &[]);
}

#[test]
#[ignore = "full C++ matrix: --include-ignored cpp_"]
fn cpp_fault_tolerance_1_1() {
    let suite =
        Suite { servers: 12, ..suite!("faultTolerance", "floe-conformance-fault-tolerance", ["TestAdapter"], 13) };
    check_cpp(suite, "1.1", &[]);
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

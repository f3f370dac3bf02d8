//! What the conformance tests share: starting a floe server as Ice's test driver does (same
//! properties, waits for its `<Adapter> ready` lines), running a suite's client (Python, or a
//! C++ one built once per Ice version) with a time limit, and requiring the client to exit 0
//! and the server to exit 0 after the client's `shutdown()`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The Python that has Debian's python3-zeroc-ice.
pub(crate) const PYTHON: &str = "/usr/bin/python3";
/// Properties Ice's test driver gives clients and servers.
pub(crate) const DRIVER_PROPERTIES: &[&str] =
    &["--Ice.Default.Host=127.0.0.1", "--Ice.Warn.Connections=1", "--Ice.Default.Protocol=tcp", "--Ice.IPv6=0"];
/// What the driver adds for servers.
pub(crate) const SERVER_PROPERTIES: &[&str] = &[
    "--Ice.ThreadPool.Server.Size=1",
    "--Ice.ThreadPool.Server.SizeMax=3",
    "--Ice.ThreadPool.Server.SizeWarn=0",
    "--Ice.PrintAdapterReady=1",
];
pub(crate) const CLIENT_TIME_LIMIT: Duration = Duration::from_secs(180);

/// A suite: its directory under python/test/Ice, the floe server binary, and the adapters whose
/// `ready` lines the runner waits for.
pub(crate) struct Suite {
    pub(crate) dir: &'static str,
    pub(crate) server: &'static str,
    pub(crate) adapters: &'static [&'static str],
    /// Test ports the server uses (from Test.BasePort).
    pub(crate) ports: u16,
    /// Server processes: with more than one, each gets its number (1, 2, …) as its argument,
    /// and the client gets them all (as Ice's driver runs faultTolerance).
    pub(crate) servers: u16,
}

pub(crate) fn sources() -> PathBuf {
    PathBuf::from(floe_conformance::ICE_TEST_SOURCES).join("python/test")
}

/// Hands out bases of free port ranges so that suites running in parallel never share ports.
pub(crate) fn port_base(count: u16) -> u16 {
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

pub(crate) fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

pub(crate) fn wait_with_limit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
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
pub(crate) enum Client {
    /// `python/test/Ice/<suite>/Client.py`.
    Python,
    /// A C++ client built from `cpp/test/Ice/<suite>` (see [`cpp_client`]).
    Cpp(PathBuf),
    /// A Java client built from `java/test/src/main/java/test/Ice/<suite>` (see
    /// [`java_client`]): its class directory and its class.
    Java(PathBuf, String),
}

/// Ice for Java from Debian's libzeroc-ice3.7-java.
pub(crate) const ICE_JAR: &str = "/usr/share/java/ice-3.7.8.jar";

/// The Slice files a suite's Java client compiles (the client's side of them).
pub(crate) fn java_client_slices(suite: &str) -> &'static [&'static str] {
    match suite {
        "objects" => &["Forward.ice", "Test.ice"],
        "slicing/objects" | "slicing/exceptions" => &["ClientPrivate.ice"],
        _ => &["Test.ice"],
    }
}

/// Builds the Java test client of a suite with slice2java and javac against Debian's Ice for
/// Java, once per Ice version, beside the C++ clients (see [`cpp_cache`]): javac compiles
/// `Client.java` and all the generated code, and from the source path the test sources the
/// client uses.
/// Returns the class directory and the client's class.
pub(crate) fn java_client(suite: &str) -> Result<(PathBuf, String), String> {
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let class = format!("test.Ice.{}.Client", suite.replace('/', "."));
    if !Path::new(ICE_JAR).exists() {
        return Err(format!("{ICE_JAR} is missing (Debian libzeroc-ice3.7-java: bash scripts/install-deps)"));
    }
    let src = PathBuf::from(floe_conformance::ICE_TEST_SOURCES).join("java/test/src/main/java");
    // `<target>/ice-conformance/java-clients/<Ice version>/<suite>`.
    let cpp = cpp_cache()?;
    let (version, cache) = (cpp.file_name().ok_or("no version")?, cpp.parent().and_then(Path::parent));
    let out = cache.ok_or("no cache directory")?.join("java-clients").join(version).join(suite.replace('/', "-"));
    if out.join("classes").join("test/TestDriver.class").exists() {
        return Ok((out.join("classes"), class));
    }
    let started = Instant::now();
    let work = out.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let (generated, classes) = (work.join("generated"), work.join("classes"));
    for d in [&generated, &classes] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let dir = src.join("test/Ice").join(suite);
    for slice in java_client_slices(suite) {
        let output = Command::new("slice2java")
            .arg("-I/usr/share/ice/slice")
            .arg(format!("-I{}", dir.display()))
            .arg("--output-dir")
            .arg(&generated)
            .arg(dir.join(slice))
            .output()
            .map_err(|e| format!("slice2java: {e}"))?;
        if !output.status.success() {
            return Err(format!("slice2java {slice} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
        }
    }
    // All the generated code, as Ice for Java finds classes by name (types it receives,
    // compact ids) that nothing in the client's sources names.
    let mut generated_sources = Vec::new();
    let mut dirs = vec![generated.clone()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "java") {
                generated_sources.push(path);
            }
        }
    }
    let output = Command::new("javac")
        .args(["-nowarn", "-encoding", "UTF-8", "-cp", ICE_JAR, "-sourcepath"])
        .arg(format!("{}:{}", src.display(), generated.display()))
        .arg("-d")
        .arg(&classes)
        .arg(src.join("test/TestDriver.java"))
        .arg(dir.join("Client.java"))
        .args(&generated_sources)
        .output()
        .map_err(|e| format!("javac: {e}"))?;
    if !output.status.success() {
        return Err(format!("javac of the {suite} client failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.parent().ok_or("no parent")?).map_err(|e| e.to_string())?;
    std::fs::rename(&work, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("built the Java {suite} client in {:.0?}", started.elapsed());
    Ok((out.join("classes"), class))
}

/// How to build the C++ client of a suite (as `cpp/test/Ice/<suite>/Makefile.mk` says): the
/// Slice files it compiles, in order, and its C++ sources besides Client.cpp and AllTests.cpp.
pub(crate) fn cpp_client_spec(suite: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match suite {
        "exceptions" => (&["Test.ice"], &["ExceptionsI.cpp"]),
        "timeout" | "info" | "admin" => (&["Test.ice"], &["TestI.cpp"]),
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
        "dispatcher" => (&["Test.ice"], &["Dispatcher.cpp"]),
        "checksum" => (&["Test.ice", "ClientTypes.ice"], &[]),
        _ => (&["Test.ice"], &[]),
    }
}

/// The options a suite's Makefile.mk gives slice2cpp (`$(test)_sliceflags`).
pub(crate) fn cpp_slice_flags(suite: &str) -> &'static [&'static str] {
    match suite {
        "checksum" => &["--checksum"],
        _ => &[],
    }
}

/// Where built C++ clients are kept: `<target>/ice-conformance/cpp-clients/<Ice version>/`,
/// keyed by the installed Ice (`slice2cpp --version`), so that they are built once per Ice
/// release rather than once per build directory or test run.
pub(crate) fn cpp_cache() -> Result<PathBuf, String> {
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
pub(crate) fn cpp_client(suite: &str) -> Result<PathBuf, String> {
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
            .args(cpp_slice_flags(suite))
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
    let includes = [work.clone(), src.join("include"), dir.clone()];
    let objects = compile_units(&units, &work, &["-std=c++11", "-DICE_CPP11_MAPPING"], &includes)?;
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
pub(crate) fn run(suite: &Suite, encoding: &str, extra: &[&str]) -> Result<(), String> {
    run_client(suite, encoding, extra, &Client::Python)
}

/// Starts a server of `suite` (with `number` as its argument, if any) and waits until it said
/// its adapters are ready; returns it and a thread collecting its stderr.
pub(crate) fn start_server(
    suite: &Suite,
    common: &[String],
    server_extra: &[String],
    number: Option<&String>,
) -> Result<(Child, std::thread::JoinHandle<String>), String> {
    let mut server = Command::new(suite.server)
        .args(common)
        .args(SERVER_PROPERTIES)
        .args(server_extra)
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

pub(crate) fn run_client(suite: &Suite, encoding: &str, extra: &[&str], client: &Client) -> Result<(), String> {
    run_sides(suite, encoding, extra, &[], &[], client)
}

/// Runs one suite with `extra` properties for both sides, and `server_extra` and
/// `client_extra` for one side each.
pub(crate) fn run_sides(
    suite: &Suite,
    encoding: &str,
    extra: &[&str],
    server_extra: &[String],
    client_extra: &[String],
    client: &Client,
) -> Result<(), String> {
    // The info suite's client binds `default -h * -p 15000` itself (AllTests), whatever
    // Test.BasePort says: its runs (each encoding and transport) take turns.
    static FIXED_PORT_15000: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = (suite.dir == "info").then(|| FIXED_PORT_15000.lock().unwrap_or_else(|p| p.into_inner()));
    let dir = sources().join("Ice").join(suite.dir);
    if matches!(client, Client::Python) {
        assert!(dir.join("Client.py").exists(), "{} has no Client.py", dir.display());
    }
    let base = port_base(suite.ports);
    let mut common: Vec<String> = DRIVER_PROPERTIES.iter().map(|s| s.to_string()).collect();
    common.push(format!("--Test.BasePort={base}"));
    common.push(format!("--Ice.Default.EncodingVersion={encoding}"));
    common.extend(extra.iter().map(|s| s.to_string()));

    let numbers: Vec<String> =
        if suite.servers > 1 { (1..=suite.servers).map(|n| n.to_string()).collect() } else { Vec::new() };
    let mut servers: Vec<(Child, std::thread::JoinHandle<String>)> = Vec::new();
    for k in 0..usize::from(suite.servers.max(1)) {
        let started = start_server(suite, &common, server_extra, numbers.get(k));
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
        Client::Java(classes, class) => {
            let mut c = Command::new("java");
            c.arg(format!("-Dtest.class={class}"))
                .arg("-cp")
                .arg(format!("{}:{ICE_JAR}", classes.display()))
                .arg("test.TestDriver");
            c
        }
    };
    let client =
        command.args(&common).args(client_extra).args(&numbers).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut client = match client {
        Ok(c) => c,
        Err(e) => {
            for (mut server, _) in servers {
                kill(&mut server);
            }
            return Err(format!("cannot start the client: {e}"));
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
pub(crate) fn check_cpp(suite: Suite, encoding: &str, extra: &[&str]) {
    let client = cpp_client(suite.dir).unwrap_or_else(|e| panic!("building the C++ {} client: {e}", suite.dir));
    if let Err(e) = run_client(&suite, encoding, extra, &Client::Cpp(client)) {
        panic!("Ice/{} (C++ client) with encoding {encoding} {extra:?}: {e}", suite.dir);
    }
}

/// [`check_cpp`] with properties for the server only.
pub(crate) fn check_cpp_server_with(suite: Suite, encoding: &str, server_extra: &[&str]) {
    let client = cpp_client(suite.dir).unwrap_or_else(|e| panic!("building the C++ {} client: {e}", suite.dir));
    let server_extra: Vec<String> = server_extra.iter().map(|s| s.to_string()).collect();
    if let Err(e) = run_sides(&suite, encoding, &[], &server_extra, &[], &Client::Cpp(client)) {
        panic!("Ice/{} (C++ client) with encoding {encoding}, server {server_extra:?}: {e}", suite.dir);
    }
}

/// Runs a suite's Java client (built once, see [`java_client`]) with extra properties for both
/// the client and the server.
pub(crate) fn check_java(suite: Suite, encoding: &str, extra: &[&str]) {
    let (classes, class) =
        java_client(suite.dir).unwrap_or_else(|e| panic!("building the Java {} client: {e}", suite.dir));
    if let Err(e) = run_client(&suite, encoding, extra, &Client::Java(classes, class)) {
        panic!("Ice/{} (Java client) with encoding {encoding} {extra:?}: {e}", suite.dir);
    }
}

pub(crate) fn check(suite: Suite, encoding: &str) {
    check_with(suite, encoding, &[]);
}

/// Runs a suite with extra properties for both the client and the server.
pub(crate) fn check_with(suite: Suite, encoding: &str, extra: &[&str]) {
    if let Err(e) = run(&suite, encoding, extra) {
        panic!("Ice/{} with encoding {encoding} {extra:?}: {e}", suite.dir);
    }
}

/// The test certificates beside the repository (`../shared/certs`).
pub(crate) fn certs() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/certs");
    assert!(dir.join("ca.pem").exists(), "test certificates missing at {}", dir.display());
    dir.to_str().expect("UTF-8 path").to_string()
}

/// Runs a suite as Ice's driver does with `--protocol=<protocol>`: `Ice.Default.Protocol`
/// for both sides and, for ssl and wss, the IceSSL plugin with the test certificates
/// (`server.p12` for the server, `client.p12` for the client, the CA in `ca.pem`).
pub(crate) fn check_protocol(suite: Suite, protocol: &str) {
    check_protocol_with(suite, protocol, &[]);
}

/// [`check_protocol`] with more properties for the server.
pub(crate) fn check_protocol_with(suite: Suite, protocol: &str, server_more: &[&str]) {
    let default = format!("--Ice.Default.Protocol={protocol}");
    let ssl = |cert: &str| -> Vec<String> {
        if !matches!(protocol, "ssl" | "wss") {
            return Vec::new();
        }
        vec![
            "--Ice.Plugin.IceSSL=IceSSL:createIceSSL".into(),
            "--IceSSL.Password=password".into(),
            format!("--IceSSL.DefaultDir={}", certs()),
            "--IceSSL.CAs=ca.pem".into(),
            format!("--IceSSL.CertFile={cert}"),
        ]
    };
    let mut server = ssl("server.p12");
    server.extend(server_more.iter().map(|s| s.to_string()));
    if let Err(e) = run_sides(&suite, "1.1", &[&default], &server, &ssl("client.p12"), &Client::Python) {
        panic!("Ice/{} over {protocol}: {e}", suite.dir);
    }
}

/// A [`Suite`] whose server is the binary `$bin` of this crate.
macro_rules! suite {
    ($dir:literal, $bin:literal, [$($adapter:literal),*], $ports:literal) => {
        Suite { dir: $dir, server: env!(concat!("CARGO_BIN_EXE_", $bin)), adapters: &[$($adapter),*], ports: $ports, servers: 1 }
    };
}

/// Compiles `units` with g++ (`-c -O0 -w`, `flags`, `-I` each of `includes`) into
/// `work/<k>.o`, two at a time (the machine's two cores); the object files, in order.
pub(crate) fn compile_units(
    units: &[PathBuf],
    work: &Path,
    flags: &[&str],
    includes: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let compile = |unit: &PathBuf, k: usize| -> Result<std::process::Child, String> {
        Command::new("g++")
            .args(["-c", "-O0", "-w"])
            .args(flags)
            .args(includes.iter().map(|i| format!("-I{}", i.display())))
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
    Ok(objects)
}

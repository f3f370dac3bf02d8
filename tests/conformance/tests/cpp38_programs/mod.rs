//! Ice 3.8.2's own C++ test programs, built from the suites of its source tarball
//! (`cpp/test/Ice/<suite>`) against the Ice 3.8 core that `scripts/build-ice38` builds: a
//! suite's client (to play against the floe servers of this crate) or its server (for floe's
//! client checks). Built as Ice's makefiles build them (the sources and Slice files the
//! suite's `Makefile.mk` lists, else the defaults of `config/Make.tests.rules`; `TestHelper.cpp`
//! of `cpp/test/Common`; slice2cpp of 3.8; C++17), once per Ice version, into
//! `target/ice-conformance/cpp-clients/<version>/<suite>/` (servers beside them in
//! `cpp-servers/`). Nothing of Ice's is committed: the sources are read from the built tree.

#[path = "../../../support/ice38.rs"]
mod ice38;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use crate::runner::{compile_units, run_sides, Client, Suite};

/// Which of a suite's programs to build.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    /// `Client.cpp` and `AllTests.cpp`.
    Client,
    /// `Server.cpp` and its servants.
    Server,
}

impl Role {
    fn cache_dir(self) -> &'static str {
        match self {
            Role::Client => "cpp-clients",
            Role::Server => "cpp-servers",
        }
    }

    fn binary(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
        }
    }
}

/// The Slice files and C++ sources of a suite's program, as its 3.8 `Makefile.mk` lists them
/// (`<suite>_client_sources`, `<suite>_server_sources`), else Ice's defaults:
/// `Client.cpp *Test.ice AllTests.cpp` and `Server.cpp *Test.ice TestI.cpp`.
pub(crate) fn program_spec(suite: &str, role: Role) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut slices = vec!["Test.ice"];
    let mut sources: Vec<&'static str> = match role {
        Role::Client => vec!["Client.cpp", "AllTests.cpp"],
        Role::Server => vec!["Server.cpp", "TestI.cpp"],
    };
    match (suite, role) {
        ("timeout" | "info", Role::Client) => sources.push("TestI.cpp"),
        ("operations", Role::Client) => sources.extend([
            "Twoways.cpp",
            "Oneways.cpp",
            "TwowaysAMI.cpp",
            "OnewaysAMI.cpp",
            "BatchOneways.cpp",
            "BatchOnewaysAMI.cpp",
        ]),
        ("objects", _) => {
            slices = vec!["Forward.ice", "Test.ice", "Derived.ice", "DerivedEx.ice"];
            sources.push(if role == Role::Client { "TestI.cpp" } else { "TestIntfI.cpp" });
        }
        ("slicing/objects", Role::Client) => slices.push("ClientPrivate.ice"),
        ("slicing/objects" | "slicing/exceptions", Role::Server) => slices.push("ServerPrivate.ice"),
        ("servantLocator", _) | ("adapterDeactivation", Role::Server) => sources.push("ServantLocatorI.cpp"),
        ("location", Role::Server) => sources.push("ServerLocator.cpp"),
        ("executor", _) => sources.push("Executor.cpp"),
        _ => {}
    }
    (slices, sources)
}

/// The `cpp` directory of the built Ice 3.8 tree.
pub(crate) fn ice38_cpp() -> &'static Path {
    ice38::cpp_dir()
}

/// `cpp/test/Ice/<suite>` of Ice 3.8.
pub(crate) fn suite_dir(suite: &str) -> PathBuf {
    ice38_cpp().join("test/Ice").join(suite)
}

/// The Ice version of the built tree, from its slice2cpp (`3.8.2`).
fn version() -> Result<String, String> {
    let slice2cpp = ice38_cpp().join("bin/slice2cpp");
    let out =
        Command::new(&slice2cpp).arg("--version").output().map_err(|e| format!("{}: {e}", slice2cpp.display()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string() + String::from_utf8_lossy(&out.stderr).trim();
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
        return Err(format!("unexpected slice2cpp version {version:?}"));
    }
    Ok(version)
}

/// Builds (once per Ice version) and returns a suite's Ice 3.8 C++ client or server. Builds
/// run one at a time in this process, each compiling two files at once; a finished program
/// is renamed into place, so that another process building it at the same time never sees
/// half of one.
pub(crate) fn program(suite: &str, role: Role) -> Result<PathBuf, String> {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().ok_or("no target directory")?;
    let out = target.join("ice-conformance").join(role.cache_dir()).join(version()?).join(suite.replace('/', "-"));
    let binary = out.join(role.binary());
    if binary.exists() {
        return Ok(binary);
    }
    let started = Instant::now();
    let cpp = ice38_cpp();
    let dir = suite_dir(suite);
    if !dir.is_dir() {
        return Err(format!("Ice 3.8 has no suite {suite} ({} is missing)", dir.display()));
    }
    let work = out.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let (slices, sources) = program_spec(suite, role);
    let mut units: Vec<PathBuf> = sources.iter().map(|f| dir.join(f)).collect();
    units.push(cpp.join("test/Common/TestHelper.cpp"));
    for slice in slices {
        let output = Command::new(cpp.join("bin/slice2cpp"))
            .arg(format!("-I{}", cpp.join("../slice").display()))
            .arg(format!("-I{}", dir.display()))
            .arg("--output-dir")
            .arg(&work)
            .arg(dir.join(slice))
            .output()
            .map_err(|e| format!("slice2cpp: {e}"))?;
        if !output.status.success() {
            return Err(format!("slice2cpp {slice} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
        }
        units.push(work.join(slice.replace(".ice", ".cpp")));
    }
    let includes =
        [work.clone(), dir.clone(), cpp.join("test/include"), cpp.join("include"), cpp.join("include/generated")];
    let objects = compile_units(&units, &work, &["-std=c++17"], &includes)?;
    let lib = ice38::lib_dir();
    let output = Command::new("g++")
        .arg("-o")
        .arg(work.join(role.binary()))
        .args(&objects)
        .arg(format!("-L{}", lib.display()))
        .arg("-lIce")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lpthread")
        .output()
        .map_err(|e| format!("g++: {e}"))?;
    if !output.status.success() {
        return Err(format!("linking the {suite} {role:?} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    for o in &objects {
        let _ = std::fs::remove_file(o);
    }
    let _ = std::fs::remove_dir_all(&out);
    std::fs::rename(&work, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("built the Ice 3.8 C++ {suite} {role:?} in {:.0?}", started.elapsed());
    Ok(binary)
}

/// Runs a suite's Ice 3.8 C++ client against its floe server with `extra` properties for
/// both sides and `server_extra` for the server only.
pub(crate) fn check_cpp38_sides(suite: Suite, encoding: &str, extra: &[&str], server_extra: &[&str]) {
    let client = program(suite.dir, Role::Client)
        .unwrap_or_else(|e| panic!("building the Ice 3.8 C++ {} client: {e}", suite.dir));
    let server_extra: Vec<String> = server_extra.iter().map(|s| s.to_string()).collect();
    if let Err(e) = run_sides(&suite, encoding, extra, &server_extra, &[], &Client::Cpp(client)) {
        panic!("Ice 3.8 {} (C++ client) with encoding {encoding} {extra:?} {server_extra:?}: {e}", suite.dir);
    }
}

/// [`check_cpp38_sides`] with properties for both sides only.
pub(crate) fn check_cpp38(suite: Suite, encoding: &str, extra: &[&str]) {
    check_cpp38_sides(suite, encoding, extra, &[]);
}

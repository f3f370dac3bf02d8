//! floe's client against ZeroC Ice 3.7.8's own servers: Rust ports of the client checks
//! (`AllTests.py`) of Ice's suites, run against each suite's unmodified Python server, and
//! one of them (`exceptions_ice38_cpp_server`) against Ice 3.8.2's C++ server of the suite
//! (the others against 3.8 servers are in `cpp38_matrix.rs`). See `client_side/mod.rs` for
//! how a port is run, and each suite's module for what it checks.

#[macro_use]
#[allow(unused_macros)]
mod runner;
#[path = "client_side/mod.rs"]
mod client_side;
#[path = "cpp38_programs/mod.rs"]
#[allow(dead_code)]
mod cpp38_programs;

use client_side::{run, Setup};

fn operations(encoding: &str) {
    let setup = Setup {
        dir: "operations",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding,
        extra: &[],
        client_extra: &["--Ice.BatchAutoFlushSize=100"],
    };
    run(setup, client_side::operations::all_tests);
}

#[test]
fn operations_1_1() {
    operations("1.1");
}

#[test]
fn operations_1_0() {
    operations("1.0");
}

fn exceptions(encoding: &str) {
    let setup = Setup {
        dir: "exceptions",
        script: "Server.py",
        adapters: &["TestAdapter", "TestAdapter2", "TestAdapter3"],
        ports: 3,
        encoding,
        extra: &[],
        client_extra: &["--Ice.MessageSizeMax=10", "--Ice.Warn.Connections=0"],
    };
    run(setup, client_side::exceptions::all_tests);
}

#[test]
fn exceptions_1_1() {
    exceptions("1.1");
}

#[test]
fn exceptions_1_0() {
    exceptions("1.0");
}

/// Ice's proxy client checks proxy strings against the 1.1 default: 1.1 only, as for Ice's
/// own client against floe's server.
#[test]
fn proxy_1_1() {
    let setup = Setup {
        dir: "proxy",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding: "1.1",
        extra: &[],
        client_extra: &["--Ice.Warn.Connections=0"],
    };
    run(setup, client_side::proxy::all_tests);
}

/// Ice's binding server listens on fixed ports (10002 and up, one more per adapter): one run
/// at a time.
fn binding(encoding: &str) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let setup = Setup {
        dir: "binding",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding,
        extra: &[],
        client_extra: &[],
    };
    run(setup, client_side::binding::all_tests);
}

#[test]
fn binding_1_1() {
    binding("1.1");
}

#[test]
fn binding_1_0() {
    binding("1.0");
}

fn objects(encoding: &str, extra: &[&str]) {
    let setup = Setup {
        dir: "objects",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding,
        extra,
        // The graphs have cycles: Ice's C++ client of the suite accepts them the same way.
        client_extra: &["--Ice.AcceptClassCycles=1"],
    };
    run(setup, client_side::objects::all_tests);
}

#[test]
fn objects_1_1() {
    objects("1.1", &[]);
}

/// As Ice's driver runs objects with the sliced format (on both sides).
#[test]
fn objects_1_1_sliced_format() {
    objects("1.1", &["--Ice.Default.SlicedFormat=1"]);
}

#[test]
fn objects_1_0() {
    objects("1.0", &[]);
}

/// Encoding 1.1 only: the checks use 1.0 themselves where they apply (1.0 drops optionals).
#[test]
fn optional_1_1() {
    let setup = Setup {
        dir: "optional",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding: "1.1",
        extra: &[],
        client_extra: &[],
    };
    run(setup, client_side::optional::all_tests);
}

fn location(encoding: &str) {
    let setup = Setup {
        dir: "location",
        script: "Server.py",
        // The object server moves to two new test ports at each restart, and the checks use
        // port 99 for an endpoint where nothing listens.
        adapters: &["ServerManager"],
        ports: 100,
        encoding,
        extra: &[],
        client_extra: &[],
    };
    run(setup, |h| {
        // As Ice's client of the suite: the server's locator is the default locator.
        let mut args = h.args.clone();
        args.push(format!("--Ice.Default.Locator=locator:{}", h.endpoint(0)));
        let (communicator, _) = floe::Communicator::from_args(args).expect("communicator");
        let h = client_side::Helper { communicator, base: h.base, args: h.args };
        async move {
            let c = h.communicator.clone();
            client_side::location::all_tests(h).await;
            c.destroy().await;
        }
    });
}

#[test]
fn location_1_1() {
    location("1.1");
}

#[test]
fn location_1_0() {
    location("1.0");
}

/// A class instance that is both a required and an optional member of an exception keeps its
/// own optional member (floe's decoder used to look up the exception slice's flags, not the
/// instance's; see `client_side::optional::required_exception_members`).
#[test]
fn optional_required_exception_members() {
    let setup = Setup {
        dir: "optional",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding: "1.1",
        extra: &[],
        client_extra: &[],
    };
    run(setup, client_side::optional::required_exception_members);
}

fn optional_with<F, Fut>(extra: &[&str], checks: F)
where
    F: FnOnce(client_side::Helper) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let setup = Setup {
        dir: "optional",
        script: "Server.py",
        adapters: &["TestAdapter"],
        ports: 1,
        encoding: "1.1",
        extra,
        // As Ice's C++ client of the suite (Ice for Python always accepts them): `mo8.k = mo8`.
        client_extra: &["--Ice.AcceptClassCycles=1"],
    };
    run(setup, checks);
}

/// The optional data members of classes (`client_side::optional::data_members`).
#[test]
fn optional_class_data_members() {
    optional_with(&[], client_side::optional::data_members);
}

/// The same with the sliced format on both sides, as Ice's driver also runs optional, after
/// the check that needs it (unknown class slices).
#[test]
fn optional_class_data_members_sliced_format() {
    optional_with(&["--Ice.Default.SlicedFormat=1"], |h| async move {
        client_side::optional::unknown_class_slices(&h).await;
        client_side::optional::data_members(h).await;
    });
}

/// The exceptions checks against Ice 3.8.2's C++ exceptions server, built from its source
/// tarball (the other suites against Ice 3.8 servers are in `cpp38_matrix.rs`).
#[test]
fn exceptions_ice38_cpp_server() {
    let setup = Setup {
        dir: "exceptions",
        script: "Server.cpp",
        adapters: &["TestAdapter", "TestAdapter2", "TestAdapter3"],
        ports: 3,
        encoding: "1.1",
        extra: &[],
        client_extra: &["--Ice.MessageSizeMax=10", "--Ice.Warn.Connections=0"],
    };
    let server = cpp38_programs::program("exceptions", cpp38_programs::Role::Server)
        .unwrap_or_else(|e| panic!("building the Ice 3.8 C++ exceptions server: {e}"));
    let cwd = cpp38_programs::suite_dir("exceptions");
    client_side::run_program(setup, &server, &cwd, client_side::exceptions::all_tests);
}

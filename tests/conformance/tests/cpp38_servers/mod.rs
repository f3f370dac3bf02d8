//! floe's client against Ice 3.8.2's own C++ test servers (`cpp/test/Ice/<suite>/Server.cpp`,
//! built by `cpp38_programs`): the Rust ports of the client checks that `client_side.rs` runs
//! against Ice 3.7's Python servers, here against the 3.8 server of each suite whose 3.8
//! server still answers them (the others, and why, are in this crate's README), with the
//! encodings and formats Ice 3.8's driver plays. A module of the Ice 3.8 matrix
//! (`cargo test -p floe-conformance --test cpp38_matrix`); `client_side.rs` runs one of these
//! in the default run.

use crate::client_side::{self, run_program, Setup};
use crate::cpp38_programs::{program, suite_dir, Role};

/// Runs `checks` against the 3.8 C++ server of `setup.dir`.
pub(crate) fn run_38<F, Fut>(setup: Setup<'_>, checks: F)
where
    F: FnOnce(client_side::Helper) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let server = program(setup.dir, Role::Server)
        .unwrap_or_else(|e| panic!("building the Ice 3.8 C++ {} server: {e}", setup.dir));
    let cwd = suite_dir(setup.dir);
    run_program(setup, &server, &cwd, checks);
}

fn setup<'a>(dir: &'a str, adapters: &'a [&'a str], ports: u16, encoding: &'a str) -> Setup<'a> {
    Setup { dir, script: "Server.cpp", adapters, ports, encoding, extra: &[], client_extra: &[] }
}

pub(crate) fn floe_client_exceptions_checks(encoding: &str, extra: &[&str]) {
    let setup = Setup {
        extra,
        client_extra: &["--Ice.MessageSizeMax=10", "--Ice.Warn.Connections=0"],
        ..setup("exceptions", &["TestAdapter", "TestAdapter2", "TestAdapter3"], 3, encoding)
    };
    run_38(setup, client_side::exceptions::all_tests);
}

#[test]
fn floe_client_exceptions() {
    floe_client_exceptions_checks("1.1", &[]);
}

#[test]
fn floe_client_exceptions_sliced_format() {
    floe_client_exceptions_checks("1.1", &["--Ice.Default.SlicedFormat=1"]);
}

#[test]
fn floe_client_exceptions_1_0() {
    floe_client_exceptions_checks("1.0", &[]);
}

/// Ice 3.8's binding server puts the adapters it is asked for on test ports 1, 2, ….
#[test]
fn floe_client_binding() {
    run_38(setup("binding", &["TestAdapter"], 100, "1.1"), client_side::binding::all_tests);
}

/// The object server moves to two new test ports at each restart, and the checks use port
/// 99 for an endpoint where nothing listens.
#[test]
fn floe_client_location() {
    run_38(setup("location", &["ServerManager"], 100, "1.1"), |h| {
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

/// 1.1 only, as for the 3.7 server (the checks compare proxy strings against the 1.1
/// default).
#[test]
fn floe_client_proxy() {
    run_38(setup("proxy", &["TestAdapter"], 1, "1.1"), client_side::proxy::all_tests_ssl_server);
}

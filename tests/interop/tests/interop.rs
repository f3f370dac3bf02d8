//! The interop matrix, run by `cargo test`: floe client ↔ floe server, floe client ↔ real
//! ZeroC Ice 3.7 servers (Python, and C++: floe-bench's `peers/ice-tester`), and real Ice 3.7
//! clients (Python and C++) ↔ floe server.
//! The Ice programs come from Debian's packages, installed by scripts/install-deps.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{free_port, run_client, start, start_until, Server};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A floe program on a multi-thread runtime of two workers. Its default is one thread, which
/// busy-polls before it sleeps; the tests run both.
const TWO_THREADS: &str = "--Floe.Runtime.Threads=2";

fn floe_server(port: u16, extra: &[&str]) -> Server {
    common::floe_server(&format!("tcp -h 127.0.0.1 -p {port}"), extra)
}

fn python_server(port: u16) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/server.py")).args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}")]);
    start(cmd)
}

fn floe_client(port: u16) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-interop-client"));
    cmd.args(["--proxy", &format!("tester:tcp -h 127.0.0.1 -p {port}")]);
    cmd
}

fn python_client(port: u16) -> Command {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/client.py")).args(["--proxy", &format!("tester:tcp -h 127.0.0.1 -p {port}")]);
    cmd
}

fn cpp_client(port: u16) -> Command {
    let mut cmd = Command::new(build_cpp_client());
    cmd.args(["--proxy", &format!("tester:tcp -h 127.0.0.1 -p {port}")]);
    cmd
}

/// Runs `client` against a floe server started with `server_args` until the client's checks
/// are done and it has shut the server down.
fn against_floe_server(client: fn(u16) -> Command, min_checks: usize, server_args: &[&str]) {
    let port = free_port();
    let mut server = floe_server(port, server_args);
    run_client(client(port), min_checks);
    wait_exit(&mut server);
}

fn wait_exit(server: &mut Server) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = server.0.try_wait().unwrap() {
            assert!(status.success(), "server exited with {status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("server did not exit after shutdown()");
}

#[test]
fn floe_client_against_floe_server() {
    against_floe_server(floe_client, 160, &[]);
}

/// Runs the floe client, given `client_args`, against the Ice Python server until its checks
/// are done and it has shut the server down.
fn floe_client_against_python_server(client_args: &[&str]) {
    let port = free_port();
    let mut server = python_server(port);
    let mut client = floe_client(port);
    client.args(client_args);
    run_client(client, 160);
    wait_exit(&mut server);
}

/// The Ice C++ server of tests/interop/Test.ice (floe-bench's `peers/ice-tester`, built once
/// per test process against Debian's libzeroc-ice-dev).
fn cpp_server(port: u16) -> Server {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let binary = BUILT.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp-server");
        let status = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(root().join("../../crates/floe-bench/peers/ice-tester"))
            .arg(format!("OUT={}", out.display()))
            .status()
            .expect("make runs");
        assert!(status.success(), "building the C++ server failed");
        out.join("ice-tester-server")
    });
    let mut cmd = Command::new(binary);
    cmd.arg(port.to_string());
    start_until(cmd, "ready")
}

#[test]
fn floe_client_against_ice_cpp_server() {
    let port = free_port();
    let mut server = cpp_server(port);
    run_client(floe_client(port), 160);
    wait_exit(&mut server);
}

#[test]
fn floe_client_on_two_threads_against_ice_cpp_server() {
    let port = free_port();
    let mut server = cpp_server(port);
    let mut client = floe_client(port);
    client.arg(TWO_THREADS);
    run_client(client, 160);
    wait_exit(&mut server);
}

#[test]
fn floe_client_against_ice_python_server() {
    floe_client_against_python_server(&[]);
}

#[test]
fn floe_client_on_two_threads_against_ice_python_server() {
    floe_client_against_python_server(&[TWO_THREADS]);
}

#[test]
fn ice_python_client_against_floe_server() {
    against_floe_server(python_client, 140, &[]);
}

#[test]
fn ice_python_client_against_floe_server_on_two_threads() {
    against_floe_server(python_client, 140, &[TWO_THREADS]);
}

#[test]
fn ice_cpp_client_against_floe_server() {
    against_floe_server(cpp_client, 60, &[]);
}

#[test]
fn ice_cpp_client_against_floe_server_on_two_threads() {
    against_floe_server(cpp_client, 60, &[TWO_THREADS]);
}

/// Builds the C++ client against Debian's libzeroc-ice-dev into target/.
/// (Once per test process: the tests that run it in parallel share the build.)
fn build_cpp_client() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp-client");
            let status = Command::new("make")
                .arg("-s")
                .arg("-C")
                .arg(root().join("cpp"))
                .arg(format!("OUT={}", out.display()))
                .status()
                .expect("make runs");
            assert!(status.success(), "building the C++ client failed");
            out.join("client")
        })
        .clone()
}

/// ZeroC's Python IceMX client reads a floe server's metrics view (`IceMX.Metrics.ByOp.*`):
/// the dispatches it made, counted by operation, with the failure of a call on an object that
/// does not exist, an unknown view refused, and the view disabled.
#[test]
fn ice_reads_a_floe_servers_metrics_view() {
    let (port, admin) = (free_port(), free_port());
    let _server = floe_server(
        port,
        &[
            &format!("--Ice.Admin.Endpoints=tcp -h 127.0.0.1 -p {admin}"),
            "--Ice.Admin.InstanceName=server",
            "--IceMX.Metrics.ByOp.GroupBy=operation",
            "--IceMX.Metrics.Off.GroupBy=id",
            "--IceMX.Metrics.Off.Disabled=1",
        ],
    );
    let out = Command::new("/usr/bin/python3")
        .arg(root().join("python/metrics_view.py"))
        .args([port.to_string(), admin.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "views ByOp / Off", "{text}");
    assert!(lines.contains(&"dispatch ice_ping total 6 failures 1 DispatchMetrics"), "{text}");
    assert!(lines.contains(&"failure ice_ping [('::Ice::ObjectNotExistException', 1)]"), "{text}");
    assert!(lines.contains(&"unknown view refused"), "{text}");
    assert_eq!(lines.last(), Some(&"after disable  / ByOp,Off"), "{text}");
}

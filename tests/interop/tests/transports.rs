//! The interop matrix over the ssl, ws and wss transports, against real ZeroC Ice 3.7 (C++
//! and Python, with the IceSSL plugin) in both directions, with the test certificates of
//! `../shared/certs` beside the repository; and the certificate checks between floe and Ice.
//!
//! In the matrix the floe server does not ask for client certificates (`IceSSL.VerifyPeer=0`):
//! its `callEcho` check has it call its own objects, and the test server certificate is for
//! server authentication only, so it cannot be presented as a client's (OpenSSL refuses it
//! the same way). Client certificates are checked both ways by the tests after the matrix.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, run_client, start, start_until, Server};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn certs() -> String {
    let dir = root().join("../../../shared/certs");
    assert!(dir.join("ca.pem").exists(), "test certificates missing at {}", dir.display());
    dir.to_str().unwrap().to_string()
}

/// IceSSL properties for a floe program: the test CA and `cert` (a PKCS#12 file).
fn floe_ssl(cert: &str) -> Vec<String> {
    vec![
        format!("--IceSSL.DefaultDir={}", certs()),
        "--IceSSL.CAs=ca.pem".into(),
        format!("--IceSSL.CertFile={cert}"),
        "--IceSSL.Password=password".into(),
    ]
}

/// The same for an Ice program, which also loads the IceSSL plugin.
fn ice_ssl(cert: &str) -> Vec<String> {
    let mut v = vec!["--Ice.Plugin.IceSSL=IceSSL:createIceSSL".to_string()];
    v.extend(floe_ssl(cert));
    v
}

fn endpoint(transport: &str, port: u16) -> String {
    match transport {
        "ws" => format!("ws -h 127.0.0.1 -p {port} -r /floe"),
        other => format!("{other} -h 127.0.0.1 -p {port}"),
    }
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

fn floe_server(endpoints: &str, extra: &[String]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-interop-server"));
    cmd.args(["--endpoints", endpoints]).args(extra).stderr(Stdio::null());
    start(cmd)
}

fn floe_client(proxy: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-interop-client"));
    cmd.args(["--proxy", proxy]).args(floe_ssl("client.p12"));
    cmd
}

fn python_server(endpoints: &str, cert_args: &[String]) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/server.py")).args(["--endpoints", endpoints]).args(cert_args);
    start(cmd)
}

/// Builds `target` of `dir`'s Makefile into CARGO_TARGET_TMPDIR/`out` once per test process.
fn make(dir: PathBuf, out: &str, binary: &str) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(out);
    let status =
        Command::new("make").arg("-s").arg("-C").arg(dir).arg(format!("OUT={}", out.display())).status().expect("make");
    assert!(status.success(), "building {binary} failed");
    out.join(binary)
}

fn cpp_server(endpoints: &str) -> Server {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let binary = BUILT.get_or_init(|| {
        make(root().join("../../crates/floe-bench/peers/ice-tester"), "cpp-server-tls", "ice-tester-server")
    });
    let mut cmd = Command::new(binary);
    cmd.arg(endpoints).args(ice_ssl("server.p12"));
    start_until(cmd, "ready")
}

fn cpp_client(proxy: &str) -> Command {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let binary = BUILT.get_or_init(|| make(root().join("cpp"), "cpp-client-tls", "client"));
    let mut cmd = Command::new(binary);
    cmd.args(["--proxy", proxy]).args(ice_ssl("client.p12"));
    cmd
}

fn python_client(proxy: &str) -> Command {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/client.py")).args(["--proxy", proxy]).args(ice_ssl("client.p12"));
    cmd
}

/// The floe client against an Ice server on `transport`.
fn floe_client_against(transport: &str, server: fn(&str) -> Server) {
    let ep = endpoint(transport, free_port());
    let mut s = server(&ep);
    run_client(floe_client(&format!("tester:{ep}")), 160);
    wait_exit(&mut s);
}

/// An Ice client against the floe server on `transport`.
fn against_floe_server(transport: &str, client: fn(&str) -> Command, min_checks: usize) {
    let ep = endpoint(transport, free_port());
    let mut extra = floe_ssl("server.p12");
    extra.push("--IceSSL.VerifyPeer=0".into());
    let mut s = floe_server(&ep, &extra);
    run_client(client(&format!("tester:{ep}")), min_checks);
    wait_exit(&mut s);
}

fn python_server_ok(ep: &str) -> Server {
    python_server(ep, &ice_ssl("server.p12"))
}

#[test]
fn floe_client_against_ice_cpp_server_over_ssl() {
    floe_client_against("ssl", cpp_server);
}

#[test]
fn floe_client_against_ice_cpp_server_over_ws() {
    floe_client_against("ws", cpp_server);
}

#[test]
fn floe_client_against_ice_cpp_server_over_wss() {
    floe_client_against("wss", cpp_server);
}

#[test]
fn floe_client_against_ice_python_server_over_ssl() {
    floe_client_against("ssl", python_server_ok);
}

#[test]
fn floe_client_against_ice_python_server_over_ws() {
    floe_client_against("ws", python_server_ok);
}

#[test]
fn floe_client_against_ice_python_server_over_wss() {
    floe_client_against("wss", python_server_ok);
}

#[test]
fn ice_cpp_client_against_floe_server_over_ssl() {
    against_floe_server("ssl", cpp_client, 60);
}

#[test]
fn ice_cpp_client_against_floe_server_over_ws() {
    against_floe_server("ws", cpp_client, 60);
}

#[test]
fn ice_cpp_client_against_floe_server_over_wss() {
    against_floe_server("wss", cpp_client, 60);
}

#[test]
fn ice_python_client_against_floe_server_over_ssl() {
    against_floe_server("ssl", python_client, 140);
}

#[test]
fn ice_python_client_against_floe_server_over_ws() {
    against_floe_server("ws", python_client, 140);
}

#[test]
fn ice_python_client_against_floe_server_over_wss() {
    against_floe_server("wss", python_client, 140);
}

/// Pings `proxy` with Ice for Python given `args`: `ok` or `error <type id>`.
fn python_ping(proxy: &str, args: &[String]) -> String {
    let out = Command::new("/usr/bin/python3")
        .arg(root().join("python/ping.py"))
        .args(["--proxy", proxy])
        .args(args)
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The floe server verifies Ice clients' certificates (VerifyPeer=2, its default): the
/// test client's passes, an untrusted one and none at all are refused, and the server goes on
/// serving.
#[test]
fn floe_server_verifies_ice_client_certificates() {
    let ep = endpoint("ssl", free_port());
    let _s = floe_server(&ep, &floe_ssl("server.p12"));
    let proxy = format!("tester:{ep}");
    assert_eq!(python_ping(&proxy, &ice_ssl("client.p12")), "ok");
    let mut untrusted = ice_ssl("client.p12");
    untrusted.retain(|a| !a.starts_with("--IceSSL.CertFile") && !a.starts_with("--IceSSL.Password"));
    let no_cert = untrusted.clone();
    untrusted.push("--IceSSL.CertFile=untrusted.pem".into());
    untrusted.push("--IceSSL.KeyFile=untrusted_key.pem".into());
    for args in [&untrusted, &no_cert] {
        let got = python_ping(&proxy, args);
        assert!(got.starts_with("error"), "{got}");
    }
    assert_eq!(python_ping(&proxy, &ice_ssl("client.p12")), "ok");
}

/// An Ice server whose certificate the test CA did not sign: the floe client refuses it
/// with floe's security error.
#[test]
fn floe_client_refuses_an_untrusted_ice_server() {
    let ep = endpoint("ssl", free_port());
    let mut args = ice_ssl("server.p12");
    args.retain(|a| !a.starts_with("--IceSSL.CertFile") && !a.starts_with("--IceSSL.Password"));
    args.push("--IceSSL.CertFile=untrusted.pem".into());
    args.push("--IceSSL.KeyFile=untrusted_key.pem".into());
    args.push("--IceSSL.VerifyPeer=0".into());
    let _s = python_server(&ep, &args);
    let out = floe_client(&format!("tester:{ep}")).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("security error"), "{text}");
    // The Ice server with the CA's certificate verifies floe's client certificate.
    let ep2 = endpoint("ssl", free_port());
    let _good = python_server(&ep2, &ice_ssl("server.p12"));
    let mut ping = floe_client(&format!("tester:{ep2}"));
    ping.arg("--no-shutdown");
    run_client(ping, 160);
}

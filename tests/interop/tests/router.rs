//! floe-router (crates/floe-router) between real programs: the floe interop client runs every
//! check through it to Ice's Python server, with a session and a callback; Ice's own Python
//! client (`python/glacier2_client.py`) does the same with its router; passwords are
//! checked from a `Glacier2.CryptPasswords` file; sessions end with their connection and
//! after the session timeout; garbage on the client endpoint closes only that connection.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, run_client, start, start_until, Server};
use floe::{CallError, Communicator, Error, Properties, Proxy};
use floe_router::slice::glacier2::{RouterCreateSessionError, RouterPrx};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The floe-router binary, built once per test process (it belongs to another package).
fn router_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "floe-router", "--bin", "floe-router"])
                .current_dir(root().join("../.."))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building floe-router failed");
            Path::new(env!("CARGO_BIN_EXE_floe-interop-client")).with_file_name("floe-router")
        })
        .clone()
}

fn floe_router(client_port: u16, extra: &[&str]) -> Server {
    let mut cmd = Command::new(router_binary());
    cmd.arg(format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {client_port}"))
        .arg("--Glacier2.Server.Endpoints=tcp -h 127.0.0.1")
        .args(extra)
        .stderr(Stdio::null());
    start_until(cmd, "floe-router ready")
}

fn python_server(port: u16) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/server.py"))
        .args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}")])
        .stderr(Stdio::null());
    start(cmd)
}

#[test]
fn floe_client_through_floe_router_to_an_ice_server() {
    let router_port = free_port();
    let _router = floe_router(
        router_port,
        &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier", "--Glacier2.Client.ForwardContext=1"],
    );
    let server_port = free_port();
    let _server = python_server(server_port);
    let mut client = Command::new(env!("CARGO_BIN_EXE_floe-interop-client"));
    client.args([
        "--proxy",
        &format!("tester:tcp -h 127.0.0.1 -p {server_port}"),
        &format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"),
    ]);
    eprintln!("floe client through floe-router: {}", run_client(client, 180));
}

/// Ice's own Python client through a router on `router_port` to the tester on `server_port`:
/// session, calls, oneways, and a callback to an adapter routed through the router.
fn ice_python_client_through(router_port: u16, server_port: u16) -> String {
    let mut client = Command::new("/usr/bin/python3");
    client.arg(root().join("python/glacier2_client.py")).args([
        "--proxy",
        &format!("tester:tcp -h 127.0.0.1 -p {server_port}"),
        &format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"),
    ]);
    run_client(client, 9)
}

#[test]
fn ice_python_client_through_floe_router_with_a_callback() {
    let router_port = free_port();
    let _router = floe_router(router_port, &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier"]);
    let server_port = free_port();
    let _server = python_server(server_port);
    eprintln!("Ice Python client through floe-router: {}", ice_python_client_through(router_port, server_port));
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn router_proxy(c: &Communicator, port: u16) -> RouterPrx {
    RouterPrx::from_object(c.string_to_proxy(&format!("Glacier2/router:tcp -h 127.0.0.1 -p {port}")).unwrap())
}

#[test]
fn crypt_passwords_sessions_and_timeouts() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("router-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let passwords = dir.join("passwords");
    // `openssl passwd -6 -salt saltsalt secret`
    let mut f = std::fs::File::create(&passwords).unwrap();
    writeln!(
        f,
        "alice $6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1"
    )
    .unwrap();
    let port = free_port();
    let _router = floe_router(
        port,
        &[&format!("--Glacier2.CryptPasswords={}", passwords.display()), "--Glacier2.SessionTimeout=2"],
    );
    runtime().block_on(async {
        // Wrong password: PermissionDeniedException; right one: a session, and a second one
        // on the same connection is refused.
        let c = Communicator::new().unwrap();
        let router = router_proxy(&c, port);
        match router.create_session("alice", "wrong").await {
            Err(CallError::User(RouterCreateSessionError::PermissionDeniedException(_))) => {}
            other => panic!("expected PermissionDenied, got {other:?}"),
        }
        match router.create_session("mallory", "secret").await {
            Err(CallError::User(RouterCreateSessionError::PermissionDeniedException(_))) => {}
            other => panic!("expected PermissionDenied, got {other:?}"),
        }
        router.create_session("alice", "secret").await.unwrap();
        assert_eq!(router.get_session_timeout().await.unwrap(), 2);
        assert!(!router.get_category_for_client().await.unwrap().is_empty());
        match router.create_session("alice", "secret").await {
            Err(CallError::User(RouterCreateSessionError::CannotCreateSessionException(_))) => {}
            other => panic!("expected CannotCreateSession, got {other:?}"),
        }
        router.refresh_session().await.unwrap();
        router.destroy_session().await.unwrap();
        assert!(router.destroy_session().await.is_err(), "no session any more");

        // A session left silent (no heartbeats: ACM off here) is destroyed after the
        // timeout, and its connection closed.
        let props = Properties::new();
        props.set("Ice.ACM.Client.Heartbeat", "0");
        props.set("Ice.ACM.Client.Timeout", "0");
        let quiet = Communicator::with_properties(props).unwrap();
        let router = router_proxy(&quiet, port);
        router.create_session("alice", "secret").await.unwrap();
        let connection = router.ice_get_connection().await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !connection.is_closed() {
            assert!(Instant::now() < deadline, "the silent session was not timed out");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        quiet.destroy().await;
        c.destroy().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_and_unrouted_requests_hurt_nobody_else() {
    let port = free_port();
    let _router = floe_router(port, &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier"]);
    runtime().block_on(async {
        let c = Communicator::new().unwrap();
        let router = router_proxy(&c, port);
        router.create_session("bob", "x").await.unwrap();
        // Garbage on another connection closes only that one.
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        raw.write_all(b"GET / HTTP/1.1\r\n\r\nthis is not Ice at all").unwrap();
        // A request for an object nobody added is ObjectNotExist, and one without a session
        // is too.
        let unrouted = c.string_to_proxy(&format!("nobody:tcp -h 127.0.0.1 -p {port}")).unwrap();
        assert!(matches!(unrouted.ice_ping().await, Err(Error::ObjectNotExist { .. })));
        let other = Communicator::new().unwrap();
        let stranger = other.string_to_proxy(&format!("nobody:tcp -h 127.0.0.1 -p {port}")).unwrap();
        assert!(matches!(stranger.ice_ping().await, Err(Error::ObjectNotExist { .. })));
        // The session still works.
        router.refresh_session().await.unwrap();
        other.destroy().await;
        c.destroy().await;
    });
}

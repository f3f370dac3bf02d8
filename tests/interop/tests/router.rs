//! floe-router (crates/floe-router) between real programs: the floe interop client runs every
//! check through it to Ice's Python server, with a session and a callback; Ice's own Python
//! client (`python/glacier2_client.py`) does the same with its router; passwords are
//! checked from a `Glacier2.CryptPasswords` file; sessions end with their connection and
//! after the session timeout; garbage on either endpoint closes only that connection; 300
//! sessions at once; a client that stops reading and a server that stops reading hold up
//! only the session that uses them. Against floe-router and ZeroC's glacier2router alike:
//! Ice's C++ `Glacier2::SessionHelper` client (`cpp/Glacier2Client.cpp`) with a password
//! session and with an ssl session (`createSessionFromSecureConnection`, checked by the
//! test's `SSLPermissionsVerifier`), the refusals of ssl sessions, and the `SessionControl`
//! given to session managers (filters, timeout, destroy, the connection context of the
//! session's `destroy`, the ping on `refreshSession`), request buffering
//! (`Glacier2.Client.Buffered`, the `_ovrd` override of queued oneway and batched requests,
//! `Glacier2.Client.SleepTime`), the `_fwd` context, `Glacier2.Filter.Category.AcceptUser`,
//! and the router's calls and heartbeats on a connection without a session.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{floe_server, free_port, router_binary, rss_kb, run_client, start, start_until, Server};
use floe::encoding::{Encoder, EncodingVersion, Identity};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};
use floe::{CallError, Communicator, Error, ObjectPrx, Properties, Proxy};
use floe_interop::interop::TesterPrx;
use floe_router::slice::glacier2::{RouterCreateSessionError, RouterPrx, RouterRefreshSessionError};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
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
        // A request for an object nobody added is ObjectNotExist; one without a session closes
        // its connection, as with Glacier2.
        let unrouted = c.string_to_proxy(&format!("nobody:tcp -h 127.0.0.1 -p {port}")).unwrap();
        assert!(matches!(unrouted.ice_ping().await, Err(Error::ObjectNotExist { .. })));
        let other = Communicator::new().unwrap();
        let stranger = other.string_to_proxy(&format!("nobody:tcp -h 127.0.0.1 -p {port}")).unwrap();
        let stranger_connection = stranger.ice_get_connection().await.unwrap();
        assert!(stranger.ice_ping().await.is_err());
        let deadline = Instant::now() + Duration::from_secs(10);
        while !stranger_connection.is_closed() {
            assert!(Instant::now() < deadline, "the connection without a session stayed open");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The session still works.
        router.refresh_session().await.unwrap();
        other.destroy().await;
        c.destroy().await;
    });
}

/// A request message for `identity`, encoded by hand (for connections that misbehave).
fn raw_request(id: i32, identity: &Identity, operation: &str, params: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    // `addProxies` is idempotent in Ice/Router.ice, and the mode must match.
    let mode = if operation == "addProxies" { OperationMode::Idempotent } else { OperationMode::Normal };
    let prefix = RequestPrefix::new(identity, "", operation, mode);
    encode_request(id, &prefix, &Default::default(), EncodingVersion::V1_1, params).to_vec()
}

/// Reads one message (header and body); returns its type and body.
fn read_message(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut header = [0u8; 14];
    s.read_exact(&mut header).unwrap();
    assert_eq!(&header[..4], b"IceP");
    let size = i32::from_le_bytes(header[10..14].try_into().unwrap()) as usize;
    let mut body = vec![0u8; size - 14];
    s.read_exact(&mut body).unwrap();
    (header[8], body)
}

/// A raw client connection to the router with a session (its `createSession` answered).
fn raw_session(port: u16, user: &str) -> TcpStream {
    let mut s = common::connect(port);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let router = Identity::with_category("Glacier2", "router");
    s.write_all(&raw_request(1, &router, "createSession", |e| {
        e.write_str(user);
        e.write_str("x");
    }))
    .unwrap();
    let (kind, body) = read_message(&mut s);
    assert_eq!((kind, body[4]), (2, 0), "createSession failed");
    s
}

/// Adds `proxy` to the routing table of a raw session.
fn raw_add_proxy(s: &mut TcpStream, proxy: &ObjectPrx) {
    let router = Identity::with_category("Glacier2", "router");
    s.write_all(&raw_request(2, &router, "addProxies", |e| {
        e.write_size(1);
        ObjectPrx::encode_nullable(Some(proxy), e);
    }))
    .unwrap();
    let (kind, body) = read_message(s);
    assert_eq!((kind, body[4]), (2, 0), "addProxies failed");
}

/// A floe client with a session on the router of `router_port`, and the tester of
/// `server_port` through it.
async fn routed_tester(router_port: u16, server_port: u16) -> (Communicator, TesterPrx) {
    let props = Properties::new();
    props.set("Ice.Default.Router", &format!("Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"));
    let c = Communicator::with_properties(props).unwrap();
    let router = RouterPrx::from_object(c.default_router().unwrap());
    router.create_session("carol", "x").await.unwrap();
    let tester =
        TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {server_port}")).unwrap());
    tester.ping().await.unwrap();
    (c, tester)
}

/// `count` twoway calls through `tester` finish within `limit`.
async fn calls_finish_within(tester: &TesterPrx, count: usize, limit: Duration) -> Duration {
    let started = Instant::now();
    let calls = async {
        for i in 0..count {
            tester.ping().await.unwrap();
            if i % 10 == 0 {
                assert_eq!(tester.recv_byte_seq(100_000).await.unwrap().len(), 100_000);
            }
        }
    };
    tokio::time::timeout(limit, calls).await.expect("the calls of another session were held up");
    started.elapsed()
}

#[test]
fn three_hundred_sessions_at_once_with_bounded_memory() {
    let port = free_port();
    let router = floe_router(port, &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier"]);
    let server_port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {server_port}"), &[]);
    let before = rss_kb(router.pid());
    let started = Instant::now();
    let sessions: Vec<TcpStream> = (0..300).map(|i| raw_session(port, &format!("user{i}"))).collect();
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    let per_session = (rss_kb(router.pid()).saturating_sub(before) * 1024) as usize / sessions.len();
    eprintln!("300 sessions in {took:?}, {per_session} bytes of RSS each");
    assert!(per_session < 64 * 1024, "{per_session} bytes per session");
    runtime().block_on(async {
        let (c, tester) = routed_tester(port, server_port).await;
        calls_finish_within(&tester, 50, Duration::from_secs(10)).await;
        c.destroy().await;
    });
    drop(sessions);
}

#[test]
fn a_client_that_stops_reading_holds_up_only_its_own_session() {
    let port = free_port();
    let _router = floe_router(port, &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier"]);
    let server_port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {server_port}"), &[]);
    runtime().block_on(async {
        let (c, tester) = routed_tester(port, server_port).await;
        let quiet = calls_finish_within(&tester, 50, Duration::from_secs(10)).await;
        // A client asks for 48 MB of replies and never reads them.
        let mut stalled = raw_session(port, "stalled");
        raw_add_proxy(&mut stalled, tester.as_object());
        let tester_id = Identity::new("tester");
        for i in 0..48 {
            stalled.write_all(&raw_request(10 + i, &tester_id, "recvByteSeq", |e| e.write_i32(1_000_000))).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let busy = calls_finish_within(&tester, 50, Duration::from_secs(10)).await;
        eprintln!("50 calls: {quiet:?} alone, {busy:?} beside a client that stopped reading");
        drop(stalled);
        c.destroy().await;
    });
}

#[test]
fn a_server_that_stops_reading_holds_up_only_the_calls_to_it() {
    let port = free_port();
    let _router = floe_router(port, &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier"]);
    let server_port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {server_port}"), &[]);
    // A "server" that validates its connections and then reads nothing.
    let deaf = TcpListener::bind("127.0.0.1:0").unwrap();
    let deaf_port = deaf.local_addr().unwrap().port();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for s in deaf.incoming().take(4) {
            let Ok(mut s) = s else { break };
            let validate = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];
            let _ = s.write_all(&validate);
            keep.lock().unwrap().push(s);
        }
    });
    runtime().block_on(async {
        let (c, tester) = routed_tester(port, server_port).await;
        let mut client = raw_session(port, "writer");
        let deaf_proxy = c.string_to_proxy(&format!("deaf:tcp -h 127.0.0.1 -p {deaf_port}")).unwrap();
        raw_add_proxy(&mut client, &deaf_proxy);
        let payload = vec![7u8; 1_000_000];
        let deaf_id = Identity::new("deaf");
        for i in 0..32 {
            client
                .write_all(&raw_request(10 + i, &deaf_id, "sendByteSeq", |e| {
                    e.write_size(payload.len());
                    e.write_raw(&payload);
                }))
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        calls_finish_within(&tester, 50, Duration::from_secs(10)).await;
        drop(client);
        c.destroy().await;
    });
    drop(held);
}

#[test]
fn garbage_from_a_server_or_on_the_server_endpoint_hurts_nobody_else() {
    let port = free_port();
    let server_endpoint = free_port();
    let mut cmd = Command::new(router_binary());
    cmd.arg(format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"))
        .arg(format!("--Glacier2.Server.Endpoints=tcp -h 127.0.0.1 -p {server_endpoint}"))
        .arg("--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier")
        .stderr(Stdio::null());
    let _router = start_until(cmd, "floe-router ready");
    let server_port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {server_port}"), &[]);
    // A "server" that answers every connection with garbage.
    let liar = TcpListener::bind("127.0.0.1:0").unwrap();
    let liar_port = liar.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in liar.incoming().take(4) {
            let Ok(mut s) = s else { break };
            let _ = s.write_all(b"IceP\x01\x00\x01\x00\x03\x00\x0e\x00\x00\x00");
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\nnot Ice at all, and far too long to be a header");
        }
    });
    runtime().block_on(async {
        let (c, tester) = routed_tester(port, server_port).await;
        // Garbage on the server endpoint.
        let mut raw = TcpStream::connect(("127.0.0.1", server_endpoint)).unwrap();
        raw.write_all(b"\x00\x01\x02garbage on the callback endpoint\xff\xff\xff\xff").unwrap();
        // A routed call to the lying server fails, and nothing else does.
        let liar = TesterPrx::from_object(c.string_to_proxy(&format!("liar:tcp -h 127.0.0.1 -p {liar_port}")).unwrap());
        assert!(liar.ping().await.is_err());
        calls_finish_within(&tester, 20, Duration::from_secs(10)).await;
        c.destroy().await;
    });
}

// ---- Sessions through Glacier2::SessionHelper, ssl sessions and SessionControl, each checked
// ---- against floe-router and against ZeroC's glacier2router with the same peers.

/// The two routers the tests below compare.
#[derive(Clone, Copy, Debug, PartialEq)]
enum RouterKind {
    Floe,
    Glacier2,
}

const BOTH: [RouterKind; 2] = [RouterKind::Floe, RouterKind::Glacier2];

/// A router of `kind` with clients on `client_endpoints` and callbacks on a loopback port.
fn router_of(kind: RouterKind, client_endpoints: &str, extra: &[String]) -> Server {
    let (mut cmd, marker) = match kind {
        RouterKind::Floe => (Command::new(router_binary()), "floe-router ready"),
        RouterKind::Glacier2 => {
            let mut c = Command::new("glacier2router");
            c.arg("--Ice.PrintAdapterReady=1");
            (c, "Glacier2.Client ready")
        }
    };
    cmd.arg(format!("--Glacier2.Client.Endpoints={client_endpoints}"))
        .arg("--Glacier2.Server.Endpoints=tcp -h 127.0.0.1")
        .args(extra)
        .stderr(Stdio::null());
    start_until(cmd, marker)
}

/// The test certificates: `../shared/certs` beside the repository.
fn certs() -> PathBuf {
    root().join("../../../shared/certs")
}

/// IceSSL properties with the test CA and the PKCS#12 certificate `cert`, for a router of
/// `kind` (glacier2router also loads the IceSSL plugin).
fn router_ssl_args(kind: RouterKind, cert: &str) -> Vec<String> {
    let mut v = vec![
        format!("--IceSSL.DefaultDir={}", certs().display()),
        "--IceSSL.CAs=ca.pem".into(),
        format!("--IceSSL.CertFile={cert}"),
        "--IceSSL.Password=password".into(),
    ];
    if kind == RouterKind::Glacier2 {
        v.push("--Ice.Plugin.IceSSL=IceSSL:createIceSSL".into());
    }
    v
}

/// The Ice C++ Glacier2 client (`cpp/Glacier2Client.cpp`), built once per test process.
fn glacier2_cpp_client() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp-glacier2-client");
            let status = Command::new("make")
                .arg("-s")
                .arg("-C")
                .arg(root().join("cpp"))
                .arg(format!("OUT={}", out.display()))
                .arg("glacier2-client")
                .status()
                .expect("make runs");
            assert!(status.success(), "building the C++ Glacier2 client failed");
            out.join("glacier2-client")
        })
        .clone()
}

/// Ice's C++ client with `Glacier2::SessionFactoryHelper`: a session with a user id and
/// password, the callback category, a callback servant the Python server calls back, and
/// `disconnected` after `destroy` — through floe-router and through glacier2router.
#[test]
fn ice_cpp_session_helper_through_floe_router_and_glacier2router() {
    let server_port = free_port();
    let _server = python_server(server_port);
    let client = glacier2_cpp_client();
    for kind in BOTH {
        let port = free_port();
        let _router = router_of(
            kind,
            &format!("tcp -h 127.0.0.1 -p {port}"),
            &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".into()],
        );
        let mut cmd = Command::new(&client);
        cmd.args(["--port", &port.to_string(), "--user", "alice", "--password", "secret"])
            .args(["--tester", &format!("tester:tcp -h 127.0.0.1 -p {server_port}")]);
        eprintln!("Ice C++ SessionHelper client through {kind:?}: {}", run_client(cmd, 7));
    }
}

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use floe::{Current, ObjectAdapter};
use floe_router::slice::glacier2::{
    self, RouterCreateSessionFromSecureConnectionError, SSLInfo, SessionControlPrx, SessionPrx,
};

/// What the test's session managers and verifier saw.
#[derive(Default)]
struct Seen {
    ssl_infos: Mutex<Vec<SSLInfo>>,
    /// The request contexts of the verifier's `authorize` calls.
    contexts: Mutex<Vec<floe::Context>>,
    users: Mutex<Vec<String>>,
    controls: Mutex<Vec<Option<SessionControlPrx>>>,
    destroyed: AtomicUsize,
    /// The request contexts of the session's `destroy` calls.
    destroy_contexts: Mutex<Vec<floe::Context>>,
    refuse: AtomicBool,
}

struct TestVerifier(Arc<Seen>);

impl glacier2::SSLPermissionsVerifier for TestVerifier {
    async fn authorize(&self, info: SSLInfo, current: &Current) -> floe::Result<(bool, floe::CompactString)> {
        self.0.ssl_infos.lock().unwrap().push(info);
        self.0.contexts.lock().unwrap().push(current.ctx.clone().into_context());
        Ok((!self.0.refuse.load(Ordering::SeqCst), "refused by the test".into()))
    }
}

struct TestManager {
    seen: Arc<Seen>,
    session: SessionPrx,
}

impl glacier2::SessionManager for TestManager {
    async fn create(
        &self,
        user_id: floe::CompactString,
        control: Option<SessionControlPrx>,
        _: &Current,
    ) -> floe::Result<Option<SessionPrx>> {
        self.seen.users.lock().unwrap().push(user_id.to_string());
        self.seen.controls.lock().unwrap().push(control);
        Ok(Some(self.session.clone()))
    }
}

impl glacier2::SSLSessionManager for TestManager {
    async fn create(
        &self,
        _: SSLInfo,
        control: Option<SessionControlPrx>,
        _: &Current,
    ) -> floe::Result<Option<SessionPrx>> {
        self.seen.controls.lock().unwrap().push(control);
        Ok(Some(self.session.clone()))
    }
}

struct TestSession(Arc<Seen>);

impl glacier2::Session for TestSession {
    async fn destroy(&self, current: &Current) -> floe::Result<()> {
        self.0.destroy_contexts.lock().unwrap().push(current.ctx.clone().into_context());
        self.0.destroyed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The test's Glacier2 services on a loopback adapter of `c`: an ssl permissions verifier,
/// a session manager (password and ssl) and the session it hands out. Returns the adapter,
/// what they saw, and the proxy strings of the verifier, the session manager and the ssl one.
async fn services(c: &Communicator) -> (ObjectAdapter, Arc<Seen>, String, String, String) {
    let adapter = c.create_object_adapter_with_endpoints("Services", "tcp -h 127.0.0.1").unwrap();
    let seen = Arc::new(Seen::default());
    let session = SessionPrx::from_object(
        adapter.add(glacier2::SessionServer::new(TestSession(seen.clone())), Identity::new("session")),
    );
    let verifier =
        adapter.add(glacier2::SSLPermissionsVerifierServer::new(TestVerifier(seen.clone())), Identity::new("verifier"));
    let manager = adapter.add(
        glacier2::SessionManagerServer::new(TestManager { seen: seen.clone(), session: session.clone() }),
        Identity::new("manager"),
    );
    let ssl_manager = adapter.add(
        glacier2::SSLSessionManagerServer::new(TestManager { seen: seen.clone(), session }),
        Identity::new("sslmanager"),
    );
    adapter.activate().await.unwrap();
    (adapter, seen, verifier.to_string(), manager.to_string(), ssl_manager.to_string())
}

/// Waits up to 10 s for `done`.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The base64 body of a PEM certificate, without its lines' breaks.
fn pem_body(pem: &str) -> String {
    pem.lines().filter(|l| !l.starts_with("-----")).map(str::trim).collect()
}

/// Ice's C++ client creates its session from its ssl connection
/// (`SessionFactoryHelper::connect()` → `createSessionFromSecureConnection`): the router gives
/// the test's `Glacier2::SSLPermissionsVerifier` and `SSLSessionManager` the connection's
/// addresses, cipher and the client's certificate chain in PEM (the same from both routers),
/// the manager gets a `SessionControl`, and the manager's session is destroyed with the
/// router's.
#[test]
fn ice_cpp_ssl_session_through_floe_router_and_glacier2router() {
    let server_port = free_port();
    let _server = python_server(server_port);
    let client = glacier2_cpp_client();
    let client_pem = std::fs::read_to_string(certs().join("client.pem")).unwrap();
    let rt = runtime();
    let mut infos = Vec::new();
    for kind in BOTH {
        let c = rt.block_on(async { Communicator::new().unwrap() });
        let (_adapter, seen, verifier, _, ssl_manager) = rt.block_on(services(&c));
        let port = free_port();
        let mut args = router_ssl_args(kind, "server.p12");
        args.push(format!("--Glacier2.SSLPermissionsVerifier={verifier}"));
        args.push(format!("--Glacier2.SSLSessionManager={ssl_manager}"));
        args.push("--Glacier2.AddConnectionContext=1".into());
        let _router = router_of(kind, &format!("ssl -h 127.0.0.1 -p {port}"), &args);
        let mut cmd = Command::new(&client);
        cmd.args(["--port", &port.to_string(), "--protocol", "ssl", "--expect-session"])
            .args(["--tester", &format!("tester:tcp -h 127.0.0.1 -p {server_port}")])
            .arg(format!("--IceSSL.DefaultDir={}", certs().display()))
            .args(["--IceSSL.CAs=ca.pem", "--IceSSL.CertFile=client.p12", "--IceSSL.Password=password"]);
        eprintln!("Ice C++ ssl session through {kind:?}: {}", run_client(cmd, 7));
        eventually("the manager's session destroyed", || seen.destroyed.load(Ordering::SeqCst) == 1);
        let info = seen.ssl_infos.lock().unwrap().pop().expect("the verifier was called");
        assert_eq!(info.remote_host, "127.0.0.1", "{kind:?}");
        assert_eq!(info.local_host, "127.0.0.1", "{kind:?}");
        assert_eq!(info.local_port, i32::from(port), "{kind:?}");
        assert!(info.remote_port > 0 && info.remote_port != i32::from(port), "{kind:?}");
        assert!(!info.cipher.is_empty(), "{kind:?}");
        assert!(!info.certs.is_empty(), "{kind:?}: no client certificate");
        assert!(info.certs[0].starts_with("-----BEGIN CERTIFICATE-----\n"), "{kind:?}: {}", info.certs[0]);
        assert_eq!(pem_body(&info.certs[0]), pem_body(&client_pem), "{kind:?}: not the client's certificate");
        assert!(seen.controls.lock().unwrap()[0].is_some(), "{kind:?}: no SessionControl");
        // Glacier2.AddConnectionContext: the verifier's call carries the connection's context.
        let ctx = seen.contexts.lock().unwrap().pop().unwrap();
        let entry = |k: &str| ctx.get(k).map(|v| v.to_string()).unwrap_or_default();
        assert_eq!(entry("_con.type"), "ssl", "{kind:?}: {ctx:?}");
        assert_eq!(entry("_con.remotePort"), info.remote_port.to_string(), "{kind:?}");
        assert_eq!(entry("_con.localPort"), port.to_string(), "{kind:?}");
        assert_eq!(entry("_con.cipher"), info.cipher.as_str(), "{kind:?}");
        assert_eq!(entry("_con.peerCert"), info.certs[0].as_str(), "{kind:?}");
        eprintln!("{kind:?}: cipher {}, {} certificate(s)", info.cipher, info.certs.len());
        infos.push(info);
        rt.block_on(c.destroy());
    }
    assert_eq!(infos[0].certs, infos[1].certs, "floe-router and glacier2router give different chains");
}

/// A floe client's communicator with the test CA and the client certificate.
fn ssl_client() -> Communicator {
    let props = Properties::new();
    props.set("IceSSL.DefaultDir", &certs().display().to_string());
    props.set("IceSSL.CAs", "ca.pem");
    props.set("IceSSL.CertFile", "client.p12");
    props.set("IceSSL.Password", "password");
    Communicator::with_properties(props).unwrap()
}

/// The reason of a refused `createSessionFromSecureConnection`, or a panic.
async fn denied_reason(router: &RouterPrx) -> String {
    match router.create_session_from_secure_connection().await {
        Err(CallError::User(RouterCreateSessionFromSecureConnectionError::PermissionDeniedException(e))) => {
            e.reason.to_string()
        }
        other => panic!("expected PermissionDeniedException, got {other:?}"),
    }
}

/// `createSessionFromSecureConnection` is refused without `Glacier2.SSLPermissionsVerifier`,
/// over a connection that is not ssl (tcp, and wss too), and when the verifier says no (with its reason); it
/// succeeds over ssl when the verifier says yes — with the same reasons from both routers.
#[test]
fn ssl_sessions_are_refused_as_glacier2_refuses_them() {
    let rt = runtime();
    for kind in BOTH {
        rt.block_on(async {
            let services_communicator = Communicator::new().unwrap();
            let (_adapter, seen, verifier, _, _) = services(&services_communicator).await;
            let (ssl_port, tcp_port, wss_port, bare_port) = (free_port(), free_port(), free_port(), free_port());
            let mut args = router_ssl_args(kind, "server.p12");
            args.push(format!("--Glacier2.SSLPermissionsVerifier={verifier}"));
            let _router = router_of(
                kind,
                &format!(
                    "ssl -h 127.0.0.1 -p {ssl_port}:tcp -h 127.0.0.1 -p {tcp_port}:wss -h 127.0.0.1 -p {wss_port}"
                ),
                &args,
            );
            // glacier2router needs a permissions verifier to start at all.
            let null = ["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".to_string()];
            let _bare = router_of(kind, &format!("tcp -h 127.0.0.1 -p {bare_port}"), &null);
            eprintln!("{kind:?}: routers started");
            let c = ssl_client();
            let over = |proto: &str, port: u16| {
                RouterPrx::from_object(
                    c.string_to_proxy(&format!("Glacier2/router:{proto} -h 127.0.0.1 -p {port}")).unwrap(),
                )
            };
            assert_eq!(
                denied_reason(&over("tcp", bare_port)).await,
                "no configured ssl permissions verifier",
                "{kind:?}"
            );
            assert_eq!(denied_reason(&over("tcp", tcp_port)).await, "not ssl connection", "{kind:?}");
            // wss is WebSocket over TLS, not an ssl connection to Glacier2.
            assert_eq!(denied_reason(&over("wss", wss_port)).await, "not ssl connection", "{kind:?}");
            assert!(seen.ssl_infos.lock().unwrap().is_empty(), "{kind:?}: the verifier was asked");
            seen.refuse.store(true, Ordering::SeqCst);
            let ssl = over("ssl", ssl_port);
            assert_eq!(denied_reason(&ssl).await, "refused by the test", "{kind:?}");
            seen.refuse.store(false, Ordering::SeqCst);
            // No Glacier2.SSLSessionManager: a session without a session proxy.
            assert!(ssl.create_session_from_secure_connection().await.unwrap().is_none(), "{kind:?}");
            assert!(!ssl.get_category_for_client().await.unwrap().is_empty(), "{kind:?}");
            match ssl.create_session_from_secure_connection().await {
                Err(CallError::User(RouterCreateSessionFromSecureConnectionError::CannotCreateSessionException(_))) => {
                }
                other => panic!("{kind:?}: expected CannotCreateSessionException, got {other:?}"),
            }
            assert_eq!(seen.ssl_infos.lock().unwrap().len(), 2, "{kind:?}");
            eprintln!("{kind:?}: refusals checked");
            ssl.destroy_session().await.unwrap();
            c.destroy().await;
            services_communicator.destroy().await;
        });
    }
}

/// The `Glacier2::SessionControl` a session manager gets: the session timeout, the filter
/// sets (categories, identities, adapter ids) that then decide which of the client's requests
/// pass, and `destroy`, which destroys the session (and the manager's session), removes the
/// control and filter objects, and closes the client's connection at its next request.
#[test]
fn session_control_filters_and_destroys_as_glacier2_does() {
    let server_port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {server_port}"), &[]);
    let rt = runtime();
    for kind in BOTH {
        rt.block_on(async {
            let services_communicator = Communicator::new().unwrap();
            let (_adapter, seen, _, manager, _) = services(&services_communicator).await;
            let port = free_port();
            let args = [
                "--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".to_string(),
                format!("--Glacier2.SessionManager={manager}"),
                "--Glacier2.SessionTimeout=30".into(),
                "--Glacier2.AddConnectionContext=1".into(),
            ];
            let _router = router_of(kind, &format!("tcp -h 127.0.0.1 -p {port}"), &args);
            let props = Properties::new();
            props.set("Ice.Default.Router", &format!("Glacier2/router:tcp -h 127.0.0.1 -p {port}"));
            let c = Communicator::with_properties(props).unwrap();
            let router = RouterPrx::from_object(c.default_router().unwrap());
            let session = router.create_session("alice", "x").await.unwrap();
            assert_eq!(session.map(|s| s.ice_get_identity().name.to_string()).as_deref(), Some("session"));
            assert_eq!(*seen.users.lock().unwrap(), ["alice"], "{kind:?}");
            let control = seen.controls.lock().unwrap()[0].clone().expect("a SessionControl proxy");
            assert_eq!(control.get_session_timeout().await.unwrap(), 30, "{kind:?}");
            let categories = control.categories().await.unwrap().expect("categories");
            let identities = control.identities().await.unwrap().expect("identities");
            let adapter_ids = control.adapter_ids().await.unwrap().expect("adapter ids");
            let tester = TesterPrx::from_object(
                c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {server_port}")).unwrap(),
            );
            tester.ping().await.unwrap();
            // Glacier2.AddConnectionContext: forwarded requests carry the connection's entries.
            let ctx = tester.get_context().await.unwrap();
            let local = router.ice_get_connection().await.unwrap().local_address().unwrap();
            assert_eq!(ctx.get("_con.type").map(|v| v.as_str()), Some("tcp"), "{kind:?}: {ctx:?}");
            assert_eq!(ctx.get("_con.localPort").map(|v| v.to_string()), Some(port.to_string()), "{kind:?}");
            assert_eq!(ctx.get("_con.remotePort").map(|v| v.to_string()), Some(local.port().to_string()), "{kind:?}");

            // A category filter without the tester's category refuses it…
            categories.add(&["allowed".into(), "other".into(), "allowed".into()]).await.unwrap();
            assert_eq!(categories.get().await.unwrap(), ["allowed", "other"], "{kind:?}");
            assert!(matches!(tester.ping().await, Err(Error::ObjectNotExist { .. })), "{kind:?}");
            // …until an identity filter lets it in,
            identities.add(&[Identity::new("tester")]).await.unwrap();
            assert_eq!(identities.get().await.unwrap(), [Identity::new("tester")], "{kind:?}");
            tester.ping().await.unwrap();
            identities.remove(&[Identity::new("tester")]).await.unwrap();
            assert!(tester.ping().await.is_err(), "{kind:?}");
            // and without any filter everything passes again.
            categories.remove(&["allowed".into(), "other".into()]).await.unwrap();
            assert!(categories.get().await.unwrap().is_empty(), "{kind:?}");
            tester.ping().await.unwrap();
            // The adapter-id filter concerns indirect proxies only.
            adapter_ids.add(&["someadapter".into()]).await.unwrap();
            assert_eq!(adapter_ids.get().await.unwrap(), ["someadapter"], "{kind:?}");
            tester.ping().await.unwrap();

            // destroy: the manager's session goes, the control and filter objects too, and the
            // client's next request closes its connection.
            let connection = router.ice_get_connection().await.unwrap();
            control.destroy().await.unwrap();
            eventually("the manager's session destroyed", || seen.destroyed.load(Ordering::SeqCst) == 1);
            // Glacier2.AddConnectionContext: the session's `destroy` carries the connection's
            // entries, and only those.
            let destroy_ctx = seen.destroy_contexts.lock().unwrap()[0].clone();
            let mut keys: Vec<&str> = destroy_ctx.keys().map(|k| k.as_str()).collect();
            keys.sort();
            assert_eq!(
                keys,
                ["_con.localAddress", "_con.localPort", "_con.remoteAddress", "_con.remotePort", "_con.type"],
                "{kind:?}: {destroy_ctx:?}"
            );
            assert_eq!(destroy_ctx.get("_con.localPort").map(|v| v.to_string()), Some(port.to_string()), "{kind:?}");
            assert_eq!(
                destroy_ctx.get("_con.remotePort").map(|v| v.to_string()),
                Some(local.port().to_string()),
                "{kind:?}"
            );
            assert!(
                matches!(control.get_session_timeout().await, Err(Error::ObjectNotExist { .. })),
                "{kind:?}: the control outlived its session"
            );
            assert!(categories.get().await.is_err(), "{kind:?}: the category set outlived its session");
            assert!(tester.ping().await.is_err(), "{kind:?}");
            let deadline = Instant::now() + Duration::from_secs(10);
            while !connection.is_closed() {
                assert!(Instant::now() < deadline, "{kind:?}: the client's connection stayed open");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            c.destroy().await;
            services_communicator.destroy().await;
        });
    }
}

/// Without `Glacier2.Server.Endpoints` there is nowhere for a `SessionControl` to live: the
/// session manager gets a null control, from either router.
#[test]
fn no_session_control_without_server_endpoints() {
    let rt = runtime();
    for kind in BOTH {
        rt.block_on(async {
            let services_communicator = Communicator::new().unwrap();
            let (_adapter, seen, _, manager, _) = services(&services_communicator).await;
            let port = free_port();
            let mut cmd = match kind {
                RouterKind::Floe => Command::new(router_binary()),
                RouterKind::Glacier2 => {
                    let mut c = Command::new("glacier2router");
                    c.arg("--Ice.PrintAdapterReady=1");
                    c
                }
            };
            cmd.arg(format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"))
                .arg("--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier")
                .arg(format!("--Glacier2.SessionManager={manager}"))
                .stderr(Stdio::null());
            let marker = if kind == RouterKind::Floe { "floe-router ready" } else { "Glacier2.Client ready" };
            let _router = start_until(cmd, marker);
            let c = Communicator::new().unwrap();
            let router = router_proxy(&c, port);
            assert!(router.create_session("bob", "x").await.unwrap().is_some(), "{kind:?}");
            assert_eq!(*seen.users.lock().unwrap(), ["bob"], "{kind:?}");
            assert!(seen.controls.lock().unwrap()[0].is_none(), "{kind:?}: a control without server endpoints");
            assert_eq!(router.get_category_for_client().await.unwrap(), "", "{kind:?}");
            router.destroy_session().await.unwrap();
            eventually("the manager's session destroyed", || seen.destroyed.load(Ordering::SeqCst) == 1);
            let destroy_ctx = seen.destroy_contexts.lock().unwrap()[0].clone();
            assert!(destroy_ctx.is_empty(), "{kind:?}: {destroy_ctx:?}");
            c.destroy().await;
            services_communicator.destroy().await;
        });
    }
}

// ---- Request buffering (`Glacier2.Client.Buffered`) and the `_ovrd` override, against
// ---- floe-router and glacier2router alike.

/// What the recording server saw: the argument of each `op` and when it came; `slow` (a
/// twoway answered after 600 ms) is recorded as -1 when it arrives.
#[derive(Default)]
struct Recorded(Mutex<Vec<(i32, Instant)>>);

impl Recorded {
    fn values(&self) -> Vec<i32> {
        self.0.lock().unwrap().iter().map(|(v, _)| *v).collect()
    }

    fn arrival(&self, value: i32) -> Option<Instant> {
        self.0.lock().unwrap().iter().find(|(v, _)| *v == value).map(|(_, t)| *t)
    }
}

struct Recorder(Arc<Recorded>);

impl floe::Dispatcher for Recorder {
    fn dispatch(&self, request: floe::IncomingRequest) -> floe::DispatchFuture {
        let c = &request.current;
        let slow = c.operation == "slow";
        if c.operation == "op" {
            let value = request.params.get(..4).map_or(-2, |b| i32::from_le_bytes(b.try_into().unwrap()));
            self.0 .0.lock().unwrap().push((value, Instant::now()));
        } else if slow {
            self.0 .0.lock().unwrap().push((-1, Instant::now()));
        }
        let response = if c.is_oneway() { floe::Response::none() } else { c.ok_empty() };
        Box::pin(async move {
            if slow {
                tokio::time::sleep(Duration::from_millis(600)).await;
            }
            response
        })
    }
}

/// A loopback port that relays each connection to `backend`, the first one only `delay` after
/// it came (a server slow to accept: the router's first connection to it is not validated
/// before then, however long the router took to start and to forward its first request).
fn slow_relay(backend: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (n, s) in listener.incoming().take(4).enumerate() {
            let Ok(mut a) = s else { break };
            if n == 0 {
                std::thread::sleep(delay);
            }
            let Ok(mut b) = TcpStream::connect(("127.0.0.1", backend)) else { break };
            let (mut a2, mut b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut b2, &mut a2);
                let _ = a2.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    port
}

/// A server whose default servant records into `recorded`, on a free port; its communicator
/// and port.
async fn recording_server(recorded: Arc<Recorded>) -> (Communicator, u16) {
    let communicator = Communicator::new().unwrap();
    let port = free_port();
    let adapter =
        communicator.create_object_adapter_with_endpoints("Recorder", &format!("tcp -h 127.0.0.1 -p {port}")).unwrap();
    adapter.add_default_servant(Arc::new(Recorder(recorded)), "");
    adapter.activate().await.unwrap();
    (communicator, port)
}

/// A router of `kind` that lets everyone in, with `extra` properties, and a floe client
/// with a session for `user` through it: the router (stopped when dropped) and the client.
async fn session_through(kind: RouterKind, extra: &[&str], user: &str) -> (Server, Communicator) {
    let port = free_port();
    let mut args = vec!["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    let router = router_of(kind, &format!("tcp -h 127.0.0.1 -p {port}"), &args);
    let props = Properties::new();
    props.set("Ice.Default.Router", &format!("Glacier2/router:tcp -h 127.0.0.1 -p {port}"));
    let c = Communicator::with_properties(props).unwrap();
    RouterPrx::from_object(c.default_router().unwrap()).create_session(user, "x").await.unwrap();
    (router, c)
}

/// A router of `kind` with `extra` properties, a recording server behind a relay that
/// accepts after `delay`, and a floe client with a session; runs `client` with the
/// recorder's proxy (through the router), then returns what the server recorded.
fn through_router<F, Fut>(kind: RouterKind, extra: &[&str], delay: Duration, client: F) -> Arc<Recorded>
where
    F: FnOnce(ObjectPrx, Arc<Recorded>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let rt = runtime();
    rt.block_on(async {
        let recorded = Arc::new(Recorded::default());
        let (server_communicator, backend) = recording_server(recorded.clone()).await;
        let relay = slow_relay(backend, delay);
        let (_router, c) = session_through(kind, extra, "dave").await;
        let recorder = c.string_to_proxy(&format!("recorder:tcp -h 127.0.0.1 -p {relay}")).unwrap();
        tokio::time::timeout(Duration::from_secs(20), client(recorder, recorded.clone()))
            .await
            .expect("the client's calls took over 20 s");
        c.destroy().await;
        server_communicator.destroy().await;
        recorded
    })
}

/// Sends `count` oneway `op(i)` through the router, with `_ovrd` = `ovrd(i)` when it gives
/// one, to a server that accepts after a second; returns the arguments the server got, in
/// order, once the last one came.
fn oneways_to_a_slow_server(
    kind: RouterKind,
    extra: &[&str],
    ovrd: impl Fn(i32) -> Option<&'static str> + 'static,
    count: i32,
) -> Vec<i32> {
    let recorded = through_router(kind, extra, Duration::from_secs(1), |recorder, recorded| async move {
        let oneway = recorder.ice_oneway();
        for i in 0..count {
            let mut ctx = floe::Context::new();
            if let Some(v) = ovrd(i) {
                ctx.insert("_ovrd".into(), v.into());
            }
            oneway.invoke("op", OperationMode::Normal, Some(&ctx), |e| e.write_i32(i)).await.unwrap();
        }
        while !recorded.values().contains(&(count - 1)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Anything late would come now.
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
    recorded.values()
}

/// How many times a run that should show replaced requests is tried with `kind`. floe queues
/// every request while the server's connection is pending, so one run always shows it.
/// glacier2router replaces only the requests that arrived together before its queue's flush
/// ran, and on a loaded machine it may flush each one as it comes: a few tries are needed to
/// see it there.
fn tries_to_see_replacement(kind: RouterKind) -> usize {
    match kind {
        RouterKind::Floe => 1,
        RouterKind::Glacier2 => 4,
    }
}

/// Runs `run` until what it returns has fewer than `count` values, at most
/// [`tries_to_see_replacement`] times for `kind`; the last result.
fn until_replaced(kind: RouterKind, count: i32, run: impl Fn() -> Vec<i32>) -> Vec<i32> {
    let mut got = run();
    for _ in 1..tries_to_see_replacement(kind) {
        if got.len() < count as usize {
            break;
        }
        eprintln!("{kind:?}: nothing replaced this time, trying again: {got:?}");
        got = run();
    }
    got
}

/// Buffered (the default): oneway requests with the same `_ovrd` value, queued while the
/// router waits for the server's connection, replace each other: fewer than sent arrive, in
/// order, and the last always does. Without `_ovrd`, or unbuffered, all arrive in order.
#[test]
fn ovrd_replaces_queued_oneways_as_glacier2_does() {
    const N: i32 = 40;
    let all: Vec<i32> = (0..N).collect();
    for kind in BOTH {
        let got = until_replaced(kind, N, || oneways_to_a_slow_server(kind, &[], |_| Some("position"), N));
        eprintln!("{kind:?} buffered, _ovrd: {got:?}");
        assert!(got.len() < N as usize, "{kind:?}: no request was replaced: {got:?}");
        assert_eq!(got.last(), Some(&(N - 1)), "{kind:?}: the last request was lost");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{kind:?}: out of order: {got:?}");

        // A request replaces only one with the same `_ovrd` value.
        let got = until_replaced(kind, N, || {
            oneways_to_a_slow_server(kind, &[], |i| Some(if i % 2 == 0 { "even" } else { "odd" }), N)
        });
        eprintln!("{kind:?} buffered, two _ovrd values: {got:?}");
        assert!(got.len() < N as usize, "{kind:?}: no request was replaced: {got:?}");
        assert!(got.contains(&(N - 2)) && got.contains(&(N - 1)), "{kind:?}: the last of a value was lost: {got:?}");
        // A replacement takes the replaced request's place: each value's requests are in
        // order, and the last of one value may come before the last of the other.
        for parity in [0, 1] {
            let of_value: Vec<i32> = got.iter().copied().filter(|v| v % 2 == parity).collect();
            assert!(of_value.windows(2).all(|w| w[0] < w[1]), "{kind:?}: out of order: {got:?}");
        }

        let got = oneways_to_a_slow_server(kind, &[], |_| None, N);
        assert_eq!(got, all, "{kind:?} buffered, without _ovrd");

        let got = oneways_to_a_slow_server(kind, &["--Glacier2.Client.Buffered=0"], |_| Some("position"), N);
        assert_eq!(got, all, "{kind:?} unbuffered, _ovrd");
    }
}

/// How long after a twoway `slow` (answered after 600 ms) a oneway sent 100 ms after it on
/// the same client connection reaches the server.
fn oneway_behind_a_slow_twoway(kind: RouterKind, extra: &[&str]) -> Duration {
    let recorded = through_router(kind, extra, Duration::ZERO, |recorder, recorded| async move {
        recorder.ice_ping().await.unwrap();
        let slow = tokio::spawn({
            let recorder = recorder.clone();
            async move { recorder.invoke("slow", OperationMode::Normal, None, |_| {}).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        recorder.ice_oneway().invoke("op", OperationMode::Normal, None, |e| e.write_i32(1)).await.unwrap();
        slow.await.unwrap().unwrap();
        while recorded.arrival(1).is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    recorded.arrival(1).unwrap() - recorded.arrival(-1).unwrap()
}

/// Buffered or not, a request does not wait for the reply to the twoway read before it on
/// the same connection (glacier2router 3.7 forwards twoways asynchronously in both modes).
#[test]
fn twoways_hold_back_no_request_buffered_or_not() {
    for kind in BOTH {
        let buffered = oneway_behind_a_slow_twoway(kind, &[]);
        let unbuffered = oneway_behind_a_slow_twoway(kind, &["--Glacier2.Client.Buffered=0"]);
        eprintln!(
            "{kind:?}: a oneway behind a 600 ms twoway came after {buffered:?} buffered, {unbuffered:?} unbuffered"
        );
        assert!(buffered < Duration::from_millis(450), "{kind:?}: buffered, the oneway waited {buffered:?}");
        assert!(unbuffered < Duration::from_millis(450), "{kind:?}: unbuffered, the oneway waited {unbuffered:?}");
    }
}

// ---- Connections without a session, against floe-router and glacier2router alike.

/// A communicator of its own (so its own connection to the router) that sends no heartbeat
/// unless asked.
fn quiet_communicator() -> Communicator {
    let props = Properties::new();
    props.set("Ice.ACM.Client.Heartbeat", "0");
    props.set("Ice.ACM.Client.Timeout", "0");
    Communicator::with_properties(props).unwrap()
}

/// Waits up to 10 s for `connection` to close.
async fn closes(kind: RouterKind, what: &str, connection: &floe::Connection) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !connection.is_closed() {
        assert!(Instant::now() < deadline, "{kind:?}: {what}: the connection stayed open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `getClientProxy`, `getServerProxy`, `addProxies` and `getCategoryForClient` on a
/// connection without a session fail and close it; `refreshSession` and `destroySession`
/// fail and leave it open; a heartbeat on a connection that never had a session leaves it
/// open, one on a connection whose session was destroyed closes it — from either router.
#[test]
fn router_calls_and_heartbeats_without_a_session_as_glacier2_does() {
    let rt = runtime();
    for kind in BOTH {
        rt.block_on(async {
            let port = free_port();
            let args = ["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".to_string()];
            let _router = router_of(kind, &format!("tcp -h 127.0.0.1 -p {port}"), &args);
            for op in ["getClientProxy", "getServerProxy", "addProxies", "getCategoryForClient"] {
                let c = quiet_communicator();
                let router = router_proxy(&c, port);
                let connection = router.ice_get_connection().await.unwrap();
                let failed = match op {
                    "getClientProxy" => router.get_client_proxy().await.is_err(),
                    "getServerProxy" => router.get_server_proxy().await.is_err(),
                    "addProxies" => {
                        let p = c.string_to_proxy("tester:tcp -h 127.0.0.1 -p 9").unwrap();
                        router.add_proxies(&[Some(p)]).await.is_err()
                    }
                    _ => router.get_category_for_client().await.is_err(),
                };
                assert!(failed, "{kind:?}: {op} without a session succeeded");
                closes(kind, op, &connection).await;
                c.destroy().await;
            }

            let c = quiet_communicator();
            let router = router_proxy(&c, port);
            let connection = router.ice_get_connection().await.unwrap();
            assert!(router.refresh_session().await.is_err(), "{kind:?}");
            assert!(router.destroy_session().await.is_err(), "{kind:?}");
            connection.heartbeat().await.unwrap();
            tokio::time::sleep(Duration::from_millis(700)).await;
            router.ice_ping().await.unwrap();
            assert!(!connection.is_closed(), "{kind:?}: a heartbeat closed a connection that never had a session");

            // With a session, heartbeats are fine; once it is destroyed, the next one closes
            // the connection.
            router.create_session("erin", "x").await.unwrap();
            connection.heartbeat().await.unwrap();
            router.get_client_proxy().await.unwrap();
            router.destroy_session().await.unwrap();
            tokio::time::sleep(Duration::from_millis(700)).await;
            router.ice_ping().await.unwrap();
            assert!(!connection.is_closed(), "{kind:?}: closed before any heartbeat");
            connection.heartbeat().await.unwrap();
            closes(kind, "heartbeat after destroySession", &connection).await;
            c.destroy().await;
        });
    }
}

// ---- `Glacier2.Filter.Category.AcceptUser`, against floe-router and glacier2router alike.

/// Which of `identities` (on a server that has every object) the client of a password
/// session for `user` may ping through a router of `kind` with `extra` properties.
fn reachable(kind: RouterKind, extra: &[&str], user: &str, identities: &[&str]) -> Vec<String> {
    runtime().block_on(async {
        let (server_communicator, backend) = recording_server(Arc::default()).await;
        let (_router, c) = session_through(kind, extra, user).await;
        let mut passed = Vec::new();
        for id in identities {
            let p = c.string_to_proxy(&format!("{id}:tcp -h 127.0.0.1 -p {backend}")).unwrap();
            match p.ice_ping().await {
                Ok(()) => passed.push(id.to_string()),
                Err(Error::ObjectNotExist { .. }) => {}
                Err(e) => panic!("{kind:?}: pinging {id}: {e}"),
            }
        }
        c.destroy().await;
        server_communicator.destroy().await;
        passed
    })
}

/// `Glacier2.Filter.Category.AcceptUser=1` lets a password session's client call the
/// category of its user id (and nothing else, unless another filter lets it), `2` the user id
/// with a leading underscore; both add to `Glacier2.Filter.Category.Accept`.
#[test]
fn accept_user_filters_categories_as_glacier2_does() {
    let ids = ["alice/a", "_alice/b", "bob/c", "other/d", "e"];
    for kind in BOTH {
        assert_eq!(reachable(kind, &[], "alice", &ids), ids, "{kind:?}: no filter");
        let one = ["--Glacier2.Filter.Category.AcceptUser=1"];
        assert_eq!(reachable(kind, &one, "alice", &ids), ["alice/a"], "{kind:?}: AcceptUser=1");
        let two = ["--Glacier2.Filter.Category.AcceptUser=2"];
        assert_eq!(reachable(kind, &two, "alice", &ids), ["_alice/b"], "{kind:?}: AcceptUser=2");
        let with_accept = ["--Glacier2.Filter.Category.AcceptUser=1", "--Glacier2.Filter.Category.Accept=other"];
        assert_eq!(reachable(kind, &with_accept, "alice", &ids), ["alice/a", "other/d"], "{kind:?}: with Accept");
        let zero = ["--Glacier2.Filter.Category.AcceptUser=0"];
        assert_eq!(reachable(kind, &zero, "alice", &ids), ids, "{kind:?}: AcceptUser=0");
    }
}

// ---- The `_fwd` context and `_ovrd` on batched requests, against floe-router and
// ---- glacier2router alike.

/// What a relay saw of one message going to the server: its type (0 request, 1 batch
/// request), its compression byte, and its request id (requests) or request count (batches).
type Sniffed = (u8, u8, i32);

/// A loopback port that relays each connection to `backend`, noting the messages that go to
/// it.
fn sniffing_relay(backend: u16) -> (u16, Arc<Mutex<Vec<Sniffed>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<Sniffed>>> = Arc::default();
    let noted = seen.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().take(4) {
            let Ok(mut a) = s else { break };
            let Ok(mut b) = TcpStream::connect(("127.0.0.1", backend)) else { break };
            let (mut a2, mut b2) = (a.try_clone().unwrap(), b.try_clone().unwrap());
            let noted = noted.clone();
            std::thread::spawn(move || {
                let mut header = [0u8; 14];
                while a.read_exact(&mut header).is_ok() {
                    let size = i32::from_le_bytes(header[10..14].try_into().unwrap()).max(14) as usize;
                    let mut body = vec![0u8; size - 14];
                    if a.read_exact(&mut body).is_err() {
                        break;
                    }
                    if header[8] <= 1 && body.len() >= 4 {
                        let plain = if header[9] == 2 {
                            let whole = [&header[..], &body].concat();
                            floe::protocol::compress::decompress_message(&whole, 1 << 20).unwrap()[14..].to_vec()
                        } else {
                            body.clone()
                        };
                        let first = i32::from_le_bytes(plain[..4].try_into().unwrap());
                        noted.lock().unwrap().push((header[8], header[9], first));
                    }
                    if b.write_all(&header).and_then(|_| b.write_all(&body)).is_err() {
                        break;
                    }
                }
                let _ = b.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut b2, &mut a2);
                let _ = a2.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (port, seen)
}

/// Runs `client` with the recorder's proxy through a router of `kind` (with `extra`
/// properties), the recorder behind a sniffing relay; `client` gets what the recorder and
/// the relay saw.
fn through_sniffed_router<F, Fut>(kind: RouterKind, extra: &[&str], client: F)
where
    F: FnOnce(ObjectPrx, Arc<Recorded>, Arc<Mutex<Vec<Sniffed>>>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    runtime().block_on(async {
        let recorded = Arc::new(Recorded::default());
        let (server_communicator, backend) = recording_server(recorded.clone()).await;
        let (relay, sniffed) = sniffing_relay(backend);
        let (_router, c) = session_through(kind, extra, "frank").await;
        let recorder = c.string_to_proxy(&format!("recorder:tcp -h 127.0.0.1 -p {relay}")).unwrap();
        tokio::time::timeout(Duration::from_secs(30), client(recorder, recorded, sniffed))
            .await
            .expect("the client's calls took over 30 s");
        c.destroy().await;
        server_communicator.destroy().await;
    })
}

/// Sends `op(value)` (with 2,000 more bytes when `big`) oneway or twoway with `_fwd` =
/// `fwd`; the outcome of the call.
async fn op_with_fwd(recorder: &ObjectPrx, value: i32, oneway: bool, fwd: &str, big: bool) -> Result<(), Error> {
    let mut ctx = floe::Context::new();
    if !fwd.is_empty() {
        ctx.insert("_fwd".into(), fwd.into());
    }
    let p = if oneway { recorder.ice_oneway() } else { recorder.clone() };
    p.invoke("op", OperationMode::Normal, Some(&ctx), |e| {
        e.write_i32(value);
        if big {
            e.write_raw(&[0u8; 2000]);
        }
    })
    .await
    .map(|_| ())
}

/// Waits up to 10 s for `value` to reach the recorder; then what the relay saw of it (the
/// last message).
async fn arrived(kind: RouterKind, recorded: &Recorded, sniffed: &Mutex<Vec<Sniffed>>, value: i32) -> Sniffed {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !recorded.values().contains(&value) {
        assert!(Instant::now() < deadline, "{kind:?}: op({value}) did not arrive");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    *sniffed.lock().unwrap().last().unwrap()
}

/// `_fwd` changes how a request is forwarded: `o` oneway (a twoway caller gets an empty
/// reply), `t` twoway, `O` in a batch (buffered; oneway unbuffered), `z` compressed, `s` over
/// a secure endpoint only (the tcp-only server is out of reach), `d` as a datagram (the
/// same), the last mode letter winning — from either router.
#[test]
fn fwd_context_changes_the_forwarding_as_glacier2_does() {
    for kind in BOTH {
        through_sniffed_router(kind, &[], |recorder, recorded, sniffed| async move {
            let (r, s) = (&recorded, &sniffed);
            op_with_fwd(&recorder, 1, false, "o", false).await.unwrap();
            let (ty, _, id) = arrived(kind, r, s, 1).await;
            assert_eq!((ty, id), (0, 0), "{kind:?}: _fwd=o");
            op_with_fwd(&recorder, 2, true, "t", false).await.unwrap();
            let (ty, _, id) = arrived(kind, r, s, 2).await;
            assert!(ty == 0 && id > 0, "{kind:?}: _fwd=t: {ty} {id}");
            op_with_fwd(&recorder, 3, false, "O", false).await.unwrap();
            let (ty, _, count) = arrived(kind, r, s, 3).await;
            assert_eq!((ty, count), (1, 1), "{kind:?}: _fwd=O");
            op_with_fwd(&recorder, 4, false, "oz", true).await.unwrap();
            let (ty, compression, id) = arrived(kind, r, s, 4).await;
            assert_eq!((ty, compression, id), (0, 2, 0), "{kind:?}: _fwd=oz");
            op_with_fwd(&recorder, 5, false, "tz", true).await.unwrap();
            let (ty, compression, id) = arrived(kind, r, s, 5).await;
            assert!(ty == 0 && compression == 2 && id > 0, "{kind:?}: _fwd=tz: {ty} {compression} {id}");
            op_with_fwd(&recorder, 6, false, "", true).await.unwrap();
            let (_, compression, _) = arrived(kind, r, s, 6).await;
            assert_eq!(compression, 0, "{kind:?}: compressed without _fwd=z");
            assert!(op_with_fwd(&recorder, 7, false, "s", false).await.is_err(), "{kind:?}: _fwd=s reached tcp");
            op_with_fwd(&recorder, 8, false, "d", false).await.unwrap();
            op_with_fwd(&recorder, 9, false, "Oot", false).await.unwrap();
            let (ty, _, id) = arrived(kind, r, s, 9).await;
            assert!(ty == 0 && id > 0, "{kind:?}: _fwd=Oot: {ty} {id}");
            op_with_fwd(&recorder, 10, false, "", false).await.unwrap();
            arrived(kind, r, s, 10).await;
            assert_eq!(recorded.values(), [1, 2, 3, 4, 5, 6, 9, 10], "{kind:?}");
        });
        through_sniffed_router(kind, &["--Glacier2.Client.Buffered=0"], |recorder, recorded, sniffed| async move {
            op_with_fwd(&recorder, 1, false, "O", false).await.unwrap();
            let (ty, _, id) = arrived(kind, &recorded, &sniffed, 1).await;
            assert_eq!((ty, id), (0, 0), "{kind:?}: unbuffered _fwd=O");
            op_with_fwd(&recorder, 2, true, "t", false).await.unwrap();
            let (ty, _, id) = arrived(kind, &recorded, &sniffed, 2).await;
            assert!(ty == 0 && id > 0, "{kind:?}: unbuffered _fwd=t: {ty} {id}");
        });
    }
}

/// Buffered, batched oneway requests with the same `_ovrd` value replace each other while
/// queued, as plain oneway ones do: fewer than sent arrive, in order, the last always; without
/// `_ovrd` all arrive — from either router.
#[test]
fn ovrd_replaces_queued_batched_requests_as_glacier2_does() {
    const N: i32 = 40;
    let batched = |kind: RouterKind, ovrd: bool| {
        let recorded = through_router(kind, &[], Duration::from_secs(1), move |recorder, recorded| async move {
            let batch = recorder.ice_batch_oneway();
            for i in 0..N {
                let mut ctx = floe::Context::new();
                if ovrd {
                    ctx.insert("_ovrd".into(), "position".into());
                }
                batch.invoke("op", OperationMode::Normal, Some(&ctx), |e| e.write_i32(i)).await.unwrap();
                if i % 10 == 9 {
                    batch.ice_flush_batch_requests().await.unwrap();
                }
            }
            while !recorded.values().contains(&(N - 1)) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        });
        recorded.values()
    };
    for kind in BOTH {
        let got = until_replaced(kind, N, || batched(kind, true));
        eprintln!("{kind:?} buffered, batched with _ovrd: {got:?}");
        assert!(got.len() < N as usize, "{kind:?}: no batched request was replaced: {got:?}");
        assert_eq!(got.last(), Some(&(N - 1)), "{kind:?}: the last request was lost");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{kind:?}: out of order: {got:?}");
        assert_eq!(batched(kind, false), (0..N).collect::<Vec<_>>(), "{kind:?}: batched without _ovrd");
    }
}

/// `Glacier2.Client.SleepTime=1000`: after each flush of its queue the router pauses a
/// second, so 40 oneway requests with one `_ovrd` value sent at once to a ready server mostly
/// replace each other, and the last reaches it about a second after they were sent — from
/// either router.
#[test]
fn sleep_time_gathers_queued_requests_as_glacier2_does() {
    const N: i32 = 40;
    for kind in BOTH {
        let sent = Arc::new(Mutex::new(None));
        let started = sent.clone();
        let recorded = through_router(
            kind,
            &["--Glacier2.Client.SleepTime=1000"],
            Duration::ZERO,
            move |recorder, recorded| async move {
                recorder.ice_ping().await.unwrap();
                *started.lock().unwrap() = Some(Instant::now());
                let oneway = recorder.ice_oneway();
                for i in 0..N {
                    let mut ctx = floe::Context::new();
                    ctx.insert("_ovrd".into(), "position".into());
                    oneway.invoke("op", OperationMode::Normal, Some(&ctx), |e| e.write_i32(i)).await.unwrap();
                }
                while !recorded.values().contains(&(N - 1)) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            },
        );
        let got = recorded.values();
        let took = recorded.arrival(N - 1).unwrap() - sent.lock().unwrap().unwrap();
        eprintln!("{kind:?} SleepTime=1000: {got:?}, the last after {took:?}");
        assert!(got.len() <= 3, "{kind:?}: the requests were not gathered: {got:?}");
        assert_eq!(got.last(), Some(&(N - 1)), "{kind:?}: the last request was lost");
        assert!(took >= Duration::from_millis(700), "{kind:?}: no pause: the last came after {took:?}");
    }
}

/// `refreshSession` pings the session manager's session: while it lives the refresh
/// succeeds; once it is gone the refresh fails with `SessionNotExistException`, the router's
/// session is gone too, and the connection stays open — from either router.
#[test]
fn refresh_session_pings_the_managers_session_as_glacier2_does() {
    let rt = runtime();
    for kind in BOTH {
        rt.block_on(async {
            let services_communicator = Communicator::new().unwrap();
            let (adapter, _seen, _, manager, _) = services(&services_communicator).await;
            let port = free_port();
            let args = [
                "--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".to_string(),
                format!("--Glacier2.SessionManager={manager}"),
            ];
            let _router = router_of(kind, &format!("tcp -h 127.0.0.1 -p {port}"), &args);
            let c = quiet_communicator();
            let router = router_proxy(&c, port);
            router.create_session("gina", "x").await.unwrap();
            router.refresh_session().await.unwrap();
            adapter.remove(&Identity::new("session"));
            match router.refresh_session().await {
                Err(CallError::User(RouterRefreshSessionError::SessionNotExistException(_))) => {}
                other => panic!("{kind:?}: expected SessionNotExistException, got {other:?}"),
            }
            // glacier2router answers the refresh before it destroys the session.
            tokio::time::sleep(Duration::from_millis(300)).await;
            match router.destroy_session().await {
                Err(CallError::User(_)) => {}
                other => panic!("{kind:?}: the session outlived its manager's: {other:?}"),
            }
            router.ice_ping().await.unwrap();
            c.destroy().await;
            services_communicator.destroy().await;
        });
    }
}

/// A router of `kind` that lets everyone in, on a free port: the router and its port.
fn open_router(kind: RouterKind) -> (Server, u16) {
    let port = free_port();
    let router = router_of(
        kind,
        &format!("tcp -h 127.0.0.1 -p {port}"),
        &["--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier".to_string()],
    );
    (router, port)
}

/// Ice's Python client ends its session and opens another on the same communicator, then calls
/// a proxy of the first session: the router, whose new routing table lacks that proxy, answers
/// as Glacier2 does (`ObjectNotExistException` for `ice_add_proxy`), so Ice's client adds the
/// proxy again and retries. The same client against glacier2router shows the reference.
#[test]
fn ice_python_client_calls_an_old_proxy_in_a_new_session() {
    let server_port = free_port();
    let _server = python_server(server_port);
    for kind in BOTH {
        let (_router, router_port) = open_router(kind);
        let mut client = Command::new("/usr/bin/python3");
        client.arg(root().join("python/glacier2_resession.py")).args([
            "--proxy",
            &format!("tester:tcp -h 127.0.0.1 -p {server_port}"),
            &format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"),
        ]);
        eprintln!("{kind:?}: {}", run_client(client, 7));
    }
}

/// floe's client does what Ice's does when a router's routing table lacks a proxy it added in
/// an earlier session: it adds the proxy again and retries, through floe-router and through
/// glacier2router alike.
#[test]
fn floe_client_calls_an_old_proxy_in_a_new_session() {
    let server_port = free_port();
    let _server = python_server(server_port);
    for kind in BOTH {
        let (_router, router_port) = open_router(kind);
        runtime().block_on(async {
            let (c, tester) = routed_tester(router_port, server_port).await;
            let router = RouterPrx::from_object(c.default_router().unwrap());
            router.destroy_session().await.unwrap();
            router.create_session("dave", "x").await.unwrap();
            tester.ping().await.unwrap_or_else(|e| panic!("{kind:?}: the old proxy in the new session: {e}"));
            assert_eq!(tester.op_string("a", "b").await.unwrap().0, "ab", "{kind:?}");
            router.destroy_session().await.unwrap();
            c.destroy().await;
        });
    }
}

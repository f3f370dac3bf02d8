//! floe's connections beside Ice 3.8 peers: Ice 3.8's connection properties and semantics (idle
//! timeout with heartbeats and the idle check, inactivity timeout), first between floe
//! programs, then against a real Ice 3.8.2 C++ program (`cpp38/IdlePeer.cpp`, built against the
//! Ice 3.8 core that `scripts/build-ice38` builds) in both directions.
//!
//! The idle tests here keep connections idle for a few idle timeouts (shortened to 2 s on both
//! sides) and, once, for longer than Ice 3.8's default idle timeout with every setting at its
//! default. `FLOE_ICE38_IDLE_SECS=300 cargo test -p floe-interop --test ice38 default` runs the
//! latter for five minutes (`bash scripts/soak-ice38`).

mod common;

#[path = "../../support/ice38.rs"]
mod ice38;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use floe::{Communicator, Proxy};

/// The Ice 3.8 idle peer (built once).
fn idle_peer() -> PathBuf {
    ice38::program("idle-peer", &["tests/interop/cpp38/IdlePeer.cpp"])
}

/// What the 3.8 client printed as its result, after pinging `proxy` and idling `seconds`.
fn ice38_client(proxy: &str, seconds: u64, properties: &[&str]) -> String {
    let out = Command::new(idle_peer())
        .args(["client", proxy, &seconds.to_string()])
        .args(properties)
        .output()
        .expect("cannot run the Ice 3.8 idle peer");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the Ice 3.8 client failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line: {stdout}"))
        .to_string()
}

/// A running Ice 3.8 server (the idle peer's `idle` object) and the lines it prints.
struct Ice38Server {
    _process: Server,
    lines: mpsc::Receiver<String>,
}

impl Ice38Server {
    fn start(port: u16, properties: &[&str]) -> Self {
        let mut child = Command::new(idle_peer())
            .args(["server", &format!("tcp -h 127.0.0.1 -p {port}")])
            .args(properties)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start the Ice 3.8 idle peer");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let server = Ice38Server { _process: Server(child), lines };
        let ready = server.lines.recv_timeout(Duration::from_secs(30));
        assert_eq!(ready.as_deref(), Ok("ready"), "the Ice 3.8 server did not start");
        server
    }

    /// The connections it saw close so far, with their reasons.
    fn closed(&self) -> Vec<String> {
        self.lines.try_iter().filter(|l| l.starts_with("closed")).collect()
    }
}

/// What a floe client saw of a connection it kept idle.
struct Idled {
    /// The connection was still open, and the second ping went over it.
    kept: bool,
    heartbeats: u64,
    /// The closes the Ice 3.8 server had printed before the client ended.
    server_closed: Vec<String>,
}

/// A floe client pings the 3.8 server, keeps the connection idle for `idle`, then checks it
/// is still open and pings over it again.
fn floe_client_idles(server: &Ice38Server, port: u16, idle: Duration, client_properties: &[&str]) -> Idled {
    let (c, _) = Communicator::from_args(client_properties.iter().copied()).unwrap();
    let p = c.string_to_proxy(&format!("idle:tcp -h 127.0.0.1 -p {port}")).unwrap();
    c.block_on(p.ice_ping()).unwrap();
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    let until = Instant::now() + idle;
    while Instant::now() < until && !conn.is_closed() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let open = !conn.is_closed();
    c.block_on(p.ice_ping()).unwrap();
    let kept = open && c.block_on(p.ice_get_connection()).unwrap() == conn;
    let idled = Idled { kept, heartbeats: conn.heartbeats_received(), server_closed: server.closed() };
    c.destroy_blocking();
    idled
}

const SHORT: &[&str] = &["--Ice.Connection.Client.IdleTimeout=2", "--Ice.Connection.Server.IdleTimeout=2"];

/// An Ice 3.8 client keeps an idle connection to a floe server with both idle timeouts at
/// 2 s: floe's heartbeats satisfy the client's idle check, and the client's heartbeats
/// floe's, for five idle timeouts.
#[test]
fn an_idle_ice38_client_connection_to_a_floe_server_stays_open() {
    let port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {port}"), SHORT);
    let result = ice38_client(&format!("tester:tcp -h 127.0.0.1 -p {port}"), 10, SHORT);
    assert_eq!(result, "same-connection");
}

/// A floe client keeps an idle connection to an Ice 3.8 server, both idle timeouts at 2 s:
/// the server never closes it and heartbeats reach the client.
#[test]
fn an_idle_floe_client_connection_to_an_ice38_server_stays_open() {
    let port = free_port();
    let server = Ice38Server::start(port, SHORT);
    let idled = floe_client_idles(&server, port, Duration::from_secs(10), SHORT);
    assert!(idled.kept, "the idle connection closed; the server saw {:?}", idled.server_closed);
    assert!(idled.heartbeats > 0, "no heartbeat from the Ice 3.8 server");
    assert!(idled.server_closed.is_empty(), "the server closed a connection: {:?}", idled.server_closed);
}

/// What the tests above guard against: a floe server configured as Ice 3.7 does by default
/// (ACM heartbeats only while dispatching) lets the Ice 3.8 client's idle check abort the
/// connection after its idle timeout.
#[test]
fn without_heartbeats_an_ice38_client_aborts_an_idle_connection() {
    let port = free_port();
    let _server =
        floe_server(&format!("tcp -h 127.0.0.1 -p {port}"), &["--Ice.ACM.Timeout=60", "--Ice.ACM.Heartbeat=1"]);
    let result = ice38_client(&format!("tester:tcp -h 127.0.0.1 -p {port}"), 10, SHORT);
    assert!(result.starts_with("closed:"), "the connection was kept: {result}");
}

/// floe's inactivity timeout closes an idle connection gracefully, as Ice 3.8's does: the
/// Ice 3.8 client sees a graceful close, not an abort, after about 3 s without calls.
#[test]
fn floe_closes_an_inactive_ice38_connection_gracefully() {
    let port = free_port();
    let _server = floe_server(
        &format!("tcp -h 127.0.0.1 -p {port}"),
        &["--Ice.Connection.Server.IdleTimeout=1", "--Ice.Connection.Server.InactivityTimeout=3"],
    );
    let start = Instant::now();
    let result =
        ice38_client(&format!("tester:tcp -h 127.0.0.1 -p {port}"), 10, &["--Ice.Connection.Client.IdleTimeout=1"]);
    let took = start.elapsed();
    // Ice 3.8's CloseConnectionException: the peer sent CloseConnection (an abort would be a
    // ConnectionLostException, "connection lost").
    assert_eq!(result, "closed: connection closed by the peer");
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(9), "closed after {took:?}");
}

/// An Ice 3.8 server closes a floe client's inactive connection gracefully after its inactivity
/// timeout; floe's next call opens a new connection and succeeds.
#[test]
fn an_ice38_server_closes_an_inactive_floe_connection_and_floe_reconnects() {
    let port = free_port();
    let server = Ice38Server::start(
        port,
        &["--Ice.Connection.Server.IdleTimeout=1", "--Ice.Connection.Server.InactivityTimeout=2"],
    );
    let idled = floe_client_idles(&server, port, Duration::from_secs(6), &["--Ice.Connection.Client.IdleTimeout=1"]);
    assert!(!idled.kept, "the inactive connection stayed open");
    assert!(!idled.server_closed.is_empty(), "the server saw no close");
}

/// Every connection setting at its default on both sides (floe's and Ice 3.8's: 60 s idle
/// timeout, idle check on, 300 s inactivity timeout), and a connection each way kept idle for
/// longer than the idle timeout: 75 s, or `FLOE_ICE38_IDLE_SECS` (the five-minute soak raises
/// both inactivity timeouts above it, since 300 s is their default).
#[test]
fn default_settings_keep_idle_connections_with_ice38_both_ways() {
    let secs: u64 = std::env::var("FLOE_ICE38_IDLE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(75);
    let inactivity: Vec<String> = if secs >= 290 {
        vec![
            format!("--Ice.Connection.Client.InactivityTimeout={}", secs * 2),
            format!("--Ice.Connection.Server.InactivityTimeout={}", secs * 2),
        ]
    } else {
        Vec::new()
    };
    let props: Vec<&str> = inactivity.iter().map(String::as_str).collect();
    let floe_port = free_port();
    let _floe = floe_server(&format!("tcp -h 127.0.0.1 -p {floe_port}"), &props);
    let ice_port = free_port();
    let ice = Ice38Server::start(ice_port, &props);
    let from_ice = {
        let props: Vec<String> = props.iter().map(|s| s.to_string()).collect();
        std::thread::spawn(move || {
            let props: Vec<&str> = props.iter().map(String::as_str).collect();
            ice38_client(&format!("tester:tcp -h 127.0.0.1 -p {floe_port}"), secs, &props)
        })
    };
    let idled = floe_client_idles(&ice, ice_port, Duration::from_secs(secs), &props);
    assert!(idled.kept, "floe → Ice 3.8: the idle connection closed within {secs} s: {:?}", idled.server_closed);
    assert!(idled.heartbeats > 0, "floe → Ice 3.8: no heartbeat in {secs} s");
    assert!(idled.server_closed.is_empty(), "floe → Ice 3.8: the server closed it: {:?}", idled.server_closed);
    assert_eq!(from_ice.join().unwrap(), "same-connection", "Ice 3.8 → floe, {secs} s idle");
}

/// Between floe programs, with 1 s idle timeouts and a 2 s inactivity timeout on the client:
/// a connection without calls is closed after about 2 s, while one with a call every half
/// second, and one whose inactivity check was turned off, stay open; heartbeats flow on all.
#[test]
fn the_inactivity_timeout_closes_only_connections_without_calls() {
    let port = free_port();
    let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {port}"), &["--Ice.Connection.Server.IdleTimeout=1"]);
    let client = |extra: &[&str]| {
        let mut args = vec!["--Ice.Connection.Client.IdleTimeout=1", "--Ice.Connection.Client.InactivityTimeout=2"];
        args.extend_from_slice(extra);
        let (c, _) = Communicator::from_args(args).unwrap();
        let p = c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap();
        c.block_on(p.ice_ping()).unwrap();
        let conn = c.block_on(p.ice_get_connection()).unwrap();
        (c, p, conn)
    };
    let (quiet_c, _quiet_p, quiet) = client(&[]);
    let (busy_c, busy_p, busy) = client(&[]);
    let (exempt_c, _exempt_p, exempt) = client(&[]);
    exempt.disable_inactivity_check();
    let start = Instant::now();
    let mut quiet_closed_at = None;
    while start.elapsed() < Duration::from_secs(5) {
        busy_c.block_on(busy_p.ice_ping()).unwrap();
        if quiet_closed_at.is_none() && quiet.is_closed() {
            quiet_closed_at = Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let closed_at = quiet_closed_at.expect("the connection without calls stayed open");
    assert!(closed_at >= Duration::from_millis(1500), "closed after {closed_at:?}, before the timeout");
    assert!(!busy.is_closed(), "a connection with calls was closed");
    assert!(!exempt.is_closed(), "a connection without the inactivity check was closed");
    assert!(busy.heartbeats_received() > 0 && exempt.heartbeats_received() > 0, "no heartbeats from the server");
    assert_eq!(busy_c.block_on(busy_p.ice_get_connection()).unwrap(), busy, "the busy connection was replaced");
    for c in [quiet_c, busy_c, exempt_c] {
        c.destroy_blocking();
    }
}

/// An Ice 3.8 client with a Glacier2 session through floe-router, on every setting's default
/// but 2 s idle timeouts and no session timeout (Ice 3.8's glacier2router has none): the
/// router's heartbeats keep the client's connection, and so its session, for five idle
/// timeouts, and a routed call afterwards goes over the same connection. floe-router's own
/// idle check is off by default there, so that Ice 3.7 clients without heartbeats keep their
/// sessions too; with it on, the client's heartbeats keep the session.
#[test]
fn an_idle_ice38_client_keeps_its_floe_router_session() {
    let backend_port = free_port();
    let _backend = floe_server(&format!("tcp -h 127.0.0.1 -p {backend_port}"), SHORT);
    for router_check in ["0", "1"] {
        let router_port = free_port();
        let mut cmd = Command::new(router_binary());
        cmd.arg(format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {router_port}"))
            .arg("--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier")
            .arg("--Ice.Connection.Server.IdleTimeout=2")
            .arg("--Ice.Connection.Client.IdleTimeout=2")
            .stderr(Stdio::null());
        if router_check == "1" {
            cmd.arg("--Glacier2.Client.Connection.EnableIdleCheck=1");
        }
        let _router = start_until(cmd, "floe-router ready");
        let router = format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}");
        let out = Command::new(idle_peer())
            .args(["glacier2", &format!("tester:tcp -h 127.0.0.1 -p {backend_port}"), "10"])
            .arg(&router)
            .args(SHORT)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("RESULT same-connection"), "idle check {router_check}: {stdout}");
    }
}

/// The other side of floe-router's default: a client that sends no heartbeats (Ice 3.7's
/// defaults, here a floe client with `Ice.ACM.Heartbeat=0`) keeps its session while idle for
/// three of the router's idle timeouts, as with glacier2router 3.7; with the router's idle
/// check turned on, the same client loses its connection.
#[test]
fn a_client_without_heartbeats_keeps_its_floe_router_session_unless_the_idle_check_is_on() {
    let backend_port = free_port();
    let _backend = floe_server(&format!("tcp -h 127.0.0.1 -p {backend_port}"), &[]);
    for router_check in [false, true] {
        let router_port = free_port();
        let mut cmd = Command::new(router_binary());
        cmd.arg(format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {router_port}"))
            .arg("--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier")
            .arg("--Ice.Connection.Server.IdleTimeout=2")
            .stderr(Stdio::null());
        if router_check {
            cmd.arg("--Glacier2.Client.Connection.EnableIdleCheck=1");
        }
        let _router = start_until(cmd, "floe-router ready");
        let (c, _) = Communicator::from_args([
            format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"),
            "--Ice.ACM.Heartbeat=0".into(),
            "--Ice.ACM.Close=0".into(),
        ])
        .unwrap();
        let session = floe_router::slice::glacier2::RouterPrx::from_object(c.default_router().unwrap());
        c.block_on(session.create_session("u", "x")).unwrap();
        let target = c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {backend_port}")).unwrap();
        c.block_on(target.ice_ping()).unwrap();
        let conn = c.block_on(target.ice_get_connection()).unwrap();
        let until = Instant::now() + Duration::from_secs(6);
        while Instant::now() < until && !conn.is_closed() {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(conn.is_closed(), router_check, "idle check {router_check}: closed {}", conn.is_closed());
        if !router_check {
            c.block_on(target.ice_ping()).unwrap();
        }
        c.destroy_blocking();
    }
}

/// Ice 3.8's `MaxDispatches`: with `Ice.Connection.Server.MaxDispatches=1` the server
/// dispatches one request of a connection at a time (it stops reading meanwhile), so four
/// 300 ms calls sent at once over one connection take four times as long as over a server
/// with the default; with `<Adapter>.Connection.MaxDispatches`, the
/// adapter's own setting wins.
#[test]
fn max_dispatches_holds_a_connections_requests_back() {
    let took = |extra: &[&str]| {
        let port = free_port();
        let _server = floe_server(&format!("tcp -h 127.0.0.1 -p {port}"), extra);
        let (c, _) = Communicator::from_args(Vec::<String>::new()).unwrap();
        let t = floe_interop::interop::TesterPrx::from_object(
            c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap(),
        );
        c.block_on(t.ice_ping()).unwrap();
        let start = Instant::now();
        let values: Vec<i32> = c.block_on(async {
            let calls: Vec<_> = (0..4)
                .map(|k| {
                    let t = t.clone();
                    tokio::spawn(async move { t.sleep_then_return(300, k).await })
                })
                .collect();
            let mut values = Vec::new();
            for call in calls {
                values.push(call.await.unwrap().unwrap());
            }
            values
        });
        let took = start.elapsed();
        assert_eq!(values, vec![0, 1, 2, 3]);
        c.destroy_blocking();
        took
    };
    let unbounded = took(&[]);
    let one_at_a_time = took(&["--Ice.Connection.Server.MaxDispatches=1"]);
    let adapter_wins = took(&["--Ice.Connection.Server.MaxDispatches=1", "--TestAdapter.Connection.MaxDispatches=4"]);
    assert!(unbounded < Duration::from_millis(900), "4 calls at once took {unbounded:?}");
    assert!(one_at_a_time >= Duration::from_millis(1200), "one at a time took only {one_at_a_time:?}");
    assert!(adapter_wins < Duration::from_millis(900), "the adapter's setting was ignored: {adapter_wins:?}");
}

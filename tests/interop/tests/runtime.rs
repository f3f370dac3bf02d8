//! Runtime behaviour under bad input and faults, against the floe interop server: a bad
//! connection is closed alone and every other connection keeps working; a client whose server
//! dies gets a typed error promptly; timeouts fire and free their requests.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use floe::{Communicator, Error, Proxy};
use floe_interop::interop::TesterPrx;

fn server(endpoints: &str, extra: &[&str]) -> Server {
    floe_server(endpoints, extra)
}

fn tester(c: &Communicator, port: u16) -> TesterPrx {
    TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap())
}

/// Opens a raw connection, sends `bytes`, and returns whether the server closed the
/// connection within a few seconds.
fn hostile(port: u16, bytes: &[u8]) -> bool {
    let mut s = connect(port);
    let _ = s.write_all(bytes);
    closed_within(&mut s, Duration::from_secs(5))
}

fn header(kind: u8, size: i32) -> Vec<u8> {
    let mut h = b"IceP\x01\x00\x01\x00".to_vec();
    h.push(kind);
    h.push(0);
    h.extend_from_slice(&size.to_le_bytes());
    h
}

#[test]
fn bad_connections_are_closed_alone() {
    let port = free_port();
    let _srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &["--Ice.MessageSizeMax=64"]);
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    c.block_on(t.ping()).unwrap();
    let mut wrong_magic = header(0, 14);
    wrong_magic[0] = b'X';
    let mut bad_version = header(0, 14);
    bad_version[4] = 9;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        ("wrong magic", wrong_magic),
        ("bad protocol version", bad_version),
        ("unknown message type", header(9, 14)),
        ("size below the header", header(0, 3)),
        ("size over MessageSizeMax", header(0, 10 << 20)),
        ("validate with a body", header(3, 20)),
        ("request body that does not decode", {
            let mut m = header(0, 20);
            m.extend_from_slice(&[1, 0, 0, 0, 200, 1]);
            m
        }),
        ("batch with an absurd count", {
            let mut m = header(1, 18);
            m.extend_from_slice(&i32::MAX.to_le_bytes());
            m
        }),
    ];
    for (what, bytes) in cases {
        assert!(hostile(port, &bytes), "{what}: the server kept the connection open");
        // The well-behaved client's connection is untouched.
        c.block_on(t.ping()).unwrap_or_else(|e| panic!("after {what}: {e}"));
    }
    // A request larger than MessageSizeMax (64 KB here) closes that connection only.
    let big = floe::bytes::Bytes::from(vec![0u8; 100 * 1024]);
    let c2 = Communicator::new().unwrap();
    let t2 = tester(&c2, port);
    match c2.block_on(t2.send_byte_seq(&big)) {
        Err(Error::ConnectionLost(_)) | Err(Error::CloseConnection) => {}
        other => panic!("oversized request: {other:?}"),
    }
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn undecodable_parameters_get_an_error_reply_and_the_connection_stays() {
    let port = free_port();
    let _srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &[]);
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    // opInt with 2 bytes of parameters instead of 8.
    let r = c.block_on(t.as_object().invoke("opInt", floe::protocol::OperationMode::Normal, None, |e| e.write_i16(1)));
    match r {
        Err(Error::UnknownLocalException(msg)) => {
            assert!(msg.contains("out of bounds") || msg.contains("marshal"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
    // Unknown operation, and a mode mismatch (ping is not idempotent).
    match c.block_on(t.as_object().invoke("noSuchOp", floe::protocol::OperationMode::Normal, None, |_| {})) {
        Err(Error::OperationNotExist { operation, .. }) => assert_eq!(operation, "noSuchOp"),
        other => panic!("{other:?}"),
    }
    match c.block_on(t.as_object().invoke("ping", floe::protocol::OperationMode::Idempotent, None, |_| {})) {
        Err(Error::UnknownLocalException(msg)) => assert!(msg.contains("mode"), "{msg}"),
        other => panic!("{other:?}"),
    }
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn a_server_that_dies_mid_call_gives_a_typed_error_promptly() {
    let port = free_port();
    let mut srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &[]);
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    c.block_on(t.ping()).unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let _ = srv.0.kill();
        let _ = srv.0.wait();
    });
    let start = Instant::now();
    let r = c.block_on(t.sleep_then_return(10_000, 1));
    assert!(matches!(r, Err(Error::ConnectionLost(_))), "{r:?}");
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    killer.join().unwrap();
    // With the server gone, new calls fail to connect (typed, not a hang).
    match c.block_on(t.ping()) {
        Err(Error::ConnectFailed { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn clients_reconnect_to_a_restarted_server() {
    let port = free_port();
    let endpoints = format!("tcp -h 127.0.0.1 -p {port}");
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    {
        let _srv = server(&endpoints, &[]);
        assert_eq!(c.block_on(t.op_idempotent(1)).unwrap(), 2);
    }
    let _srv = server(&endpoints, &[]);
    // The cached connection is dead; the idempotent call is retried on a new one.
    assert_eq!(c.block_on(t.op_idempotent(2)).unwrap(), 3);
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn invocation_timeouts_fire_and_free_the_request() {
    let port = free_port();
    let _srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &[]);
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    let conn = c.block_on(t.ice_get_connection()).unwrap();
    let slow = t.ice_invocation_timeout(Some(Duration::from_millis(100)));
    let start = Instant::now();
    for _ in 0..20 {
        assert!(matches!(c.block_on(slow.sleep_then_return(2000, 1)), Err(Error::InvocationTimeout(_))));
    }
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(conn.pending_count(), 0, "timed-out requests were forgotten");
    // Cancellation (dropping the future) frees the request too.
    c.block_on(async {
        let fut = t.sleep_then_return(2000, 1);
        let _ = tokio::time::timeout(Duration::from_millis(50), fut).await;
    });
    assert_eq!(conn.pending_count(), 0);
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn ipv6_loopback_and_config_files() {
    TcpListener::bind("[::1]:0").expect("IPv6 loopback (::1) is available");
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("floe-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("server.cfg");
    std::fs::write(&config, format!("TestAdapter.Endpoints=tcp -h \"::1\" -p {port}\nIce.MessageSizeMax=2048\n"))
        .unwrap();
    let _srv = server("tcp -h 127.0.0.1 -p 1", &[&format!("--Ice.Config={}", config.display())]);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h \"::1\" -p {port}")).unwrap());
    c.block_on(t.ping()).unwrap();
    assert_eq!(c.block_on(t.op_int(6, 7)).unwrap(), (6, 42));
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn servers_send_heartbeats_while_dispatching() {
    let port = free_port();
    let _srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &["--Ice.ACM.Timeout=1"]);
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    let conn = c.block_on(t.ice_get_connection()).unwrap();
    // A 1.5 s dispatch: with a 1 s ACM timeout the server heartbeats every 250 ms.
    assert_eq!(c.block_on(t.sleep_then_return(1500, 9)).unwrap(), 9);
    assert!(conn.heartbeats_received() >= 2, "{} heartbeats", conn.heartbeats_received());
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn implicit_per_proxy_and_per_call_contexts() {
    let port = free_port();
    let _srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &[]);
    let c = Communicator::new().unwrap();
    c.set_implicit_context("implicit", "1");
    c.set_implicit_context("shared", "implicit");
    let t = tester(&c, port);
    let got = c.block_on(t.get_context()).unwrap();
    assert_eq!(got.get("implicit").map(floe::CompactString::as_str), Some("1"));
    let ctx: floe::Context = [("shared".to_string(), "proxy".to_string())].into();
    let got = c.block_on(t.ice_context(ctx).get_context()).unwrap();
    assert_eq!((got["implicit"].as_str(), got["shared"].as_str()), ("1", "proxy"), "per-proxy entries win");
    // A per-call context on the untyped invocation path.
    let call: floe::Context = [("call".to_string(), "yes".to_string())].into();
    let out = c
        .block_on(t.as_object().invoke("getContext", floe::protocol::OperationMode::Normal, Some(&call), |_| {}))
        .unwrap()
        .unwrap();
    let got = out.decode(<std::collections::HashMap<String, String> as floe::encoding::Decode>::decode).unwrap();
    assert_eq!((got["call"].as_str(), got["implicit"].as_str()), ("yes", "1"));
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn batches_flush_themselves_at_the_size_limit() {
    let port = free_port();
    let _srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &[]);
    let (c, _) = Communicator::from_args(["--Ice.BatchAutoFlushSize=1"]).unwrap();
    let t = tester(&c, port);
    c.block_on(t.reset_counter()).unwrap();
    let b = t.ice_batch_oneway();
    for _ in 0..200 {
        c.block_on(b.inc_counter(1)).unwrap();
    }
    // Every ~1 KB of requests went out by itself; the rest waits for the flush.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut before = 0;
    while Instant::now() < deadline {
        before = c.block_on(t.get_counter()).unwrap();
        if before >= 150 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!((150..200).contains(&before), "{before} delivered before the explicit flush");
    assert!(b.as_object().batch_request_count() > 0 && b.as_object().batch_request_count() < 50);
    c.block_on(b.ice_flush_batch_requests()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.block_on(t.get_counter()).unwrap() != 200 {
        assert!(Instant::now() < deadline, "the flushed batch never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    c.block_on(t.shutdown()).unwrap();
}

/// Ice 3.8's idle timeout: heartbeat while nothing is written, abort after hearing nothing.
/// The peer first keeps the connection alive with heartbeats of its own for two timeouts
/// (the connection must stay open and keep sending heartbeats), then goes silent (the
/// connection must be aborted about one timeout later).
#[test]
fn idle_timeout_heartbeats_and_aborts_a_silent_peer() {
    const LIVE_FOR: Duration = Duration::from_secs(2);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(&floe::protocol::header::VALIDATE_CONNECTION).unwrap();
        let mut writer = s.try_clone().unwrap();
        let talking = std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < LIVE_FOR {
                std::thread::sleep(Duration::from_millis(200));
                writer.write_all(&floe::protocol::header::VALIDATE_CONNECTION).unwrap();
            }
            Instant::now()
        });
        s.set_read_timeout(Some(Duration::from_secs(6))).unwrap();
        let mut heard = Vec::new();
        let mut h = [0u8; 14];
        while s.read_exact(&mut h).is_ok() {
            if h == floe::protocol::header::VALIDATE_CONNECTION {
                heard.push(Instant::now());
            }
        }
        (talking.join().unwrap(), heard)
    });
    let (c, _) = Communicator::from_args(["--Ice.Connection.Client.IdleTimeout=1"]).unwrap();
    let p = c.string_to_proxy(&format!("x:tcp -h 127.0.0.1 -p {port}")).unwrap();
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    let start = Instant::now();
    while !conn.is_closed() && start.elapsed() < LIVE_FOR + Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let closed_at = Instant::now();
    assert!(conn.is_closed(), "the silent connection was not aborted");
    let (silent_from, heard) = peer.join().unwrap();
    let closed_after = closed_at.saturating_duration_since(silent_from);
    assert!(
        closed_after >= Duration::from_millis(700) && closed_after < Duration::from_millis(2500),
        "aborted {closed_after:?} after the peer went silent"
    );
    // A heartbeat at each quarter-timeout check while the peer was talking: the typical gap
    // between two is a quarter of the timeout, not half of it (a heartbeat every other check).
    let while_talking: Vec<Instant> = heard.into_iter().filter(|t| *t <= silent_from).collect();
    assert!(while_talking.len() >= 3, "{} heartbeats in {LIVE_FOR:?}", while_talking.len());
    let mut gaps: Vec<Duration> = while_talking.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort();
    let median_gap = gaps[gaps.len() / 2];
    assert!(median_gap < Duration::from_millis(400), "heartbeats {median_gap:?} apart (median)");
}

#[test]
fn idle_connections_cost_little_server_memory() {
    let port = free_port();
    let srv = server(&format!("tcp -h 127.0.0.1 -p {port}"), &[]);
    let pid = srv.pid();
    // Warm up: a few connections and calls so that lazily allocated runtime state exists.
    let mut conns: Vec<TcpStream> = (0..50).map(|_| connect(port)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kb(pid);
    const N: usize = 2000;
    for _ in 0..N {
        conns.push(connect(port));
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kb(pid);
    let per_conn = (after.saturating_sub(before)) as f64 * 1024.0 / N as f64;
    eprintln!("server RSS {before} kB -> {after} kB: {per_conn:.0} bytes per idle connection");
    assert!(per_conn < 10_000.0, "{per_conn:.0} bytes per idle connection");
    drop(conns);
}

#[test]
fn idempotent_calls_fail_over_to_the_next_endpoint() {
    let (a, b) = (free_port(), free_port());
    let mut first = server(&format!("tcp -h 127.0.0.1 -p {a}"), &[]);
    let _second = server(&format!("tcp -h 127.0.0.1 -p {b}"), &[]);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(
        c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {a}:tcp -h 127.0.0.1 -p {b}"))
            .unwrap()
            .ice_endpoint_selection(floe::reference::EndpointSelection::Ordered),
    );
    // Bound to the first server (ordered selection; Ice's default picks at random).
    c.block_on(t.reset_counter()).unwrap();
    c.block_on(t.inc_counter(7)).unwrap();
    let _ = first.0.kill();
    let _ = first.0.wait();
    // The idempotent call notices the lost connection and goes to the second endpoint.
    assert_eq!(c.block_on(t.op_idempotent(1)).unwrap(), 2);
    assert_eq!(c.block_on(t.get_counter()).unwrap(), 0, "now talking to the second server");
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn ice_trace_network_logs_connections_at_info_level() {
    let port = free_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_floe-interop-server"));
    cmd.args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}"), "--Ice.Trace.Network=1"])
        .env("RUST_LOG", "floe=info")
        .stderr(std::process::Stdio::piped());
    let mut srv = common::start(cmd);
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
    let status = srv.0.wait().unwrap();
    assert!(status.success());
    let mut log = String::new();
    srv.0.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(log.contains("accepted incoming connection") && log.contains("INFO"), "{log}");
}

#[test]
fn ice_trace_protocol_logs_every_reply_of_requests_read_together() {
    let port = free_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_floe-interop-server"));
    cmd.args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}"), "--Ice.Trace.Protocol=1"])
        .env("RUST_LOG", "floe::protocol=trace")
        .stderr(std::process::Stdio::piped());
    let mut srv = common::start(cmd);
    // Read while the server runs: its trace would fill the pipe otherwise.
    let mut stderr = srv.0.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut log = String::new();
        stderr.read_to_string(&mut log).unwrap();
        log
    });
    let c = Communicator::new().unwrap();
    let t = tester(&c, port);
    // 300 pings in one write: their replies are written together, and each is traced.
    let outcomes = c
        .block_on(t.as_object().invoke_batch_twoway(
            "ice_ping",
            floe::protocol::OperationMode::Nonmutating,
            (0..300).map(|_| |_: &mut floe::encoding::Encoder| {}),
        ))
        .unwrap();
    assert_eq!(outcomes.len(), 300);
    for o in &outcomes {
        assert!(o.is_ok(), "{:?}", o.as_ref().err());
    }
    c.block_on(t.shutdown()).unwrap();
    assert!(srv.0.wait().unwrap().success());
    let log = log.join().unwrap();
    let replies = log.lines().filter(|l| l.contains("sending Reply (25 bytes)")).count();
    // The 300 pings' replies and the shutdown's, each of 25 bytes.
    assert_eq!(replies, 301, "{log}");
}

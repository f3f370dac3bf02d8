//! The Prometheus endpoint (`Floe.Metrics.Prometheus.Endpoints`): a floe server's dispatches
//! scraped over HTTP as Prometheus's text format, read back by the Prometheus project's own
//! Python parser (Debian's python3-prometheus-client); bad HTTP input and bad settings.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, Properties};

/// Answers `ice_ping` and knows no other operation.
struct Pinged;

impl Dispatcher for Pinged {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            match c.operation.as_str() {
                "ice_ping" => c.ok(|_| {}),
                _ => c.operation_not_exist(),
            }
        })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn communicator(props: &[(&str, &str)]) -> floe::Result<Communicator> {
    let p = Properties::new();
    for (k, v) in props {
        p.set(k, v);
    }
    Communicator::with_properties(p)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Sends `request` as is and returns everything the endpoint answered.
fn http(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

fn scrape(port: u16) -> String {
    http(port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
}

/// The body's samples as `name{labels} value` lines, parsed by prometheus_client's parser.
fn parsed_by_prometheus_client(body: &str) -> Vec<String> {
    let script = "import sys\n\
        from prometheus_client.parser import text_string_to_metric_families\n\
        for family in text_string_to_metric_families(sys.stdin.read()):\n\
        \x20   for s in family.samples:\n\
        \x20       labels = ','.join('%s=%s' % kv for kv in sorted(s.labels.items()))\n\
        \x20       print('%s %s{%s} %g' % (family.type, s.name, labels, s.value))\n";
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client could not parse the exposition (is python3-prometheus-client installed?): {}\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn a_servers_dispatches_are_scraped_as_prometheus_series() {
    runtime().block_on(async {
        let port = free_port();
        let server = communicator(&[("Floe.Metrics.Prometheus.Endpoints", &format!("127.0.0.1:{port}"))]).unwrap();
        let adapter = server.create_object_adapter_with_endpoints("Hello", "tcp -h 127.0.0.1 -p 0").unwrap();
        adapter.add(Arc::new(Pinged), Identity::new("hello"));
        adapter.activate().await.unwrap();
        let client_port = free_port();
        let client =
            communicator(&[("Floe.Metrics.Prometheus.Endpoints", &format!("tcp -h 127.0.0.1 -p {client_port}"))])
                .unwrap();
        let hello = client.string_to_proxy(&adapter.create_proxy(Identity::new("hello")).to_string()).unwrap();
        for _ in 0..5 {
            hello.ice_ping().await.unwrap();
        }
        let r = hello.invoke("sayHello", OperationMode::Normal, None, |e| e.write_size(0)).await;
        assert!(matches!(r, Err(Error::OperationNotExist { .. })), "{r:?}");
        let missing = client.string_to_proxy(&adapter.create_proxy(Identity::new("missing")).to_string()).unwrap();
        assert!(matches!(missing.ice_ping().await, Err(Error::ObjectNotExist { .. })));

        let answer = tokio::task::spawn_blocking(move || scrape(port)).await.unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.to_ascii_lowercase().contains("content-type: text/plain; version=0.0.4"), "{head}");
        let samples = parsed_by_prometheus_client(body);
        let has = |line: &str| samples.iter().any(|s| s == line);
        for line in [
            "counter floe_dispatches_total{adapter=Hello,operation=ice_ping,outcome=ok} 5",
            "counter floe_dispatches_total{adapter=Hello,operation=sayHello,outcome=OperationNotExistException} 1",
            "counter floe_dispatches_total{adapter=Hello,operation=ice_ping,outcome=ObjectNotExistException} 1",
            "gauge floe_dispatches_in_progress{adapter=Hello} 0",
            "histogram floe_dispatch_duration_seconds_count{adapter=Hello,operation=ice_ping} 6",
            "counter floe_dispatch_reply_bytes_total{adapter=Hello,operation=ice_ping} 30",
            "gauge floe_connections{direction=incoming} 1",
            "counter floe_connections_opened_total{direction=incoming} 1",
        ] {
            assert!(has(line), "no `{line}' in:\n{}", samples.join("\n"));
        }
        // Request sizes: ice_ping's parameters are an empty encapsulation (6 bytes).
        assert!(has("counter floe_dispatch_request_bytes_total{adapter=Hello,operation=ice_ping} 36"), "{samples:?}");

        // The client's side: its invocations.
        let answer = tokio::task::spawn_blocking(move || scrape(client_port)).await.unwrap();
        let samples = parsed_by_prometheus_client(answer.split_once("\r\n\r\n").expect("an HTTP answer").1);
        let has = |line: &str| samples.iter().any(|s| s == line);
        for line in [
            "counter floe_invocations_total{mode=twoway,operation=ice_ping,outcome=ok} 5",
            "counter floe_invocations_total{mode=twoway,operation=sayHello,outcome=OperationNotExistException} 1",
            "counter floe_invocations_total{mode=twoway,operation=ice_ping,outcome=ObjectNotExistException} 1",
            "histogram floe_invocation_duration_seconds_count{mode=twoway,operation=ice_ping} 6",
            "gauge floe_connections{direction=outgoing} 1",
            "counter floe_connections_opened_total{direction=outgoing} 1",
        ] {
            assert!(has(line), "no `{line}' in:\n{}", samples.join("\n"));
        }
        assert!(!samples.iter().any(|s| s.contains("floe_dispatches_total")), "the client dispatched nothing");

        // Bad input on the endpoint gets an HTTP error, and it keeps serving.
        let (bad, post, elsewhere) = tokio::task::spawn_blocking(move || {
            (
                http(port, b"\x00\x01\x02 garbage\r\n\r\n"),
                http(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
                http(port, b"GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            )
        })
        .await
        .unwrap();
        assert!(bad.is_empty() || bad.starts_with("HTTP/1.1 400"), "{bad:?}");
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        assert!(elsewhere.starts_with("HTTP/1.1 404"), "{elsewhere}");
        hello.ice_ping().await.unwrap();
        let again = tokio::task::spawn_blocking(move || scrape(port)).await.unwrap();
        assert!(again.contains("floe_dispatches_total{adapter=\"Hello\",operation=\"ice_ping\",outcome=\"ok\"} 6"));

        // The client's connection closes with it, and leaves the server's count.
        client.destroy().await;
        let mut closed = String::new();
        for _ in 0..50 {
            closed = tokio::task::spawn_blocking(move || scrape(port)).await.unwrap();
            if closed.contains("floe_connections{direction=\"incoming\"} 0") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(closed.contains("floe_connections{direction=\"incoming\"} 0"), "{closed}");
        assert!(closed.contains("floe_connections_opened_total{direction=\"incoming\"} 1"), "{closed}");

        // Destroying the communicator closes the endpoint.
        server.destroy().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "the endpoint outlived its communicator");
    });
}

/// A connection that never sends a request is closed after the header timeout (5 s), and
/// scrapes meanwhile are answered.
#[test]
fn a_silent_connection_is_closed_and_others_are_served() {
    runtime().block_on(async {
        let port = free_port();
        let server = communicator(&[("Floe.Metrics.Prometheus.Endpoints", &format!("127.0.0.1:{port}"))]).unwrap();
        let closed_after = tokio::task::spawn_blocking(move || {
            let mut silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
            silent.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let start = std::time::Instant::now();
            assert!(scrape(port).starts_with("HTTP/1.1 200"), "a scrape beside a silent connection");
            let mut buf = [0u8; 64];
            // The server closes it (end of stream, or a 408 before that); a read timeout is
            // a failure.
            let r = silent.read(&mut buf);
            assert!(r.is_ok(), "the silent connection was not closed: {r:?}");
            start.elapsed()
        })
        .await
        .unwrap();
        assert!(closed_after >= Duration::from_secs(4), "closed after {closed_after:?}");
        assert!(closed_after < Duration::from_secs(15), "closed after {closed_after:?}");
        server.destroy().await;
    });
}

#[test]
fn bad_settings_fail_initialization_with_the_property_named() {
    runtime().block_on(async {
        for bad in ["nonsense", "127.0.0.1:99999", "tcp -h 127.0.0.1"] {
            match communicator(&[("Floe.Metrics.Prometheus.Endpoints", bad)]) {
                Err(Error::Property { name, .. }) => assert_eq!(name, "Floe.Metrics.Prometheus.Endpoints"),
                other => panic!("{bad}: {:?}", other.err()),
            }
        }
        // A port already taken.
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = taken.local_addr().unwrap().to_string();
        let r = communicator(&[("Floe.Metrics.Prometheus.Endpoints", &address)]);
        assert!(matches!(r, Err(Error::Initialization(ref m)) if m.contains("cannot listen")), "{:?}", r.err());
        // Unset, nothing listens and no series are kept.
        let c = communicator(&[]).unwrap();
        c.destroy().await;
    });
}

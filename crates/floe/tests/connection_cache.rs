//! The communicator's cache of outgoing connections: no lock is held while a connection is
//! opened and validated, so an endpoint that never answers delays only its own callers, and
//! callers asking for one endpoint at the same time share one attempt.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::encoding::EndpointData;
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, ObjectPrx};

/// The ValidateConnection message a server sends first.
const VALIDATE: [u8; 14] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];

struct Pong;

impl Dispatcher for Pong {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move { request.current.ok_empty() })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A floe server with one object; returns the communicator and the object's proxy string.
async fn good_server() -> (Communicator, String) {
    let server = Communicator::new().unwrap();
    let adapter = server.create_object_adapter_with_endpoints("Good", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Pong), Identity::new("good"));
    adapter.activate().await.unwrap();
    let proxy = adapter.create_proxy(Identity::new("good")).to_string();
    (server, proxy)
}

/// A peer that accepts connections (the kernel does) and never validates them, counting them.
fn silent_peer() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for s in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            kept.push(s);
        }
    });
    (addr, accepted)
}

/// A listener whose accept queue is full: the kernel drops further connection requests, so
/// connecting to it hangs until the connect timeout. Returns it with the connections that
/// fill it (both must be kept alive).
fn full_backlog() -> (std::net::TcpListener, Vec<TcpStream>, SocketAddr) {
    let socket = socket_with_backlog_zero();
    let addr = socket.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..64 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(s) => fillers.push(s),
            Err(_) => return (socket, fillers, addr),
        }
    }
    panic!("the accept queue of a listener with backlog 0 never filled");
}

fn socket_with_backlog_zero() -> std::net::TcpListener {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    // `listen` needs a runtime only for registering with it; this one is converted back.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _guard = rt.enter();
    let listener = socket.listen(0).unwrap();
    listener.into_std().unwrap()
}

fn endpoint(client: &Communicator, addr: SocketAddr) -> EndpointData {
    let proxy = client.string_to_proxy(&format!("x:tcp -h 127.0.0.1 -p {} -t 20000", addr.port())).unwrap();
    proxy.reference().wire.endpoints[0].clone()
}

/// Starts a ping through `black_hole` that cannot complete, then pings `good`: the good one
/// must answer at once while the other still waits.
async fn good_endpoint_is_not_held_up(client: &Communicator, black_hole: ObjectPrx, good: ObjectPrx) {
    let stuck = tokio::spawn(async move { black_hole.ice_ping().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), good.ice_ping())
        .await
        .expect("the good endpoint answers while the other one hangs")
        .unwrap();
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(1), "the good endpoint took {waited:?}");
    assert!(!stuck.is_finished(), "the black-holed call is still waiting");
    stuck.abort();
    client.destroy().await;
}

#[test]
fn an_endpoint_that_never_validates_does_not_hold_up_other_connections() {
    runtime().block_on(async {
        let (server, good) = good_server().await;
        let (silent, _) = silent_peer();
        let client = Communicator::new().unwrap();
        let black_hole = client.string_to_proxy(&format!("b:tcp -h 127.0.0.1 -p {} -t 20000", silent.port())).unwrap();
        let good = client.string_to_proxy(&good).unwrap();
        good_endpoint_is_not_held_up(&client, black_hole, good).await;
        server.destroy().await;
    });
}

#[test]
fn an_endpoint_that_drops_connection_requests_does_not_hold_up_other_connections() {
    let (_listener, _fillers, addr) = full_backlog();
    runtime().block_on(async {
        let (server, good) = good_server().await;
        let client = Communicator::new().unwrap();
        let black_hole = client.string_to_proxy(&format!("b:tcp -h 127.0.0.1 -p {} -t 20000", addr.port())).unwrap();
        let good = client.string_to_proxy(&good).unwrap();
        good_endpoint_is_not_held_up(&client, black_hole, good).await;
        server.destroy().await;
    });
}

#[test]
fn concurrent_connects_to_one_endpoint_share_one_attempt() {
    // A server that validates each connection 300 ms after accepting it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        for mut s in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
            let _ = s.write_all(&VALIDATE);
            kept.push(s);
        }
    });
    runtime().block_on(async {
        // The peer never answers a CloseConnection: the final destroy waits 100 ms for it.
        let props = floe::Properties::new();
        props.set("Ice.Override.CloseTimeout", "100");
        let client = Communicator::with_properties(props).unwrap();
        let ep = endpoint(&client, addr);
        let attempts: Vec<_> = (0..8)
            .map(|_| {
                let (client, ep) = (client.clone(), ep.clone());
                tokio::spawn(async move { client.connect(&ep).await })
            })
            .collect();
        let mut connections = Vec::new();
        for a in attempts {
            connections.push(a.await.unwrap().expect("connected"));
        }
        assert!(connections.windows(2).all(|w| w[0] == w[1]), "every caller got the same connection");
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "one connection was opened");
        // Later callers reuse it.
        assert!(client.connect(&ep).await.unwrap() == connections[0]);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        client.destroy().await;
    });
}

#[test]
fn a_failed_attempt_is_shared_by_its_waiters_and_not_remembered() {
    // A server that closes every connection after a moment, without validating it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            drop(s);
        }
    });
    runtime().block_on(async {
        let client = Communicator::new().unwrap();
        let ep = endpoint(&client, addr);
        let attempts: Vec<_> = (0..4)
            .map(|_| {
                let (client, ep) = (client.clone(), ep.clone());
                tokio::spawn(async move { client.connect(&ep).await })
            })
            .collect();
        for a in attempts {
            assert!(a.await.unwrap().is_err(), "the shared attempt failed for everyone");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "one attempt was made");
        assert!(client.connect(&ep).await.is_err());
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "a failure is not remembered: the next caller tries again");
        client.destroy().await;
    });
}

#[test]
fn waiters_of_an_abandoned_attempt_make_their_own() {
    let (silent, accepted) = silent_peer();
    runtime().block_on(async {
        let client = Communicator::new().unwrap();
        let ep = endpoint(&client, silent);
        // The first caller gives up after 300 ms; the second, waiting for it, then tries itself.
        let first = {
            let (client, ep) = (client.clone(), ep.clone());
            tokio::spawn(async move { tokio::time::timeout(Duration::from_millis(300), client.connect(&ep)).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let second = {
            let (client, ep) = (client.clone(), ep.clone());
            tokio::spawn(async move { tokio::time::timeout(Duration::from_secs(2), client.connect(&ep)).await })
        };
        assert!(first.await.unwrap().is_err(), "the first caller gave up");
        assert!(second.await.unwrap().is_err(), "the second caller's own attempt hangs too");
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "the second caller made an attempt of its own");
        client.destroy().await;
    });
}

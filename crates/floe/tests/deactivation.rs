//! Deactivating an object adapter: once `deactivate` returns, its endpoints refuse connections
//! and nothing more is dispatched, even for connections accepted while it ran.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::encoding::{EncodingVersion, EndpointData};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, ObjectAdapter};

/// Counts the requests it gets, and those after `deactivated` was set.
struct Watcher {
    deactivated: Arc<AtomicBool>,
    served: Arc<AtomicUsize>,
    late: Arc<AtomicUsize>,
}

impl Dispatcher for Watcher {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        self.served.fetch_add(1, Ordering::SeqCst);
        if self.deactivated.load(Ordering::SeqCst) {
            self.late.fetch_add(1, Ordering::SeqCst);
        }
        Box::pin(async move { request.current.ok(|_| {}) })
    }
}

/// The address the adapter's (single, tcp) endpoint listens on.
fn listening_address(adapter: &ObjectAdapter) -> SocketAddr {
    let EndpointData::Tcp(tcp) = &adapter.endpoints()[0] else { panic!("not tcp: {:?}", adapter.endpoints()) };
    SocketAddr::from(([127, 0, 0, 1], tcp.port as u16))
}

/// A twoway request for `ping` on `x`, encoding 1.1, empty parameters.
fn ping_request(id: i32) -> Vec<u8> {
    let prefix = RequestPrefix::new(&Identity::new("x"), "", "ping", OperationMode::Normal);
    encode_request(id, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {}).to_vec()
}

/// Connects, waits for ValidateConnection, sends one request and reads until the server closes
/// the connection (it sends CloseConnection once deactivated; this side then closes too).
fn one_client(address: SocketAddr) {
    let Ok(mut s) = TcpStream::connect_timeout(&address, Duration::from_secs(2)) else { return };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut validate = [0u8; 14];
    if s.read_exact(&mut validate).is_err() {
        return;
    }
    if s.write_all(&ping_request(1)).is_err() {
        return;
    }
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            // A CloseConnection message is 14 bytes of type 4; answering it is closing.
            Ok(n) if n > 0 && !buf[..n].windows(10).any(|w| w[..8] == *b"IceP\x01\x00\x01\x00" && w[8] == 4) => {}
            _ => return,
        }
    }
}

#[test]
fn connections_are_refused_once_deactivate_returns() {
    // One thread: nothing else runs between `deactivate` returning and the connect below.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        for round in 0..5 {
            let a = c.create_object_adapter_with_endpoints(&format!("A{round}"), "tcp -h 127.0.0.1 -p 0").unwrap();
            a.activate().await.unwrap();
            let address = listening_address(&a);
            a.deactivate().await;
            let refused = TcpStream::connect_timeout(&address, Duration::from_secs(2));
            assert!(
                matches!(&refused, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused),
                "round {round}: connecting after deactivate gave {refused:?}"
            );
        }
        c.destroy().await;
    });
}

#[test]
fn nothing_is_dispatched_after_deactivate_returns_even_for_connections_it_raced() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let (served, late) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        for round in 0..20u64 {
            let deactivated = Arc::new(AtomicBool::new(false));
            let a = c.create_object_adapter_with_endpoints(&format!("A{round}"), "tcp -h 127.0.0.1 -p 0").unwrap();
            a.add(
                Arc::new(Watcher { deactivated: deactivated.clone(), served: served.clone(), late: late.clone() }),
                Identity::new("x"),
            );
            a.activate().await.unwrap();
            let address = listening_address(&a);
            // Clients keep connecting (a few at a time) while the adapter deactivates.
            let stop = Arc::new(AtomicBool::new(false));
            let connecting = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(3);
                    let mut clients = Vec::new();
                    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                        for _ in 0..4 {
                            clients.push(std::thread::spawn(move || one_client(address)));
                        }
                        std::thread::sleep(Duration::from_micros(300));
                    }
                    for client in clients {
                        client.join().unwrap();
                    }
                })
            };
            // Deactivate once connections are being served, at varying points after that.
            let first = served.load(Ordering::SeqCst);
            let deadline = Instant::now() + Duration::from_secs(2);
            while served.load(Ordering::SeqCst) == first && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            tokio::time::sleep(Duration::from_micros(300 * (round % 8))).await;
            a.deactivate().await;
            deactivated.store(true, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
            tokio::task::spawn_blocking(move || connecting.join().unwrap()).await.unwrap();
        }
        assert_eq!(late.load(Ordering::SeqCst), 0, "requests dispatched after deactivate returned");
        // The race was run: connections were served up to the deactivations.
        assert!(served.load(Ordering::SeqCst) >= 20, "only {} requests served", served.load(Ordering::SeqCst));
        eprintln!("{} requests served before the deactivations", served.load(Ordering::SeqCst));
        c.destroy().await;
    });
}

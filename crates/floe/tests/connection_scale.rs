//! Connection storms: every listening socket has Ice's backlog (`Ice.TCP.Backlog`, `SOMAXCONN`
//! by default), so that a burst of simultaneous connects — clients reconnecting after a server
//! restart — is accepted at once instead of having the kernel drop connection requests that
//! clients retry only after a second or more. Accepted connections leave the adapter's count as
//! they close.

use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, ObjectAdapter, Properties};
use tokio::io::AsyncReadExt;

const VALIDATE: [u8; 14] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];

struct Pong;

impl Dispatcher for Pong {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move { request.current.ok_empty() })
    }
}

/// A server with its own runtime, listening with `backlog` (the default when `None`).
fn server(backlog: Option<u32>) -> (Communicator, ObjectAdapter, u16) {
    let props = Properties::new();
    // Connections whose client is gone do not hold up the final destroy.
    props.set("Ice.Override.CloseTimeout", "200");
    if let Some(b) = backlog {
        props.set("Ice.TCP.Backlog", &b.to_string());
    }
    let communicator = Communicator::with_properties(props).unwrap();
    let adapter = communicator.create_object_adapter_with_endpoints("Storm", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Pong), Identity::new("pong"));
    communicator.block_on(adapter.activate()).unwrap();
    let port = match &adapter.endpoints()[0] {
        floe::encoding::EndpointData::Tcp(ip) => ip.port as u16,
        other => panic!("{other:?}"),
    };
    (communicator, adapter, port)
}

/// Opens `n` connections to `port` at once and waits, up to `limit`, until each has been
/// validated; returns how long that took (`None`: not all within the limit) and the
/// connections.
fn burst(port: u16, n: usize, limit: Duration) -> (Option<Duration>, Vec<tokio::net::TcpStream>) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let out = rt.block_on(async move {
        let started = Instant::now();
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                tokio::spawn(async move {
                    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
                    let mut header = [0u8; 14];
                    s.read_exact(&mut header).await?;
                    assert_eq!(header, VALIDATE);
                    Ok::<_, std::io::Error>(s)
                })
            })
            .collect();
        let mut streams = Vec::with_capacity(n);
        for t in tasks {
            let left = limit.saturating_sub(started.elapsed());
            match tokio::time::timeout(left, t).await {
                Ok(joined) => streams.push(joined.unwrap().unwrap()),
                Err(_) => return (None, streams),
            }
        }
        (Some(started.elapsed()), streams)
    });
    // Connects still under way are abandoned with the runtime.
    rt.shutdown_background();
    out
}

#[test]
fn a_burst_of_500_connects_is_accepted_and_validated_within_a_second() {
    let (communicator, adapter, port) = server(None);
    let (took, streams) = burst(port, 500, Duration::from_secs(30));
    let took = took.expect("every connection validated");
    assert!(took < Duration::from_secs(1), "500 simultaneous connects took {took:?}");
    // Every connection counts while open, and leaves the count as it closes.
    let deadline = Instant::now() + Duration::from_secs(10);
    while adapter.connection_count() != 500 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(adapter.connection_count(), 500);
    drop(streams);
    while adapter.connection_count() != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(adapter.connection_count(), 0, "closed connections leave the count");
    communicator.destroy_blocking();
}

#[test]
fn a_small_backlog_makes_the_same_burst_wait_for_retries() {
    // What the default avoids: with a backlog of 4, the kernel drops connection requests of
    // the burst, and their clients retry only a second later.
    let (communicator, _adapter, port) = server(Some(4));
    let (took, _streams) = burst(port, 500, Duration::from_secs(3));
    assert!(took.is_none_or(|t| t >= Duration::from_secs(1)), "the burst took {took:?}: the backlog did not limit it");
    communicator.destroy_blocking();
}

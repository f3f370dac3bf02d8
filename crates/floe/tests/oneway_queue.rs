//! Oneway requests are queued and written together: they arrive complete and in order, a
//! twoway request written after them follows them on the wire, and a peer that stops reading
//! makes oneway callers wait (the queue is bounded) without losing a request, and a caller
//! that waits goes on when a twoway request took the queue along. A oneway whose write blocks
//! part-way hands the rest (or, over ssl and ws, the flush) to the flush task, which finishes
//! it on the connection's own runtime when the caller's runtime shuts down.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use floe::encoding::Decoder;
use floe::protocol::{OperationMode, Request};
use floe::Communicator;

const VALIDATE: [u8; 14] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];

/// Reads Ice messages from a raw socket until `want` requests have arrived; returns each
/// request's (operation, first int parameter, request id).
fn read_requests(s: &mut std::net::TcpStream, want: usize) -> Vec<(String, i32, i32)> {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    read_requests_from(s, want)
}

/// [`read_requests`] from any stream (whose reads the caller bounds in time).
fn read_requests_from(s: &mut impl Read, want: usize) -> Vec<(String, i32, i32)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while out.len() < want {
        let n = s.read(&mut chunk).expect("peer read");
        assert!(n > 0, "client closed after {} requests", out.len());
        buf.extend_from_slice(&chunk[..n]);
        while buf.len() >= 14 && out.len() < want {
            let size = i32::from_le_bytes(buf[10..14].try_into().unwrap()) as usize;
            if buf.len() < size {
                break;
            }
            let msg: Vec<u8> = buf.drain(..size).collect();
            assert_eq!(msg[8], 0, "only requests are expected (after {})", out.len());
            let r = Request::decode(bytes::Bytes::from(msg[14..].to_vec())).expect("request decodes");
            let n = Decoder::new(r.params.clone(), r.encoding).read_i32().unwrap_or(-1);
            out.push((r.operation.to_string(), n, r.request_id));
        }
    }
    out
}

/// A raw Ice peer on a loopback port: accepts one connection, validates it, then hands it to
/// `serve` on a thread of its own. Returns the port and the thread.
fn raw_peer<T: Send + 'static>(
    serve: impl FnOnce(TcpStream) -> T + Send + 'static,
) -> (u16, std::thread::JoinHandle<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(&VALIDATE).unwrap();
        serve(s)
    });
    (port, peer)
}

/// What a stalled peer read once told to, and its socket.
type Stalled = std::thread::JoinHandle<(Vec<(String, i32, i32)>, TcpStream)>;

/// A raw Ice peer that accepts one connection and then reads nothing until told, on `go`, how
/// many requests to expect. Returns its port, a receiver that hears once it has accepted, the
/// `go` sender, and the thread, which returns what it read and its socket.
fn stalled_peer() -> (u16, std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<usize>, Stalled) {
    let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<usize>();
    let (port, peer) = raw_peer(move |mut s| {
        accepted_tx.send(()).unwrap();
        let want = go_rx.recv().unwrap();
        (read_requests(&mut s, want), s)
    });
    (port, accepted_rx, go_tx, peer)
}

/// Asserts that `got` is exactly `want` `put` requests numbered 0, 1, 2, … in order.
fn assert_puts_in_order(got: &[(String, i32, i32)], want: usize) {
    assert_eq!(got.len(), want);
    for (k, (op, n, _)) in got.iter().enumerate() {
        assert_eq!((op.as_str(), *n), ("put", k as i32));
    }
}

/// Sends 4 KB oneway requests numbered from 0 until a call has waited past two seconds (or
/// 100,000 were sent); returns how many calls completed.
async fn flood(p: &floe::ObjectPrx) -> usize {
    let padding = vec![7u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut sent = 0;
    for k in 0..100_000i32 {
        let call = p.invoke("put", OperationMode::Normal, None, |e| {
            e.write_i32(k);
            e.write_byte_seq(&padding);
        });
        match tokio::time::timeout_at(deadline.into(), call).await {
            Ok(r) => {
                r.unwrap();
                sent += 1;
            }
            Err(_) => break,
        }
    }
    sent
}

/// Sends 200 kB oneway requests numbered from 0 (too large to queue: each is written directly),
/// each call under a 500 ms timeout, until one times out; returns how many calls completed.
/// 2,000 of them (400 MB) cannot all be buffered, so a call waits long before the end.
async fn flood_large(p: &floe::ObjectPrx) -> usize {
    let padding = vec![7u8; 200 * 1024];
    let mut sent = 0;
    for k in 0..2000i32 {
        let call = p.invoke("put", OperationMode::Normal, None, |e| {
            e.write_i32(k);
            e.write_byte_seq(&padding);
        });
        match tokio::time::timeout(Duration::from_millis(500), call).await {
            Ok(r) => {
                r.unwrap();
                sent += 1;
            }
            Err(_) => break,
        }
    }
    assert!(sent < 2000, "the peer's buffers never filled ({sent} requests accepted)");
    sent
}

#[test]
fn queued_oneways_arrive_in_order_ahead_of_the_next_twoway() {
    let (port, peer) = raw_peer(move |mut s| {
        let got = read_requests(&mut s, 1001);
        // Answer the twoway so that the client's call completes.
        let id = got.last().unwrap().2;
        let mut reply = b"IceP\x01\x00\x01\x00\x02\x00".to_vec();
        reply.extend_from_slice(&25i32.to_le_bytes());
        reply.extend_from_slice(&id.to_le_bytes());
        reply.extend_from_slice(&[0, 6, 0, 0, 0, 1, 1]);
        s.write_all(&reply).unwrap();
        got
    });
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap();
    let o = p.ice_oneway();
    c.block_on(async {
        for k in 0..1000 {
            o.invoke("put", OperationMode::Normal, None, |e| e.write_i32(k)).await.unwrap();
        }
        p.invoke("done", OperationMode::Normal, None, |e| e.write_i32(-7)).await.unwrap();
    });
    let got = peer.join().unwrap();
    for (k, (op, n, id)) in got.iter().take(1000).enumerate() {
        assert_eq!((op.as_str(), *n, *id), ("put", k as i32, 0));
    }
    assert_eq!((got[1000].0.as_str(), got[1000].1), ("done", -7));
    assert_ne!(got[1000].2, 0);
    c.destroy_blocking();
}

#[test]
fn a_peer_that_does_not_read_holds_oneway_callers_back_and_loses_nothing() {
    let (port, accepted_rx, go_tx, peer) = stalled_peer();
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port} -t 60000")).unwrap().ice_oneway();
    c.block_on(p.ice_get_connection()).unwrap();
    accepted_rx.recv().unwrap();
    // Each request carries 4 KB; 100,000 of them (400 MB) cannot all be buffered anywhere.
    let sent = c.block_on(flood(&p));
    assert!(sent < 100_000, "oneway callers were never held back ({sent} requests accepted)");
    // Everything accepted arrives, in order, once the peer reads; the call abandoned while it
    // waited for room wrote nothing.
    go_tx.send(sent).unwrap();
    let (got, socket) = peer.join().unwrap();
    assert_puts_in_order(&got, sent);
    assert!(
        !c.block_on(p.ice_get_connection()).unwrap().is_closed(),
        "giving up on a waiting oneway closed the connection"
    );
    drop(socket);
    c.destroy_blocking();
}

#[test]
fn a_oneway_written_directly_that_blocks_part_way_finishes_without_its_caller() {
    // Oneways too large to queue (200 kB) are written directly. The first that the socket of a
    // peer that does not read takes only part of returns all the same (the flush task writes
    // the rest); the next waits for the write half, and giving up there writes nothing. So
    // the connection stays open and every request that returned arrives whole, in order.
    let (port, accepted_rx, go_tx, peer) = stalled_peer();
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port} -t 60000")).unwrap().ice_oneway();
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    accepted_rx.recv().unwrap();
    let sent = c.block_on(flood_large(&p));
    assert!(!conn.is_closed(), "giving up on a oneway closed the connection");
    go_tx.send(sent).unwrap();
    let (got, socket) = peer.join().unwrap();
    assert_puts_in_order(&got, sent);
    drop(socket);
    c.destroy_blocking();
}

#[test]
fn a_flush_left_on_a_runtime_that_shuts_down_goes_on_and_loses_nothing() {
    // The 200 kB oneways are sent from a runtime of the caller's own, so the rest of the one
    // whose write blocks part-way goes to a flush task on that runtime. Shutting the runtime
    // down while the peer does not read drops that task in the middle of its write: the
    // unwritten rest goes back to the head of the queue and a flush task on the connection's
    // own runtime writes it. So the connection stays open, the next oneway follows, and every
    // request that returned arrives whole and in order.
    let (port, accepted_rx, go_tx, peer) = stalled_peer();
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port} -t 60000")).unwrap().ice_oneway();
    // Established on the communicator's runtime: the connection's own.
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    accepted_rx.recv().unwrap();
    let callers = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let sent = callers.block_on(flood_large(&p));
    drop(callers);
    assert!(!conn.is_closed(), "the end of the callers' runtime closed the connection");
    go_tx.send(sent + 1).unwrap();
    let last = c.block_on(async {
        let padding = vec![7u8; 200 * 1024];
        let call = p.invoke("put", OperationMode::Normal, None, |e| {
            e.write_i32(sent as i32);
            e.write_byte_seq(&padding);
        });
        tokio::time::timeout(Duration::from_secs(10), call).await
    });
    assert!(matches!(last, Ok(Ok(_))), "the oneway after the runtime's end did not go out: {last:?}");
    let (got, socket) = peer.join().unwrap();
    assert_puts_in_order(&got, sent + 1);
    drop(socket);
    c.destroy_blocking();
}

#[test]
fn oneways_queued_on_a_runtime_that_ends_before_its_flush_task_ran_are_written() {
    // A burst of small oneways from a runtime of the caller's own: the first is written at
    // once, the others queued for a flush task spawned on that runtime, and `block_on` returns
    // before that task ever runs. Dropping the runtime drops the task unpolled; the queue is
    // then written by a flush task on the connection's own runtime.
    let (port, peer) = raw_peer(move |mut s| read_requests(&mut s, 10));
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap().ice_oneway();
    c.block_on(p.ice_get_connection()).unwrap();
    let callers = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    callers.block_on(async {
        for k in 0..10 {
            p.invoke("put", OperationMode::Normal, None, |e| e.write_i32(k)).await.unwrap();
        }
    });
    drop(callers);
    let got = peer.join().unwrap();
    assert_puts_in_order(&got, 10);
    c.destroy_blocking();
}

#[test]
fn a_flush_left_on_the_connections_own_runtime_as_it_shuts_down_closes_the_connection() {
    // The connection, and the flush task of a oneway whose write blocked part-way, live on a
    // runtime of the program's own, which then shuts down while the peer does not read: with
    // no runtime left to finish the write, the connection closes (rather than stay open with
    // half a request written and later writers waiting for a flush).
    let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
    let (port, peer) = raw_peer(move |s| {
        accepted_tx.send(()).unwrap();
        s
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (c, conn, sent) = rt.block_on(async {
        let c = Communicator::new().unwrap();
        let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port} -t 60000")).unwrap().ice_oneway();
        let conn = p.ice_get_connection().await.unwrap();
        accepted_rx.recv().unwrap();
        let sent = flood_large(&p).await;
        (c, conn, sent)
    });
    assert!(sent > 0);
    assert!(!conn.is_closed());
    drop(rt);
    assert!(conn.is_closed(), "the connection stayed open with a write left half done");
    // Its close completes although the runtime that closed it was gone.
    let other = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let finished = other.block_on(async { tokio::time::timeout(Duration::from_secs(5), conn.wait_closed()).await });
    assert!(finished.is_ok(), "the close never finished");
    drop(c);
    drop(peer.join().unwrap());
}

/// Reads one WebSocket frame a client sent (masked) and returns its payload.
fn read_ws_frame(s: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).expect("frame header");
    let len = match head[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    let mut mask = [0u8; 4];
    s.read_exact(&mut mask).unwrap();
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).unwrap();
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
    payload
}

#[test]
fn over_websocket_a_oneway_whose_frame_waits_for_its_flush_hands_the_flush_over() {
    // Over ws the transport takes a whole 200 kB message into one frame at once and only its
    // flush waits on a peer that does not read: the flush task takes that flush over, later
    // oneways wait for the write half (and giving up there writes nothing), so the connection
    // stays open, and once the peer reads every request that returned arrives whole, in order.
    let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<usize>();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // The upgrade: read the request's header, answer 101 with the matching key.
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).unwrap();
            request.push(byte[0]);
        }
        let text = String::from_utf8(request).unwrap();
        let key = text
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key:").or_else(|| l.strip_prefix("sec-websocket-key:")))
            .expect("a WebSocket key")
            .trim()
            .to_string();
        let answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Protocol: ice.zeroc.com\r\nSec-WebSocket-Accept: {}\r\n\r\n",
            floe::transport::ws::accept_key(&key)
        );
        s.write_all(answer.as_bytes()).unwrap();
        let mut frame = vec![0x82, VALIDATE.len() as u8];
        frame.extend_from_slice(&VALIDATE);
        s.write_all(&frame).unwrap();
        accepted_tx.send(()).unwrap();
        let want = go_rx.recv().unwrap();
        // Ice's messages out of the client's frames.
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut stream = Vec::new();
        let mut got = Vec::new();
        while got.len() < want {
            stream.extend_from_slice(&read_ws_frame(&mut s));
            while stream.len() >= 14 && got.len() < want {
                let size = i32::from_le_bytes(stream[10..14].try_into().unwrap()) as usize;
                if stream.len() < size {
                    break;
                }
                let msg: Vec<u8> = stream.drain(..size).collect();
                let r = Request::decode(bytes::Bytes::from(msg[14..].to_vec())).expect("request decodes");
                got.push(Decoder::new(r.params.clone(), r.encoding).read_i32().unwrap());
            }
        }
        (got, s)
    });
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:ws -h 127.0.0.1 -p {port} -t 60000")).unwrap().ice_oneway();
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    accepted_rx.recv().unwrap();
    let sent = c.block_on(flood_large(&p));
    assert!(!conn.is_closed(), "giving up on a oneway closed the connection");
    go_tx.send(sent).unwrap();
    let (got, socket) = peer.join().unwrap();
    assert_eq!(got, (0..sent as i32).collect::<Vec<_>>());
    drop(socket);
    c.destroy_blocking();
}

/// The rustls server configuration of the test certificates (`../shared/certs`).
fn tls_server_config() -> std::sync::Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/certs");
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join("server.pem")).unwrap().map(|c| c.unwrap()).collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server_key.pem")).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    std::sync::Arc::new(config)
}

#[test]
fn over_ssl_a_oneway_whose_write_blocks_hands_its_rest_or_flush_over() {
    // Over ssl a 200 kB message's write that blocks on a peer that does not read leaves either
    // a rest (rustls holds at most 64 KiB of records) or, when rustls took every byte, only a
    // flush: both go to the flush task, later oneways wait for the write half (and giving up
    // there writes nothing), and once the peer reads every request that returned arrives
    // whole, in order. The peer is a hand-made rustls server that answers the handshake,
    // sends ValidateConnection and then reads nothing until told.
    let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<usize>();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let tls = rustls::ServerConnection::new(tls_server_config()).unwrap();
        let mut s = rustls::StreamOwned::new(tls, s);
        s.write_all(&VALIDATE).unwrap();
        s.flush().unwrap();
        accepted_tx.send(()).unwrap();
        let want = go_rx.recv().unwrap();
        (read_requests_from(&mut s, want), s)
    });
    let props = floe::Properties::new();
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/certs");
    props.set("IceSSL.DefaultDir", dir.to_str().unwrap());
    props.set("IceSSL.CAs", "ca.pem");
    let c = Communicator::with_properties(props).unwrap();
    let p = c.string_to_proxy(&format!("t:ssl -h 127.0.0.1 -p {port} -t 60000")).unwrap().ice_oneway();
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    accepted_rx.recv().unwrap();
    let sent = c.block_on(flood_large(&p));
    assert!(!conn.is_closed(), "giving up on a oneway closed the connection");
    go_tx.send(sent).unwrap();
    let (got, socket) = peer.join().unwrap();
    assert_puts_in_order(&got, sent);
    drop(socket);
    c.destroy_blocking();
}

#[test]
fn oneways_queued_before_destroy_are_written() {
    let (port, peer) = raw_peer(move |mut s| read_requests(&mut s, 200));
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap().ice_oneway();
    c.block_on(async {
        for k in 0..200 {
            p.invoke("put", OperationMode::Normal, None, |e| e.write_i32(k)).await.unwrap();
        }
    });
    c.destroy_blocking();
    let got = peer.join().unwrap();
    assert_eq!(got.len(), 200);
    assert!(got.iter().enumerate().all(|(k, (_, n, _))| *n == k as i32));
}

#[test]
fn a_write_abandoned_part_way_closes_the_connection() {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (port, peer) = raw_peer(move |_socket| {
        // Never reads: the client's large request cannot be written completely.
        done_rx.recv().unwrap();
    });
    let c = Communicator::new().unwrap();
    let p = c
        .string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}"))
        .unwrap()
        .ice_invocation_timeout(Some(Duration::from_millis(300)));
    let conn = c.block_on(p.ice_get_connection()).unwrap();
    let big = vec![1u8; 64 << 20];
    let r = c.block_on(p.invoke("put", OperationMode::Normal, None, |e| e.write_byte_seq(&big)));
    assert!(matches!(r, Err(floe::Error::InvocationTimeout(_))), "{r:?}");
    // Half a message went out: nothing more may follow it on this connection.
    assert!(conn.is_closed());
    done_tx.send(()).unwrap();
    peer.join().unwrap();
    c.destroy_blocking();
}

#[test]
fn destroy_does_not_hang_on_a_peer_that_never_reads() {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (port, peer) = raw_peer(move |_socket| {
        // Never reads, and keeps the connection open until the client is gone.
        let _ = done_rx.recv_timeout(Duration::from_secs(30));
    });
    let (c, _) = Communicator::from_args(["--Ice.Override.CloseTimeout=500"]).unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap().ice_oneway();
    // Fill the socket buffers and the queue: the flush task is then stuck in its write.
    let sent = c.block_on(flood(&p));
    assert!(sent < 100_000, "the peer's buffers never filled ({sent} requests accepted)");
    let start = Instant::now();
    c.destroy_blocking();
    assert!(start.elapsed() < Duration::from_secs(5), "destroy took {:?}", start.elapsed());
    done_tx.send(()).unwrap();
    peer.join().unwrap();
}

#[test]
fn a_lone_oneway_is_written_before_its_call_returns() {
    let (port, peer) = raw_peer(move |mut s| read_requests(&mut s, 1));
    // On a current-thread runtime whose task ends right after the call, nothing else runs:
    // only a request written by the call itself reaches the peer (as with Ice, where a lone
    // oneway is written before the call returns).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap().ice_oneway();
        p.ice_get_connection().await.unwrap();
        p.invoke("bye", OperationMode::Normal, None, |e| e.write_i32(1)).await.unwrap();
    });
    drop(rt);
    let got = peer.join().unwrap();
    assert_eq!((got[0].0.as_str(), got[0].1), ("bye", 1));
}

/// A twoway request written directly while the oneway queue is full takes the queued requests
/// along; the oneway caller waiting for room must learn that there is room again, although
/// the flush task will find nothing left to write.
#[test]
fn a_twoway_request_that_takes_a_full_queue_along_wakes_the_waiting_oneway_caller() {
    let (port, peer) = raw_peer(move |mut s| {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut oneways = 0;
        // The peer ends once it has seen the last oneway and answered the twoway, in either
        // order (where the twoway lands among the oneways depends on when its write runs).
        let (mut last, mut answered) = (false, false);
        loop {
            if last && answered {
                return oneways;
            }
            let n = s.read(&mut chunk).expect("peer read");
            assert!(n > 0, "client closed after {oneways} oneways");
            buf.extend_from_slice(&chunk[..n]);
            while buf.len() >= 14 {
                let size = i32::from_le_bytes(buf[10..14].try_into().unwrap()) as usize;
                if buf.len() < size {
                    break;
                }
                let msg: Vec<u8> = buf.drain(..size).collect();
                let r = Request::decode(bytes::Bytes::from(msg[14..].to_vec())).expect("request decodes");
                if r.request_id != 0 {
                    // An empty successful reply.
                    let mut reply = vec![b'I', b'c', b'e', b'P', 1, 0, 1, 0, 2, 0, 25, 0, 0, 0];
                    reply.extend_from_slice(&r.request_id.to_le_bytes());
                    reply.extend_from_slice(&[0, 6, 0, 0, 0, 1, 1]);
                    s.write_all(&reply).unwrap();
                    answered = true;
                } else if r.operation == "last" {
                    last = true;
                } else {
                    oneways += 1;
                }
            }
        }
    });
    let c = Communicator::new().unwrap();
    let oneway = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap().ice_oneway();
    let twoway = oneway.ice_twoway();
    let padding = vec![7u8; 4096];
    let sent = c.block_on(async {
        oneway.ice_get_connection().await.unwrap();
        let flood = async {
            // 1 MB: four times the queue's limit, so the caller waits for room.
            for k in 0..256 {
                oneway
                    .invoke("put", OperationMode::Normal, None, |e| {
                        e.write_i32(k);
                        e.write_raw(&padding);
                    })
                    .await
                    .unwrap();
            }
            oneway.invoke("last", OperationMode::Normal, None, |_| {}).await.unwrap();
            256
        };
        // Polled right after the flood first waits, before the flush task runs: its direct
        // write takes the full queue along.
        let call = twoway.invoke("ping", OperationMode::Normal, None, |_| {});
        let (sent, reply) = tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(flood, call) })
            .await
            .expect("the oneway caller was never woken");
        reply.unwrap();
        sent
    });
    assert_eq!(peer.join().unwrap(), sent);
}

#[test]
fn a_oneway_waiting_for_room_goes_on_when_a_twoway_takes_the_queue_along() {
    let (want_tx, want_rx) = std::sync::mpsc::channel::<usize>();
    let (port, peer) = raw_peer(move |mut s| {
        let want = want_rx.recv().unwrap();
        let got = read_requests(&mut s, want);
        // Answer the twoway so that its call completes.
        let id = got.iter().find(|(op, _, _)| op == "done").expect("the twoway arrived").2;
        let mut reply = b"IceP\x01\x00\x01\x00\x02\x00".to_vec();
        reply.extend_from_slice(&25i32.to_le_bytes());
        reply.extend_from_slice(&id.to_le_bytes());
        reply.extend_from_slice(&[0, 6, 0, 0, 0, 1, 1]);
        s.write_all(&reply).unwrap();
        (got, s)
    });
    let c = Communicator::new().unwrap();
    let p = c.string_to_proxy(&format!("t:tcp -h 127.0.0.1 -p {port}")).unwrap();
    let o = p.ice_oneway();
    // On the communicator's runtime thread, where its flush task runs only when this task
    // yields.
    let task = async move {
        p.ice_get_connection().await.unwrap();
        // Oneways of one burst fill the queue before its flush task runs; the next one waits
        // for room.
        let mut sent = 0usize;
        let mut waiting = loop {
            let mut call = Box::pin(o.invoke("put", OperationMode::Normal, None, move |e| {
                e.write_i32(sent as i32);
                e.write_byte_seq(&[7u8; 4096]);
            }));
            let pending =
                std::future::poll_fn(|cx| std::task::Poll::Ready(Future::poll(call.as_mut(), cx).is_pending())).await;
            if pending {
                break call;
            }
            sent += 1;
            assert!(sent < 1000, "no oneway ever waited for room");
        };
        want_tx.send(sent + 2).unwrap();
        // A twoway written now takes the queued oneways along, ahead of itself; the flush
        // task then finds the queue empty, and the waiting oneway must still be told.
        let twoway = p.invoke("done", OperationMode::Normal, None, |e| e.write_i32(-7));
        // The peer answers the twoway only once the waiting oneway arrived too.
        let both = async {
            let (a, b) = tokio::join!(twoway, waiting.as_mut());
            a.unwrap();
            b.unwrap();
        };
        tokio::time::timeout(Duration::from_secs(10), both).await.expect("the waiting oneway was never written");
    };
    c.block_on(async { tokio::spawn(task).await.unwrap() });
    let (got, socket) = peer.join().unwrap();
    assert_eq!(got.iter().filter(|(op, _, _)| op == "put").count(), got.len() - 1);
    drop(socket);
    c.destroy_blocking();
}

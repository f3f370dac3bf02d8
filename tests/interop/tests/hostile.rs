//! Hostile peers against a running floe server: stalled and trickled messages, a flood of
//! silent connections, a client that never reads its replies, requests after
//! CloseConnection. Throughout, a well-behaved client keeps being served and the server's
//! memory stays bounded.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use floe::{Communicator, Proxy};
use floe_interop::interop::TesterPrx;

fn server(port: u16, extra: &[&str]) -> Server {
    floe_server(&format!("tcp -h 127.0.0.1 -p {port}"), extra)
}

fn request(op: &str, id: i32, params: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&id.to_le_bytes());
    body.extend_from_slice(b"\x06tester\x00\x00");
    body.push(op.len() as u8);
    body.extend_from_slice(op.as_bytes());
    body.extend_from_slice(&[0, 0]);
    body.extend_from_slice(&((params.len() + 6) as i32).to_le_bytes());
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(params);
    let mut m = b"IceP\x01\x00\x01\x00\x00\x00".to_vec();
    m.extend_from_slice(&((body.len() + 14) as i32).to_le_bytes());
    m.extend_from_slice(&body);
    m
}

#[test]
fn stalled_and_trickled_messages_are_cut_off() {
    let port = free_port();
    let _srv = server(port, &["--Floe.Connection.PartialMessageTimeout=1"]);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    // A header announcing 100 bytes, then silence.
    let mut stalled = connect(port);
    stalled.write_all(&request("ping", 1, &[0; 86])[..14]).unwrap();
    // A message trickled one byte every 1.5 s.
    let mut trickle = connect(port);
    let msg = request("ping", 1, &[]);
    let start = Instant::now();
    let mut sent = 0;
    let mut cut = false;
    while start.elapsed() < Duration::from_secs(6) && sent < msg.len() {
        if trickle.write_all(&msg[sent..sent + 1]).is_err() {
            cut = true;
            break;
        }
        sent += 1;
        if closed_within(&mut trickle, Duration::from_millis(1500)) {
            cut = true;
            break;
        }
    }
    assert!(cut, "the trickled message was not cut off ({sent} bytes sent)");
    assert!(closed_within(&mut stalled, Duration::from_secs(3)), "the stalled message was not cut off");
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn a_flood_of_silent_connections_is_bounded_and_others_are_served() {
    let port = free_port();
    let srv = server(port, &["--TestAdapter.MaxConnections=300"]);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.ping()).unwrap();
    let mut flood = Vec::new();
    let mut refused = 0;
    for _ in 0..600 {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut s) => {
                s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
                let mut v = [0u8; 14];
                if s.read_exact(&mut v).is_ok() {
                    flood.push(s);
                } else {
                    refused += 1;
                }
            }
            Err(_) => refused += 1,
        }
    }
    assert!(flood.len() <= 300, "{} connections accepted past the limit", flood.len());
    assert!(refused >= 290, "only {refused} refused");
    // The established client connection keeps working.
    c.block_on(t.ping()).unwrap();
    assert!(rss_kb(srv.pid()) < 200 * 1024);
    drop(flood);
    std::thread::sleep(Duration::from_millis(300));
    // Once the flood is gone, new clients get in again.
    let c2 = Communicator::new().unwrap();
    let t2 = TesterPrx::from_object(c2.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c2.block_on(t2.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn a_client_that_never_reads_does_not_grow_the_server() {
    let port = free_port();
    let srv = server(port, &[]);
    let pid = srv.pid();
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.ping()).unwrap();
    let before = rss_kb(pid);
    // 2000 requests for 500 KB each, never reading a reply: 1 GB if the server buffered them.
    let mut greedy = connect(port);
    greedy.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
    let req = request("recvByteSeq", 1, &500_000i32.to_le_bytes());
    for _ in 0..2000 {
        if greedy.write_all(&req).is_err() {
            break;
        }
    }
    // The server is now blocked writing a reply nobody reads; it must not have queued the rest.
    std::thread::sleep(Duration::from_millis(500));
    let grown = rss_kb(pid).saturating_sub(before);
    assert!(grown < 64 * 1024, "server grew by {grown} kB");
    // Other clients are still served.
    c.block_on(t.ping()).unwrap();
    drop(greedy);
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn requests_after_close_connection_are_not_dispatched() {
    let port = free_port();
    let _srv = server(port, &[]);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.reset_counter()).unwrap();
    let mut s = connect(port);
    let mut msgs = b"IceP\x01\x00\x01\x00\x04\x01\x0e\x00\x00\x00".to_vec();
    msgs.extend_from_slice(&request("incCounter", 0, &5i32.to_le_bytes()));
    s.write_all(&msgs).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(3)));
    assert_eq!(c.block_on(t.get_counter()).unwrap(), 0, "a request after CloseConnection was dispatched");
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn idle_connections_are_closed_when_configured() {
    let port = free_port();
    let _srv = server(port, &["--Ice.ACM.Server.Timeout=1", "--Ice.ACM.Server.Close=4"]);
    let mut idle = connect(port);
    let start = Instant::now();
    assert!(closed_within(&mut idle, Duration::from_secs(4)), "the idle connection stayed open");
    assert!(start.elapsed() >= Duration::from_millis(700));
}

#[test]
fn dispatches_per_connection_can_be_limited() {
    serialized_dispatch(&["--Floe.MaxDispatchesPerConnection=1"]);
    // Ice's own property for the same thing.
    serialized_dispatch(&["--Ice.ThreadPool.Server.Serialize=1"]);
}

#[test]
fn a_dispatch_slot_is_reused_as_soon_as_one_dispatch_finishes() {
    let port = free_port();
    let _srv = server(port, &["--Floe.MaxDispatchesPerConnection=2"]);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.ping()).unwrap();
    // Two slots: a long call and short ones. The short ones take turns in the second slot
    // while the long one runs, instead of waiting for both slots to empty.
    let (long_done, last_short_done) = c.block_on(async {
        let long = async {
            t.sleep_then_return(600, 1).await.unwrap();
            Instant::now()
        };
        let shorts = async {
            let (a, b, d) =
                tokio::join!(t.sleep_then_return(100, 2), t.sleep_then_return(100, 3), t.sleep_then_return(100, 4));
            assert_eq!((a.unwrap(), b.unwrap(), d.unwrap()), (2, 3, 4));
            Instant::now()
        };
        tokio::join!(long, shorts)
    });
    assert!(last_short_done < long_done, "the short calls waited for the long one");
    c.block_on(t.shutdown()).unwrap();
}

fn serialized_dispatch(flags: &[&str]) {
    let port = free_port();
    let _srv = server(port, flags);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.ping()).unwrap();
    // With one dispatch at a time, three 300 ms sleeps on one connection take ~900 ms.
    let start = Instant::now();
    let r = c.block_on(async {
        let (a, b, d) =
            tokio::join!(t.sleep_then_return(300, 1), t.sleep_then_return(300, 2), t.sleep_then_return(300, 3));
        (a.unwrap(), b.unwrap(), d.unwrap())
    });
    assert_eq!(r, (1, 2, 3));
    assert!(start.elapsed() >= Duration::from_millis(850), "{:?}", start.elapsed());
    c.block_on(t.shutdown()).unwrap();
}

#[test]
fn a_peer_that_ignores_close_connection_is_cut_after_the_close_timeout() {
    let port = free_port();
    let _srv = server(port, &["--Ice.Override.CloseTimeout=500"]);
    let mut stubborn = connect(port);
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.shutdown()).unwrap();
    // The server sends CloseConnection and waits for us to close; we never do.
    let start = Instant::now();
    let mut h = [0u8; 14];
    stubborn.read_exact(&mut h).unwrap();
    assert_eq!(h[8], 4, "expected CloseConnection, got message type {}", h[8]);
    assert!(closed_within(&mut stubborn, Duration::from_secs(3)), "the server waited forever");
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
}

#[test]
fn a_busy_polling_server_reads_trickled_requests_whole_and_cuts_off_garbage() {
    // One runtime thread: the server busy-polls, and its readers read what a spin finds
    // straight from the socket, here one byte at a time.
    let port = free_port();
    let _srv = server(port, &["--Floe.Runtime.Threads=1"]);
    let mut garbage = connect(port);
    let mut trickle = connect(port);
    let msg = request("ping", 7, &[]);
    for (i, byte) in msg.iter().enumerate() {
        trickle.write_all(std::slice::from_ref(byte)).unwrap();
        if i % 3 == 0 {
            // Now and then a pause longer than the spin's budget, so that the reader also
            // waits through epoll between bytes.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    trickle.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut header = [0u8; 14];
    trickle.read_exact(&mut header).unwrap();
    assert_eq!((&header[..4], header[8]), (&b"IceP"[..], 2), "a reply");
    let size = u32::from_le_bytes(header[10..14].try_into().unwrap()) as usize;
    let mut body = vec![0u8; size - 14];
    trickle.read_exact(&mut body).unwrap();
    assert_eq!((i32::from_le_bytes(body[..4].try_into().unwrap()), body[4]), (7, 0), "request 7 succeeded");
    garbage.write_all(b"this is not the Ice protocol at all").unwrap();
    assert!(closed_within(&mut garbage, Duration::from_secs(3)), "a connection with a wrong magic is closed");
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&format!("tester:tcp -h 127.0.0.1 -p {port}")).unwrap());
    c.block_on(t.ping()).unwrap();
    // The trickled connection still works at full speed.
    for id in 8..208 {
        trickle.write_all(&request("ping", id, &[])).unwrap();
        trickle.read_exact(&mut header).unwrap();
        let size = u32::from_le_bytes(header[10..14].try_into().unwrap()) as usize;
        body.resize(size - 14, 0);
        trickle.read_exact(&mut body).unwrap();
        assert_eq!(i32::from_le_bytes(body[..4].try_into().unwrap()), id);
    }
    c.block_on(t.shutdown()).unwrap();
}

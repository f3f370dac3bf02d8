//! The tokio baseline: the raw baseline's twoway exchange (the same request and reply bytes)
//! written on tokio with nothing else: no middleware, no dispatch, no connection state. Each
//! accepted connection gets a thread with a current-thread runtime of its own, the shape of
//! floe's connection runtimes (docs/adr/0009), and each client is one task on a current-thread
//! runtime that writes a request and reads its reply.
//!
//! It answers what an epoll-driven async runtime costs per call on this machine, so that a gap
//! between floe and the raw baseline (blocking sockets, a thread per connection) can be split
//! into what the async runtime costs and what floe adds: the rate tables give it a column
//! (`tokio`, with `floe/tokio`) in the twoway tests on the servers' defaults (`twoway`,
//! `clients-2`, `clients-5`), and `bash scripts/clients-cpu tokio tokio 5` splits its CPU time.
//! It serves and measures those tests only.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::raw::{complete_message_at, reply_ok, twoway_request};
use crate::tests::{Kind, Measured, Test};

/// Serves the twoway exchange on `port` until killed: each request gets an empty OK reply;
/// prints `ready` once listening.
pub(crate) fn serve(port: u16) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        println!("ready");
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            // Out of this runtime's reactor, into the connection thread's own.
            let stream = stream.into_std()?;
            std::thread::spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
                runtime.block_on(async move {
                    if let Ok(stream) = TcpStream::from_std(stream) {
                        let _ = serve_connection(stream).await;
                    }
                });
            });
        }
    })
}

/// Answers every request of one connection, the replies to the requests of one read with one
/// write, until the peer closes it or sends a close-connection message.
async fn serve_connection(mut stream: TcpStream) -> std::io::Result<()> {
    stream.write_all(&floe::protocol::header::VALIDATE_CONNECTION).await?;
    let mut input: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut replies: Vec<u8> = Vec::with_capacity(4 * 1024);
    loop {
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
        let mut at = 0;
        while let Some(size) = complete_message_at(&input, at) {
            match input[at + 8] {
                0 if size >= 18 => {
                    let id = i32::from_le_bytes([input[at + 14], input[at + 15], input[at + 16], input[at + 17]]);
                    if id != 0 {
                        replies.extend_from_slice(&reply_ok(id, &[]));
                    }
                }
                4 => return Ok(()),
                _ => {}
            }
            at += size;
        }
        input.drain(..at);
        if !replies.is_empty() {
            stream.write_all(&replies).await?;
            replies.clear();
        }
    }
}

/// Whether the baseline runs `test`: the twoway exchange over plain TCP, against servers on
/// their defaults (not the tests of servers of a given size).
pub(crate) fn supports(test: &Test) -> bool {
    test.kind == Kind::Twoway && !test.ssl && !test.exact_threads()
}

/// Runs the twoway test against the server on `port` for about `duration`; returns
/// the calls made and the seconds they took.
pub(crate) fn measure(test: &Test, port: u16, duration: Duration) -> std::io::Result<Measured> {
    if test.kind != Kind::Twoway {
        return Err(std::io::Error::other(format!("the tokio baseline runs only twoway tests, not {}", test.name)));
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // One timer for the whole run (a server that stops answering ends it with an error), not
    // one per call, which would add its cost to the baseline.
    let limit = duration + Duration::from_secs(30);
    let run = async move {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        let mut validation = [0u8; 14];
        stream.read_exact(&mut validation).await?;
        let request = twoway_request();
        let mut header = [0u8; 14];
        let mut body = vec![0u8; 256];
        for _ in 0..100 {
            call(&mut stream, &request, &mut header, &mut body).await?;
        }
        let start = Instant::now();
        let deadline = start + duration;
        let mut calls: u64 = 0;
        while Instant::now() < deadline {
            for _ in 0..100 {
                call(&mut stream, &request, &mut header, &mut body).await?;
            }
            calls += 100;
        }
        Ok(Measured::new(calls, start.elapsed().as_secs_f64()))
    };
    runtime.block_on(async move {
        tokio::time::timeout(limit, run).await.unwrap_or_else(|_| {
            Err(std::io::Error::other(format!("no end after {limit:?}: the server stopped answering")))
        })
    })
}

/// One twoway call: writes `request` and reads its reply.
async fn call(
    stream: &mut TcpStream,
    request: &[u8],
    header: &mut [u8; 14],
    body: &mut Vec<u8>,
) -> std::io::Result<()> {
    stream.write_all(request).await?;
    stream.read_exact(header).await?;
    let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]).max(14) as usize;
    body.resize(size - 14, 0);
    stream.read_exact(body).await?;
    Ok(())
}

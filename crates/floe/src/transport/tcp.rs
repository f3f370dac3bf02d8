//! TCP, over IPv4 and IPv6.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};

use super::TransportStream;
use crate::error::{Error, Result};

fn wrap(stream: TcpStream) -> TransportStream {
    let _ = stream.set_nodelay(true);
    let description = match (stream.local_addr(), stream.peer_addr()) {
        (Ok(l), Ok(r)) => format!("local address = {l}\nremote address = {r}"),
        _ => "tcp".to_string(),
    };
    let (read, write) = stream.into_split();
    TransportStream { read: Box::new(TcpRead(read)), write: Box::new(write), description }
}

/// The reading half of a TCP connection.
///
/// A read that returns fewer bytes than asked for has drained the socket, so it also clears
/// the socket's readiness: the next read waits for the next readiness event instead of first
/// making a `read` call that can only fail with EAGAIN. That saves one system call per
/// message received. (Readiness is edge-triggered and cleared by tick, so data arriving
/// after the read raises a new event and is never missed.)
struct TcpRead(OwnedReadHalf);

impl AsyncRead for TcpRead {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let stream: &TcpStream = self.0.as_ref();
        let fd = stream.as_raw_fd();
        loop {
            ready!(stream.poll_read_ready(cx))?;
            let cap = buf.remaining();
            if cap == 0 {
                return Poll::Ready(Ok(()));
            }
            // SAFETY: only handed to read(2), which writes at most `cap` bytes; the bytes it
            // wrote are marked initialised below before anything reads them.
            let dst = unsafe { buf.unfilled_mut() }.as_mut_ptr().cast::<u8>();
            let mut got = 0usize;
            let result = stream.try_io(Interest::READABLE, || {
                // SAFETY: `dst` points at `cap` writable bytes of `buf`.
                let n = unsafe { libc::read(fd, dst.cast(), cap) };
                if n < 0 {
                    return Err(io::Error::last_os_error());
                }
                got = n as usize;
                if got > 0 && got < cap {
                    // Drained: report "would block" so that readiness is cleared; the bytes
                    // read are kept below.
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            });
            match result {
                Ok(()) => {
                    // SAFETY: read(2) initialised the first `got` unfilled bytes.
                    unsafe { buf.assume_init(got) };
                    buf.advance(got);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if got > 0 {
                        // SAFETY: as above.
                        unsafe { buf.assume_init(got) };
                        buf.advance(got);
                        return Poll::Ready(Ok(()));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// Connects to `host:port`, giving up after `timeout` (if any).
pub async fn connect(host: &str, port: u16, timeout: Option<Duration>) -> Result<TransportStream> {
    let host = if host.is_empty() || host == "*" || host == "0.0.0.0" { "127.0.0.1" } else { host };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let endpoint = format!("tcp -h {host} -p {port}");
    let fut = TcpStream::connect((host, port));
    let stream = match timeout {
        Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| Error::ConnectFailed {
            endpoint: endpoint.clone(),
            reason: format!("timed out after {t:?}"),
        })?,
        None => fut.await,
    }
    .map_err(|e| Error::ConnectFailed { endpoint, reason: e.to_string() })?;
    Ok(wrap(stream))
}

/// Binds a listening socket for `host:port` (`*` or empty host: all IPv4 interfaces;
/// port 0: an ephemeral port).
pub async fn bind(host: &str, port: u16) -> Result<TcpListener> {
    let host = match host {
        "" | "*" => "0.0.0.0",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    };
    TcpListener::bind((host, port)).await.map_err(|e| Error::Adapter(format!("cannot bind {host}:{port}: {e}")))
}

/// Accepts one connection.
pub async fn accept(listener: &TcpListener) -> std::io::Result<(TransportStream, SocketAddr)> {
    let (s, addr) = listener.accept().await?;
    Ok((wrap(s), addr))
}

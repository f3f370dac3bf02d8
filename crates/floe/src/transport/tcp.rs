//! TCP, over IPv4 and IPv6.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::TransportStream;
use crate::error::{Error, Result};

fn wrap(stream: TcpStream) -> TransportStream {
    let _ = stream.set_nodelay(true);
    let (local, remote) = (stream.local_addr().ok(), stream.peer_addr().ok());
    let description = match (local, remote) {
        (Some(l), Some(r)) => format!("local address = {l}\nremote address = {r}"),
        _ => "tcp".to_string(),
    };
    let (read, write) = stream.into_split();
    TransportStream { read: Box::new(TcpRead(read)), write: Box::new(write), description, local, remote }
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
pub async fn connect(host: &str, port: u16, timeout: Option<Duration>, sizes: BufferSizes) -> Result<TransportStream> {
    let host = if host.is_empty() || host == "*" || host == "0.0.0.0" { "127.0.0.1" } else { host };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let endpoint = format!("tcp -h {host} -p {port}");
    let fail = |e: io::Error| Error::ConnectFailed { endpoint: endpoint.clone(), reason: e.to_string() };
    let fut = async {
        if sizes == BufferSizes::default() {
            return TcpStream::connect((host, port)).await;
        }
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for addr in tokio::net::lookup_host((host, port)).await? {
            let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }?;
            sizes.apply(&socket)?;
            match socket.connect(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    };
    let stream = match timeout {
        Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| Error::ConnectFailed {
            endpoint: endpoint.clone(),
            reason: format!("timed out after {t:?}"),
        })?,
        None => fut.await,
    }
    .map_err(fail)?;
    Ok(wrap(stream))
}

/// Kernel socket buffer sizes (`Ice.TCP.RcvSize` / `Ice.TCP.SndSize`, bytes; `None` keeps the
/// system's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferSizes {
    /// SO_RCVBUF.
    pub receive: Option<u32>,
    /// SO_SNDBUF.
    pub send: Option<u32>,
}

impl BufferSizes {
    fn apply(&self, socket: &TcpSocket) -> io::Result<()> {
        if let Some(n) = self.receive {
            socket.set_recv_buffer_size(n)?;
        }
        if let Some(n) = self.send {
            socket.set_send_buffer_size(n)?;
        }
        Ok(())
    }
}

/// Binds a listening socket for `host:port` (`*` or empty host: all IPv4 interfaces;
/// port 0: an ephemeral port). Accepted connections inherit `sizes`.
pub async fn bind(host: &str, port: u16, sizes: BufferSizes) -> Result<TcpListener> {
    let host = match host {
        "" | "*" => "0.0.0.0",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    };
    let fail = |e: io::Error| Error::Adapter(format!("cannot bind {host}:{port}: {e}"));
    if sizes == BufferSizes::default() {
        return TcpListener::bind((host, port)).await.map_err(fail);
    }
    let addr = tokio::net::lookup_host((host, port))
        .await
        .map_err(fail)?
        .next()
        .ok_or_else(|| fail(io::Error::new(io::ErrorKind::NotFound, "no address")))?;
    let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(fail)?;
    socket.set_reuseaddr(true).map_err(fail)?;
    sizes.apply(&socket).map_err(fail)?;
    socket.bind(addr).map_err(fail)?;
    socket.listen(1024).map_err(fail)
}

/// Accepts one connection.
pub async fn accept(listener: &TcpListener) -> std::io::Result<(TransportStream, SocketAddr)> {
    let (s, addr) = listener.accept().await?;
    Ok((wrap(s), addr))
}

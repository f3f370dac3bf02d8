//! TCP, over IPv4 and IPv6.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, Interest, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::TransportStream;
use crate::error::{Error, Result};

/// `local address = …\nremote address = …`, as Ice describes a connection.
pub(crate) fn describe(local: Option<SocketAddr>, remote: Option<SocketAddr>) -> String {
    match (local, remote) {
        (Some(l), Some(r)) => format!("local address = {l}\nremote address = {r}"),
        _ => "tcp".to_string(),
    }
}

/// A plain TCP transport over `stream`.
pub(crate) fn wrap(stream: TcpStream) -> TransportStream {
    let _ = stream.set_nodelay(true);
    let (local, remote) = (stream.local_addr().ok(), stream.peer_addr().ok());
    let description = describe(local, remote);
    let (read, write) = stream.into_split();
    TransportStream {
        read: Box::new(TcpRead { half: read, watch: None }),
        write: Box::new(write),
        description,
        local,
        remote,
        peer_certificates: Vec::new(),
        cipher: None,
        headers: Vec::new(),
    }
}

/// The reading half of a TCP connection.
///
/// A read that returns fewer bytes than asked for has drained the socket, so it also clears
/// the socket's readiness: the next read waits for the next readiness event instead of first
/// making a `read` call that can only fail with EAGAIN. That saves one system call per
/// message received. (Readiness is edge-triggered and cleared by tick, so data arriving
/// after the read raises a new event and is never missed.)
///
/// On a thread that busy-polls ([`super::busy_poll`]), a read that has to wait asks the thread
/// to watch the socket; when a spin sees data, the next read goes straight to the socket,
/// ahead of its epoll event.
struct TcpRead {
    half: OwnedReadHalf,
    /// Shared with the busy-polling thread once the reader has waited on one.
    watch: Option<std::sync::Arc<super::busy_poll::Watch>>,
}

/// One `read(2)` from `fd` into `buf`'s unfilled part; the bytes read are added to `buf`.
fn read_into(fd: std::os::fd::RawFd, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
    let cap = buf.remaining();
    // SAFETY: only handed to read(2), which writes at most `cap` bytes; the bytes it wrote are
    // marked initialised before anything reads them.
    let dst = unsafe { buf.unfilled_mut() }.as_mut_ptr().cast::<u8>();
    // SAFETY: `dst` points at `cap` writable bytes of `buf`.
    let n = unsafe { libc::read(fd, dst.cast(), cap) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: read(2) initialised the first `n` unfilled bytes.
    unsafe { buf.assume_init(n as usize) };
    buf.advance(n as usize);
    Ok(n as usize)
}

impl AsyncRead for TcpRead {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        poll_read_watched(this.half.as_ref(), &mut this.watch, cx, buf)
    }
}

/// A whole TCP stream whose reads are those of [`TcpRead`] (one system call per message
/// drained, busy-polling threads watching it): what TLS runs over, so that `ssl` and `wss`
/// connections are served as promptly as `tcp` ones.
pub(crate) struct WatchedTcp {
    stream: TcpStream,
    watch: Option<std::sync::Arc<super::busy_poll::Watch>>,
}

impl WatchedTcp {
    /// Wraps a connected stream.
    pub(crate) fn new(stream: TcpStream) -> Self {
        WatchedTcp { stream, watch: None }
    }
}

impl AsyncRead for WatchedTcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        poll_read_watched(&this.stream, &mut this.watch, cx, buf)
    }
}

impl tokio::io::AsyncWrite for WatchedTcp {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// Reads from `stream` into `buf` as [`TcpRead`] describes, with `watch` the stream's
/// registration with a busy-polling thread.
fn poll_read_watched(
    stream: &TcpStream,
    watch: &mut Option<std::sync::Arc<super::busy_poll::Watch>>,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    let fd = stream.as_raw_fd();
    // Taken by the first poll of a read, whatever comes of it.
    let unwatched = super::busy_poll::take_peer_not_waiting();
    if buf.remaining() == 0 {
        return Poll::Ready(Ok(()));
    }
    // A spin saw data: read it now, even before tokio has seen the socket's event. When tokio
    // has seen it meanwhile (the runtime polled its events before running this task), the read
    // goes through tokio, so that a read that drains the socket clears the readiness: read
    // directly, the event would make the next read a `read` that can only fail with EAGAIN.
    if watch.as_ref().is_some_and(|w| w.take_readable()) {
        match read_if_ready(stream, fd, buf) {
            TokioRead::Done(result) => return Poll::Ready(result),
            TokioRead::NotReady => match read_into(fd, buf) {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Poll::Ready(Err(e)),
            },
            TokioRead::Again => {}
        }
    }
    loop {
        if stream.poll_read_ready(cx)?.is_pending() {
            if !unwatched {
                super::busy_poll::watch(fd, watch, cx.waker());
            }
            return Poll::Pending;
        }
        if let TokioRead::Done(result) = read_if_ready(stream, fd, buf) {
            return Poll::Ready(result);
        }
    }
}

/// What a read through tokio's readiness came to.
enum TokioRead {
    /// Bytes were read, the stream ended, or the read failed.
    Done(io::Result<()>),
    /// tokio does not know the socket to be readable: nothing was read.
    NotReady,
    /// The read found nothing (tokio's readiness is cleared) or was interrupted.
    Again,
}

/// One `read(2)` from `fd` into `buf` if tokio knows `stream` to be readable. A read that
/// returns fewer bytes than there was room for has drained the socket and clears tokio's
/// readiness, as one that fails with EAGAIN does.
fn read_if_ready(stream: &TcpStream, fd: std::os::fd::RawFd, buf: &mut ReadBuf<'_>) -> TokioRead {
    let cap = buf.remaining();
    let (mut tried, mut got) = (false, 0usize);
    let result = stream.try_io(Interest::READABLE, || {
        tried = true;
        got = read_into(fd, buf)?;
        if got > 0 && got < cap {
            // Drained: report "would block" so that readiness is cleared; the bytes read
            // stay in `buf`.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(())
    });
    match result {
        Ok(()) => TokioRead::Done(Ok(())),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 => TokioRead::Done(Ok(())),
        Err(_) if !tried => TokioRead::NotReady,
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => TokioRead::Again,
        Err(e) => TokioRead::Done(Err(e)),
    }
}

/// Connects to `host:port`, giving up after `timeout` (if any).
pub async fn connect(host: &str, port: u16, timeout: Option<Duration>, sizes: BufferSizes) -> Result<TransportStream> {
    Ok(wrap(connect_stream(host, port, timeout, sizes).await?))
}

/// Connects to `host:port` as [`connect`] does, for a transport that runs over TCP.
pub async fn connect_stream(host: &str, port: u16, timeout: Option<Duration>, sizes: BufferSizes) -> Result<TcpStream> {
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
    let _ = stream.set_nodelay(true);
    Ok(stream)
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

/// The listen backlog Ice uses by default (`SOMAXCONN`); the kernel caps it at
/// `net.core.somaxconn`.
pub const DEFAULT_BACKLOG: u32 = libc::SOMAXCONN as u32;

/// Binds a listening socket for `host:port` (`*` or empty host: all IPv4 interfaces;
/// port 0: an ephemeral port) with room for `backlog` connections not yet accepted
/// (`Ice.TCP.Backlog`). Accepted connections inherit `sizes`.
///
/// Synchronous, as object adapters bind when they are created (so that their proxies carry
/// the bound port before activation); it must run in the context of a tokio runtime, and
/// resolves `host` with the system resolver.
pub fn bind(host: &str, port: u16, sizes: BufferSizes, backlog: u32) -> Result<TcpListener> {
    let host = match host {
        "" | "*" => "0.0.0.0",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    };
    let fail = |e: io::Error| Error::Adapter(format!("cannot bind {host}:{port}: {e}"));
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .map_err(fail)?
        .next()
        .ok_or_else(|| fail(io::Error::new(io::ErrorKind::NotFound, "no address")))?;
    let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(fail)?;
    socket.set_reuseaddr(true).map_err(fail)?;
    sizes.apply(&socket).map_err(fail)?;
    socket.bind(addr).map_err(fail)?;
    socket.listen(backlog.max(1)).map_err(fail)
}

/// Accepts one connection.
pub async fn accept(listener: &TcpListener) -> std::io::Result<(TransportStream, SocketAddr)> {
    let (s, addr) = listener.accept().await?;
    Ok((wrap(s), addr))
}

/// Accepts one connection, for a transport that runs over TCP
/// ([`super::accept_layers`]).
pub async fn accept_stream(listener: &TcpListener) -> std::io::Result<(TcpStream, SocketAddr)> {
    listener.accept().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    /// A connected pair: the reading side as a [`TcpRead`] whose socket a spin saw readable,
    /// and the peer's stream, a blocking std one, so that writing to it never lets the
    /// runtime poll its events.
    fn watched_pair() -> (TcpRead, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ours, _) = listener.accept().unwrap();
        ours.set_nonblocking(true).unwrap();
        let (half, _write) = TcpStream::from_std(ours).unwrap().into_split();
        // The write half is dropped: reading needs only the read half (a dropped
        // `OwnedWriteHalf` shuts down writing, which does not affect reading).
        let watch = Arc::new(super::super::busy_poll::Watch::default());
        watch.mark_readable();
        (TcpRead { half, watch: Some(watch) }, peer)
    }

    fn poll_once(read: &mut TcpRead, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(read).poll_read(&mut cx, buf)
    }

    /// Polls one read into a 64-byte buffer; the bytes it read, which must be some.
    fn read_now(read: &mut TcpRead) -> Vec<u8> {
        let mut storage = [0u8; 64];
        let mut buf = ReadBuf::new(&mut storage);
        assert!(matches!(poll_once(read, &mut buf), Poll::Ready(Ok(()))));
        buf.filled().to_vec()
    }

    fn readiness_pending(read: &TcpRead) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        matches!(read.half.as_ref().poll_read_ready(&mut cx), Poll::Pending)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn data_a_spin_saw_is_read_before_tokio_sees_its_event() {
        let (mut read, mut peer) = watched_pair();
        // Nothing yields between the write and the read: the runtime has not polled its
        // events, so tokio does not know yet that the socket is readable.
        peer.write_all(b"hello").unwrap();
        assert!(readiness_pending(&read), "tokio has not seen the event yet");
        assert_eq!(read_now(&mut read), b"hello");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_draining_read_clears_the_readiness_tokio_has_seen() {
        let (mut read, mut peer) = watched_pair();
        peer.write_all(b"hello").unwrap();
        // The runtime sees the socket's event before the reader runs.
        read.half.readable().await.unwrap();
        assert_eq!(read_now(&mut read), b"hello");
        // The socket is drained and tokio knows it: the next read waits for a new event
        // instead of first calling read(2) for an EAGAIN.
        assert!(readiness_pending(&read));
        // New data raises a new event and is read.
        peer.write_all(b"again").unwrap();
        read.half.readable().await.unwrap();
        assert_eq!(read_now(&mut read), b"again");
    }
}

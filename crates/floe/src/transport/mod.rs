//! Transports: byte streams that carry Ice messages. A transport is anything that reads and
//! writes bytes asynchronously (connect, read, vectored write and shutdown are the
//! [`tokio::io`] traits): [`tcp`], [`ssl`] (TLS with rustls over TCP), and [`ws`]
//! (WebSocket framing over TCP, or over TLS for `wss`). UDP carries whole messages in
//! datagrams instead (object adapters receive oneway requests on it).
//! [`busy_poll`] lets a one-thread runtime watch its just-active TCP connections for a few
//! microseconds before it sleeps; `coalesce` carries a reader's hints to the writes of its
//! thread, so that what a batch of messages gives rise to is written together.

pub mod busy_poll;
pub(crate) mod coalesce;
pub mod ssl;
pub mod tcp;
pub mod udp;
pub mod ws;

use tokio::io::{AsyncRead, AsyncWrite};

/// The reading half of a transport.
pub type ReadHalf = Box<dyn AsyncRead + Send + Unpin + 'static>;
/// The writing half of a transport.
pub type WriteHalf = Box<dyn AsyncWrite + Send + Unpin + 'static>;

/// An established transport connection, split into its halves, with a description for logs.
pub struct TransportStream {
    /// Reads from the peer.
    pub read: ReadHalf,
    /// Writes to the peer.
    pub write: WriteHalf,
    /// `local -> remote` addresses, for logs and connection info.
    pub description: String,
    /// The local address, when the transport has one.
    pub local: Option<std::net::SocketAddr>,
    /// The peer's address, when the transport has one.
    pub remote: Option<std::net::SocketAddr>,
    /// The certificate chain the peer presented (DER, the peer's own certificate first);
    /// empty unless the transport is ssl or wss and the peer sent one.
    pub peer_certificates: Vec<Vec<u8>>,
    /// The TLS cipher suite negotiated with the peer (rustls's name for it, such as
    /// `TLS13_AES_256_GCM_SHA384`); `None` unless the transport is ssl or wss.
    pub cipher: Option<String>,
    /// The header fields of a WebSocket upgrade (ws and wss): the client's request on the
    /// server side, the server's response on the client side. Empty for other transports.
    pub headers: Vec<(String, String)>,
}

impl TransportStream {
    /// A transport over any byte stream (an in-memory pipe in tests, a stream a program set up
    /// itself), split into its halves; it has no addresses.
    pub fn from_io(io: impl AsyncRead + AsyncWrite + Send + 'static, description: impl Into<String>) -> Self {
        let (read, write) = tokio::io::split(io);
        TransportStream {
            read: Box::new(read),
            write: Box::new(write),
            description: description.into(),
            local: None,
            remote: None,
            peer_certificates: Vec::new(),
            cipher: None,
            headers: Vec::new(),
        }
    }
}

impl std::fmt::Debug for TransportStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportStream").field("description", &self.description).finish()
    }
}

/// What runs over a TCP connection: nothing (`tcp`), TLS (`ssl`), WebSocket (`ws`) or
/// WebSocket over TLS (`wss`).
#[derive(Clone, Debug)]
pub enum Layers {
    /// Plain TCP.
    Tcp,
    /// TLS.
    Ssl(std::sync::Arc<ssl::SslContext>),
    /// WebSocket, with the resource a client asks for.
    Ws(String),
    /// WebSocket over TLS, with the resource a client asks for.
    Wss(std::sync::Arc<ssl::SslContext>, String),
}

/// A client-side TLS stream over TCP, watched for security failures.
type ClientTls = ssl::Watched<tokio_rustls::client::TlsStream<tcp::WatchedTcp>>;

fn over<S: AsyncRead + AsyncWrite + Send + 'static>(
    io: S,
    local: Option<std::net::SocketAddr>,
    remote: Option<std::net::SocketAddr>,
    tls: Option<ssl::PeerInfo>,
) -> TransportStream {
    let mut t = TransportStream::from_io(io, tcp::describe(local, remote));
    t.local = local;
    t.remote = remote;
    if let Some(tls) = tls {
        t.peer_certificates = tls.certificates;
        t.cipher = Some(tls.cipher);
    }
    t
}

fn with_headers(mut t: TransportStream, headers: Vec<(String, String)>) -> TransportStream {
    t.headers = headers;
    t
}

async fn client_tls(
    ctx: &ssl::SslContext,
    stream: tokio::net::TcpStream,
    host: &str,
) -> crate::error::Result<(ClientTls, ssl::PeerInfo)> {
    let s = ctx.connect(tcp::WatchedTcp::new(stream), host).await?;
    let info = ssl::PeerInfo::of(s.get_ref().1);
    Ok((ssl::Watched::new(s), info))
}

/// Runs the client's side of `layers` over a connected TCP stream to `host:port`. With TLS,
/// the second value is where a security failure reported after the handshake is recorded
/// (with TLS 1.3 a server refuses a client's certificate only then).
pub async fn connect_layers(
    stream: tokio::net::TcpStream,
    layers: &Layers,
    host: &str,
    port: u16,
) -> crate::error::Result<(TransportStream, Option<std::sync::Arc<std::sync::OnceLock<String>>>)> {
    let (local, remote) = (stream.local_addr().ok(), stream.peer_addr().ok());
    let http_host = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    Ok(match layers {
        Layers::Tcp => (tcp::wrap(stream), None),
        Layers::Ssl(ctx) => {
            let (s, certs) = client_tls(ctx, stream, host).await?;
            let failure = s.failure();
            (over(s, local, remote, Some(certs)), Some(failure))
        }
        Layers::Ws(resource) => {
            let _ = stream.set_nodelay(true);
            let ws = ws::client_handshake(tcp::WatchedTcp::new(stream), &http_host, resource).await?;
            let headers = ws.headers().to_vec();
            (with_headers(over(ws, local, remote, None), headers), None)
        }
        Layers::Wss(ctx, resource) => {
            let (s, certs) = client_tls(ctx, stream, host).await?;
            let failure = s.failure();
            let ws = match ws::client_handshake(s, &http_host, resource).await {
                Ok(ws) => ws,
                Err(e) => return Err(failure.get().map(|m| crate::error::Error::Security(m.clone())).unwrap_or(e)),
            };
            let headers = ws.headers().to_vec();
            (with_headers(over(ws, local, remote, Some(certs)), headers), Some(failure))
        }
    })
}

/// Runs the server's side of `layers` over an accepted TCP stream: the TLS handshake and
/// the WebSocket upgrade, as each applies.
pub async fn accept_layers(stream: tokio::net::TcpStream, layers: &Layers) -> crate::error::Result<TransportStream> {
    let (local, remote) = (stream.local_addr().ok(), stream.peer_addr().ok());
    Ok(match layers {
        Layers::Tcp => tcp::wrap(stream),
        Layers::Ssl(ctx) => {
            let _ = stream.set_nodelay(true);
            let s = ctx.accept(tcp::WatchedTcp::new(stream)).await?;
            let info = ssl::PeerInfo::of(s.get_ref().1);
            over(s, local, remote, Some(info))
        }
        Layers::Ws(_) => {
            let _ = stream.set_nodelay(true);
            let ws = ws::server_handshake(tcp::WatchedTcp::new(stream)).await?;
            let headers = ws.headers().to_vec();
            with_headers(over(ws, local, remote, None), headers)
        }
        Layers::Wss(ctx, _) => {
            let _ = stream.set_nodelay(true);
            let s = ctx.accept(tcp::WatchedTcp::new(stream)).await?;
            let info = ssl::PeerInfo::of(s.get_ref().1);
            let ws = ws::server_handshake(s).await?;
            let headers = ws.headers().to_vec();
            with_headers(over(ws, local, remote, Some(info)), headers)
        }
    })
}

//! Transports: byte streams that carry Ice messages. A transport is anything that reads and
//! writes bytes asynchronously (connect, read, vectored write and shutdown are the
//! [`tokio::io`] traits); TCP is the first, and ssl and ws plug in the same way. UDP carries
//! whole messages in datagrams instead (object adapters receive oneway requests on it).
//! [`busy_poll`] lets a one-thread runtime watch its just-active TCP connections for a few
//! microseconds before it sleeps.

pub mod busy_poll;
pub mod tcp;
pub mod udp;

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
        }
    }
}

impl std::fmt::Debug for TransportStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportStream").field("description", &self.description).finish()
    }
}

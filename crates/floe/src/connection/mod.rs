//! One Ice connection over a byte stream, split by responsibility:
//!
//! | file | what lives there |
//! |---|---|
//! | `mod.rs` | [`Connection`], the handle: establishment, accessors, closing |
//! | `config.rs` | [`ConnectionConfig`], a connection's settings |
//! | `state.rs` | the close state machine (`Active` → `Draining` → `Closing` → `Closed` → `Finished`) |
//! | `handler.rs` | [`RequestHandler`], the only way the connection knows incoming requests, and [`HoldGate`] |
//! | `writer.rs` | writing messages under the write-half lock, and the queue of small oneway requests with its flush task |
//! | `outgoing.rs` | requests this side sends: request ids, waiting for replies, oneways |
//! | `reader.rs` | the reader task: framing, read buffers and their timers, routing each message |
//! | `incoming.rs` | dispatching requests the peer sends, bounding dispatches, writing their replies |
//! | `acm.rs` | heartbeats and idle closing (Ice 3.7's ACM, Ice 3.8's idle timeout) |
//!
//! Each connection has one reader task. Callers write their own requests (under a lock on
//! the write half) — there is no hand-off to a writer task on the twoway path; small oneway
//! requests are queued and written together by a short-lived flush task. The reader task
//! delivers replies to the waiting callers and runs dispatches itself; a dispatch that has to
//! wait continues as a task of its own so that the connection keeps reading.

mod acm;
mod config;
mod handler;
mod incoming;
mod outgoing;
mod pipelined;
mod reader;
mod state;
mod writer;

pub use acm::{AcmClose, AcmConfig, AcmHeartbeat};
pub use config::ConnectionConfig;
pub use handler::{BoundHandler, HoldGate, RequestHandler};
pub use outgoing::Compress;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::debug;

use crate::error::{Error, Result};
use crate::protocol::header::VALIDATE_CONNECTION;
use crate::protocol::{MessageType, HEADER_SIZE};
use crate::transport::{ReadHalf, TransportStream, WriteHalf};
use state::{CloseState, Phase};

/// The state one connection's handles, reader task and helper tasks share.
struct Shared {
    /// Shared by the connections of one adapter (or of a communicator's outgoing side).
    config: Arc<ConnectionConfig>,
    /// Where the connection is in its life.
    state: CloseState,
    /// The write half; `None` once the writing side is shut down.
    writer: tokio::sync::Mutex<Option<WriteHalf>>,
    /// Small oneway requests waiting to be written (writer.rs).
    oneways: writer::OnewayQueue,
    /// Requests waiting for their reply (outgoing.rs).
    pending: outgoing::Pending,
    /// The handler of incoming requests and the dispatches in progress (incoming.rs).
    incoming: incoming::Incoming,
    /// When the last bytes were read and written, and heartbeats received (acm.rs).
    activity: acm::Activity,
    is_incoming: bool,
    description: String,
    local: Option<std::net::SocketAddr>,
    remote: Option<std::net::SocketAddr>,
    /// The peer's certificate chain (DER), for ssl and wss connections.
    peer_certificates: Vec<Vec<u8>>,
    /// The negotiated TLS cipher suite, for ssl and wss connections.
    cipher: Option<String>,
    /// The header fields of the WebSocket upgrade, for ws and wss connections.
    ws_headers: Vec<(String, String)>,
    reader: Mutex<Option<tokio::task::AbortHandle>>,
    /// The runtime the reader runs on: where a flush task goes when the runtime of the caller
    /// that started it shuts down (writer.rs).
    home: std::sync::OnceLock<tokio::runtime::Handle>,
    /// The connection's slot in its ACM sweeper (`usize::MAX`: none).
    acm_slot: AtomicUsize,
    /// Called once, when the connection closes.
    on_closed: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Called once each, when the connection closes, after `on_closed`.
    on_closed_also: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
}

/// A connection to an Ice peer. Cheap to clone; all clones are the same connection.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("incoming", &self.shared.is_incoming)
            .field("description", &self.shared.description)
            .finish()
    }
}

impl PartialEq for Connection {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Eq for Connection {}

/// Hashes the connection's identity (as `==` compares it), so that connections can key maps:
/// two handles are equal exactly when they are the same connection.
impl std::hash::Hash for Connection {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.shared), state);
    }
}

/// What a connection keeps of its transport: description, local and remote addresses, the
/// peer's certificate chain, the TLS cipher suite and the WebSocket upgrade's header fields.
type StreamInfo = (
    String,
    Option<std::net::SocketAddr>,
    Option<std::net::SocketAddr>,
    Vec<Vec<u8>>,
    Option<String>,
    Vec<(String, String)>,
);

impl Connection {
    fn new(stream: StreamInfo, write: WriteHalf, is_incoming: bool, config: Arc<ConnectionConfig>) -> Self {
        let (description, local, remote, peer_certificates, cipher, ws_headers) = stream;
        let conn = Connection {
            shared: Arc::new(Shared {
                config,
                state: CloseState::default(),
                writer: tokio::sync::Mutex::new(Some(write)),
                oneways: writer::OnewayQueue::default(),
                pending: outgoing::Pending::default(),
                incoming: incoming::Incoming::default(),
                activity: acm::Activity::new(Instant::now()),
                is_incoming,
                description,
                local,
                remote,
                peer_certificates,
                cipher,
                ws_headers,
                reader: Mutex::new(None),
                home: std::sync::OnceLock::new(),
                acm_slot: AtomicUsize::new(usize::MAX),
                on_closed: Mutex::new(None),
                on_closed_also: Mutex::new(Vec::new()),
            }),
        };
        conn.shared.activity.touch_read();
        conn.shared.activity.touch_write();
        conn
    }

    /// Completes the client side of connection establishment: waits for the server's
    /// ValidateConnection message, then starts reading.
    pub async fn establish_outgoing(
        stream: TransportStream,
        config: impl Into<Arc<ConnectionConfig>>,
        validate_timeout: Option<Duration>,
    ) -> Result<Connection> {
        let config = config.into();
        let TransportStream { mut read, write, description, local, remote, peer_certificates, cipher, headers } =
            stream;
        let mut header = [0u8; HEADER_SIZE];
        let read_validation = read.read_exact(&mut header);
        let res = match validate_timeout {
            Some(t) => tokio::time::timeout(t, read_validation)
                .await
                .map_err(|_| Error::ConnectionLost(format!("no ValidateConnection within {t:?}")))?,
            None => read_validation.await,
        };
        res.map_err(|e| Error::ConnectionLost(format!("connection not validated: {e}")))?;
        let h = crate::protocol::Header::parse(&header, config.max_message_size)?;
        if h.message_type != MessageType::ValidateConnection {
            return Err(Error::ConnectionLost(format!(
                "connection not validated: expected ValidateConnection, got {:?}",
                h.message_type
            )));
        }
        let conn =
            Connection::new((description, local, remote, peer_certificates, cipher, headers), write, false, config);
        conn.start(read);
        net_log(&conn.shared.config, format_args!("established outgoing connection\n{}", conn.shared.description));
        Ok(conn)
    }

    /// Completes the server side of connection establishment: sends ValidateConnection and
    /// starts reading, handing requests to `handler`.
    ///
    /// `admit` is called with the new connection before it reads anything: the object adapter
    /// records it there, so that a deactivation in between closes it instead of missing it.
    /// A connection not admitted (the adapter stopped) takes no request and closes.
    pub async fn establish_incoming(
        stream: TransportStream,
        config: impl Into<Arc<ConnectionConfig>>,
        handler: Arc<dyn RequestHandler>,
        admit: impl FnOnce(&Connection) -> bool,
    ) -> Result<Connection> {
        let config = config.into();
        let TransportStream { read, mut write, description, local, remote, peer_certificates, cipher, headers } =
            stream;
        write.write_all(&VALIDATE_CONNECTION).await.map_err(Error::lost)?;
        write.flush().await.map_err(Error::lost)?;
        let conn =
            Connection::new((description, local, remote, peer_certificates, cipher, headers), write, true, config);
        conn.set_handler(Some(handler));
        if !admit(&conn) {
            conn.stop_dispatching();
            conn.start(read);
            let closing = conn.clone();
            tokio::spawn(async move { closing.close().await });
            return Ok(conn);
        }
        conn.start(read);
        net_log(&conn.shared.config, format_args!("accepted incoming connection\n{}", conn.shared.description));
        Ok(conn)
    }

    /// A connection over any byte stream, already established (no ValidateConnection is sent
    /// or awaited), handing the requests it receives to `handler`: for tests and for
    /// transports that validate themselves.
    pub fn over_stream(
        stream: TransportStream,
        config: impl Into<Arc<ConnectionConfig>>,
        handler: Option<Arc<dyn RequestHandler>>,
    ) -> Connection {
        let config = config.into();
        let TransportStream { read, write, description, local, remote, peer_certificates, cipher, headers } = stream;
        let conn = Connection::new(
            (description, local, remote, peer_certificates, cipher, headers),
            write,
            handler.is_some(),
            config,
        );
        conn.set_handler(handler);
        conn.start(read);
        conn
    }

    fn start(&self, read: ReadHalf) {
        // Registered before the reader starts: a reader that closes the connection at once
        // then finds the slot to give back (nothing else can close it before this returns).
        if self.shared.config.acm.is_enabled() {
            let slot = self.shared.config.acm_sweeper.register(&self.shared);
            self.shared.acm_slot.store(slot, Ordering::Release);
        }
        let _ = self.shared.home.set(tokio::runtime::Handle::current());
        let reader = tokio::spawn(reader::run(self.clone(), read));
        *self.shared.reader.lock().expect("reader lock") = Some(reader.abort_handle());
    }

    /// True once the connection is closed (or closing).
    pub fn is_closed(&self) -> bool {
        self.shared.state.is_closing()
    }

    /// The local address of the connection (Ice's `IPConnectionInfo.localAddress/localPort`).
    pub fn local_address(&self) -> Option<std::net::SocketAddr> {
        self.shared.local
    }

    /// The peer's address (Ice's `IPConnectionInfo.remoteAddress/remotePort`).
    pub fn remote_address(&self) -> Option<std::net::SocketAddr> {
        self.shared.remote
    }

    /// The certificate chain the peer presented over ssl or wss (DER, the peer's own
    /// certificate first, as Ice's `IceSSL::ConnectionInfo.certs`): verified against
    /// `IceSSL.CAs` unless `IceSSL.VerifyPeer` is 0. Empty for other transports and for a
    /// client that sent no certificate.
    pub fn peer_certificates(&self) -> &[Vec<u8>] {
        &self.shared.peer_certificates
    }

    /// The TLS cipher suite negotiated on an ssl or wss connection, as rustls names it (for
    /// example `TLS13_AES_256_GCM_SHA384`; Ice's `IceSSL::ConnectionInfo.cipher` gives
    /// OpenSSL's name for the same suite). `None` for other transports, so it also tells
    /// whether the connection is encrypted.
    pub fn cipher(&self) -> Option<&str> {
        self.shared.cipher.as_deref()
    }

    /// The header fields of the WebSocket upgrade of a ws or wss connection (names as sent):
    /// the client's request on an incoming connection, the server's response on an outgoing
    /// one, as Ice's `WSConnectionInfo.headers`. Empty for other transports.
    pub fn ws_headers(&self) -> &[(String, String)] {
        &self.shared.ws_headers
    }

    /// True for a connection accepted by an object adapter.
    pub fn is_incoming(&self) -> bool {
        self.shared.is_incoming
    }

    /// Local and remote addresses.
    pub fn description(&self) -> &str {
        &self.shared.description
    }

    /// Number of heartbeats (ValidateConnection messages) received after establishment.
    pub fn heartbeats_received(&self) -> u64 {
        self.shared.activity.heartbeats_received()
    }

    /// Turns off the inactivity check of this connection (Ice 3.8's
    /// `Connection::disableInactivityCheck`): it is no longer closed for lack of calls. The
    /// idle check and heartbeats go on.
    pub fn disable_inactivity_check(&self) {
        self.shared.activity.disable_inactivity_check();
    }

    /// The reason the connection closed, or the error every use of it now fails with.
    fn close_error(&self) -> Error {
        self.shared.state.reason().unwrap_or_else(|| Error::ConnectionLost("connection closed".into()))
    }

    /// Closes the connection at once: outstanding requests fail with `reason`.
    pub fn close_forcefully(&self, reason: Error) {
        if !self.shared.state.close(reason.clone()) {
            return;
        }
        net_log(&self.shared.config, format_args!("closing connection: {reason}\n{}", self.shared.description));
        // Oneway callers waiting for room in the queue learn of the close (writes blocked on
        // a peer that does not read give up through the state).
        self.shared.oneways.wake_waiters();
        self.shared.pending.fail_all(&reason);
        if let Some(r) = self.shared.reader.lock().expect("reader lock").take() {
            r.abort();
        }
        let slot = self.shared.acm_slot.swap(usize::MAX, Ordering::AcqRel);
        if slot != usize::MAX {
            self.shared.config.acm_sweeper.unregister(slot);
        }
        let hook = self.shared.on_closed.lock().expect("close hook lock").take();
        if let Some(hook) = hook {
            hook();
        }
        let also = std::mem::take(&mut *self.shared.on_closed_also.lock().expect("close hook lock"));
        for hook in also {
            hook();
        }
        let shared = self.shared.clone();
        let shutdown = async move {
            if let Some(mut w) = shared.writer.lock().await.take() {
                let _ = w.shutdown().await;
            }
            shared.state.finish();
        };
        // A runtime that is shutting down refuses the task at once (it is finished before it
        // ran): then, as without a runtime, the write half is dropped (which shuts it down) if
        // no write holds it, and a write that does gives up as it sees the state.
        let refused = match tokio::runtime::Handle::try_current() {
            Ok(h) => h.spawn(shutdown).is_finished(),
            Err(_) => true,
        };
        if refused {
            if let Ok(mut w) = self.shared.writer.try_lock() {
                w.take();
            }
            self.shared.state.finish();
        }
    }

    /// Stops dispatching new requests ahead of a graceful close (which sends CloseConnection
    /// once the dispatches in progress finish); requests arriving meanwhile are ignored, as
    /// Ice ignores them on a closing connection, and the peer retries them.
    pub fn stop_dispatching(&self) {
        self.shared.state.drain();
    }

    /// Closes gracefully, as Ice does: waits for the dispatches in progress, sends
    /// CloseConnection, then waits (up to the close timeout) for the peer to close its side.
    pub async fn close(&self) {
        if !self.shared.state.start_closing() {
            self.wait_closed().await;
            return;
        }
        self.shared.incoming.wait_for_dispatches_below(1).await;
        // Sending CloseConnection waits behind writes in progress; all of it, and the peer's
        // close, must happen within the close timeout.
        let graceful = async {
            let _ = self.write_message(&crate::protocol::header::CLOSE_CONNECTION).await;
            self.wait_closed().await;
        };
        if tokio::time::timeout(self.shared.config.close_timeout, graceful).await.is_err() {
            self.close_forcefully(Error::ConnectionLost("peer did not close in time".into()));
        }
    }

    /// Calls `hook` once the connection closes (at once if it has), beside the adapter's hook
    /// and any others (the metrics' count of open connections uses it).
    pub(crate) fn on_closed_also(&self, hook: impl FnOnce() + Send + 'static) {
        let mut slot = self.shared.on_closed_also.lock().expect("close hook lock");
        if self.shared.state.is_closed() {
            drop(slot);
            hook();
            return;
        }
        slot.push(Box::new(hook));
    }

    /// Calls `hook` once the connection closes (at once if it has). One hook at a time: a new
    /// one replaces the one set before, which is why it is the adapter's alone (it takes the
    /// connection out of its count and live connections).
    pub(crate) fn on_closed(&self, hook: impl FnOnce() + Send + 'static) {
        let mut slot = self.shared.on_closed.lock().expect("close hook lock");
        if self.shared.state.is_closed() {
            drop(slot);
            hook();
            return;
        }
        *slot = Some(Box::new(hook));
    }

    /// Waits until the connection is closed and its writing side shut down.
    pub async fn wait_closed(&self) {
        self.shared.state.reached(Phase::Finished).await;
    }
}

/// Logs a connection event: at info level under `Ice.Trace.Network`, at debug level otherwise.
fn net_log(config: &ConnectionConfig, what: std::fmt::Arguments<'_>) {
    if config.trace_network {
        tracing::info!(target: "floe::network", "{what}");
    } else {
        debug!(target: "floe::network", "{what}");
    }
}

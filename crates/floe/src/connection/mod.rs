//! One Ice connection: framing, the request-id table, dispatch of incoming requests, graceful
//! and forced close, and ACM heartbeats and idle checks.
//!
//! Each connection has one reader task. Callers write their own requests (under a lock on
//! the write half) — there is no hand-off to a writer task on the twoway path; small oneway
//! requests are queued and written together by a short-lived flush task. The reader task
//! delivers replies to the waiting callers and runs servants itself; a dispatch that has to
//! wait continues as a task of its own so that the connection keeps reading.

mod acm;

pub use acm::{AcmClose, AcmConfig, AcmHeartbeat};

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};
use tracing::{debug, trace, warn};

use crate::adapter::{ObjectAdapter, ServantCache};
use crate::dispatch::{IncomingRequest, Origin, Response};
use crate::error::{Error, Result};
use crate::protocol::compress::compress_message;
use crate::protocol::header::{
    announced_size, is_request, message_type_byte, set_compression, CLOSE_CONNECTION, VALIDATE_CONNECTION,
};
use crate::protocol::request::set_request_id;
use crate::protocol::{
    BatchRequests, CompressionStatus, FrameReader, Message, MessageType, Reply, ReplyBody, Request, HEADER_SIZE,
};
use crate::transport::{ReadHalf, TransportStream, WriteHalf};

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// `Ice.MessageSizeMax` in bytes: larger incoming messages close the connection.
    pub max_message_size: usize,
    /// `Ice.Compression.Level` (bzip2 block size, 1–9).
    pub compression_level: u32,
    /// Heartbeat and idle settings.
    pub acm: AcmConfig,
    /// Upper bound on requests dispatched at once on this connection (0: no bound). When it is
    /// reached the connection stops reading until a dispatch completes.
    pub max_dispatches: usize,
    /// How long a graceful close waits for the peer to close its side.
    pub close_timeout: Duration,
    /// Log every message (`Ice.Trace.Protocol`).
    pub trace_protocol: bool,
    /// Log connection establishment and closing at info level (`Ice.Trace.Network`; they are
    /// always logged at debug level).
    pub trace_network: bool,
    /// How long a message may stay incomplete without more bytes arriving before the connection
    /// is closed (`Floe.Connection.PartialMessageTimeout`, seconds; protects against peers that
    /// send a header and stall).
    pub partial_message_timeout: Option<Duration>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            max_message_size: crate::protocol::DEFAULT_MESSAGE_SIZE_MAX,
            compression_level: 1,
            acm: AcmConfig::default(),
            max_dispatches: 1000,
            close_timeout: Duration::from_secs(10),
            trace_protocol: false,
            trace_network: false,
            partial_message_timeout: Some(Duration::from_secs(30)),
        }
    }
}

type ReplySender = oneshot::Sender<Result<Reply>>;

#[derive(Default)]
struct PendingTable {
    next_id: i32,
    map: HashMap<i32, ReplySender>,
}

impl PendingTable {
    fn allocate(&mut self) -> i32 {
        loop {
            self.next_id = if self.next_id == i32::MAX || self.next_id < 1 { 1 } else { self.next_id + 1 };
            if !self.map.contains_key(&self.next_id) {
                return self.next_id;
            }
        }
    }
}

/// Oneway requests queued for writing: a oneway returns once its request is queued, and one
/// flush task writes everything queued meanwhile with one system call (a twoway request,
/// reply or control message written directly takes the queue along first, so the order of
/// messages is kept).
#[derive(Default)]
struct QueuedWrites {
    bytes: BytesMut,
    flush_scheduled: bool,
}

/// What became of a oneway request offered to the queue.
enum Queueing {
    Queued,
    /// The queue is full: wait for the flush task to make room.
    Full,
    /// Large, or no runtime to flush it: write it directly.
    NotQueueable,
}

/// At most this many bytes of oneway requests wait in the queue; beyond it a oneway waits
/// until the flush task has written some (backpressure on a peer that does not read).
const QUEUE_LIMIT: usize = 256 * 1024;

/// A oneway sent within this many microseconds of the previous one is part of a burst and is
/// queued; a lone oneway is written before its call returns, as Ice writes it.
const BURST_WINDOW_US: u64 = 100;

/// Oneway requests larger than this are written directly rather than copied into the queue.
const QUEUE_MESSAGE_MAX: usize = 16 * 1024;

struct Shared {
    config: ConnectionConfig,
    writer: tokio::sync::Mutex<Option<WriteHalf>>,
    /// Oneway requests waiting to be written, in order, ahead of anything written next.
    queued: Mutex<QueuedWrites>,
    /// True while `queued` holds bytes (changed under its lock): writers that find it false
    /// skip the lock.
    has_queued: AtomicBool,
    /// Signalled when the flush task has written queued requests (or the connection closed).
    queue_space: Notify,
    pending: Mutex<PendingTable>,
    closed: AtomicBool,
    closing: AtomicBool,
    /// A graceful close is coming: requests that arrive now are not dispatched (the peer
    /// retries them elsewhere after the CloseConnection).
    draining: AtomicBool,
    close_reason: Mutex<Option<Error>>,
    closed_notify: Notify,
    /// Signalled by a forceful close: writes in progress give up at once.
    force_closed: Notify,
    adapter: RwLock<Option<ObjectAdapter>>,
    incoming: bool,
    description: String,
    local: Option<std::net::SocketAddr>,
    remote: Option<std::net::SocketAddr>,
    dispatch_count: AtomicUsize,
    dispatch_done: Notify,
    /// Tasks waiting on `dispatch_done`.
    dispatch_waiters: AtomicUsize,
    epoch: Instant,
    last_read_ms: AtomicU64,
    last_write_ms: AtomicU64,
    /// When the last oneway request was sent (µs since `epoch`): a oneway soon after another
    /// belongs to a burst and is queued; a lone one is written at once.
    last_oneway_us: AtomicU64,
    heartbeats_received: AtomicU64,
    reader: Mutex<Option<tokio::task::AbortHandle>>,
}

/// A connection to an Ice peer. Cheap to clone; all clones are the same connection.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("incoming", &self.shared.incoming)
            .field("description", &self.shared.description)
            .finish()
    }
}

impl PartialEq for Connection {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

/// Whether a request should be compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compress {
    /// Send as it is (compression byte 0).
    No,
    /// Compress if at least 100 bytes, otherwise mark that a compressed reply is welcome.
    Yes,
}

impl Connection {
    fn new(
        stream: (String, Option<std::net::SocketAddr>, Option<std::net::SocketAddr>),
        write: WriteHalf,
        incoming: bool,
        config: ConnectionConfig,
    ) -> Self {
        let (stream_description, local, remote) = stream;
        Connection {
            shared: Arc::new(Shared {
                config,
                writer: tokio::sync::Mutex::new(Some(write)),
                queued: Mutex::new(QueuedWrites::default()),
                has_queued: AtomicBool::new(false),
                queue_space: Notify::new(),
                pending: Mutex::new(PendingTable::default()),
                closed: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                draining: AtomicBool::new(false),
                close_reason: Mutex::new(None),
                closed_notify: Notify::new(),
                force_closed: Notify::new(),
                adapter: RwLock::new(None),
                incoming,
                description: stream_description,
                local,
                remote,
                dispatch_count: AtomicUsize::new(0),
                dispatch_done: Notify::new(),
                dispatch_waiters: AtomicUsize::new(0),
                epoch: Instant::now(),
                last_read_ms: AtomicU64::new(0),
                last_write_ms: AtomicU64::new(0),
                last_oneway_us: AtomicU64::new(0),
                heartbeats_received: AtomicU64::new(0),
                reader: Mutex::new(None),
            }),
        }
    }

    /// Completes the client side of connection establishment: waits for the server's
    /// ValidateConnection message, then starts reading.
    pub async fn establish_outgoing(
        stream: TransportStream,
        config: ConnectionConfig,
        validate_timeout: Option<Duration>,
    ) -> Result<Connection> {
        let TransportStream { mut read, write, description, local, remote } = stream;
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
        let conn = Connection::new((description, local, remote), write, false, config);
        conn.touch_read();
        conn.touch_write();
        conn.start(read);
        net_log(&conn.shared.config, format_args!("established outgoing connection\n{}", conn.shared.description));
        Ok(conn)
    }

    /// Completes the server side of connection establishment: sends ValidateConnection and
    /// starts reading, dispatching requests to `adapter`.
    pub async fn establish_incoming(
        stream: TransportStream,
        config: ConnectionConfig,
        adapter: ObjectAdapter,
    ) -> Result<Connection> {
        let TransportStream { read, mut write, description, local, remote } = stream;
        write.write_all(&VALIDATE_CONNECTION).await.map_err(Error::lost)?;
        let conn = Connection::new((description, local, remote), write, true, config);
        *conn.shared.adapter.write().expect("adapter lock") = Some(adapter.clone());
        conn.touch_read();
        conn.touch_write();
        // The adapter knows the connection before it reads its first request, so that a
        // deactivation in between closes it instead of missing it. Established after the
        // adapter stopped, it takes no request and closes.
        if !adapter.track(&conn) {
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

    fn start(&self, read: ReadHalf) {
        let reader = tokio::spawn(run_reader(self.clone(), read));
        *self.shared.reader.lock().expect("reader lock") = Some(reader.abort_handle());
        if self.shared.config.acm.is_enabled() {
            tokio::spawn(acm::monitor(Arc::downgrade(&self.shared)));
        }
    }

    fn touch_read(&self) {
        let ms = self.shared.epoch.elapsed().as_millis() as u64;
        self.shared.last_read_ms.store(ms, Ordering::Relaxed);
    }

    fn touch_write(&self) {
        let ms = self.shared.epoch.elapsed().as_millis() as u64;
        self.shared.last_write_ms.store(ms, Ordering::Relaxed);
    }

    /// True once the connection is closed (or closing).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire) || self.shared.closing.load(Ordering::Acquire)
    }

    /// The local address of the connection (Ice's `IPConnectionInfo.localAddress/localPort`).
    pub fn local_address(&self) -> Option<std::net::SocketAddr> {
        self.shared.local
    }

    /// The peer's address (Ice's `IPConnectionInfo.remoteAddress/remotePort`).
    pub fn remote_address(&self) -> Option<std::net::SocketAddr> {
        self.shared.remote
    }

    /// True for a connection accepted by an object adapter.
    pub fn is_incoming(&self) -> bool {
        self.shared.incoming
    }

    /// Local and remote addresses.
    pub fn description(&self) -> &str {
        &self.shared.description
    }

    /// Number of heartbeats (ValidateConnection messages) received after establishment.
    pub fn heartbeats_received(&self) -> u64 {
        self.shared.heartbeats_received.load(Ordering::Relaxed)
    }

    /// Number of requests being dispatched.
    pub fn dispatch_count(&self) -> usize {
        self.shared.dispatch_count.load(Ordering::Acquire)
    }

    /// Number of twoway requests waiting for their reply.
    pub fn pending_count(&self) -> usize {
        self.shared.pending.lock().expect("pending lock").map.len()
    }

    /// Lets the peer call back over this connection: requests that arrive on it are
    /// dispatched to `adapter` (bidirectional connections).
    pub fn set_adapter(&self, adapter: Option<ObjectAdapter>) {
        *self.shared.adapter.write().expect("adapter lock") = adapter;
    }

    /// The adapter that dispatches requests arriving on this connection.
    pub fn adapter(&self) -> Option<ObjectAdapter> {
        self.shared.adapter.read().expect("adapter lock").clone()
    }

    fn close_error(&self) -> Error {
        self.shared
            .close_reason
            .lock()
            .expect("close lock")
            .clone()
            .unwrap_or_else(|| Error::ConnectionLost("connection closed".into()))
    }

    /// Writes one complete message.
    pub(crate) async fn write_message(&self, msg: &[u8]) -> Result<()> {
        self.write_message_parts(msg, &[]).await
    }

    /// Writes one complete message given as two parts: `msg` then `tail` (a large parameter
    /// sent from its own buffer instead of being copied after the rest).
    async fn write_message_parts(&self, msg: &[u8], tail: &[u8]) -> Result<()> {
        let mut guard = self.shared.writer.lock().await;
        let Some(w) = guard.as_mut() else {
            return Err(self.close_error());
        };
        // After a forceful close nothing more is sent, even before the writer is shut down.
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(self.close_error());
        }
        if self.shared.config.trace_protocol {
            trace_sent(msg, tail.len());
        }
        // Oneway requests queued before this message go first, in the same write when small.
        let queued = if self.shared.has_queued.load(Ordering::Acquire) { self.take_queued(false) } else { None };
        // A caller that gives up part-way through a write (a timeout, a dropped future) would
        // leave half a message on the wire: the connection is then closed instead.
        let abandoned = AbandonedWrite { conn: self, armed: true };
        let write = async {
            match queued {
                None => write_all_two(w, msg, tail).await,
                Some(mut q) if msg.len() <= QUEUE_MESSAGE_MAX => {
                    q.extend_from_slice(msg);
                    write_all_two(w, &q, tail).await
                }
                Some(q) => {
                    w.write_all(&q).await?;
                    write_all_two(w, msg, tail).await
                }
            }
        };
        // Biased: a write that completes at once never registers for the close signal.
        let result = tokio::select! {
            biased;
            r = write => r,
            _ = self.until_force_closed() => {
                return Err(self.close_error());
            }
        };
        let mut abandoned = abandoned;
        abandoned.armed = false;
        if let Err(e) = result {
            drop(guard);
            let err = Error::lost(e);
            self.close_forcefully(err.clone());
            return Err(err);
        }
        drop(guard);
        self.touch_write();
        Ok(())
    }

    /// Completes once the connection has been closed forcefully.
    async fn until_force_closed(&self) {
        loop {
            // Created before the check, so that a close in between is not missed.
            let signal = self.shared.force_closed.notified();
            if self.shared.closed.load(Ordering::Acquire) {
                return;
            }
            signal.await;
        }
    }

    /// Takes the queued oneway requests, if any. With `ends_flush`, an empty queue also ends
    /// the flush task's turn (the next queued request schedules a new one).
    fn take_queued(&self, ends_flush: bool) -> Option<BytesMut> {
        let mut q = self.shared.queued.lock().expect("queue lock");
        if q.bytes.is_empty() {
            if ends_flush {
                q.flush_scheduled = false;
            }
            return None;
        }
        self.shared.has_queued.store(false, Ordering::Release);
        Some(q.bytes.split())
    }

    /// Drops the queued oneway requests (the connection is closed) and ends the flush task's
    /// turn; callers waiting for room learn of it.
    fn drop_queued(&self) {
        let mut q = self.shared.queued.lock().expect("queue lock");
        q.bytes.clear();
        q.flush_scheduled = false;
        self.shared.has_queued.store(false, Ordering::Release);
        drop(q);
        self.shared.queue_space.notify_waiters();
    }

    /// Queues a small oneway request for the flush task. Outside a burst (`in_burst` false)
    /// and with nothing queued, the request is not queued: the caller writes it at once.
    fn queue_message(&self, msg: &[u8], in_burst: bool) -> Queueing {
        if msg.len() > QUEUE_MESSAGE_MAX {
            return Queueing::NotQueueable;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Queueing::NotQueueable;
        };
        let mut q = self.shared.queued.lock().expect("queue lock");
        if !in_burst && q.bytes.is_empty() && !q.flush_scheduled {
            return Queueing::NotQueueable;
        }
        if q.bytes.len() + msg.len() > QUEUE_LIMIT {
            return Queueing::Full;
        }
        if self.shared.config.trace_protocol {
            trace!(target: "floe::protocol", "queueing {} ({} bytes)", type_name(crate::protocol::header::message_type_byte(msg)), msg.len());
        }
        q.bytes.extend_from_slice(msg);
        self.shared.has_queued.store(true, Ordering::Release);
        if !q.flush_scheduled {
            q.flush_scheduled = true;
            drop(q);
            runtime.spawn(flush_queued(self.clone()));
        }
        Queueing::Queued
    }

    async fn write_request(&self, msg: &mut BytesMut, tail: Option<&[u8]>, compress: Compress) -> Result<()> {
        if let Some(tail) = tail {
            if compress == Compress::No {
                return self.write_message_parts(msg, tail).await;
            }
            // Compression needs the whole message in one buffer (`msg` stays as it is, for
            // a retry).
            let mut whole = BytesMut::with_capacity(msg.len() + tail.len());
            whole.extend_from_slice(msg);
            whole.extend_from_slice(tail);
            return Box::pin(self.write_request(&mut whole, None, compress)).await;
        }
        if compress == Compress::Yes {
            if let Some(c) = compress_message(msg, self.shared.config.compression_level) {
                return self.write_message(&c).await;
            }
            set_compression(msg, CompressionStatus::CompressedReplyAccepted);
        }
        self.write_message(msg).await
    }

    fn register(&self) -> Result<(i32, oneshot::Receiver<Result<Reply>>)> {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.shared.pending.lock().expect("pending lock");
        if self.is_closed() {
            return Err(self.close_error());
        }
        let id = pending.allocate();
        pending.map.insert(id, tx);
        Ok((id, rx))
    }

    /// Sends a twoway request (a complete message whose request id is patched here) and
    /// waits for its reply. Dropping the future forgets the request.
    pub(crate) async fn invoke(&self, mut msg: BytesMut, compress: Compress) -> Result<Reply> {
        self.invoke_ref(&mut msg, compress).await
    }

    /// Like [`Connection::invoke`], leaving the message with the caller (for retries).
    pub(crate) async fn invoke_ref(&self, msg: &mut BytesMut, compress: Compress) -> Result<Reply> {
        self.invoke_parts(msg, None, compress).await
    }

    /// Like [`Connection::invoke_ref`] for a message whose last `tail.len()` bytes are sent
    /// from `tail` (the message's sizes already count them).
    pub(crate) async fn invoke_parts(
        &self,
        msg: &mut BytesMut,
        tail: Option<&[u8]>,
        compress: Compress,
    ) -> Result<Reply> {
        let (id, rx) = self.register()?;
        let guard = PendingGuard { shared: &self.shared, id };
        set_request_id(msg, id);
        self.write_request(msg, tail, compress).await?;
        let result = rx.await;
        drop(guard);
        match result {
            Ok(r) => r,
            Err(_) => Err(self.close_error()),
        }
    }

    /// Sends several twoway requests with one write and waits for all their replies, which
    /// come back in request order.
    pub(crate) async fn invoke_many(&self, msgs: Vec<BytesMut>, compress: Compress) -> Result<Vec<Result<Reply>>> {
        let mut receivers = Vec::with_capacity(msgs.len());
        let mut guards = Vec::with_capacity(msgs.len());
        let total: usize = msgs.iter().map(|m| m.len()).sum();
        let mut out = BytesMut::with_capacity(total);
        for mut m in msgs {
            let (id, rx) = self.register()?;
            guards.push(PendingGuard { shared: &self.shared, id });
            receivers.push(rx);
            set_request_id(&mut m, id);
            if compress == Compress::Yes {
                match compress_message(&m, self.shared.config.compression_level) {
                    Some(c) => out.extend_from_slice(&c),
                    None => {
                        set_compression(&mut m, CompressionStatus::CompressedReplyAccepted);
                        out.extend_from_slice(&m);
                    }
                }
            } else {
                out.extend_from_slice(&m);
            }
        }
        self.write_message(&out).await?;
        let mut replies = Vec::with_capacity(receivers.len());
        for rx in receivers {
            replies.push(match rx.await {
                Ok(r) => r,
                Err(_) => Err(self.close_error()),
            });
        }
        drop(guards);
        Ok(replies)
    }

    /// Sends a oneway request or a batch (request id 0).
    pub(crate) async fn send_oneway(&self, mut msg: BytesMut, compress: Compress) -> Result<()> {
        self.send_oneway_ref(&mut msg, compress).await
    }

    /// Like [`Connection::send_oneway`], leaving the message with the caller.
    ///
    /// A small oneway request (not a batch) returns once it is queued: the connection writes
    /// queued requests together, with one system call, as soon as the runtime gets to it, and
    /// ahead of any message written after them. Like an Ice oneway, a queued request whose
    /// connection fails before it is written is lost without an error to the caller.
    pub(crate) async fn send_oneway_ref(&self, msg: &mut BytesMut, compress: Compress) -> Result<()> {
        self.send_oneway_parts(msg, None, compress).await
    }

    /// Like [`Connection::send_oneway_ref`] for a message whose last `tail.len()` bytes are
    /// sent from `tail` (such a message is large, and written directly).
    pub(crate) async fn send_oneway_parts(
        &self,
        msg: &mut BytesMut,
        tail: Option<&[u8]>,
        compress: Compress,
    ) -> Result<()> {
        if self.is_closed() {
            return Err(self.close_error());
        }
        if tail.is_none() && compress == Compress::No && is_request(msg) {
            let now = self.shared.epoch.elapsed().as_micros() as u64;
            let previous = self.shared.last_oneway_us.swap(now, Ordering::Relaxed);
            let mut in_burst = previous != 0 && now.saturating_sub(previous) < BURST_WINDOW_US;
            loop {
                // Registered before trying, so that space made meanwhile is not missed.
                let space = self.shared.queue_space.notified();
                tokio::pin!(space);
                space.as_mut().enable();
                match self.queue_message(msg, in_burst) {
                    Queueing::Queued => return Ok(()),
                    Queueing::NotQueueable => break,
                    // Waiting writes nothing, so a caller that gives up loses only its request.
                    Queueing::Full => {
                        space.await;
                        // A caller that waited for room belongs to the burst that filled the
                        // queue, however long ago its call began. It is queued even when the
                        // flush task has emptied the queue and ended meanwhile: written
                        // directly, it could block on the congested socket, and giving up
                        // there (a timeout, a dropped call) would close the connection.
                        in_burst = true;
                    }
                }
                if self.is_closed() {
                    return Err(self.close_error());
                }
            }
        }
        self.write_request(msg, tail, compress).await
    }

    /// Sends a heartbeat (a ValidateConnection message).
    pub async fn heartbeat(&self) -> Result<()> {
        self.write_message(&VALIDATE_CONNECTION).await
    }

    /// Closes the connection at once: outstanding requests fail with `reason`.
    pub fn close_forcefully(&self, reason: Error) {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        net_log(&self.shared.config, format_args!("closing connection: {reason}\n{}", self.shared.description));
        *self.shared.close_reason.lock().expect("close lock") = Some(reason.clone());
        // Oneway callers waiting for room in the queue learn of the close, and writes blocked
        // on a peer that does not read give up.
        self.shared.queue_space.notify_waiters();
        self.shared.force_closed.notify_waiters();
        let pending: Vec<ReplySender> = {
            let mut p = self.shared.pending.lock().expect("pending lock");
            p.map.drain().map(|(_, tx)| tx).collect()
        };
        for tx in pending {
            let _ = tx.send(Err(reason.clone()));
        }
        if let Some(r) = self.shared.reader.lock().expect("reader lock").take() {
            r.abort();
        }
        let shared = self.shared.clone();
        let shutdown = async move {
            if let Some(mut w) = shared.writer.lock().await.take() {
                let _ = w.shutdown().await;
            }
            shared.closed_notify.notify_waiters();
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(shutdown);
            }
            Err(_) => self.shared.closed_notify.notify_waiters(),
        }
    }

    /// Stops dispatching new requests ahead of a graceful close (which sends CloseConnection
    /// once the dispatches in progress finish); requests arriving meanwhile are ignored, as
    /// Ice ignores them on a closing connection, and the peer retries them.
    pub fn stop_dispatching(&self) {
        self.shared.draining.store(true, Ordering::Release);
    }

    /// Closes gracefully, as Ice does: waits for the dispatches in progress, sends
    /// CloseConnection, then waits (up to the close timeout) for the peer to close its side.
    pub async fn close(&self) {
        if self.shared.closing.swap(true, Ordering::AcqRel) || self.shared.closed.load(Ordering::Acquire) {
            self.wait_closed().await;
            return;
        }
        wait_for_dispatches_below(&self.shared, 1).await;
        // Sending CloseConnection waits behind writes in progress; all of it, and the peer's
        // close, must happen within the close timeout.
        let graceful = async {
            let _ = self.write_message(&CLOSE_CONNECTION).await;
            self.wait_closed().await;
        };
        if tokio::time::timeout(self.shared.config.close_timeout, graceful).await.is_err() {
            self.close_forcefully(Error::ConnectionLost("peer did not close in time".into()));
        }
    }

    /// Waits until the connection is closed.
    pub async fn wait_closed(&self) {
        loop {
            let notified = self.shared.closed_notify.notified();
            if self.shared.closed.load(Ordering::Acquire)
                && self.shared.writer.try_lock().map(|w| w.is_none()).unwrap_or(false)
            {
                return;
            }
            if self.shared.closed.load(Ordering::Acquire) {
                // Shutdown is in progress in another task; it notifies when done.
                let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
                continue;
            }
            notified.await;
        }
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

/// Removes a pending request when its invocation is dropped (timeout, cancellation, write
/// failure).
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.pending.lock().expect("pending lock").map.remove(&self.id);
    }
}

const INITIAL_READ_BUFFER: usize = 1024;
const SHRINK_ABOVE: usize = 64 * 1024;
/// A connection that stays idle this long gives back a read buffer grown above `SHRINK_ABOVE`.
const SHRINK_WHEN_IDLE_FOR: Duration = Duration::from_secs(1);

async fn run_reader(conn: Connection, mut read: ReadHalf) {
    let frames = FrameReader::new(conn.shared.config.max_message_size);
    let mut buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
    let mut last_size = 0;
    let mut origins = Origins::new(&conn);
    let mut replies = DeferredReplies::new(&conn);
    let mut timers = ReadTimers::default();
    loop {
        // Take every complete message out of the buffer.
        loop {
            match frames.next_message(&mut buf) {
                Ok(Some(msg)) => {
                    last_size = msg.header.size;
                    // A request reads the adapter once: for the origin it is dispatched with,
                    // which also says whether the adapter is held.
                    if matches!(msg.header.message_type, MessageType::Request | MessageType::BatchRequest)
                        && !dispatch_slot_free(&conn, origins.refresh(&conn))
                    {
                        // Replies waiting for the end of the buffer go out before any wait.
                        replies.flush().await;
                        wait_for_dispatch_slot(&conn).await;
                        // The adapter may have changed meanwhile.
                        origins.refresh(&conn);
                    }
                    replies.backlog = buf.len();
                    if let Err(e) = handle_message(&conn, msg, &origins, &mut replies).await {
                        warn!(target: "floe::network", "closing connection: {e}\n{}", conn.shared.description);
                        conn.close_forcefully(e);
                        return;
                    }
                    // Nothing after a CloseConnection (or a fatal error) is dispatched.
                    if conn.shared.closed.load(Ordering::Acquire) {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    warn!(target: "floe::network", "closing connection: {e}\n{}", conn.shared.description);
                    conn.close_forcefully(Error::Protocol(e));
                    return;
                }
            }
        }
        // The replies of the requests dispatched from this buffer, in one write.
        replies.flush().await;
        if conn.shared.closed.load(Ordering::Acquire) {
            return;
        }
        // A buffer that grew for large messages is kept while large messages keep coming
        // (reallocating it would cost fresh pages each time) and shrunk after a small one.
        if buf.is_empty() && buf.capacity() > SHRINK_ABOVE && last_size < buf.capacity() / 4 {
            buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
        }
        if buf.capacity() - buf.len() < 512 {
            let needed = frames.bytes_needed(&buf).unwrap_or(0);
            buf.reserve(needed.max(8 * 1024));
        }
        // Bound the dispatches in progress: stop reading until one completes.
        if !dispatch_slot_free(&conn, origins.refresh(&conn)) {
            wait_for_dispatch_slot(&conn).await;
        }
        // A read in progress stops when the adapter is held: nothing more is read until it is
        // activated again.
        let adapter = conn.shared.adapter.read().expect("adapter lock").clone();
        let step = read_step(&mut read, &mut buf, conn.shared.config.partial_message_timeout, &mut timers);
        let step = match adapter {
            Some(adapter) => tokio::select! {
                biased;
                s = step => s,
                _ = adapter.wait_until_held() => continue,
            },
            None => step.await,
        };
        let result = match step {
            ReadStep::Read(r) => r,
            ReadStep::IdleShrunk => continue,
            ReadStep::PartialTimeout(limit) => {
                warn!(target: "floe::network", "closing connection: message incomplete for {limit:?}\n{}", conn.shared.description);
                conn.close_forcefully(Error::ConnectionLost(format!("message incomplete for {limit:?}")));
                return;
            }
        };
        match result {
            Ok(0) => {
                let reason = if conn.shared.closing.load(Ordering::Acquire) {
                    Error::CloseConnection
                } else {
                    Error::ConnectionLost("connection closed by peer".into())
                };
                conn.close_forcefully(reason);
                return;
            }
            Ok(_) => conn.touch_read(),
            Err(e) => {
                conn.close_forcefully(Error::lost(e));
                return;
            }
        }
    }
}

/// What one attempt to read more of the peer's bytes came to.
#[derive(Debug)]
enum ReadStep {
    /// The read finished: bytes appended, end of stream (0) or an error.
    Read(std::io::Result<usize>),
    /// The connection stayed idle with a large buffer, which was replaced by a small one.
    IdleShrunk,
    /// A message started but the rest did not arrive within this limit.
    PartialTimeout(Duration),
}

/// Reads more bytes into `buf`. While a message is incomplete, more of it must arrive within
/// `partial_limit`; while the connection is idle with a buffer grown above `SHRINK_ABOVE`, the
/// buffer is given back after `SHRINK_WHEN_IDLE_FOR`. Reading into an empty buffer is
/// cancel-safe, so giving up on such a read loses no byte.
async fn read_step(
    read: &mut ReadHalf,
    buf: &mut BytesMut,
    partial_limit: Option<Duration>,
    timers: &mut ReadTimers,
) -> ReadStep {
    match (buf.is_empty(), partial_limit) {
        (false, Some(limit)) => match timers.partial.within(limit, read.read_buf(buf)).await {
            Some(r) => ReadStep::Read(r),
            None => ReadStep::PartialTimeout(limit),
        },
        (true, _) if buf.capacity() > SHRINK_ABOVE => {
            match timers.idle.within(SHRINK_WHEN_IDLE_FOR, read.read_buf(buf)).await {
                Some(r) => ReadStep::Read(r),
                None => {
                    *buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
                    ReadStep::IdleShrunk
                }
            }
        }
        _ => ReadStep::Read(read.read_buf(buf).await),
    }
}

/// The reader's timers: one for the rest of an incomplete message, one for an idle
/// connection's large buffer (see [`read_step`]).
#[derive(Default)]
struct ReadTimers {
    partial: Deadline,
    idle: Deadline,
}

/// A timer kept across waits. Registering a timer with tokio's runtime costs a wake-up of its
/// driver (a system call) when the timer is due before the others; `tokio::time::timeout`
/// registers one for every read that waits, which is every read of a large message. A
/// `Deadline` instead keeps its timer: a wait whose deadline is later than the one armed
/// leaves the timer as it is, and only when the timer fires before the wait's own deadline is
/// it registered again, for that deadline. Deadlines only move forward from one read to the
/// next, so a steady stream of reads registers the timer about once per limit.
#[derive(Default)]
struct Deadline {
    /// The timer, made on first use, and the time it is set to fire.
    timer: Option<(Pin<Box<tokio::time::Sleep>>, tokio::time::Instant)>,
}

/// What a [`Deadline`] waits for a limit that cannot be added to the current time.
const FOREVER: Duration = Duration::from_secs(86_400 * 365 * 30);

impl Deadline {
    /// Runs `fut` to completion (`Some`), or gives up (`None`) once it has waited for `limit`
    /// since it first waited. `fut` is polled before the timer, so a completed read is never
    /// lost to the timer.
    async fn within<F: Future>(&mut self, limit: Duration, fut: F) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        let mut deadline = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(out));
            }
            // A limit too large to add (a huge `PartialMessageTimeout`) waits as good as forever.
            let deadline = *deadline.get_or_insert_with(|| {
                let now = tokio::time::Instant::now();
                now.checked_add(limit).unwrap_or_else(|| now + FOREVER)
            });
            let (timer, at) =
                self.timer.get_or_insert_with(|| (Box::pin(tokio::time::sleep_until(deadline)), deadline));
            if *at > deadline {
                timer.as_mut().reset(deadline);
                *at = deadline;
            }
            while timer.as_mut().poll(cx).is_ready() {
                if tokio::time::Instant::now() >= deadline {
                    return Poll::Ready(None);
                }
                // Fired for an earlier wait: on to this one's deadline.
                timer.as_mut().reset(deadline);
                *at = deadline;
            }
            Poll::Pending
        })
        .await
    }
}

/// Waits while the connection's adapter is held or it has as many dispatches in progress as
/// it may have (callers check [`dispatch_slot_free`] first: the usual case takes no wait).
async fn wait_for_dispatch_slot(conn: &Connection) {
    // A held adapter stops its connections from reading and dispatching.
    let held = {
        let adapter = conn.shared.adapter.read().expect("adapter lock");
        adapter.as_ref().filter(|a| a.is_held()).cloned()
    };
    if let Some(adapter) = held {
        adapter.wait_until_not_held().await;
    }
    let max = conn.shared.config.max_dispatches;
    if max > 0 {
        wait_for_dispatches_below(&conn.shared, max).await;
    }
}

/// True when [`wait_for_dispatch_slot`] would not wait: the connection's adapter (as
/// `origin` has it, just refreshed) is not held and fewer dispatches than the limit are in
/// progress.
fn dispatch_slot_free(conn: &Connection, origin: &Origin) -> bool {
    let held = origin.adapter.as_ref().is_some_and(|a| a.is_held());
    let max = conn.shared.config.max_dispatches;
    !held && (max == 0 || conn.shared.dispatch_count.load(Ordering::SeqCst) < max)
}

/// Waits until fewer than `limit` dispatches are in progress.
async fn wait_for_dispatches_below(shared: &Shared, limit: usize) {
    if shared.dispatch_count.load(Ordering::SeqCst) < limit {
        return;
    }
    // Counted as a waiter first, so that every dispatch finishing from now on notifies.
    shared.dispatch_waiters.fetch_add(1, Ordering::SeqCst);
    loop {
        let notified = shared.dispatch_done.notified();
        if shared.dispatch_count.load(Ordering::SeqCst) < limit {
            break;
        }
        notified.await;
    }
    shared.dispatch_waiters.fetch_sub(1, Ordering::SeqCst);
}

async fn handle_message(
    conn: &Connection,
    msg: Message,
    origins: &Origins,
    replies: &mut DeferredReplies,
) -> Result<()> {
    if conn.shared.config.trace_protocol {
        trace!(target: "floe::protocol", "received {:?} ({} bytes)", msg.header.message_type, msg.header.size);
    }
    match msg.header.message_type {
        MessageType::Reply => {
            let reply = Reply::decode(msg.body)?;
            let tx = conn.shared.pending.lock().expect("pending lock").map.remove(&reply.request_id);
            match tx {
                Some(tx) => {
                    let _ = tx.send(Ok(reply));
                }
                None => debug!(target: "floe::protocol", "reply for unknown or abandoned request {}", reply.request_id),
            }
        }
        MessageType::Request => {
            if conn.shared.closing.load(Ordering::Acquire) || conn.shared.draining.load(Ordering::Acquire) {
                // Ice ignores requests that arrive while closing; the client retries them.
                return Ok(());
            }
            let request = Request::decode(msg.body)?;
            dispatch(conn, origins.current(), request, msg.header.compression, replies).await;
        }
        MessageType::BatchRequest => {
            if conn.shared.closing.load(Ordering::Acquire) || conn.shared.draining.load(Ordering::Acquire) {
                return Ok(());
            }
            // One request at a time: a batch's requests are never all decoded at once. The
            // adapter is looked up once for the whole batch.
            let origin = origins.current();
            let mut servants = ServantCache::default();
            let mut requests = BatchRequests::new(msg.body)?;
            // The batch counts as one dispatch in progress while its requests run here (a
            // graceful close waits for it as a whole); a request that has to wait counts on
            // its own.
            let _batch = DispatchInProgress::start(conn);
            while let Some(request) = requests.next() {
                let request = request?;
                servants.repeats = requests.repeats_target();
                // Without an adapter, each request would get ObjectNotExist, which a oneway
                // request never sees.
                if let Some(adapter) = &origin.adapter {
                    dispatch_batched(conn, origin, adapter, &mut servants, request);
                }
                if conn.shared.closed.load(Ordering::Acquire) {
                    return Ok(());
                }
            }
        }
        MessageType::ValidateConnection => {
            conn.shared.heartbeats_received.fetch_add(1, Ordering::Relaxed);
        }
        MessageType::CloseConnection => {
            // The peer has finished its dispatches and will ignore anything we send; requests
            // still waiting were not dispatched and may be retried.
            conn.close_forcefully(Error::CloseConnection);
        }
    }
    Ok(())
}

/// The name of a message type byte, for traces.
fn type_name(byte: Option<u8>) -> String {
    match byte.map(MessageType::from_u8) {
        Some(Ok(t)) => format!("{t:?}"),
        Some(Err(_)) => format!("message of type {}", byte.unwrap_or_default()),
        None => "a truncated message".into(),
    }
}

/// Traces each message of `msgs` (one or more complete messages, the last of which may be
/// followed by `tail_len` bytes written from another buffer) as sent.
fn trace_sent(msgs: &[u8], tail_len: usize) {
    let mut rest = msgs;
    while rest.len() >= HEADER_SIZE {
        let size = announced_size(rest).unwrap_or(0);
        let whole = size.min(rest.len() + tail_len).max(HEADER_SIZE);
        trace!(target: "floe::protocol", "sending {} ({whole} bytes)", type_name(message_type_byte(rest)));
        rest = &rest[whole.min(rest.len())..];
    }
}

/// Dispatches a request and writes its reply, if it has one.
async fn dispatch(
    conn: &Connection,
    origin: &Arc<Origin>,
    request: Request,
    compression: CompressionStatus,
    replies: &mut DeferredReplies,
) {
    // A dispatch that completed at once: the reader task writes its reply itself (waiting for
    // the write is the backpressure on a peer that does not read its replies), then ends it.
    // A small reply waits for the other requests already in the read buffer, so that their
    // replies go out in one write.
    if let Some((reply, tail)) = start_dispatch(conn, origin, request, compression) {
        if tail.is_none() && reply.len() <= DEFERRED_REPLY_MAX && replies.backlog >= DEFER_WITH_BACKLOG {
            replies.defer(reply);
            if replies.bytes() >= DEFERRED_REPLIES_FLUSH_AT {
                replies.flush().await;
            }
        } else {
            replies.flush().await;
            write_reply(conn, (reply, tail)).await;
            finish_dispatch(conn);
        }
    }
}

/// Replies up to this size wait in [`DeferredReplies`]; larger ones are written at once.
const DEFERRED_REPLY_MAX: usize = 16 * 1024;

/// A reply waits only while at least this many bytes of further requests are already read.
const DEFER_WITH_BACKLOG: usize = 512;

/// [`DeferredReplies`] are written once they hold this many bytes.
const DEFERRED_REPLIES_FLUSH_AT: usize = 64 * 1024;

/// Small replies of requests the reader dispatched while more requests were waiting in its
/// buffer (see [`DEFER_WITH_BACKLOG`]), written together once the buffer holds no complete
/// message, before the reader waits for a dispatch slot, or at
/// [`DEFERRED_REPLIES_FLUSH_AT`]. Each counts as a dispatch in progress until written, so
/// that a graceful close waits for it.
struct DeferredReplies {
    conn: Connection,
    bytes: BytesMut,
    count: usize,
    /// Bytes read but not yet dispatched after the current request.
    backlog: usize,
}

impl DeferredReplies {
    fn new(conn: &Connection) -> Self {
        DeferredReplies { conn: conn.clone(), bytes: BytesMut::new(), count: 0, backlog: 0 }
    }

    /// Takes a reply message (its buffer goes back to the pool).
    fn defer(&mut self, reply: BytesMut) {
        self.bytes.extend_from_slice(&reply);
        self.count += 1;
        crate::encoding::pool::give(reply);
    }

    fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Writes the replies waiting, if any, and ends their dispatches.
    async fn flush(&mut self) {
        if self.count == 0 {
            return;
        }
        let _ = self.conn.write_message_parts(&self.bytes, &[]).await;
        // A buffer that grew for a burst is not kept by an idle connection.
        if self.bytes.capacity() > DEFERRED_REPLY_MAX {
            self.bytes = BytesMut::new();
        } else {
            self.bytes.clear();
        }
        finish_dispatches(&self.conn, std::mem::take(&mut self.count));
    }
}

impl Drop for DeferredReplies {
    // Replies never written (the connection closed first) still end their dispatches.
    fn drop(&mut self) {
        finish_dispatches(&self.conn, self.count);
    }
}

/// The reader's [`Origin`] for the connection's adapter, made again when the adapter changes:
/// the requests that arrive meanwhile share it. The reader refreshes it once per request,
/// before dispatching (see `run_reader`).
struct Origins(Arc<Origin>);

impl Origins {
    fn new(conn: &Connection) -> Self {
        Origins(Arc::new(Origin { adapter: conn.adapter(), connection: Some(conn.clone()) }))
    }

    /// The origin as last refreshed.
    fn current(&self) -> &Arc<Origin> {
        &self.0
    }

    /// The origin for the connection's adapter now.
    fn refresh(&mut self, conn: &Connection) -> &Arc<Origin> {
        let adapter = conn.shared.adapter.read().expect("adapter lock");
        let unchanged = match (&self.0.adapter, &*adapter) {
            (Some(mine), Some(now)) => mine.same_as(now),
            (None, None) => true,
            _ => false,
        };
        if !unchanged {
            self.0 = Arc::new(Origin { adapter: adapter.clone(), connection: Some(conn.clone()) });
        }
        &self.0
    }
}

/// Writes a reply message and what follows it, and gives the message's buffer back.
async fn write_reply(conn: &Connection, (reply, tail): ReplyParts) {
    let _ = conn.write_message_parts(&reply, tail.as_deref().unwrap_or_default()).await;
    crate::encoding::pool::give(reply);
}

/// A dispatch in progress for as long as it lives (the batch loop's: one for all the requests
/// of a batch that complete at once).
struct DispatchInProgress<'a>(&'a Connection);

impl<'a> DispatchInProgress<'a> {
    fn start(conn: &'a Connection) -> Self {
        conn.shared.dispatch_count.fetch_add(1, Ordering::AcqRel);
        DispatchInProgress(conn)
    }
}

impl Drop for DispatchInProgress<'_> {
    fn drop(&mut self) {
        finish_dispatch(self.0);
    }
}

/// Runs one request of a batch (oneway, so without a reply) until it first waits, through
/// the servant cache of the batch. The caller holds a [`DispatchInProgress`] for the batch: a
/// request that completes at once is not counted on its own, and its empty response is
/// dropped here; one that waits continues as a task of its own, counted while it runs. As
/// for any oneway request, a panic of the servant is not reported to the client.
#[inline]
fn dispatch_batched(
    conn: &Connection,
    origin: &Arc<Origin>,
    adapter: &ObjectAdapter,
    servants: &mut ServantCache,
    request: Request,
) {
    debug_assert!(request.request_id == 0, "batched requests are oneway");
    let made =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| adapter.dispatch_cached(origin, request, servants)));
    // A dispatcher that panicked before returning its future has nothing left to run.
    let Ok(mut fut) = made else { return };
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // The (empty) response is dropped where the poll returns it: only whether the future
    // completed leaves the guarded call, in a register rather than as a 64-byte value to
    // copy out.
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(response) => {
            debug_assert!(response.is_none(), "a batched request got a reply");
            drop(response);
            true
        }
        std::task::Poll::Pending => false,
    }));
    match polled {
        Ok(true) => {
            // A completed future's memory serves the next dispatch.
            crate::dispatch::recycle(fut);
        }
        Ok(false) => {
            // Counted while the batch's count is held, so the count never drops to zero in
            // between.
            conn.shared.dispatch_count.fetch_add(1, Ordering::AcqRel);
            let conn = conn.clone();
            let fut = std::panic::AssertUnwindSafe(fut).catch_unwind();
            tokio::spawn(async move {
                let _ = fut.await;
                finish_dispatch(&conn);
            });
        }
        // A future that panicked is dropped without keeping its block.
        Err(_) => drop(fut),
    }
}

/// Runs a dispatch until it first waits. When it completes at once, returns the reply to
/// write (the dispatch then counts as in progress until the caller has written it and called
/// [`finish_dispatch`]); a oneway request that completed is finished here. A dispatch that
/// waits continues as a task of its own, which writes its reply. Synchronous, so that the
/// per-request path moves no large future.
#[inline]
fn start_dispatch(
    conn: &Connection,
    origin: &Arc<Origin>,
    request: Request,
    compression: CompressionStatus,
) -> Option<ReplyParts> {
    let request_id = request.request_id;
    let mut fut = match &origin.adapter {
        // A dispatcher that panics before returning its future is answered like one that
        // panics while running: the panic resurfaces inside the guarded future below.
        Some(a) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.dispatch(IncomingRequest::from_request(origin.clone(), request))
        })) {
            Ok(fut) => fut,
            Err(panic) => Box::pin(async move { std::panic::resume_unwind(panic) }),
        },
        None => {
            let r = IncomingRequest::from_request(origin.clone(), request).current.object_not_exist();
            Box::pin(async move { r })
        }
    };
    conn.shared.dispatch_count.fetch_add(1, Ordering::AcqRel);
    let compress = compression != CompressionStatus::NotCompressed;
    let result = match poll_once(&mut fut) {
        Some(result) => {
            // A completed future's memory serves the next dispatch; one that panicked is
            // dropped.
            if result.is_ok() {
                crate::dispatch::recycle(fut);
            } else {
                drop(fut);
            }
            result
        }
        None => {
            let conn = conn.clone();
            let fut = std::panic::AssertUnwindSafe(fut).catch_unwind();
            tokio::spawn(async move {
                let result = fut.await;
                if request_id != 0 {
                    let level = conn.shared.config.compression_level;
                    if let Some(reply) = response_bytes(result, request_id, compress, level) {
                        write_reply(&conn, reply).await;
                    }
                }
                finish_dispatch(&conn);
            });
            return None;
        }
    };
    // A oneway request has no reply to build.
    if request_id == 0 {
        finish_dispatch(conn);
        return None;
    }
    let reply = response_bytes(result, request_id, compress, conn.shared.config.compression_level);
    if reply.is_none() {
        finish_dispatch(conn);
    }
    reply
}

/// Polls a dispatch future once, with a waker that does nothing: its result, or the panic
/// it raised, when it completed; `None` when it waits (it is then polled again as a task).
#[inline]
fn poll_once(fut: &mut crate::dispatch::DispatchFuture) -> Option<std::thread::Result<Response>> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
        Ok(std::task::Poll::Ready(response)) => Some(Ok(response)),
        Ok(std::task::Poll::Pending) => None,
        Err(panic) => Some(Err(panic)),
    }
}

/// Writes `head` then `tail` completely, with vectored writes (one system call when the
/// socket takes both).
async fn write_all_two(w: &mut WriteHalf, mut head: &[u8], mut tail: &[u8]) -> std::io::Result<()> {
    if tail.is_empty() {
        return w.write_all(head).await;
    }
    while !head.is_empty() {
        let n = w.write_vectored(&[std::io::IoSlice::new(head), std::io::IoSlice::new(tail)]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        if n < head.len() {
            head = &head[n..];
        } else {
            tail = &tail[n - head.len()..];
            head = &[];
        }
    }
    w.write_all(tail).await
}

/// Closes its connection when dropped while armed: a write was abandoned part-way.
struct AbandonedWrite<'a> {
    conn: &'a Connection,
    armed: bool,
}

impl Drop for AbandonedWrite<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn.close_forcefully(Error::ConnectionLost("a message write was abandoned part-way".into()));
        }
    }
}

/// Writes the queued oneway requests, and whatever is queued while it writes, then ends.
async fn flush_queued(conn: Connection) {
    let mut guard = conn.shared.writer.lock().await;
    loop {
        // After a forceful close nothing more is sent: queued requests are dropped.
        let w = match guard.as_mut() {
            Some(w) if !conn.shared.closed.load(Ordering::Acquire) => w,
            _ => return conn.drop_queued(),
        };
        let Some(bytes) = conn.take_queued(true) else { return };
        let result = tokio::select! {
            biased;
            r = w.write_all(&bytes) => r,
            // A forceful close interrupts a write blocked on a peer that does not read.
            _ = conn.until_force_closed() => Err(std::io::Error::other("connection closed")),
        };
        if let Err(e) = result {
            drop(guard);
            conn.close_forcefully(Error::lost(e));
            return conn.drop_queued();
        }
        conn.touch_write();
        conn.shared.queue_space.notify_waiters();
    }
}

fn finish_dispatch(conn: &Connection) {
    finish_dispatches(conn, 1);
}

/// Ends `n` dispatches at once.
fn finish_dispatches(conn: &Connection, n: usize) {
    if n == 0 {
        return;
    }
    conn.shared.dispatch_count.fetch_sub(n, Ordering::SeqCst);
    // Notifying costs a lock; only a waiter (a close, or a reader at its dispatch limit)
    // needs it.
    if conn.shared.dispatch_waiters.load(Ordering::SeqCst) > 0 {
        conn.shared.dispatch_done.notify_waiters();
    }
}

/// A reply message to write, and the trailing bytes written right after it.
type ReplyParts = (BytesMut, Option<Bytes>);

/// The reply to a twoway request's dispatch (oneway dispatches build none; their callers do
/// not get here): the servant's response, or UnknownException for a panic. `None` when the
/// servant sent no reply (it closed the connection, say).
fn response_bytes(
    result: std::thread::Result<Response>,
    request_id: i32,
    compress: bool,
    level: u32,
) -> Option<ReplyParts> {
    let reply = match result {
        Ok(response) => {
            let (mut message, tail) = response.into_parts()?;
            match tail {
                Some(tail) if !compress => return Some((message, Some(tail))),
                // Compression needs the whole message in one buffer.
                Some(tail) => {
                    message.extend_from_slice(&tail);
                    message
                }
                None => message,
            }
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Reply { request_id, body: ReplyBody::UnknownException(format!("servant panicked: {what}")) }.encode()
        }
    };
    if compress {
        if let Some(c) = compress_message(&reply, level) {
            return Some((c, None));
        }
        let mut reply = reply;
        set_compression(&mut reply, CompressionStatus::CompressedReplyAccepted);
        return Some((reply, None));
    }
    Some((reply, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_idle_connection_gives_back_its_large_read_buffer() {
        let (mut peer, ours) = tokio::io::duplex(64 * 1024);
        let mut read: ReadHalf = Box::new(ours);
        let mut buf = BytesMut::with_capacity(4 * SHRINK_ABOVE);
        assert!(matches!(read_step(&mut read, &mut buf, None, &mut ReadTimers::default()).await, ReadStep::IdleShrunk));
        assert!(buf.capacity() < SHRINK_ABOVE, "capacity {}", buf.capacity());
        // Bytes sent afterwards are read as usual.
        peer.write_all(b"abc").await.unwrap();
        assert!(matches!(
            read_step(&mut read, &mut buf, None, &mut ReadTimers::default()).await,
            ReadStep::Read(Ok(3))
        ));
        assert_eq!(&buf[..], b"abc");
    }

    #[tokio::test]
    async fn a_large_buffer_keeps_reading_when_bytes_arrive_in_time() {
        let (mut peer, ours) = tokio::io::duplex(64 * 1024);
        let mut read: ReadHalf = Box::new(ours);
        let mut buf = BytesMut::with_capacity(4 * SHRINK_ABOVE);
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            peer.write_all(&[7; 100]).await.unwrap();
            peer
        });
        assert!(matches!(
            read_step(&mut read, &mut buf, None, &mut ReadTimers::default()).await,
            ReadStep::Read(Ok(100))
        ));
        assert!(buf.capacity() >= 4 * SHRINK_ABOVE - 100);
        drop(writer.await.unwrap());
        buf.clear();
        // A small buffer is never timed out while idle; end of stream is reported.
        let mut small = BytesMut::with_capacity(INITIAL_READ_BUFFER);
        assert!(matches!(
            read_step(&mut read, &mut small, None, &mut ReadTimers::default()).await,
            ReadStep::Read(Ok(0))
        ));
    }

    #[tokio::test]
    async fn an_incomplete_message_must_be_completed_in_time() {
        let (_peer, ours) = tokio::io::duplex(1024);
        let mut read: ReadHalf = Box::new(ours);
        let mut buf = BytesMut::from(&b"IceP"[..]);
        let limit = Duration::from_millis(50);
        assert!(
            matches!(read_step(&mut read, &mut buf, Some(limit), &mut ReadTimers::default()).await, ReadStep::PartialTimeout(l) if l == limit)
        );
        assert_eq!(&buf[..], b"IceP");
    }

    /// A read that completes `after` from now.
    async fn ready_after(after: Duration) -> u8 {
        tokio::time::sleep(after).await;
        7
    }

    // The deadline tests run on tokio's paused clock, which jumps to the next timer when
    // every task waits: the times they assert are exact and no load can stretch them.

    #[tokio::test(start_paused = true)]
    async fn a_deadline_measures_each_wait_from_its_own_start() {
        // Three waits of 120 ms under a 200 ms limit: the timer armed for the first fires
        // during the second and is pushed back instead of ending it.
        let mut deadline = Deadline::default();
        let limit = Duration::from_millis(200);
        for _ in 0..3 {
            assert_eq!(deadline.within(limit, ready_after(Duration::from_millis(120))).await, Some(7));
        }
        // A wait that outlasts the limit ends at it (the timer has millisecond resolution).
        let started = tokio::time::Instant::now();
        assert_eq!(deadline.within(limit, std::future::pending::<u8>()).await, None);
        let waited = started.elapsed();
        assert!(waited >= limit && waited <= limit + Duration::from_millis(2), "waited {waited:?}");
        // The deadline serves again after a timeout.
        assert_eq!(deadline.within(limit, ready_after(Duration::from_millis(10))).await, Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_limit_moves_the_armed_timer_earlier() {
        let mut deadline = Deadline::default();
        // Armed for an hour by a wait that ended at once.
        assert_eq!(deadline.within(Duration::from_secs(3600), ready_after(Duration::from_millis(5))).await, Some(7));
        let started = tokio::time::Instant::now();
        let short = deadline.within(Duration::from_millis(50), std::future::pending::<u8>());
        let outcome = tokio::time::timeout(Duration::from_secs(2), short).await;
        assert_eq!(outcome, Ok(None), "the 50 ms limit ends the wait");
        assert!(started.elapsed() <= Duration::from_millis(52), "waited {:?}", started.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_limit_too_large_to_add_waits_without_panicking() {
        let mut deadline = Deadline::default();
        assert_eq!(deadline.within(Duration::MAX, ready_after(Duration::from_millis(5))).await, Some(7));
        let pending = deadline.within(Duration::MAX, std::future::pending::<u8>());
        assert!(tokio::time::timeout(Duration::from_secs(3600), pending).await.is_err(), "still waiting after an hour");
    }

    #[tokio::test(start_paused = true)]
    async fn a_ready_future_wins_over_an_elapsed_timer() {
        let mut deadline = Deadline::default();
        assert_eq!(deadline.within(Duration::from_millis(20), ready_after(Duration::from_millis(5))).await, Some(7));
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The timer fired meanwhile; a future that is ready is still taken.
        assert_eq!(deadline.within(Duration::from_millis(20), std::future::ready(9u8)).await, Some(9));
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_that_keeps_arriving_slowly_is_read_to_the_end() {
        // Each part comes within the limit while the whole takes several limits.
        let (mut peer, ours) = tokio::io::duplex(1024);
        let mut read: ReadHalf = Box::new(ours);
        let mut buf = BytesMut::from(&b"IceP"[..]);
        let limit = Duration::from_millis(150);
        let writer = tokio::spawn(async move {
            for _ in 0..4 {
                tokio::time::sleep(Duration::from_millis(90)).await;
                peer.write_all(&[1; 10]).await.unwrap();
            }
            peer
        });
        let mut timers = ReadTimers::default();
        for _ in 0..4 {
            assert!(matches!(read_step(&mut read, &mut buf, Some(limit), &mut timers).await, ReadStep::Read(Ok(10))));
        }
        assert_eq!(buf.len(), 44);
        let _peer = writer.await.unwrap();
        assert!(matches!(read_step(&mut read, &mut buf, Some(limit), &mut timers).await, ReadStep::PartialTimeout(_)));
    }
}

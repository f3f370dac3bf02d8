//! Requests the peer sends: the connection's [`RequestHandler`], bound to the connection in
//! the reader ([`Handlers`]), starts each dispatch; a dispatch that completes at once has its
//! reply written by the reader (small replies of requests read together go out in one write),
//! one that waits continues as a task of its own. The dispatches in progress are counted:
//! their number is bounded per connection, and a graceful close waits for them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use tokio::sync::Notify;

use super::handler::{BoundHandler, HoldGate, HoldWatch, RequestHandler};
use super::Connection;
use crate::protocol::compress::compress_message;
use crate::protocol::header::set_compression;
use crate::protocol::reply::RequestFailed;
use crate::protocol::{CompressionStatus, Reply, ReplyBody, Request};
use crate::response::{recycle, DispatchFuture, Response};

/// The handler of one connection's incoming requests, and its dispatches in progress.
#[derive(Default)]
pub(super) struct Incoming {
    handler: RwLock<Option<Arc<dyn RequestHandler>>>,
    /// Bumped whenever the handler changes, so that the reader binds the new one.
    version: AtomicU64,
    dispatch_count: AtomicUsize,
    dispatch_done: Notify,
    /// Tasks waiting on `dispatch_done`.
    dispatch_waiters: AtomicUsize,
}

impl Incoming {
    /// Counts one more dispatch in progress.
    fn start_one(&self) {
        self.dispatch_count.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends `n` dispatches at once.
    fn finish(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.dispatch_count.fetch_sub(n, Ordering::SeqCst);
        // Notifying costs a lock; only a waiter (a close, or a reader at its dispatch limit)
        // needs it.
        if self.dispatch_waiters.load(Ordering::SeqCst) > 0 {
            self.dispatch_done.notify_waiters();
        }
    }

    /// Waits until fewer than `limit` dispatches are in progress.
    pub(super) async fn wait_for_dispatches_below(&self, limit: usize) {
        if self.dispatch_count.load(Ordering::SeqCst) < limit {
            return;
        }
        // Counted as a waiter first, so that every dispatch finishing from now on notifies.
        self.dispatch_waiters.fetch_add(1, Ordering::SeqCst);
        loop {
            let notified = self.dispatch_done.notified();
            if self.dispatch_count.load(Ordering::SeqCst) < limit {
                break;
            }
            notified.await;
        }
        self.dispatch_waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Connection {
    /// Sets what the connection does with the requests that arrive on it (`None`: twoway
    /// requests get ObjectNotExist, oneway ones are dropped). An object adapter is set with
    /// `Connection::set_adapter`, which lets the peer call back over this connection.
    pub fn set_handler(&self, handler: Option<Arc<dyn RequestHandler>>) {
        let incoming = &self.shared.incoming;
        *incoming.handler.write().expect("handler lock") = handler;
        incoming.version.fetch_add(1, Ordering::AcqRel);
    }

    /// The handler of the requests that arrive on this connection.
    pub fn handler(&self) -> Option<Arc<dyn RequestHandler>> {
        self.shared.incoming.handler.read().expect("handler lock").clone()
    }

    /// Number of requests being dispatched.
    pub fn dispatch_count(&self) -> usize {
        self.shared.incoming.dispatch_count.load(Ordering::Acquire)
    }

    /// True while the handler's gate holds the connection.
    pub(super) fn is_held(&self) -> bool {
        self.handler().is_some_and(|h| h.gate().is_some_and(HoldGate::is_held))
    }
}

/// The reader's handler, bound to the connection, made again when the connection's handler
/// changes (checked once per message with one atomic load).
pub(super) struct Handlers {
    version: u64,
    handler: Option<Arc<dyn RequestHandler>>,
    bound: Option<Box<dyn BoundHandler>>,
    /// The reader's watch on the handler's gate, if it has one.
    watch: Option<HoldWatch>,
}

impl Handlers {
    pub(super) fn new(conn: &Connection) -> Self {
        let mut h = Handlers { version: u64::MAX, handler: None, bound: None, watch: None };
        h.refresh(conn);
        h
    }

    /// Binds the connection's handler again if it changed.
    #[inline]
    pub(super) fn refresh(&mut self, conn: &Connection) {
        let now = conn.shared.incoming.version.load(Ordering::Acquire);
        if now != self.version {
            self.version = now;
            self.handler = conn.handler();
            self.bound = self.handler.clone().map(|h| h.bind(conn));
            self.watch = self.gate().map(HoldGate::watch);
        }
    }

    /// The handler's gate with the reader's watch on it, if the handler has a gate.
    pub(super) fn gate_watch(&self) -> Option<(&HoldGate, &HoldWatch)> {
        Some((self.gate()?, self.watch.as_ref()?))
    }

    /// The handler's gate, if it has one.
    pub(super) fn gate(&self) -> Option<&HoldGate> {
        self.handler.as_deref()?.gate()
    }
}

/// Waits while the handler's `gate` is held or the connection has as many dispatches in
/// progress as it may have (callers check [`dispatch_slot_free`] first: the usual case takes
/// no wait).
pub(super) async fn wait_for_dispatch_slot(conn: &Connection, gate: Option<&HoldGate>) {
    if let Some(gate) = gate {
        gate.until_released().await;
    }
    let max = conn.shared.config.max_dispatches;
    if max > 0 {
        conn.shared.incoming.wait_for_dispatches_below(max).await;
    }
}

/// True when [`wait_for_dispatch_slot`] would not wait.
#[inline]
pub(super) fn dispatch_slot_free(conn: &Connection, handlers: &Handlers) -> bool {
    let held = handlers.gate().is_some_and(HoldGate::is_held);
    let max = conn.shared.config.max_dispatches;
    !held && (max == 0 || conn.shared.incoming.dispatch_count.load(Ordering::SeqCst) < max)
}

/// Starts the dispatch of a request: the reply to write when the dispatch completed at once
/// (see [`deliver`]); a dispatch that waits continues as a task of its own, which writes its
/// reply. Synchronous, so that the reader's future does not hold the request across a wait.
#[inline]
pub(super) fn dispatch(
    conn: &Connection,
    handlers: &mut Handlers,
    request: Request,
    compression: CompressionStatus,
) -> Option<ReplyParts> {
    start_dispatch(conn, handlers, request, compression)
}

/// Writes the reply of a dispatch that completed at once, and ends the dispatch. The reader
/// task writes it itself: waiting for the write is the backpressure on a peer that does not
/// read its replies. A small reply waits for the other requests already in the read buffer,
/// so that their replies go out in one write.
pub(super) async fn deliver(conn: &Connection, (reply, tail): ReplyParts, replies: &mut DeferredReplies) {
    if tail.is_none() && reply.len() <= DEFERRED_REPLY_MAX && replies.backlog >= DEFER_WITH_BACKLOG {
        replies.defer(reply);
        if replies.bytes() >= DEFERRED_REPLIES_FLUSH_AT {
            replies.flush().await;
        }
    } else {
        replies.flush().await;
        write_reply(conn, (reply, tail)).await;
        conn.shared.incoming.finish(1);
    }
}

/// Dispatches the requests of a batch, one at a time as they are decoded (a batch's requests
/// are never all decoded at once).
pub(super) fn dispatch_batch(
    conn: &Connection,
    handlers: &mut Handlers,
    mut requests: crate::protocol::BatchRequests,
) -> crate::error::Result<()> {
    // Without a handler, each request would get ObjectNotExist, which a oneway request never
    // sees.
    let Some(bound) = handlers.bound.as_mut() else { return Ok(()) };
    bound.start_batch();
    // The batch counts as one dispatch in progress while its requests run here (a graceful
    // close waits for it as a whole); a request that has to wait counts on its own.
    let _batch = DispatchInProgress::start(conn);
    while let Some(request) = requests.next() {
        let request = request?;
        let same_target = requests.repeats_target();
        dispatch_batched(conn, &mut **bound, request, same_target);
        if conn.shared.state.is_closed() {
            return Ok(());
        }
    }
    Ok(())
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
pub(super) struct DeferredReplies {
    conn: Connection,
    bytes: BytesMut,
    count: usize,
    /// Bytes read but not yet dispatched after the current request.
    pub(super) backlog: usize,
}

impl DeferredReplies {
    pub(super) fn new(conn: &Connection) -> Self {
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
    pub(super) async fn flush(&mut self) {
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
        self.conn.shared.incoming.finish(std::mem::take(&mut self.count));
    }
}

impl Drop for DeferredReplies {
    // Replies never written (the connection closed first) still end their dispatches.
    fn drop(&mut self) {
        self.conn.shared.incoming.finish(self.count);
    }
}

/// Writes a reply message and what follows it, and gives the message's buffer back.
async fn write_reply(conn: &Connection, (reply, tail): ReplyParts) {
    // One of several replies a batch of received replies lets complete is queued, and written
    // with the others.
    if tail.is_some() || !conn.coalesce(&reply) {
        let _ = conn.write_message_parts(&reply, tail.as_deref().unwrap_or_default()).await;
    }
    crate::encoding::pool::give(reply);
}

/// A dispatch in progress for as long as it lives (the batch loop's: one for all the requests
/// of a batch that complete at once).
struct DispatchInProgress<'a>(&'a Connection);

impl<'a> DispatchInProgress<'a> {
    fn start(conn: &'a Connection) -> Self {
        conn.shared.incoming.start_one();
        DispatchInProgress(conn)
    }
}

impl Drop for DispatchInProgress<'_> {
    fn drop(&mut self) {
        self.0.shared.incoming.finish(1);
    }
}

/// Runs one request of a batch (oneway, so without a reply) until it first waits. The caller
/// holds a [`DispatchInProgress`] for the batch: a request that completes at once is not
/// counted on its own, and its empty response is dropped here; one that waits continues as a
/// task of its own, counted while it runs. As for any oneway request, a panic of the servant
/// is not reported to the client.
#[inline]
fn dispatch_batched(conn: &Connection, bound: &mut dyn BoundHandler, request: Request, same_target: bool) {
    debug_assert!(request.request_id == 0, "batched requests are oneway");
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| bound.dispatch_batched(request, same_target)));
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
            recycle(fut);
        }
        Ok(false) => {
            // Counted while the batch's count is held, so the count never drops to zero in
            // between.
            conn.shared.incoming.start_one();
            let conn = conn.clone();
            let fut = std::panic::AssertUnwindSafe(fut).catch_unwind();
            tokio::spawn(async move {
                let _ = fut.await;
                conn.shared.incoming.finish(1);
            });
        }
        // A future that panicked is dropped without keeping its block.
        Err(_) => drop(fut),
    }
}

/// The reply to a request that arrived with no handler to take it: ObjectNotExist.
fn no_handler(request: Request) -> DispatchFuture {
    let Request { request_id, identity, facet, operation, .. } = request;
    let response = if request_id == 0 {
        Response::none()
    } else {
        let failed = RequestFailed { identity, facet: facet.to_string(), operation: operation.to_string() };
        Response::message(Reply { request_id, body: ReplyBody::ObjectNotExist(failed) }.encode())
    };
    Box::pin(std::future::ready(response))
}

/// Runs a dispatch until it first waits. When it completes at once, returns the reply to
/// write (the dispatch then counts as in progress until the caller has written it and ended
/// it); a oneway request that completed is finished here. A dispatch that waits continues as
/// a task of its own, which writes its reply. Synchronous, so that the per-request path moves
/// no large future.
#[inline]
fn start_dispatch(
    conn: &Connection,
    handlers: &mut Handlers,
    request: Request,
    compression: CompressionStatus,
) -> Option<ReplyParts> {
    let request_id = request.request_id;
    // Counted before the dispatcher is called: one that starts work elsewhere at once (a
    // thread of its own, say) may have that work shut the adapter down, and the graceful close
    // that follows must wait for this reply.
    let incoming = &conn.shared.incoming;
    incoming.start_one();
    let mut fut = match handlers.bound.as_mut() {
        // A dispatcher that panics before returning its future is answered like one that
        // panics while running: the panic resurfaces inside the guarded future below.
        Some(bound) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| bound.dispatch(request))) {
            Ok(fut) => fut,
            Err(panic) => Box::pin(async move { std::panic::resume_unwind(panic) }),
        },
        None => no_handler(request),
    };
    let compress = compression != CompressionStatus::NotCompressed;
    let result = match poll_once(&mut fut) {
        Some(result) => {
            // A completed future's memory serves the next dispatch; one that panicked is
            // dropped.
            if result.is_ok() {
                recycle(fut);
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
                conn.shared.incoming.finish(1);
            });
            return None;
        }
    };
    // A oneway request has no reply to build.
    if request_id == 0 {
        incoming.finish(1);
        return None;
    }
    let reply = response_bytes(result, request_id, compress, conn.shared.config.compression_level);
    if reply.is_none() {
        incoming.finish(1);
    }
    reply
}

/// Polls a dispatch future once, with a waker that does nothing: its result, or the panic
/// it raised, when it completed; `None` when it waits (it is then polled again as a task).
#[inline]
fn poll_once(fut: &mut DispatchFuture) -> Option<std::thread::Result<Response>> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
        Ok(std::task::Poll::Ready(response)) => Some(Ok(response)),
        Ok(std::task::Poll::Pending) => None,
        Err(panic) => Some(Err(panic)),
    }
}

/// A reply message to write, and the trailing bytes written right after it.
pub(super) type ReplyParts = (BytesMut, Option<Bytes>);

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

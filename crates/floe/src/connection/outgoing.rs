//! Requests this side sends: twoway requests get a request id and wait for their reply
//! (delivered by the reader), oneway requests are written or queued, compression is applied
//! as the proxy asks.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use bytes::BytesMut;
use tokio::sync::oneshot;

use super::writer::Queueing;
use super::Connection;
use crate::error::{Error, Result};
use crate::protocol::compress::compress_message;
use crate::protocol::header::{is_request, set_compression, VALIDATE_CONNECTION};
use crate::protocol::request::set_request_id;
use crate::protocol::{CompressionStatus, Reply};

/// A oneway sent within this many microseconds of the previous one is part of a burst and is
/// queued; a lone oneway is written before its call returns, as Ice writes it.
const BURST_WINDOW_US: u64 = 100;

/// Whether a request should be compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compress {
    /// Send as it is (compression byte 0).
    No,
    /// Compress if at least 100 bytes, otherwise mark that a compressed reply is welcome.
    Yes,
}

type ReplySender = oneshot::Sender<Result<Reply>>;

/// The twoway requests waiting for their reply, by request id.
#[derive(Default)]
pub(super) struct Pending(Mutex<PendingTable>);

/// Hashed with FxHash: the table holds only ids this side allocated, so a peer cannot choose
/// the keys (its replies only look them up), and every twoway call inserts, looks up and
/// removes one.
#[derive(Default)]
struct PendingTable {
    next_id: i32,
    map: rustc_hash::FxHashMap<i32, ReplySender>,
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

impl Pending {
    /// Hands a reply to the request waiting for it; false when none is (it was abandoned).
    pub(super) fn complete(&self, reply: Reply) -> bool {
        let waiting = self.0.lock().expect("pending lock").map.remove(&reply.request_id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(Ok(reply));
                true
            }
            None => false,
        }
    }

    /// Fails every request waiting for a reply with `reason`.
    pub(super) fn fail_all(&self, reason: &Error) {
        let waiting: Vec<ReplySender> = self.0.lock().expect("pending lock").map.drain().map(|(_, tx)| tx).collect();
        for tx in waiting {
            let _ = tx.send(Err(reason.clone()));
        }
    }

    /// Number of requests waiting.
    pub(super) fn count(&self) -> usize {
        self.0.lock().expect("pending lock").map.len()
    }
}

/// Removes a pending request when its invocation is dropped (timeout, cancellation, write
/// failure).
struct PendingGuard<'a> {
    pending: &'a Pending,
    id: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.pending.0.lock().expect("pending lock").map.remove(&self.id);
    }
}

impl Connection {
    /// Number of twoway requests waiting for their reply.
    pub fn pending_count(&self) -> usize {
        self.shared.pending.count()
    }

    fn register(&self) -> Result<(i32, oneshot::Receiver<Result<Reply>>)> {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.shared.pending.0.lock().expect("pending lock");
        if self.is_closed() {
            return Err(self.close_error());
        }
        let id = pending.allocate();
        pending.map.insert(id, tx);
        Ok((id, rx))
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
        // One of several requests a batch of received messages causes: written with the others.
        if self.coalesce(msg) {
            return Ok(());
        }
        self.write_message(msg).await
    }

    /// Sends a twoway request (a complete message whose request id is patched here) and
    /// waits for its reply. Dropping the future forgets the request.
    pub(crate) async fn invoke(&self, mut msg: BytesMut, compress: Compress) -> Result<Reply> {
        self.invoke_parts(&mut msg, None, compress).await
    }

    /// Like [`Connection::invoke`] for a message whose last `tail.len()` bytes are sent from
    /// `tail` (the message's sizes already count them), leaving the message with the caller
    /// (for retries).
    pub(crate) async fn invoke_parts(
        &self,
        msg: &mut BytesMut,
        tail: Option<&[u8]>,
        compress: Compress,
    ) -> Result<Reply> {
        let (id, rx) = self.register()?;
        let guard = PendingGuard { pending: &self.shared.pending, id };
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
            guards.push(PendingGuard { pending: &self.shared.pending, id });
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
        self.send_oneway_parts(&mut msg, None, compress).await
    }

    /// Sends a oneway request or a batch whose last `tail.len()` bytes are sent from `tail`
    /// (such a message is large, and written directly), leaving the message with the caller.
    ///
    /// A small oneway request (not a batch) returns once it is queued: the connection writes
    /// queued requests together, with one system call, as soon as the runtime gets to it, and
    /// ahead of any message written after them. Like an Ice oneway, a queued request whose
    /// connection fails before it is written is lost without an error to the caller.
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
            let now = self.shared.activity.micros_since_epoch();
            let previous = self.shared.oneways.last_oneway_us.swap(now, Ordering::Relaxed);
            let mut in_burst = previous != 0 && now.saturating_sub(previous) < BURST_WINDOW_US;
            loop {
                // Registered before trying, so that space made meanwhile is not missed.
                let space = self.shared.oneways.room();
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
}

//! Requests this side sends: twoway requests get a request id and wait for their reply
//! (delivered by the reader), oneway requests are written or queued, compression is applied
//! as the proxy asks.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use bytes::BytesMut;

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

/// The twoway requests waiting for their reply, by request id.
#[derive(Default)]
pub(super) struct Pending(Mutex<PendingTable>);

/// Hashed with FxHash: the table holds only ids this side allocated, so a peer cannot choose
/// the keys (its replies only look them up), and every twoway call inserts, looks up and
/// removes one.
///
/// A request's entry is its reply slot: the reader puts the reply (or the connection's
/// failure) in it and wakes the caller, whose [`ReplyWait`] takes it out. One lock taken by
/// the reader per reply, and none of a channel's allocation and reference counting.
#[derive(Default)]
struct PendingTable {
    next_id: i32,
    map: rustc_hash::FxHashMap<i32, ReplySlot>,
    /// Entries still waiting for their reply (the others hold one not yet taken).
    waiting: usize,
}

/// What a pending request's entry holds.
enum ReplySlot {
    /// No reply yet; the waker of the caller, once it has waited.
    Waiting(Option<Waker>),
    /// The reply, or why none will come, for the caller to take.
    Done(Result<Reply>),
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

    /// Puts `outcome` in the slot of a request still waiting; the caller's waker to wake, or
    /// `Err` when no request waits under `id`.
    fn fill(&mut self, id: i32, outcome: Result<Reply>) -> std::result::Result<Option<Waker>, ()> {
        match self.map.get_mut(&id) {
            Some(slot @ ReplySlot::Waiting(_)) => {
                let ReplySlot::Waiting(waker) = std::mem::replace(slot, ReplySlot::Done(outcome)) else {
                    unreachable!("matched as waiting")
                };
                self.waiting -= 1;
                Ok(waker)
            }
            _ => Err(()),
        }
    }
}

impl Pending {
    /// Hands a reply to the request waiting for it; false when none is (it was abandoned).
    pub(super) fn complete(&self, reply: Reply) -> bool {
        let id = reply.request_id;
        let filled = self.0.lock().expect("pending lock").fill(id, Ok(reply));
        match filled {
            Ok(waker) => {
                if let Some(w) = waker {
                    w.wake();
                }
                true
            }
            Err(()) => false,
        }
    }

    /// Fails every request waiting for a reply with `reason`.
    pub(super) fn fail_all(&self, reason: &Error) {
        let mut wakers = Vec::new();
        {
            let mut table = self.0.lock().expect("pending lock");
            let PendingTable { map, waiting, .. } = &mut *table;
            for slot in map.values_mut() {
                if let ReplySlot::Waiting(waker) = slot {
                    wakers.extend(waker.take());
                    *slot = ReplySlot::Done(Err(reason.clone()));
                }
            }
            *waiting = 0;
        }
        // Woken outside the lock.
        for w in wakers {
            w.wake();
        }
    }

    /// Registers a twoway request under a new id, unless `closed` (asked under the table's
    /// lock, so that a close failing every request cannot pass in between) gives a reason.
    fn register(&self, closed: impl FnOnce() -> Option<Error>) -> Result<ReplyWait<'_>> {
        let mut table = self.0.lock().expect("pending lock");
        if let Some(reason) = closed() {
            return Err(reason);
        }
        let id = table.allocate();
        table.map.insert(id, ReplySlot::Waiting(None));
        table.waiting += 1;
        Ok(ReplyWait { pending: self, id, taken: false })
    }

    /// Number of requests waiting for their reply.
    pub(super) fn count(&self) -> usize {
        self.0.lock().expect("pending lock").waiting
    }
}

/// The wait for the reply of one pending request. Dropping it forgets the request (a timeout,
/// a cancelled call, a failed write), whether or not its reply came.
struct ReplyWait<'a> {
    pending: &'a Pending,
    id: i32,
    /// Set once the entry is gone (its reply taken): nothing left to remove.
    taken: bool,
}

impl Future for ReplyWait<'_> {
    type Output = Result<Reply>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Reply>> {
        let this = self.get_mut();
        let mut table = this.pending.0.lock().expect("pending lock");
        let slot = table.map.get_mut(&this.id);
        match slot {
            Some(ReplySlot::Waiting(waker)) => {
                match waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Some(ReplySlot::Done(_)) => {
                let Some(ReplySlot::Done(outcome)) = table.map.remove(&this.id) else {
                    unreachable!("matched as done")
                };
                this.taken = true;
                Poll::Ready(outcome)
            }
            // Only a wait polled again after it completed finds no entry.
            None => {
                debug_assert!(this.taken, "a pending request's entry vanished before its reply was taken");
                this.taken = true;
                Poll::Ready(Err(Error::ConnectionLost("the request's reply slot is gone".into())))
            }
        }
    }
}

impl Drop for ReplyWait<'_> {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut table = self.pending.0.lock().expect("pending lock");
        if let Some(ReplySlot::Waiting(_)) = table.map.remove(&self.id) {
            table.waiting -= 1;
        }
    }
}

impl Connection {
    /// Number of twoway requests waiting for their reply.
    pub fn pending_count(&self) -> usize {
        self.shared.pending.count()
    }

    /// Registers a twoway request: its id, and the wait for its reply.
    fn register(&self) -> Result<ReplyWait<'_>> {
        self.shared.pending.register(|| self.is_closed().then(|| self.close_error()))
    }

    async fn write_request(
        &self,
        msg: &mut BytesMut,
        tail: Option<&[u8]>,
        compress: Compress,
        oneway: bool,
    ) -> Result<()> {
        if let Some(tail) = tail {
            if compress == Compress::No {
                return self.write_request_parts(msg, tail, oneway).await;
            }
            // Compression needs the whole message in one buffer (`msg` stays as it is, for
            // a retry).
            let mut whole = BytesMut::with_capacity(msg.len() + tail.len());
            whole.extend_from_slice(msg);
            whole.extend_from_slice(tail);
            return Box::pin(self.write_request(&mut whole, None, compress, oneway)).await;
        }
        if compress == Compress::Yes {
            if let Some(c) = compress_message(msg, self.shared.config.compression_level) {
                return self.write_request_parts(&c, &[], oneway).await;
            }
            set_compression(msg, CompressionStatus::CompressedReplyAccepted);
        }
        // One of several requests a batch of received messages causes: written with the others.
        if self.coalesce(msg) {
            return Ok(());
        }
        self.write_request_parts(msg, &[], oneway).await
    }

    /// Writes a request's two parts; a oneway's write that blocks part-way may finish in the
    /// flush task ([`Connection::write_oneway_parts`]).
    async fn write_request_parts(&self, msg: &[u8], tail: &[u8], oneway: bool) -> Result<()> {
        if oneway {
            self.write_oneway_parts(msg, tail).await
        } else {
            self.write_message_parts(msg, tail).await
        }
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
        let wait = self.register()?;
        set_request_id(msg, wait.id);
        self.write_request(msg, tail, compress, false).await?;
        wait.await
    }

    /// Sends several twoway requests with one write and waits for all their replies, which
    /// come back in request order.
    pub(crate) async fn invoke_many(&self, msgs: Vec<BytesMut>, compress: Compress) -> Result<Vec<Result<Reply>>> {
        let mut waits = Vec::with_capacity(msgs.len());
        let total: usize = msgs.iter().map(|m| m.len()).sum();
        let mut out = BytesMut::with_capacity(total);
        for mut m in msgs {
            let wait = self.register()?;
            set_request_id(&mut m, wait.id);
            waits.push(wait);
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
        let mut replies = Vec::with_capacity(waits.len());
        for wait in waits {
            replies.push(wait.await);
        }
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
    /// ahead of any message written after them. A oneway request written directly whose
    /// socket takes only part of it returns too, its rest queued (when the request is no
    /// larger than the queue's limit). Like an Ice oneway, a queued request whose connection
    /// fails before it is written is lost without an error to the caller (and is not retried).
    /// A batch returns once written whole.
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
        // A batch keeps its caller until it is written whole, as before.
        if !is_request(msg) {
            return self.write_request(msg, tail, compress, false).await;
        }
        // A oneway request written directly: what is queued now (perhaps the rest of another
        // whose write blocked) is first taken by a writer. Waiting for that writes nothing, so a
        // caller that gives up meanwhile leaves nothing half-written, and each direct write
        // that hands its rest over waits for the rest before it: the queue stays bounded.
        self.oneway_queue_taken().await?;
        self.write_request(msg, tail, compress, true).await
    }

    /// Sends a heartbeat (a ValidateConnection message).
    pub async fn heartbeat(&self) -> Result<()> {
        self.shared.activity.heartbeat_writing();
        let written = self.write_message(&VALIDATE_CONNECTION).await;
        self.shared.activity.heartbeat_written();
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::EncodingVersion;
    use crate::protocol::ReplyBody;

    fn reply(id: i32) -> Reply {
        Reply { request_id: id, body: ReplyBody::Ok { encoding: EncodingVersion::V1_1, payload: Default::default() } }
    }

    /// Registers a request on an open connection.
    fn register(pending: &Pending) -> ReplyWait<'_> {
        pending.register(|| None).unwrap()
    }

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct CountingWaker(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountingWaker {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn entries(pending: &Pending) -> usize {
        pending.0.lock().unwrap().map.len()
    }

    #[tokio::test]
    async fn a_reply_reaches_its_waiting_caller_and_leaves_no_entry() {
        let pending = Pending::default();
        let first = register(&pending);
        let second = register(&pending);
        assert_eq!(pending.count(), 2);
        // A reply that comes before its caller waits is kept for it.
        assert!(pending.complete(reply(second.id)));
        assert_eq!(pending.count(), 1, "one request still waits for its reply");
        let id = second.id;
        assert_eq!(second.await.unwrap().request_id, id);
        // A reply that comes while its caller waits wakes it.
        let id = first.id;
        let woken = std::sync::Arc::new(CountingWaker::default());
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut first = std::pin::pin!(first);
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
        assert!(pending.complete(reply(id)));
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "the waiting caller is woken");
        let Poll::Ready(got) = first.as_mut().poll(&mut cx) else { panic!("the reply is there") };
        assert_eq!(got.unwrap().request_id, id);
        assert_eq!((pending.count(), entries(&pending)), (0, 0));
    }

    #[test]
    fn a_closed_connection_registers_nothing() {
        let pending = Pending::default();
        let refused = pending.register(|| Some(Error::ConnectionLost("closed".into())));
        assert!(matches!(refused, Err(Error::ConnectionLost(_))));
        assert_eq!((pending.count(), entries(&pending)), (0, 0));
    }

    #[tokio::test]
    async fn a_dropped_wait_forgets_its_request_whether_or_not_its_reply_came() {
        let pending = Pending::default();
        let abandoned = register(&pending);
        let id = abandoned.id;
        drop(abandoned);
        assert_eq!((pending.count(), entries(&pending)), (0, 0));
        assert!(!pending.complete(reply(id)), "a late reply finds nobody");
        // A reply that came but was never taken is dropped with its wait.
        let answered = register(&pending);
        assert!(pending.complete(reply(answered.id)));
        drop(answered);
        assert_eq!((pending.count(), entries(&pending)), (0, 0));
    }

    #[tokio::test]
    async fn a_failure_ends_every_wait_and_a_second_reply_is_refused() {
        let pending = Pending::default();
        let answered = register(&pending);
        let failed = register(&pending);
        assert!(pending.complete(reply(answered.id)));
        assert!(!pending.complete(reply(answered.id)), "one reply per request");
        // The failed request's caller is waiting: the failure wakes it.
        let woken = std::sync::Arc::new(CountingWaker::default());
        let waker = Waker::from(woken.clone());
        let mut failed = std::pin::pin!(failed);
        assert!(failed.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
        pending.fail_all(&Error::ConnectionLost("gone".into()));
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "the waiting caller is woken");
        assert_eq!(pending.count(), 0);
        let err = failed.await.unwrap_err();
        assert!(matches!(err, Error::ConnectionLost(ref why) if why == "gone"), "{err:?}");
        // The reply that came before the failure is still delivered.
        assert!(answered.await.is_ok());
        assert_eq!(entries(&pending), 0);
    }
}

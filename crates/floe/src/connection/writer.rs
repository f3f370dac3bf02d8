//! Writing: every message goes out whole under the lock on the write half, and a write that
//! is abandoned part-way closes the connection (half a message would corrupt the stream).
//! Small oneway requests can instead be queued: a oneway returns once its request is queued,
//! and one short-lived flush task writes everything queued meanwhile with one system call (a
//! message written directly takes the queue along first, so the order of messages is kept).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use tracing::trace;

use super::state::Phase;
use super::Connection;
use crate::error::{Error, Result};
use crate::protocol::header::{announced_size, message_type_byte};
use crate::protocol::{MessageType, HEADER_SIZE};
use crate::transport::WriteHalf;

/// At most this many bytes of oneway requests wait in the queue; beyond it a oneway waits
/// until the flush task has written some (backpressure on a peer that does not read).
const QUEUE_LIMIT: usize = 256 * 1024;

/// Oneway requests larger than this are written directly rather than copied into the queue.
const QUEUE_MESSAGE_MAX: usize = 16 * 1024;

/// The queue of small oneway requests of one connection.
#[derive(Default)]
pub(super) struct OnewayQueue {
    queued: Mutex<QueuedWrites>,
    /// True while `queued` holds bytes (changed under its lock): writers that find it false
    /// skip the lock.
    has_queued: AtomicBool,
    /// Signalled when the flush task has written queued requests (or the connection closed).
    space: Notify,
    /// When the last oneway request was sent (µs since the connection's epoch): a oneway soon
    /// after another belongs to a burst and is queued; a lone one is written at once.
    pub(super) last_oneway_us: AtomicU64,
}

#[derive(Default)]
struct QueuedWrites {
    bytes: BytesMut,
    flush_scheduled: bool,
}

/// What became of a oneway request offered to the queue.
pub(super) enum Queueing {
    Queued,
    /// The queue is full: wait for the flush task to make room.
    Full,
    /// Large, outside a burst, or no runtime to flush it: write it directly.
    NotQueueable,
}

impl OnewayQueue {
    /// Wakes the callers waiting for room (the connection closed, or room was made).
    pub(super) fn wake_waiters(&self) {
        self.space.notify_waiters();
    }

    /// A wait for room in the queue, to be registered before offering a request.
    pub(super) fn room(&self) -> tokio::sync::futures::Notified<'_> {
        self.space.notified()
    }
}

impl Connection {
    /// Writes one complete message.
    pub(crate) async fn write_message(&self, msg: &[u8]) -> Result<()> {
        self.write_message_parts(msg, &[]).await
    }

    /// Writes one complete message given as two parts: `msg` then `tail` (a large parameter
    /// sent from its own buffer instead of being copied after the rest).
    pub(super) async fn write_message_parts(&self, msg: &[u8], tail: &[u8]) -> Result<()> {
        let mut guard = self.shared.writer.lock().await;
        let Some(w) = guard.as_mut() else {
            return Err(self.close_error());
        };
        // After a forceful close nothing more is sent, even before the writer is shut down.
        if self.shared.state.is_closed() {
            return Err(self.close_error());
        }
        if self.shared.config.trace_protocol {
            trace_sent(msg, tail.len());
        }
        // Oneway requests queued before this message go first, in the same write when small.
        let queued =
            if self.shared.oneways.has_queued.load(Ordering::Acquire) { self.take_queued(false) } else { None };
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
            _ = self.shared.state.reached(Phase::Closed) => {
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
        self.shared.activity.touch_write();
        Ok(())
    }

    /// Takes the queued oneway requests, if any. With `ends_flush`, an empty queue also ends
    /// the flush task's turn (the next queued request schedules a new one).
    fn take_queued(&self, ends_flush: bool) -> Option<BytesMut> {
        let oneways = &self.shared.oneways;
        let mut q = oneways.queued.lock().expect("queue lock");
        if q.bytes.is_empty() {
            if ends_flush {
                q.flush_scheduled = false;
            }
            return None;
        }
        oneways.has_queued.store(false, Ordering::Release);
        Some(q.bytes.split())
    }

    /// Drops the queued oneway requests (the connection is closed) and ends the flush task's
    /// turn; callers waiting for room learn of it.
    fn drop_queued(&self) {
        let oneways = &self.shared.oneways;
        let mut q = oneways.queued.lock().expect("queue lock");
        q.bytes.clear();
        q.flush_scheduled = false;
        oneways.has_queued.store(false, Ordering::Release);
        drop(q);
        oneways.wake_waiters();
    }

    /// Queues a small oneway request for the flush task. Outside a burst (`in_burst` false)
    /// and with nothing queued, the request is not queued: the caller writes it at once.
    pub(super) fn queue_message(&self, msg: &[u8], in_burst: bool) -> Queueing {
        if msg.len() > QUEUE_MESSAGE_MAX {
            return Queueing::NotQueueable;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Queueing::NotQueueable;
        };
        let oneways = &self.shared.oneways;
        let mut q = oneways.queued.lock().expect("queue lock");
        if !in_burst && q.bytes.is_empty() && !q.flush_scheduled {
            return Queueing::NotQueueable;
        }
        if q.bytes.len() + msg.len() > QUEUE_LIMIT {
            return Queueing::Full;
        }
        if self.shared.config.trace_protocol {
            trace!(target: "floe::protocol", "queueing {} ({} bytes)", type_name(message_type_byte(msg)), msg.len());
        }
        q.bytes.extend_from_slice(msg);
        oneways.has_queued.store(true, Ordering::Release);
        if !q.flush_scheduled {
            q.flush_scheduled = true;
            drop(q);
            runtime.spawn(flush_queued(self.clone()));
        }
        Queueing::Queued
    }
}

/// Writes the queued oneway requests, and whatever is queued while it writes, then ends.
async fn flush_queued(conn: Connection) {
    let mut guard = conn.shared.writer.lock().await;
    loop {
        // After a forceful close nothing more is sent: queued requests are dropped.
        let w = match guard.as_mut() {
            Some(w) if !conn.shared.state.is_closed() => w,
            _ => return conn.drop_queued(),
        };
        let Some(bytes) = conn.take_queued(true) else { return };
        let result = tokio::select! {
            biased;
            r = w.write_all(&bytes) => r,
            // A forceful close interrupts a write blocked on a peer that does not read.
            _ = conn.shared.state.reached(Phase::Closed) => Err(std::io::Error::other("connection closed")),
        };
        if let Err(e) = result {
            drop(guard);
            conn.close_forcefully(Error::lost(e));
            return conn.drop_queued();
        }
        conn.shared.activity.touch_write();
        conn.shared.oneways.wake_waiters();
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

/// The name of a message type byte, for traces.
pub(super) fn type_name(byte: Option<u8>) -> String {
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

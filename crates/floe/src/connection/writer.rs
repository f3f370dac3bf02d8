//! Writing: every message goes out whole under the lock on the write half, and a write that
//! is abandoned part-way closes the connection (half a message would corrupt the stream).
//! Small oneway requests can instead be queued: a oneway returns once its request is queued,
//! and one short-lived flush task writes everything queued meanwhile with one system call (a
//! message written directly takes the queue along first, so the order of messages is kept).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use std::pin::Pin;
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use tracing::trace;

use super::state::Phase;
use super::Connection;
use crate::error::{Error, Result};
use crate::protocol::header::{announced_size, message_type_byte};
use crate::protocol::{MessageType, HEADER_SIZE};
use crate::transport::{busy_poll, WriteHalf};

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
    /// Bumped each time a writer takes the queued bytes (or they are dropped), under the
    /// queue's lock: a oneway to be written directly waits for one take, not for an empty
    /// queue, which other senders may keep filling.
    takes: AtomicU64,
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
    /// True when no oneway request waits here to be written.
    pub(super) fn is_empty(&self) -> bool {
        !self.has_queued.load(Ordering::Acquire)
    }

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
    ///
    /// When the write half is free and the socket takes the whole message at once, the message
    /// is written without waiting (the common case); otherwise the write continues in a future
    /// of its own, boxed, so that the futures that write — the reader task's above all, one per
    /// connection — stay small.
    pub(super) async fn write_message_parts(&self, msg: &[u8], tail: &[u8]) -> Result<()> {
        self.write_parts(msg, tail, false).await
    }

    /// Writes a oneway request as [`Connection::write_message_parts`] does, except that when
    /// the socket takes only part of it and the rest is no larger than the oneway queue, the
    /// rest goes to the queue's flush task and the call returns: a caller that gives up
    /// afterwards (a timeout, a dropped future) then abandons nothing half-written, and the
    /// next oneways wait for room in the queue as those of a burst do.
    pub(super) async fn write_oneway_parts(&self, msg: &[u8], tail: &[u8]) -> Result<()> {
        self.write_parts(msg, tail, true).await
    }

    /// The write of [`Connection::write_message_parts`], handing a blocked write's rest to the
    /// flush task when `oneway` (see [`Connection::write_oneway_parts`]).
    async fn write_parts(&self, msg: &[u8], tail: &[u8], oneway: bool) -> Result<()> {
        match self.shared.writer.try_lock() {
            Ok(guard) => match self.start_write(guard, msg, tail) {
                Started::Done(result) => result,
                Started::Blocked(pending) => match self.hand_over(pending, oneway) {
                    Ok(()) => Ok(()),
                    Err(pending) => Box::pin(self.finish_write(pending)).await,
                },
            },
            Err(_) => {
                Box::pin(async {
                    let guard = self.shared.writer.lock().await;
                    match self.start_write(guard, msg, tail) {
                        Started::Done(result) => result,
                        Started::Blocked(pending) => match self.hand_over(pending, oneway) {
                            Ok(()) => Ok(()),
                            Err(pending) => self.finish_write(pending).await,
                        },
                    }
                })
                .await
            }
        }
    }

    /// Puts what is left of a blocked oneway write at the head of the oneway queue, ahead of
    /// requests queued since, and makes sure the flush task writes it; then releases the write
    /// half. Whoever takes the write half next writes the queue first (`start_write`, the
    /// flush task), so nothing comes between the message's two parts; when only a flush is
    /// left (a transport that buffers took every byte), the flush task does it. Gives the
    /// write back when `oneway` is false, when the message is larger than the queue's limit
    /// (the caller keeps waiting, as for any large message), or when there is no runtime to
    /// run the flush task.
    fn hand_over<'a>(&self, pending: PendingWrite<'a>, oneway: bool) -> std::result::Result<(), PendingWrite<'a>> {
        // The limit is on the message itself: queued bytes its write took along came from the
        // queue and go back to it.
        if !oneway || pending.job.msg.len() + pending.job.tail.len() > QUEUE_LIMIT {
            return Err(pending);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(pending);
        };
        let oneways = &self.shared.oneways;
        let mut q = oneways.queued.lock().expect("queue lock");
        // Nothing left but a flush when a transport that buffers (TLS, WebSocket) took every
        // byte: the flush task flushes the write half when it finds the queue empty.
        if pending.job.remaining() > 0 {
            let mut rest = BytesMut::with_capacity(pending.job.remaining() + q.bytes.len());
            pending.job.copy_remaining_to(&mut rest);
            rest.extend_from_slice(&q.bytes);
            q.bytes = rest;
            oneways.has_queued.store(true, Ordering::Release);
            if self.shared.config.trace_protocol {
                trace!(target: "floe::protocol", "the rest of a oneway request goes to the flush task");
            }
        }
        let spawn = schedule_flush(&mut q);
        drop(q);
        // Released only now: the next holder of the write half finds the rest queued.
        drop(pending);
        if spawn {
            runtime.spawn(flush_queued(self.clone(), false));
        }
        Ok(())
    }

    /// Writes as much of the message as the socket takes now, holding the write half.
    fn start_write<'a>(&self, mut guard: WriterGuard<'a>, msg: &'a [u8], tail: &'a [u8]) -> Started<'a> {
        if guard.is_none() || self.shared.state.is_closed() {
            // After a forceful close nothing more is sent, even before the writer is shut down.
            return Started::Done(Err(self.close_error()));
        }
        if self.shared.config.trace_protocol {
            trace_sent(msg, tail.len());
        }
        // Oneway requests queued before this message go first, in the same write when small.
        let queued =
            if self.shared.oneways.has_queued.load(Ordering::Acquire) { self.take_queued(false) } else { None };
        let mut job = match queued {
            Some(mut q) if msg.len() <= QUEUE_MESSAGE_MAX => {
                q.extend_from_slice(msg);
                WriteJob { queued: q, msg: &[], tail, written: 0 }
            }
            Some(q) => WriteJob { queued: q, msg, tail, written: 0 },
            None => WriteJob { queued: BytesMut::new(), msg, tail, written: 0 },
        };
        let w = guard.as_mut().expect("checked above");
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match job.poll_write(w, &mut cx) {
            Poll::Ready(result) => {
                let took_queued = !job.queued.is_empty();
                Started::Done(self.wrote(guard, result, took_queued))
            }
            Poll::Pending => Started::Blocked(PendingWrite { guard, job }),
        }
    }

    /// Finishes a write the socket could not take at once. A caller that gives up part-way
    /// (a timeout, a dropped future) would leave half a message on the wire: the connection is
    /// then closed instead; a forceful close ends the wait.
    async fn finish_write(&self, pending: PendingWrite<'_>) -> Result<()> {
        let PendingWrite { mut guard, mut job } = pending;
        let abandoned = AbandonedWrite { conn: self, armed: true };
        let w = guard.as_mut().expect("a pending write has its writer");
        let result = tokio::select! {
            biased;
            r = std::future::poll_fn(|cx| job.poll_write(w, cx)) => r,
            _ = self.shared.state.reached(Phase::Closed) => {
                let mut abandoned = abandoned;
                abandoned.armed = false;
                return Err(self.close_error());
            }
        };
        let mut abandoned = abandoned;
        abandoned.armed = false;
        let took_queued = !job.queued.is_empty();
        self.wrote(guard, result, took_queued)
    }

    /// Ends a write: releases the write half, and closes the connection if the write failed.
    /// A write that took the queued oneway requests along made room in the queue: the callers
    /// waiting for room learn of it (the flush task, finding the queue empty, will not tell
    /// them).
    fn wrote(&self, guard: WriterGuard<'_>, result: std::io::Result<()>, took_queued: bool) -> Result<()> {
        drop(guard);
        match result {
            Ok(()) => {
                self.shared.activity.touch_write();
                if took_queued {
                    self.shared.oneways.wake_waiters();
                }
                Ok(())
            }
            Err(e) => {
                let err = Error::lost(e);
                self.close_forcefully(err.clone());
                Err(err)
            }
        }
    }

    /// Takes the queued oneway requests, if any. With `ends_flush`, an empty queue also ends
    /// the flush task's turn (the next queued request schedules a new one).
    fn take_queued(&self, ends_flush: bool) -> Option<BytesMut> {
        let oneways = &self.shared.oneways;
        let mut q = oneways.queued.lock().expect("queue lock");
        oneways.has_queued.store(false, Ordering::Release);
        if q.bytes.is_empty() {
            if ends_flush {
                q.flush_scheduled = false;
            }
            return None;
        }
        oneways.takes.fetch_add(1, Ordering::Release);
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
        oneways.takes.fetch_add(1, Ordering::Release);
        drop(q);
        oneways.wake_waiters();
    }

    /// Queues a small request or reply instead of writing it at once when the reader of this
    /// thread says the batch it is handling brings more writes (`transport::coalesce`); true
    /// when queued (the flush task, or the batch's last write, sends it).
    pub(super) fn coalesce(&self, msg: &[u8]) -> bool {
        msg.len() <= QUEUE_MESSAGE_MAX
            && crate::transport::coalesce::should_queue()
            && matches!(self.queue_message(msg, true), Queueing::Queued)
    }

    /// Waits until what the oneway queue holds now has been taken by a writer (or dropped),
    /// or the connection is closed. Bytes queued since may still be there: the caller's write
    /// takes them along.
    pub(super) async fn oneway_queue_taken(&self) -> Result<()> {
        let oneways = &self.shared.oneways;
        // Most of the time there is nothing queued: no registration.
        if !oneways.has_queued.load(Ordering::Acquire) {
            return Ok(());
        }
        let takes = oneways.takes.load(Ordering::Acquire);
        loop {
            // Registered before looking, so that a take meanwhile is not missed.
            let taken = oneways.room();
            tokio::pin!(taken);
            taken.as_mut().enable();
            if !oneways.has_queued.load(Ordering::Acquire) || oneways.takes.load(Ordering::Acquire) != takes {
                return Ok(());
            }
            taken.await;
            if self.shared.state.is_closed() {
                return Err(self.close_error());
            }
        }
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
        if schedule_flush(&mut q) {
            drop(q);
            runtime.spawn(flush_queued(self.clone(), false));
        }
        Queueing::Queued
    }
}

/// Marks the flush task scheduled; true when it was not, and the caller must spawn it (once the
/// queue's lock is released).
fn schedule_flush(q: &mut QueuedWrites) -> bool {
    !std::mem::replace(&mut q.flush_scheduled, true)
}

/// Writes the queued oneway requests, and whatever is queued while it writes, then ends.
/// `rescue`: the task goes on for one whose runtime shut down (see [`FlushGuard`]).
fn flush_queued(conn: Connection, rescue: bool) -> impl std::future::Future<Output = ()> + Send + 'static {
    // Made before the future is first polled: a task dropped unpolled is rescued too.
    let guard = FlushGuard { conn, rescue, done: false };
    async move {
        let mut guard = guard;
        {
            let mut task = FlushTask { conn: &guard.conn, writer: None, rest: None };
            flush_queued_in(&mut task).await;
        }
        guard.done = true;
    }
}

/// The flush task's promise that the queue is written. Dropped before the task is done (the
/// runtime it was spawned on, a caller's, shut down, polled or not), it lets a new flush task
/// go on on the connection's own runtime (the reader's); where that is the runtime that shut
/// down, or where the task was already such a rescue, the connection closes rather than leave
/// later writers waiting for a flush that never comes.
struct FlushGuard {
    conn: Connection,
    rescue: bool,
    done: bool,
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let conn = &self.conn;
        let mut q = conn.shared.oneways.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        q.flush_scheduled = false;
        if conn.shared.state.is_closed() {
            drop(q);
            return conn.drop_queued();
        }
        let here = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
        match conn.shared.home.get() {
            Some(home) if !self.rescue && Some(home.id()) != here => {
                // Flushes too what a transport that buffers may still hold.
                q.flush_scheduled = true;
                drop(q);
                home.spawn(flush_queued(conn.clone(), true));
            }
            _ => {
                drop(q);
                conn.close_forcefully(Error::ConnectionLost(
                    "the runtime writing the connection's queued requests shut down".into(),
                ));
                conn.drop_queued();
            }
        }
    }
}

/// A flush task's write under way. Dropped part-way (its task dropped), it puts the unwritten
/// rest back at the head of the queue while it still holds the write half, so that whoever
/// takes the write half next writes it first and nothing comes between the two parts.
struct FlushTask<'a> {
    conn: &'a Connection,
    writer: Option<WriterGuard<'a>>,
    /// Bytes taken from the queue and how many of them are written.
    rest: Option<(BytesMut, usize)>,
}

impl Drop for FlushTask<'_> {
    fn drop(&mut self) {
        let Some((bytes, written)) = self.rest.take() else { return };
        if written < bytes.len() {
            let oneways = &self.conn.shared.oneways;
            let mut q = oneways.queued.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut rest = BytesMut::with_capacity(bytes.len() - written + q.bytes.len());
            rest.extend_from_slice(&bytes[written..]);
            rest.extend_from_slice(&q.bytes);
            q.bytes = rest;
            oneways.has_queued.store(true, Ordering::Release);
        }
        // The write half is released after this, as the fields drop.
    }
}

/// The flush task's work: takes the queue and writes it, until the queue is empty.
async fn flush_queued_in(task: &mut FlushTask<'_>) {
    let conn = task.conn;
    task.writer = Some(conn.shared.writer.lock().await);
    loop {
        // After a forceful close nothing more is sent: queued requests are dropped.
        let w = match task.writer.as_mut().and_then(|g| g.as_mut()) {
            Some(w) if !conn.shared.state.is_closed() => w,
            _ => return conn.drop_queued(),
        };
        let Some(bytes) = conn.take_queued(true) else {
            // What a transport that buffers (TLS, WebSocket) still holds goes out now: a
            // oneway whose write left only that flush handed it here. A no-op for TCP.
            let flushed = tokio::select! {
                biased;
                r = w.flush() => r,
                _ = conn.shared.state.reached(Phase::Closed) => Err(std::io::Error::other("connection closed")),
            };
            if let Err(e) = flushed {
                task.writer = None;
                conn.close_forcefully(Error::lost(e));
                return conn.drop_queued();
            }
            // A message written directly may have taken the queue along (`start_write`):
            // those bytes are written now, so callers waiting for room must learn of it, or
            // they would wait for the next flush, which may never come.
            conn.shared.oneways.wake_waiters();
            return;
        };
        if bytes.len() >= busy_poll::LARGE_WRITE {
            // A large write (the rest of a large oneway, or many small ones): see `busy_poll`.
            busy_poll::wrote_large();
        }
        let rest = task.rest.insert((bytes, 0));
        let result = tokio::select! {
            biased;
            r = write_counted(w, rest) => r,
            // A forceful close interrupts a write blocked on a peer that does not read.
            _ = conn.shared.state.reached(Phase::Closed) => Err(std::io::Error::other("connection closed")),
        };
        task.rest = None;
        if let Err(e) = result {
            task.writer = None;
            conn.close_forcefully(Error::lost(e));
            return conn.drop_queued();
        }
        conn.shared.activity.touch_write();
        conn.shared.oneways.wake_waiters();
    }
}

/// Writes `rest.0` from `rest.1` on, counting in `rest.1` what is written, then flushes.
async fn write_counted(w: &mut WriteHalf, rest: &mut (BytesMut, usize)) -> std::io::Result<()> {
    let (bytes, written) = rest;
    while *written < bytes.len() {
        let n = w.write(&bytes[*written..]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        *written += n;
    }
    w.flush().await
}

/// The lock on a connection's write half. tokio's lock, which is fair: a writer that waits is
/// served before writers that come later (one that only tries, as a write's fast path does,
/// fails while anyone waits), so no caller of a busy connection is overtaken for good.
type WriterGuard<'a> = tokio::sync::MutexGuard<'a, Option<WriteHalf>>;

/// What became of a write's first attempt.
enum Started<'a> {
    Done(Result<()>),
    /// The socket took part of it: the rest waits for room, holding the write half.
    Blocked(PendingWrite<'a>),
}

/// A write under way: the write half it holds and what is left to write.
struct PendingWrite<'a> {
    guard: WriterGuard<'a>,
    job: WriteJob<'a>,
}

/// One write: the queued oneway requests (with the message appended when it is small), then
/// the message, then its tail, with vectored writes (one system call when the socket takes
/// them all).
struct WriteJob<'a> {
    queued: BytesMut,
    msg: &'a [u8],
    tail: &'a [u8],
    /// Bytes of the three parts written so far.
    written: usize,
}

impl WriteJob<'_> {
    /// The parts' bytes not written yet.
    fn remaining(&self) -> usize {
        self.queued.len() + self.msg.len() + self.tail.len() - self.written
    }

    /// Appends the parts' bytes not written yet to `out`.
    fn copy_remaining_to(&self, out: &mut BytesMut) {
        let mut skip = self.written;
        for part in [&self.queued[..], self.msg, self.tail] {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            out.extend_from_slice(&part[skip..]);
            skip = 0;
        }
    }

    /// Writes (and flushes) until done, an error, or the socket is full (`Pending`, with the waker in `cx`
    /// registered).
    fn poll_write(&mut self, w: &mut WriteHalf, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        loop {
            let mut skip = self.written;
            let mut slices = [std::io::IoSlice::new(&[]); 3];
            let mut count = 0;
            for part in [&self.queued[..], self.msg, self.tail] {
                if skip >= part.len() {
                    skip -= part.len();
                    continue;
                }
                slices[count] = std::io::IoSlice::new(&part[skip..]);
                skip = 0;
                count += 1;
            }
            if count == 0 {
                // Transports that buffer (TLS records, WebSocket frames) send the rest now;
                // for TCP this is a no-op.
                return Pin::new(&mut **w).poll_flush(cx);
            }
            // One slice goes out with a plain write: the kernel's vectored path first copies
            // and checks the array of slices, which a small message's write pays for nothing.
            let written = if count == 1 {
                Pin::new(&mut **w).poll_write(cx, &slices[0])
            } else {
                Pin::new(&mut **w).poll_write_vectored(cx, &slices[..count])
            };
            match written {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.written += n;
                    if self.queued.len() + self.msg.len() + self.tail.len() >= busy_poll::LARGE_WRITE {
                        busy_poll::wrote_large();
                    }
                }
                Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
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

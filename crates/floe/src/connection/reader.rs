//! The reader task: one per connection, it reads into a buffer that starts small, grows for
//! large messages and is given back when the connection goes idle, cuts complete messages out
//! of it (the frame reader enforces `Ice.MessageSizeMax` before allocating), and routes each
//! message: replies to the callers waiting for them, requests and batches to the incoming
//! dispatch, heartbeats to the ACM counters, CloseConnection to the close. It stops reading
//! while the handler's gate is held or the connection is at its dispatch limit, and closes a
//! connection whose message stays incomplete for too long.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;
use tracing::{debug, trace, warn};

use super::handler::HoldGate;
use super::incoming::{self, DeferredReplies, Handlers};
use super::Connection;
use crate::error::{Error, Result};
use crate::protocol::{BatchRequests, FrameReader, Message, MessageType, Reply, Request};
use crate::transport::{coalesce, ReadHalf};

/// A new connection's read buffer holds no memory: the first read takes 64 bytes (what
/// `BytesMut` reserves), room enough for a ping or a small request, so that an idle-ish
/// connection costs that much. A message larger than the buffer grows it to its announced
/// size. A read that fills the buffer, or that starts a message within `ACTIVE_GAP_MS` of the
/// read before (the rest of a message does not count), marks the connection as streaming: from then on its reads get at least 512 bytes of room,
/// in steps of `STREAMING_READ_BUFFER` (one allocation for many messages, where a 64-byte
/// buffer would need one for every message or two), until it has been idle for
/// `SHRINK_WHEN_IDLE_FOR` and gives the buffer back. A client that calls every few seconds
/// keeps the small buffer.
const INITIAL_READ_BUFFER: usize = 0;
/// What a buffer that reads fill grows to (see [`INITIAL_READ_BUFFER`]).
const STREAMING_READ_BUFFER: usize = 8 * 1024;
/// Reads this close together (in milliseconds) make a connection streaming.
const ACTIVE_GAP_MS: u64 = 100;
const SHRINK_ABOVE: usize = 64 * 1024;
/// A connection that stays idle this long gives back a read buffer grown above `SHRINK_ABOVE`,
/// and a streaming connection its buffer, whatever its size.
const SHRINK_WHEN_IDLE_FOR: Duration = Duration::from_secs(1);

/// Reads and handles the connection's messages until it closes.
pub(super) async fn run(conn: Connection, mut read: ReadHalf) {
    let frames = FrameReader::new(conn.shared.config.max_message_size);
    let mut buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
    let mut last_size = 0;
    // Whether a read has filled all the room the buffer had, since the connection was last idle.
    let mut streaming = false;
    let mut handlers = Handlers::new(&conn);
    let mut replies = DeferredReplies::new(&conn);
    let mut timers = ReadTimers::default();
    loop {
        // Calls completed by the replies of this buffer: their callers, woken, usually write
        // once each, and those writes go out together (transport::coalesce).
        let mut completed = 0u32;
        // Whether this buffer held messages and all were oneway requests or batches: the peer
        // waits for no answer (transport::busy_poll::peer_not_waiting).
        let mut messages = 0u32;
        let mut answer_awaited = false;
        // Whether this buffer held a request or a reply (a heartbeat is neither): the
        // inactivity timeout's clock is set once per buffer, not per message.
        let mut calls = false;
        // Take every complete message out of the buffer.
        loop {
            match frames.next_message(&mut buf) {
                Ok(Some(msg)) => {
                    last_size = msg.header.size;
                    messages += 1;
                    answer_awaited |= match msg.header.message_type {
                        // A oneway request has request id 0, the first four bytes of its body.
                        MessageType::Request => msg.body.get(..4).is_none_or(|id| id != [0u8; 4]),
                        MessageType::BatchRequest => false,
                        _ => true,
                    };
                    calls |= matches!(
                        msg.header.message_type,
                        MessageType::Request | MessageType::BatchRequest | MessageType::Reply
                    );
                    if matches!(msg.header.message_type, MessageType::Request | MessageType::BatchRequest) {
                        handlers.refresh(&conn);
                        if !incoming::dispatch_slot_free(&conn, &handlers) {
                            // Replies waiting for the end of the buffer go out before any wait.
                            replies.flush().await;
                            incoming::wait_for_dispatch_slot(&conn, handlers.gate()).await;
                            // The handler may have changed meanwhile.
                            handlers.refresh(&conn);
                        }
                    } else if handlers.gate().is_some_and(HoldGate::is_held) {
                        // A held adapter's connections act on nothing, as Ice's stop reading:
                        // a reply or a CloseConnection read with the hold waits for its end.
                        replies.flush().await;
                        if let Some(gate) = handlers.gate() {
                            gate.until_released().await;
                        }
                        handlers.refresh(&conn);
                    }
                    replies.backlog = buf.len();
                    // A dispatch that writes (a router forwarding, a servant calling another
                    // server) queues its write while another message follows in the buffer.
                    coalesce::more_follows(frames.complete_message_in(&buf));
                    let handled = handle_message(&conn, msg, &mut handlers, &mut completed);
                    coalesce::more_follows(false);
                    match handled {
                        Ok(None) => {}
                        Ok(Some(reply)) => incoming::deliver(&conn, reply, &mut replies).await,
                        Err(e) => {
                            warn!(target: "floe::network", "closing connection: {e}\n{}", conn.shared.description);
                            conn.close_forcefully(e);
                            return;
                        }
                    }
                    // Nothing after a CloseConnection (or a fatal error) is dispatched.
                    if conn.shared.state.is_closed() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    warn!(target: "floe::network", "closing connection: {e}\n{}", conn.shared.description);
                    conn.close_forcefully(Error::from(e));
                    return;
                }
            }
        }
        if calls {
            conn.shared.activity.call_read();
        }
        coalesce::expect_writes(completed);
        // The replies of the requests dispatched from this buffer, in one write.
        replies.flush().await;
        if conn.shared.state.is_closed() {
            return;
        }
        // A buffer that grew for large messages is kept while large messages keep coming
        // (reallocating it would cost fresh pages each time) and shrunk after a small one.
        if buf.is_empty() && buf.capacity() > SHRINK_ABOVE && last_size < buf.capacity() / 4 {
            buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
        }
        // An incomplete message already has its room (the frame reader reserved it).
        if streaming && buf.capacity() - buf.len() < 512 {
            buf.reserve(STREAMING_READ_BUFFER);
        }
        // Bound the dispatches in progress: stop reading until one completes.
        handlers.refresh(&conn);
        if !incoming::dispatch_slot_free(&conn, &handlers) {
            incoming::wait_for_dispatch_slot(&conn, handlers.gate()).await;
        }
        // A read in progress stops when the gate is held: nothing more is read until it is
        // released.
        let room = buf.capacity() - buf.len();
        let starts_message = buf.is_empty();
        // Nothing partial left (the next message has not started), and no reply of the peer is
        // awaited here either (a connection that also carries calls to the peer).
        crate::transport::busy_poll::peer_not_waiting(
            messages > 0 && !answer_awaited && starts_message && conn.shared.pending.count() == 0,
        );
        let step =
            read_step(&mut read, &mut buf, conn.shared.config.partial_message_timeout, &mut timers, &mut streaming);
        let step = match handlers.gate_watch() {
            Some((gate, watch)) => tokio::select! {
                biased;
                s = step => s,
                _ = std::future::poll_fn(|cx| watch.poll_held(gate, cx)) => continue,
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
                let reason = if conn.shared.state.is_closing() {
                    Error::CloseConnection
                } else {
                    Error::ConnectionLost("connection closed by peer".into())
                };
                conn.close_forcefully(reason);
                return;
            }
            Ok(n) => {
                let gap_ms = conn.shared.activity.touch_read();
                // A buffer with no room reads into the 64 bytes `BytesMut` reserves.
                streaming |= n >= room.max(64) || (starts_message && gap_ms < ACTIVE_GAP_MS);
            }
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
    /// The connection stayed idle with a large or streaming buffer, which was given back.
    IdleShrunk,
    /// A message started but the rest did not arrive within this limit.
    PartialTimeout(Duration),
}

/// Reads more bytes into `buf`. While a message is incomplete, more of it must arrive within
/// `partial_limit`; while the connection is idle with a buffer grown above `SHRINK_ABOVE` or
/// `streaming`, the buffer is given back after `SHRINK_WHEN_IDLE_FOR` and the connection is no
/// longer streaming. Reading into an empty buffer is cancel-safe, so giving up on such a read
/// loses no byte.
async fn read_step(
    read: &mut ReadHalf,
    buf: &mut BytesMut,
    partial_limit: Option<Duration>,
    timers: &mut ReadTimers,
    streaming: &mut bool,
) -> ReadStep {
    match (buf.is_empty(), partial_limit) {
        (false, Some(limit)) => match timers.partial.within(limit, read.read_buf(buf)).await {
            Some(r) => ReadStep::Read(r),
            None => ReadStep::PartialTimeout(limit),
        },
        (true, _) if buf.capacity() > SHRINK_ABOVE || *streaming => {
            match timers.idle.within(SHRINK_WHEN_IDLE_FOR, read.read_buf(buf)).await {
                Some(r) => ReadStep::Read(r),
                None => {
                    *buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
                    *streaming = false;
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
    idle: IdleTimer,
}

/// A timer for waits that may last somewhat longer than their limit: a wait gives up once
/// it has waited at least `limit`, and at most twice as long. Every read of a busy connection
/// waits under it, so a wait costs no clock read and no poll of the timer: the timer is
/// armed by the first wait, and when it fires during a later wait (reads completed
/// meanwhile) it is armed again for that wait, from the time it fired. A wait gives up only
/// on a timer armed during the wait itself.
#[derive(Default)]
struct IdleTimer {
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Waits begun so far, and the wait during which the timer was last armed.
    waits: u64,
    armed_during: u64,
    /// The waker the timer last registered: a poll with the same waker need not poll it
    /// again while it has not fired.
    registered: Option<std::task::Waker>,
}

impl IdleTimer {
    /// Runs `fut` to completion (`Some`), or gives up (`None`) after waiting between `limit`
    /// and twice `limit`. `fut` is polled before the timer, so a completed read is never lost
    /// to the timer.
    async fn within<F: Future>(&mut self, limit: Duration, fut: F) -> Option<F::Output> {
        let mut fut = std::pin::pin!(fut);
        self.waits += 1;
        let wait = self.waits;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                return Poll::Ready(Some(out));
            }
            let timer = match &mut self.timer {
                Some(timer) => {
                    if !timer.is_elapsed() && self.registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        return Poll::Pending;
                    }
                    timer
                }
                None => {
                    self.armed_during = wait;
                    self.timer.insert(Box::pin(crate::runtime::off_runtime_timer(|| tokio::time::sleep(limit))))
                }
            };
            // Outside the task's budget: a poll that tokio refused for want of budget would
            // leave no waker with the timer, and the polls skipped after it would never see
            // it fire.
            while Pin::new(&mut tokio::task::unconstrained(timer.as_mut())).poll(cx).is_ready() {
                if self.armed_during == wait {
                    return Poll::Ready(None);
                }
                // Armed for an earlier wait: this one has waited less than `limit` so far.
                timer.as_mut().reset(tokio::time::Instant::now() + limit);
                self.armed_during = wait;
            }
            self.registered = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
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
            let (timer, at) = self.timer.get_or_insert_with(|| {
                (Box::pin(crate::runtime::off_runtime_timer(|| tokio::time::sleep_until(deadline))), deadline)
            });
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

/// Routes one message; returns the reply of a request whose dispatch completed at once, for
/// the caller to write. Synchronous: the reader task's future holds no message or request
/// while it waits, which keeps it (and so every connection) small.
///
/// `completed` counts the replies that completed a call.
fn handle_message(
    conn: &Connection,
    msg: Message,
    handlers: &mut Handlers,
    completed: &mut u32,
) -> Result<Option<incoming::ReplyParts>> {
    if conn.shared.config.trace_protocol {
        trace!(target: "floe::protocol", "received {:?} ({} bytes)", msg.header.message_type, msg.header.size);
    }
    match msg.header.message_type {
        MessageType::Reply => {
            let reply = Reply::decode(msg.body)?;
            let id = reply.request_id;
            if conn.shared.pending.complete(reply) {
                *completed += 1;
            } else {
                debug!(target: "floe::protocol", "reply for unknown or abandoned request {id}");
            }
        }
        MessageType::Request => {
            // Ice ignores requests that arrive while closing; the client retries them.
            if !conn.shared.state.takes_requests() {
                return Ok(None);
            }
            let request = Request::decode(msg.body)?;
            return Ok(incoming::dispatch(conn, handlers, request, msg.header.compression));
        }
        MessageType::BatchRequest => {
            if !conn.shared.state.takes_requests() {
                return Ok(None);
            }
            incoming::dispatch_batch(conn, handlers, BatchRequests::new(msg.body)?)?;
        }
        MessageType::ValidateConnection => conn.shared.activity.heartbeat_received(),
        MessageType::CloseConnection => {
            // The peer has finished its dispatches and will ignore anything we send; requests
            // still waiting were not dispatched and may be retried.
            conn.close_forcefully(Error::CloseConnection);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn an_idle_connection_gives_back_its_large_read_buffer() {
        let (mut peer, ours) = tokio::io::duplex(64 * 1024);
        let mut read: ReadHalf = Box::new(ours);
        let mut buf = BytesMut::with_capacity(4 * SHRINK_ABOVE);
        assert!(matches!(
            read_step(&mut read, &mut buf, None, &mut ReadTimers::default(), &mut false).await,
            ReadStep::IdleShrunk
        ));
        assert!(buf.capacity() < SHRINK_ABOVE, "capacity {}", buf.capacity());
        // Bytes sent afterwards are read as usual.
        peer.write_all(b"abc").await.unwrap();
        assert!(matches!(
            read_step(&mut read, &mut buf, None, &mut ReadTimers::default(), &mut false).await,
            ReadStep::Read(Ok(3))
        ));
        assert_eq!(&buf[..], b"abc");
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_streaming_connection_gives_back_its_buffer_and_stops_streaming() {
        let (mut peer, ours) = tokio::io::duplex(64 * 1024);
        let mut read: ReadHalf = Box::new(ours);
        // A streaming connection's 8 KB buffer, below the size that is shrunk otherwise.
        let mut buf = BytesMut::with_capacity(STREAMING_READ_BUFFER);
        let mut streaming = true;
        let step = read_step(&mut read, &mut buf, None, &mut ReadTimers::default(), &mut streaming).await;
        assert!(matches!(step, ReadStep::IdleShrunk));
        assert!(!streaming, "an idle connection is no longer streaming");
        assert_eq!(buf.capacity(), INITIAL_READ_BUFFER);
        // The same buffer on a connection that is not streaming is kept while idle.
        let mut buf = BytesMut::with_capacity(STREAMING_READ_BUFFER);
        let writer = tokio::spawn(async move {
            tokio::time::sleep(SHRINK_WHEN_IDLE_FOR * 3).await;
            peer.write_all(b"ping").await.unwrap();
            peer
        });
        let step = read_step(&mut read, &mut buf, None, &mut ReadTimers::default(), &mut false).await;
        assert!(matches!(step, ReadStep::Read(Ok(4))), "{step:?}");
        assert!(buf.capacity() >= STREAMING_READ_BUFFER - 4);
        drop(writer.await.unwrap());
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
            read_step(&mut read, &mut buf, None, &mut ReadTimers::default(), &mut false).await,
            ReadStep::Read(Ok(100))
        ));
        assert!(buf.capacity() >= 4 * SHRINK_ABOVE - 100);
        drop(writer.await.unwrap());
        buf.clear();
        // A small buffer is never timed out while idle; end of stream is reported.
        let mut small = BytesMut::with_capacity(INITIAL_READ_BUFFER);
        assert!(matches!(
            read_step(&mut read, &mut small, None, &mut ReadTimers::default(), &mut false).await,
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
            matches!(read_step(&mut read, &mut buf, Some(limit), &mut ReadTimers::default(), &mut false).await, ReadStep::PartialTimeout(l) if l == limit)
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
    async fn an_idle_timer_gives_up_between_its_limit_and_twice_it() {
        let mut idle = IdleTimer::default();
        let limit = Duration::from_millis(200);
        // Waits shorter than the limit never give up, however long they go on together.
        for _ in 0..10 {
            assert_eq!(idle.within(limit, ready_after(Duration::from_millis(120))).await, Some(7));
        }
        let started = tokio::time::Instant::now();
        let gave_up = tokio::time::timeout(Duration::from_secs(10), idle.within(limit, std::future::pending::<u8>()));
        assert_eq!(gave_up.await, Ok(None));
        let waited = started.elapsed();
        assert!(waited >= limit && waited <= 2 * limit + Duration::from_millis(2), "waited {waited:?}");
        // A wait on a fresh timer gives up at its limit.
        let started = tokio::time::Instant::now();
        let mut fresh = IdleTimer::default();
        let gave_up = tokio::time::timeout(Duration::from_secs(10), fresh.within(limit, std::future::pending::<u8>()));
        assert_eq!(gave_up.await, Ok(None));
        assert!(started.elapsed() <= limit + Duration::from_millis(2), "waited {:?}", started.elapsed());
        // The timer serves again after giving up.
        assert_eq!(idle.within(limit, ready_after(Duration::from_millis(10))).await, Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_timer_armed_when_the_task_has_no_budget_left_still_fires() {
        // Ready items whose receiving uses up the task's budget.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u8>();
        for _ in 0..1000 {
            tx.send(1).unwrap();
        }
        let mut idle = IdleTimer::default();
        let limit = Duration::from_millis(200);
        let started = tokio::time::Instant::now();
        let mut wait = std::pin::pin!(idle.within(limit, std::future::pending::<u8>()));
        let mut first = true;
        let gave_up = std::future::poll_fn(|cx| {
            if std::mem::take(&mut first) {
                while tokio::task::coop::has_budget_remaining() {
                    let _ = rx.poll_recv(cx);
                }
            }
            wait.as_mut().poll(cx)
        });
        assert_eq!(tokio::time::timeout(Duration::from_secs(10), gave_up).await, Ok(None));
        assert!(started.elapsed() <= 2 * limit + Duration::from_millis(2), "waited {:?}", started.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_ready_future_wins_over_a_fired_idle_timer() {
        let mut idle = IdleTimer::default();
        let limit = Duration::from_millis(20);
        assert_eq!(idle.within(limit, ready_after(Duration::from_millis(5))).await, Some(7));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(idle.within(limit, std::future::ready(9u8)).await, Some(9));
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
            assert!(matches!(
                read_step(&mut read, &mut buf, Some(limit), &mut timers, &mut false).await,
                ReadStep::Read(Ok(10))
            ));
        }
        assert_eq!(buf.len(), 44);
        let _peer = writer.await.unwrap();
        assert!(matches!(
            read_step(&mut read, &mut buf, Some(limit), &mut timers, &mut false).await,
            ReadStep::PartialTimeout(_)
        ));
    }
}

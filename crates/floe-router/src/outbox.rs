//! Request buffering (`Glacier2.Client.Buffered`, `Glacier2.Server.Buffered`): the order in
//! which one session's requests of one direction are forwarded, and the `_ovrd` override.
//!
//! Buffered (the default): oneway requests are queued and sent one after the other by the
//! dispatch that found the queue idle; a request stays queued until the connection to its
//! server is established and the requests before it were sent, and meanwhile a newer oneway
//! request for the same target with the same non-empty `_ovrd` context value replaces it in
//! its place. A twoway request is sent after the requests queued before it, and its reply
//! is awaited on its own, so it holds nothing up.
//!
//! Unbuffered: every request takes its turn in the order it was read, and keeps it until it
//! was sent (oneway) or handed to its server's connection (twoway); nothing is replaced.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;

use floe::bytes::Bytes;
use floe::protocol::OperationMode;
use floe::{CompactString, Context, ObjectPrx};
use tokio::sync::oneshot;
use tracing::debug;

/// Requests a queue holds before the dispatches that add to it wait (each then holds one of
/// its connection's `Floe.MaxDispatchesPerConnection` dispatches).
pub const MAX_QUEUED: usize = 1000;

/// A oneway request waiting to be forwarded.
pub struct Pending {
    /// Where it goes (facet, encoding and oneway mode applied).
    pub target: ObjectPrx,
    /// The operation.
    pub operation: CompactString,
    /// The operation mode.
    pub mode: OperationMode,
    /// The context it is forwarded with.
    pub context: Option<Context>,
    /// The parameters' encapsulation body.
    pub params: Bytes,
    /// Its `_ovrd` value and target (as a string), when it has a non-empty one.
    pub ovrd: Option<(CompactString, String)>,
}

/// What the queue holds.
enum Entry {
    Oneway(Pending),
    /// A twoway request waiting for the oneway requests before it: told to go with a
    /// sender it answers once it started sending.
    Twoway(oneshot::Sender<oneshot::Sender<()>>),
}

#[derive(Default)]
struct State {
    /// A dispatch is sending the queue.
    busy: bool,
    queue: VecDeque<Entry>,
    /// Requests replaced by newer ones, for the logs and tests.
    overridden: u64,
}

/// One session's forwarding in one direction.
#[derive(Default)]
pub struct Outbox {
    /// Buffered mode's pause after each flush of the queue (`Glacier2.Client.SleepTime` /
    /// `Server.SleepTime`), while which requests gather in the queue (and replace each
    /// other); zero: none.
    pause: Duration,
    state: Mutex<State>,
    /// Signalled each time a request leaves a full queue.
    moved: tokio::sync::Notify,
    /// Unbuffered mode's turns, in the order requests were read (tokio's mutex is fair).
    turn: tokio::sync::Mutex<()>,
}

impl Outbox {
    /// An outbox that pauses for `pause` after each flush of its queue (buffered mode).
    pub fn with_pause(pause: Duration) -> Outbox {
        Outbox { pause, ..Outbox::default() }
    }

    /// Buffered mode: forwards a oneway request after those queued before it, or queues it
    /// (replacing a queued request with the same target and `_ovrd` value). The future must
    /// be polled once at once, in the order the requests were read.
    pub async fn oneway(&self, request: Pending) {
        let full = {
            let mut s = self.state.lock().expect("outbox");
            if s.busy {
                if let Some(ovrd) = &request.ovrd {
                    let same =
                        s.queue.iter_mut().find(|e| matches!(e, Entry::Oneway(p) if p.ovrd.as_ref() == Some(ovrd)));
                    if let Some(slot) = same {
                        *slot = Entry::Oneway(request);
                        s.overridden += 1;
                        return;
                    }
                }
                s.queue.push_back(Entry::Oneway(request));
                Some(s.queue.len() >= MAX_QUEUED)
            } else {
                s.busy = true;
                s.queue.push_back(Entry::Oneway(request));
                None
            }
        };
        match full {
            None => self.drain().await,
            Some(false) => {}
            // A full queue: this dispatch stays in progress until the queue moved on, so that
            // a client flooding a stalled server is stopped by its dispatch limit rather than
            // growing the queue.
            Some(true) => loop {
                let mut moved = pin!(self.moved.notified());
                moved.as_mut().enable();
                if self.state.lock().expect("outbox").queue.len() < MAX_QUEUED {
                    return;
                }
                moved.await;
            },
        }
    }

    /// Buffered mode: runs `forward` (a twoway request) once the oneway requests queued
    /// before it were sent; the queue goes on once `forward` was polled once, without
    /// waiting for the reply.
    pub async fn twoway<F: Future>(&self, forward: impl FnOnce() -> F) -> F::Output {
        let go = {
            let mut s = self.state.lock().expect("outbox");
            if s.busy {
                let (tx, rx) = oneshot::channel();
                s.queue.push_back(Entry::Twoway(tx));
                Some(rx)
            } else {
                None
            }
        };
        let Some(go) = go else { return forward().await };
        let started = go.await.ok();
        let mut fut = pin!(forward());
        let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
        if let Some(started) = started {
            let _ = started.send(());
        }
        match first {
            Poll::Ready(out) => out,
            Poll::Pending => fut.await,
        }
    }

    /// Unbuffered mode: runs `forward` in its turn, which a oneway request keeps until it was
    /// sent, and a twoway one until it was handed to the server's connection (or started
    /// waiting for it): its reply holds nothing up.
    pub async fn in_turn<F: Future>(&self, oneway: bool, forward: impl FnOnce() -> F) -> F::Output {
        let turn = self.turn.lock().await;
        if oneway {
            return forward().await;
        }
        let mut fut = pin!(forward());
        let first = std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
        drop(turn);
        match first {
            Poll::Ready(out) => out,
            Poll::Pending => fut.await,
        }
    }

    /// How many queued requests newer ones replaced.
    pub fn overridden(&self) -> u64 {
        self.state.lock().expect("outbox").overridden
    }

    /// Sends the queue, oldest first. A oneway request stays queued (and can be replaced)
    /// until the connection to its server is established. With a pause, once the queue is
    /// sent the queue stays busy for the pause (requests arriving meanwhile are queued), and
    /// is then sent again if anything came, as Glacier2's request queue thread sleeps after
    /// each flush.
    async fn drain(&self) {
        loop {
            let front = {
                let mut s = self.state.lock().expect("outbox");
                match s.queue.front() {
                    Some(Entry::Oneway(p)) => Some(Some(p.target.clone())),
                    Some(Entry::Twoway(_)) => Some(None),
                    None if self.pause.is_zero() => {
                        s.busy = false;
                        return;
                    }
                    None => None,
                }
            };
            let Some(front) = front else {
                // Flushed: pause, then send what came meanwhile, if anything.
                tokio::time::sleep(self.pause).await;
                let mut s = self.state.lock().expect("outbox");
                if s.queue.is_empty() {
                    s.busy = false;
                    return;
                }
                continue;
            };
            if let Some(target) = front {
                // Immediate when the proxy's connection is known; a failure shows when sending.
                let _ = target.ice_get_connection().await;
            }
            let next = {
                let mut s = self.state.lock().expect("outbox");
                let full = s.queue.len() >= MAX_QUEUED;
                let next = s.queue.pop_front();
                if full {
                    self.moved.notify_waiters();
                }
                next
            };
            match next {
                Some(Entry::Oneway(p)) => send_oneway(p).await,
                Some(Entry::Twoway(go)) => {
                    let (tx, rx) = oneshot::channel();
                    if go.send(tx).is_ok() {
                        let _ = rx.await;
                    }
                }
                None => {}
            }
        }
    }
}

async fn send_oneway(p: Pending) {
    let Pending { target, operation, mode, context, params, .. } = p;
    if let Err(e) = target.invoke_encoded(&operation, mode, context.as_ref(), &params).await {
        debug!(target: "floe::router", "forwarding {operation} failed: {e}");
    }
}

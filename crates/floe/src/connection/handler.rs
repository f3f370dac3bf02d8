//! How a connection hands over the requests it receives: the connection knows incoming
//! requests only through [`RequestHandler`], which an object adapter implements (and a closure
//! does, for tests and tools), and through the [`HoldGate`] a handler may pass in to stop the
//! connection from reading (an adapter's `hold`).

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;
use tokio::sync::Notify;

use super::Connection;
use crate::protocol::Request;
use crate::response::DispatchFuture;

/// What a connection does with the requests that arrive on it.
///
/// The connection's reader [binds](RequestHandler::bind) the handler to the connection when
/// it first needs it (and again after [`Connection::set_handler`] changes it), then starts each
/// request's dispatch through the bound handler and writes the response the future completes
/// with. Any `Fn(Request) -> DispatchFuture` closure is a handler.
pub trait RequestHandler: Any + Send + Sync + 'static {
    /// Prepares dispatching on `connection`; the result lives in the connection's reader.
    fn bind(self: Arc<Self>, connection: &Connection) -> Box<dyn BoundHandler>;

    /// The gate that stops the connection from reading while it is held, if any.
    fn gate(&self) -> Option<&HoldGate> {
        None
    }
}

/// A [`RequestHandler`] bound to one connection, owned by that connection's reader.
pub trait BoundHandler: Send {
    /// Starts the dispatch of a request (twoway when its id is not 0).
    fn dispatch(&mut self, request: Request) -> DispatchFuture;

    /// Starts the dispatch of a request of a batch (oneway). `same_target` is true when the
    /// batch decoder found the request's target (identity, facet, operation, mode) to be the
    /// previous request's, byte for byte.
    fn dispatch_batched(&mut self, request: Request, same_target: bool) -> DispatchFuture {
        let _ = same_target;
        self.dispatch(request)
    }

    /// A new batch starts: state kept from one request of a batch to the next is dropped.
    fn start_batch(&mut self) {}
}

impl<F> RequestHandler for F
where
    F: Fn(Request) -> DispatchFuture + Send + Sync + 'static,
{
    fn bind(self: Arc<Self>, _connection: &Connection) -> Box<dyn BoundHandler> {
        Box::new(BoundClosure(self))
    }
}

/// A closure handler bound to a connection.
struct BoundClosure<F>(Arc<F>);

impl<F> BoundHandler for BoundClosure<F>
where
    F: Fn(Request) -> DispatchFuture + Send + Sync + 'static,
{
    fn dispatch(&mut self, request: Request) -> DispatchFuture {
        (self.0)(request)
    }
}

/// Holds the connections that share it: while held they read nothing (so requests are neither
/// read nor dispatched, and peers' sends eventually block), as Ice's `ObjectAdapter::hold`
/// does. Opened for good, it never holds again and releases everyone waiting.
#[derive(Debug, Default)]
pub struct HoldGate {
    held: AtomicBool,
    open_for_good: AtomicBool,
    changed: Notify,
    /// The readers watching for a hold ([`HoldGate::watch`]), woken by each hold.
    watchers: Mutex<Vec<Weak<AtomicWaker>>>,
}

/// A reader's registration with a [`HoldGate`]: it learns of a hold while it waits for bytes
/// without registering anew for every read (a connection's reader polls it on every wait).
#[derive(Debug)]
pub(crate) struct HoldWatch(Arc<AtomicWaker>);

impl HoldWatch {
    /// Ready once `gate` (the gate this watch came from) is held; otherwise the task is woken
    /// by the next hold.
    pub(crate) fn poll_held(&self, gate: &HoldGate, cx: &mut Context<'_>) -> Poll<()> {
        if gate.is_held() {
            return Poll::Ready(());
        }
        self.0.register(cx.waker());
        // Held between the check and the registration: that hold's wake-up may have missed us.
        if gate.is_held() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl HoldGate {
    /// A gate that is not held.
    pub fn new() -> Self {
        HoldGate::default()
    }

    /// True while held.
    #[inline]
    pub fn is_held(&self) -> bool {
        self.held.load(Ordering::Acquire) && !self.open_for_good.load(Ordering::Acquire)
    }

    /// Holds: readers waiting for bytes stop waiting (their read is cancel-safe).
    pub fn hold(&self) {
        self.held.store(true, Ordering::Release);
        self.changed.notify_waiters();
        // Woken outside the list's lock.
        let watching: Vec<Arc<AtomicWaker>> =
            self.watchers.lock().expect("gate watchers").iter().filter_map(Weak::upgrade).collect();
        for w in watching {
            w.wake();
        }
    }

    /// Registers a watch for holds ([`HoldWatch::poll_held`]); it ends when dropped.
    pub(crate) fn watch(&self) -> HoldWatch {
        let waker = Arc::new(AtomicWaker::new());
        let mut watchers = self.watchers.lock().expect("gate watchers");
        // The watches of closed connections are dropped when the list would grow.
        if watchers.len() == watchers.capacity() {
            watchers.retain(|w| w.strong_count() > 0);
        }
        watchers.push(Arc::downgrade(&waker));
        HoldWatch(waker)
    }

    /// Releases: held readers go on. Returns whether it was held.
    pub fn release(&self) -> bool {
        let was = self.held.swap(false, Ordering::AcqRel);
        self.changed.notify_waiters();
        was
    }

    /// Releases for good (the adapter is deactivated): it never holds again.
    pub fn open_for_good(&self) {
        self.open_for_good.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Completes once the gate is held (at once if it is).
    pub async fn until_held(&self) {
        loop {
            // Registered before the check, so that a change in between is not missed.
            let changed = self.changed.notified();
            if self.is_held() {
                return;
            }
            changed.await;
        }
    }

    /// Completes once the gate is not held (at once if it is not).
    pub async fn until_released(&self) {
        loop {
            let changed = self.changed.notified();
            if !self.is_held() {
                return;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_gate_holds_and_releases_its_waiters() {
        let gate = Arc::new(HoldGate::new());
        gate.until_released().await;
        let held = tokio::spawn({
            let gate = gate.clone();
            async move { gate.until_held().await }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!held.is_finished());
        gate.hold();
        held.await.unwrap();
        let released = tokio::spawn({
            let gate = gate.clone();
            async move { gate.until_released().await }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!released.is_finished());
        assert!(gate.release());
        released.await.unwrap();
        assert!(!gate.release(), "not held any more");
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_learns_of_a_hold_while_its_task_waits() {
        let gate = Arc::new(HoldGate::new());
        let watched = tokio::spawn({
            let gate = gate.clone();
            async move {
                let watch = gate.watch();
                std::future::poll_fn(|cx| watch.poll_held(&gate, cx)).await;
            }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!watched.is_finished());
        gate.hold();
        tokio::time::timeout(Duration::from_secs(1), watched).await.expect("woken by the hold").unwrap();
        // Held already: ready at once.
        let watch = gate.watch();
        std::future::poll_fn(|cx| watch.poll_held(&gate, cx)).await;
    }

    #[test]
    fn the_watches_of_dropped_readers_do_not_pile_up() {
        let gate = HoldGate::new();
        let kept = gate.watch();
        for _ in 0..1000 {
            drop(gate.watch());
        }
        let watchers = gate.watchers.lock().unwrap();
        assert!(watchers.len() <= 16, "{} watches kept", watchers.len());
        assert!(watchers.iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(&kept.0))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_gate_opened_for_good_never_holds_again() {
        let gate = Arc::new(HoldGate::new());
        gate.hold();
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.until_released().await }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        gate.open_for_good();
        waiting.await.unwrap();
        gate.hold();
        assert!(!gate.is_held());
    }
}

//! How a connection hands over the requests it receives: the connection knows incoming
//! requests only through [`RequestHandler`], which an object adapter implements (and a closure
//! does, for tests and tools), and through the [`HoldGate`] a handler may pass in to stop the
//! connection from reading (an adapter's `hold`).

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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

//! A connection's life as one state machine: [`Phase`] moves only forward, from `Active` to
//! `Finished`, and the error that closed the connection is kept with it. The phase is one
//! atomic, changed only under the lock that keeps the reason, and every change wakes the one
//! `Notify` that waiters (a write that gives up on a forceful close, `Connection::wait_closed`)
//! wait on: no polling, and no flag or notify of its own per kind of wait. It costs a few dozen
//! bytes per connection, which matters at 100,000 connections.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::error::Error;

/// Where a connection is in its life. The order is the order of the phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Reading, writing and dispatching.
    Active = 0,
    /// A graceful close is coming: requests that arrive are not dispatched (the peer retries
    /// them elsewhere after the CloseConnection), everything else goes on.
    Draining = 1,
    /// Closing gracefully: the dispatches in progress finish, CloseConnection is sent, and the
    /// peer is expected to close its side.
    Closing = 2,
    /// Closed: nothing more is read or written, outstanding requests have failed with the
    /// reason; the writing side is being shut down.
    Closed = 3,
    /// Closed and the writing side shut down.
    Finished = 4,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Active,
            1 => Phase::Draining,
            2 => Phase::Closing,
            3 => Phase::Closed,
            _ => Phase::Finished,
        }
    }
}

/// A connection's close state (see the module's documentation).
#[derive(Debug)]
pub(crate) struct CloseState {
    /// The phase, written only under `reason`'s lock, read without it.
    phase: AtomicU8,
    /// Why the connection closed, from `Closed` on.
    reason: Mutex<Option<Box<Error>>>,
    /// Woken by every change of phase.
    changed: Notify,
}

impl Default for CloseState {
    fn default() -> Self {
        CloseState { phase: AtomicU8::new(Phase::Active as u8), reason: Mutex::new(None), changed: Notify::new() }
    }
}

impl CloseState {
    /// The current phase.
    #[inline]
    pub(crate) fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// True while requests that arrive are dispatched.
    #[inline]
    pub(crate) fn takes_requests(&self) -> bool {
        self.phase() == Phase::Active
    }

    /// True once closing gracefully or closed.
    #[inline]
    pub(crate) fn is_closing(&self) -> bool {
        self.phase() >= Phase::Closing
    }

    /// True once closed (nothing more is read or written).
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.phase() >= Phase::Closed
    }

    /// Moves to `to` if that is forward from the current phase (and, for `Finished`, only from
    /// `Closed`); `reason` is kept when moving to `Closed`. Returns whether it moved.
    fn advance(&self, to: Phase, reason: Option<Error>) -> bool {
        {
            let mut kept = self.reason.lock().expect("close state lock");
            let now = self.phase();
            let allowed = match to {
                Phase::Finished => now == Phase::Closed,
                _ => now < to,
            };
            if !allowed {
                return false;
            }
            if to == Phase::Closed {
                *kept = reason.map(Box::new);
            }
            self.phase.store(to as u8, Ordering::Release);
        }
        self.changed.notify_waiters();
        true
    }

    /// Active → Draining.
    pub(crate) fn drain(&self) -> bool {
        self.advance(Phase::Draining, None)
    }

    /// Active or Draining → Closing: true for the caller that starts the graceful close.
    pub(crate) fn start_closing(&self) -> bool {
        self.advance(Phase::Closing, None)
    }

    /// Any phase before Closed → Closed with `reason`: true for the caller that closed it.
    pub(crate) fn close(&self, reason: Error) -> bool {
        self.advance(Phase::Closed, Some(reason))
    }

    /// Closed → Finished, once the writing side is shut down.
    pub(crate) fn finish(&self) {
        self.advance(Phase::Finished, None);
    }

    /// Why the connection closed (`None` before it has).
    pub(crate) fn reason(&self) -> Option<Error> {
        self.reason.lock().expect("close state lock").as_deref().cloned()
    }

    /// Completes once the phase is `phase` or later.
    pub(crate) async fn reached(&self, phase: Phase) {
        loop {
            // Registered before the check, so that a change in between is not missed.
            let changed = self.changed.notified();
            if self.phase() >= phase {
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

    #[test]
    fn phases_only_move_forward() {
        let s = CloseState::default();
        assert_eq!(s.phase(), Phase::Active);
        assert!(s.takes_requests());
        assert!(s.drain());
        assert!(!s.takes_requests() && !s.is_closing());
        assert!(!s.drain(), "already draining");
        assert!(s.start_closing());
        assert!(!s.start_closing(), "one caller starts the graceful close");
        assert!(s.is_closing() && !s.is_closed());
        assert!(s.reason().is_none());
        assert!(s.close(Error::CloseConnection));
        assert!(!s.close(Error::ConnectionLost("later".into())), "the first reason is kept");
        assert!(matches!(s.reason(), Some(Error::CloseConnection)));
        assert!(!s.drain() && !s.start_closing(), "no way back");
        s.finish();
        assert_eq!(s.phase(), Phase::Finished);
    }

    #[test]
    fn finishing_needs_a_close_first() {
        let s = CloseState::default();
        s.finish();
        assert_eq!(s.phase(), Phase::Active);
        assert!(s.close(Error::ConnectionLost("x".into())));
        s.finish();
        assert_eq!(s.phase(), Phase::Finished);
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_wake_when_their_phase_is_reached() {
        let s = std::sync::Arc::new(CloseState::default());
        let closed = tokio::spawn({
            let s = s.clone();
            async move { s.reached(Phase::Closed).await }
        });
        let finished = tokio::spawn({
            let s = s.clone();
            async move { s.reached(Phase::Finished).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(s.start_closing());
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!closed.is_finished(), "closing is not closed");
        s.close(Error::CloseConnection);
        closed.await.unwrap();
        assert!(!finished.is_finished());
        s.finish();
        finished.await.unwrap();
        // Reached already: at once.
        s.reached(Phase::Draining).await;
    }
}

//! Write coalescing: what a connection's reader tells the writes its thread makes next, so
//! that the messages a batch of received messages gives rise to go out together.
//!
//! When one read brings several messages, each usually causes a write: a router forwards each
//! request of the batch to a server, and each reply of a batch wakes a caller that answers its
//! own client or sends its next request. Written one by one, that is a system call (and, on
//! the peer, a wake-up) per message. Instead, while the reader knows more is coming, small
//! writes join the connection's queue of small messages, and the last write of the batch takes
//! the queue along in one system call; a flush task writes whatever is left (for instance what
//! was queued for another connection) as soon as the tasks already scheduled have run.
//!
//! Two hints, both of the current thread:
//! - [`more_follows`]: set by a reader while it dispatches a request after which its buffer
//!   holds another complete message: a write made by that dispatch is queued.
//! - [`expect_writes`]: after a batch whose replies completed `n` calls, the next `n - 1`
//!   small writes of the thread are queued and the `n`-th is written at once with the queue
//!   (the callers woken by the replies usually write once each); batches read before their
//!   callers ran add their counts.
//!
//! A lone message sets neither, so a call in a loop writes at once as before. The threads of
//! floe's one-thread runtimes (and of a runtime given `busy_poll::install`) forget the hints
//! when they run out of work ([`reset`]). On such a thread whose callers write from threads of
//! their own (`Communicator::block_on` from other threads), the added counts are only used up
//! by the thread's own small writes, which are then queued (a task hop each) until it next
//! runs out of work.

use std::cell::Cell;

thread_local! {
    static MORE_FOLLOWS: Cell<bool> = const { Cell::new(false) };
    static EXPECTED: Cell<u32> = const { Cell::new(0) };
    /// Set on a thread whose runtime forgets the hints when it runs out of work ([`reset`]).
    static RESETS_AT_PARK: Cell<bool> = const { Cell::new(false) };
}

/// The most writes expected at once on a thread whose counts add up: a bound on what callers
/// that did not write (a caller's last call, callers on other threads) leave behind until the
/// thread next runs out of work.
const MAX_EXPECTED: u32 = 4096;

/// Sets whether another received message follows the one being dispatched on this thread.
pub(crate) fn more_follows(yes: bool) {
    MORE_FOLLOWS.with(|m| m.set(yes));
}

/// The callers that `n` replies just completed are expected to write once each.
///
/// On a thread whose runtime forgets the hints at each park (floe's own one-thread runtimes),
/// the counts of batches read before those callers ran add up, to at most [`MAX_EXPECTED`]: a
/// reader that reads 21 replies and then 79 more before any of their 100 callers writes
/// expects 100 writes, not 79 (which would leave the last 21 to go out one system call each).
/// Elsewhere (a multi-thread runtime, whose callers may run on other threads and which never
/// forgets) the larger count is kept, so that what callers leave behind stays bounded by one
/// batch.
pub(crate) fn expect_writes(n: u32) {
    EXPECTED.with(|e| {
        let expected = e.get();
        if RESETS_AT_PARK.with(Cell::get) {
            if n >= 2 || (n == 1 && expected > 0) {
                e.set(expected.saturating_add(n).min(MAX_EXPECTED));
            }
        } else if n >= 2 {
            e.set(expected.max(n));
        }
    });
}

/// Whether a small write about to be made on this thread should join its connection's queue
/// rather than be written at once; counts the write against [`expect_writes`].
pub(crate) fn should_queue() -> bool {
    if MORE_FOLLOWS.with(Cell::get) {
        return true;
    }
    EXPECTED.with(|e| match e.get() {
        0 => false,
        1 => {
            e.set(0);
            false
        }
        n => {
            e.set(n - 1);
            true
        }
    })
}

/// Forgets the hints (the thread ran out of work: nothing more of the batch is coming). Called
/// by a runtime's park hook, which marks the thread as one whose counts may add up.
pub(crate) fn reset() {
    MORE_FOLLOWS.with(|m| m.set(false));
    EXPECTED.with(|e| e.set(0));
    RESETS_AT_PARK.with(|r| r.set(true));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_write_is_never_queued() {
        reset();
        assert!(!should_queue());
        expect_writes(1);
        assert!(!should_queue());
    }

    #[test]
    fn the_writes_a_batch_of_replies_causes_are_queued_but_the_last() {
        reset();
        expect_writes(3);
        assert_eq!([should_queue(), should_queue(), should_queue(), should_queue()], [true, true, false, false]);
    }

    #[test]
    fn the_counts_of_batches_read_before_their_callers_ran_add_up() {
        reset();
        expect_writes(2);
        expect_writes(1);
        expect_writes(3);
        let queued: Vec<bool> = (0..7).map(|_| should_queue()).collect();
        assert_eq!(queued, [true, true, true, true, true, false, false]);
    }

    #[test]
    fn without_resets_at_park_the_larger_count_is_kept() {
        std::thread::spawn(|| {
            expect_writes(2);
            expect_writes(3);
            let queued: Vec<bool> = (0..4).map(|_| should_queue()).collect();
            assert_eq!(queued, [true, true, false, false]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn added_counts_stop_at_the_bound() {
        reset();
        for _ in 0..10 {
            expect_writes(1000);
        }
        assert_eq!(EXPECTED.with(Cell::get), MAX_EXPECTED);
        reset();
    }

    #[test]
    fn writes_are_queued_while_more_messages_follow() {
        reset();
        more_follows(true);
        assert!(should_queue() && should_queue());
        more_follows(false);
        assert!(!should_queue());
    }

    #[test]
    fn reset_forgets_both_hints() {
        expect_writes(5);
        more_follows(true);
        reset();
        assert!(!should_queue());
    }
}

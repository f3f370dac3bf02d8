//! Active connection management: Ice 3.7 ACM heartbeats and idle closing, which also covers
//! Ice 3.8's idle timeout (a heartbeat whenever nothing was written for a while, an abort when
//! nothing was heard for the timeout) and its inactivity timeout (a graceful close once no
//! request or reply went either way for a while).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::{Connection, Shared};
use crate::error::Error;

/// When a connection last read and wrote (milliseconds since its epoch), and how many
/// heartbeats it received: what the ACM monitor looks at.
pub(super) struct Activity {
    epoch: Instant,
    /// The epoch on the coarse clock ([`coarse_now_ms`]), which times reads and writes.
    epoch_ms: u64,
    last_read_ms: AtomicU64,
    last_write_ms: AtomicU64,
    heartbeats_received: AtomicU64,
    /// A heartbeat of the sweeper's is being written.
    heartbeat_in_flight: std::sync::atomic::AtomicBool,
    /// The last read that held a request or a reply (the reader copies `last_read_ms`).
    last_call_read_ms: AtomicU64,
    /// The last write of a request or a reply known before the latest heartbeat was written.
    last_call_write_ms: AtomicU64,
    /// When the latest heartbeat was written (`last_write_ms` right after it).
    last_heartbeat_write_ms: AtomicU64,
    /// [`Connection::disable_inactivity_check`](super::Connection::disable_inactivity_check)
    /// was called.
    inactivity_check_off: std::sync::atomic::AtomicBool,
}

impl Activity {
    pub(super) fn new(epoch: Instant) -> Self {
        Activity {
            epoch,
            epoch_ms: coarse_now_ms(),
            last_read_ms: AtomicU64::new(0),
            last_write_ms: AtomicU64::new(0),
            heartbeats_received: AtomicU64::new(0),
            heartbeat_in_flight: std::sync::atomic::AtomicBool::new(false),
            last_call_read_ms: AtomicU64::new(0),
            last_call_write_ms: AtomicU64::new(0),
            last_heartbeat_write_ms: AtomicU64::new(u64::MAX),
            inactivity_check_off: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The read just recorded held a request or a reply: a load and a store, no clock.
    #[inline]
    pub(super) fn call_read(&self) {
        self.last_call_read_ms.store(self.last_read_ms.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// A heartbeat is about to be written: every write since the previous heartbeat carried
    /// requests or replies, so the latest of them is kept.
    pub(super) fn heartbeat_writing(&self) {
        let last = self.last_write_ms.load(Ordering::Relaxed);
        if last != self.last_heartbeat_write_ms.load(Ordering::Relaxed) {
            self.last_call_write_ms.store(last, Ordering::Relaxed);
        }
    }

    /// A heartbeat was written.
    pub(super) fn heartbeat_written(&self) {
        self.last_heartbeat_write_ms.store(self.last_write_ms.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// When a request or a reply was last read or written (milliseconds since the epoch).
    fn last_call_ms(&self) -> u64 {
        let last_write = self.last_write_ms.load(Ordering::Relaxed);
        let write = if last_write == self.last_heartbeat_write_ms.load(Ordering::Relaxed) {
            self.last_call_write_ms.load(Ordering::Relaxed)
        } else {
            last_write
        };
        write.max(self.last_call_read_ms.load(Ordering::Relaxed))
    }

    pub(super) fn disable_inactivity_check(&self) {
        self.inactivity_check_off.store(true, Ordering::Relaxed);
    }

    /// Microseconds since the connection's epoch.
    pub(super) fn micros_since_epoch(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// Records a read; returns the milliseconds since the read before. Only the connection's
    /// reader records reads (and the connection once, before its reader starts), so a load and
    /// a store do: no read-modify-write on every read.
    pub(super) fn touch_read(&self) -> u64 {
        let now = self.coarse_ms_since_epoch();
        let before = self.last_read_ms.load(Ordering::Relaxed);
        self.last_read_ms.store(now, Ordering::Relaxed);
        now.saturating_sub(before)
    }

    pub(super) fn touch_write(&self) {
        self.last_write_ms.store(self.coarse_ms_since_epoch(), Ordering::Relaxed);
    }

    /// Milliseconds since the connection's epoch, by the coarse clock.
    fn coarse_ms_since_epoch(&self) -> u64 {
        coarse_now_ms().saturating_sub(self.epoch_ms)
    }

    pub(super) fn heartbeat_received(&self) {
        self.heartbeats_received.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn heartbeats_received(&self) -> u64 {
        self.heartbeats_received.load(Ordering::Relaxed)
    }
}

/// Milliseconds on a coarse monotonic clock: on Linux `CLOCK_MONOTONIC_COARSE`, which the vDSO
/// answers from the kernel's last tick without reading the hardware clock (a few nanoseconds,
/// against tens for the precise clock on a virtual machine), at the tick's resolution (1–10 ms).
/// Reads and writes are timed on it, every one of them, for ACM and for telling a streaming
/// connection from an idle one, which both count in milliseconds or more.
fn coarse_now_ms() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec for clock_gettime to write; the clock id is a
        // constant the kernel knows.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } == 0 {
            return ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000;
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// When to send heartbeats (`Ice.ACM.Heartbeat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcmHeartbeat {
    /// Never (0).
    Off,
    /// Only while requests are being dispatched (1, Ice 3.7's default).
    OnDispatch,
    /// When nothing was written for a quarter of the timeout (2; also Ice 3.8's idle timeout,
    /// which asks for one after half of it).
    OnIdle,
    /// Always, every quarter of the timeout (3; what Ice 3.8's idle timeout needs).
    Always,
}

/// When to close (`Ice.ACM.Close`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcmClose {
    /// Never (0).
    Off,
    /// Gracefully, once idle for the timeout (1).
    OnIdle,
    /// Forcefully, when invocations are outstanding and nothing was heard for the timeout (2;
    /// servers' default).
    OnInvocation,
    /// Both of the above (3; clients' default).
    OnInvocationAndIdle,
    /// Forcefully, once nothing was heard for the timeout (4; also Ice 3.8's idle check).
    OnIdleForceful,
}

/// ACM settings of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcmConfig {
    /// The ACM timeout (`Ice.ACM.Timeout`, 60 s by default); zero disables ACM.
    pub timeout: Duration,
    /// Heartbeat policy.
    pub heartbeat: AcmHeartbeat,
    /// Close policy.
    pub close: AcmClose,
}

impl Default for AcmConfig {
    fn default() -> Self {
        AcmConfig {
            timeout: Duration::from_secs(60),
            heartbeat: AcmHeartbeat::OnDispatch,
            close: AcmClose::OnInvocation,
        }
    }
}

impl AcmConfig {
    /// Ice 3.8's idle timeout (zero: none): a heartbeat when nothing was written for a while
    /// and, with `idle_check`, an abort when nothing was heard for the timeout.
    pub fn idle_timeout(timeout: Duration, idle_check: bool) -> Self {
        AcmConfig {
            timeout,
            heartbeat: AcmHeartbeat::OnIdle,
            close: if idle_check { AcmClose::OnIdleForceful } else { AcmClose::Off },
        }
    }

    /// True when the monitor has anything to do.
    pub fn is_enabled(&self) -> bool {
        !self.timeout.is_zero() && (self.heartbeat != AcmHeartbeat::Off || self.close != AcmClose::Off)
    }

    /// Maps Ice's integer property values.
    pub fn from_ints(timeout_secs: i64, heartbeat: i64, close: i64) -> Self {
        AcmConfig {
            timeout: Duration::from_secs(timeout_secs.max(0) as u64),
            heartbeat: match heartbeat {
                0 => AcmHeartbeat::Off,
                2 => AcmHeartbeat::OnIdle,
                3 => AcmHeartbeat::Always,
                _ => AcmHeartbeat::OnDispatch,
            },
            close: match close {
                0 => AcmClose::Off,
                1 => AcmClose::OnIdle,
                3 => AcmClose::OnInvocationAndIdle,
                4 => AcmClose::OnIdleForceful,
                _ => AcmClose::OnInvocation,
            },
        }
    }
}

/// Watches the ACM of every connection made with one configuration (an adapter's, or a
/// communicator's outgoing ones) from one task: every quarter of the timeout it checks each of
/// them, sending heartbeats and closing silent or idle connections as their policy says. A
/// connection costs a slot here instead of a task and a timer of its own, and nothing wakes up
/// per connection; the task runs while connections are registered, on the runtime of the
/// first of them (should that runtime stop, the next registration starts it again).
///
/// A clone of a configuration gets a sweeper of its own: it may have another timeout, and the
/// sweeper ticks at the timeout of the connection that started it. Connections that share a
/// configuration share it through an `Arc`, and so share its sweeper.
#[derive(Default)]
pub(crate) struct AcmSweeper(Arc<Mutex<Sweep>>);

impl Clone for AcmSweeper {
    fn clone(&self) -> Self {
        AcmSweeper::default()
    }
}

impl std::fmt::Debug for AcmSweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcmSweeper").finish_non_exhaustive()
    }
}

/// The connections a sweeper watches: a slab of weak references.
#[derive(Default)]
struct Sweep {
    slots: Vec<Option<Weak<Shared>>>,
    free: Vec<usize>,
    live: usize,
    running: bool,
}

impl AcmSweeper {
    /// Starts watching `shared` (whose ACM is enabled); returns its slot, for
    /// [`unregister`](Self::unregister).
    pub(super) fn register(&self, shared: &Arc<Shared>) -> usize {
        let mut sweep = self.0.lock().expect("acm lock");
        let slot = match sweep.free.pop() {
            Some(slot) => slot,
            None => {
                sweep.slots.push(None);
                sweep.slots.len() - 1
            }
        };
        sweep.slots[slot] = Some(Arc::downgrade(shared));
        sweep.live += 1;
        if !sweep.running {
            sweep.running = true;
            tokio::spawn(run(Arc::downgrade(&self.0), shared.config.acm));
        }
        slot
    }

    /// Stops watching the connection in `slot`.
    pub(super) fn unregister(&self, slot: usize) {
        let mut sweep = self.0.lock().expect("acm lock");
        if sweep.slots.get_mut(slot).and_then(Option::take).is_some() {
            sweep.free.push(slot);
            sweep.live -= 1;
        }
    }
}

/// The sweeper's task: checks its connections every quarter of `acm`'s timeout, and ends once
/// none is left (the next registration starts it again).
async fn run(sweep: Weak<Mutex<Sweep>>, acm: AcmConfig) {
    // Should the task be dropped with its runtime, the next registration starts it again.
    let mut running = NotRunningOnDrop { sweep: sweep.clone(), armed: true };
    let period = (acm.timeout / 4).max(Duration::from_millis(10));
    let mut tick = crate::runtime::off_runtime_timer(|| tokio::time::interval(period));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(sweep) = sweep.upgrade() else { return };
        // Taken out of the lock first: checking may close a connection, which unregisters it.
        let connections: Vec<Arc<Shared>> = {
            let mut s = sweep.lock().expect("acm lock");
            if s.live == 0 {
                // Under the lock that registrations take: one that comes next starts a task.
                s.running = false;
                running.armed = false;
                return;
            }
            s.slots.iter().flatten().filter_map(Weak::upgrade).collect()
        };
        drop(sweep);
        for shared in connections {
            check(Connection { shared });
        }
    }
}

/// Marks the sweeper as stopped when its task is dropped with its runtime (a task that ends
/// because no connection is left does so itself, under the lock, and disarms this).
struct NotRunningOnDrop {
    sweep: Weak<Mutex<Sweep>>,
    armed: bool,
}

impl Drop for NotRunningOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(sweep) = self.sweep.upgrade() {
            if let Ok(mut s) = sweep.lock() {
                s.running = false;
            }
        }
    }
}

/// Clears a connection's heartbeat-in-flight mark when its heartbeat task ends or is dropped.
struct HeartbeatInFlight(Connection);

impl Drop for HeartbeatInFlight {
    fn drop(&mut self) {
        self.0.shared.activity.heartbeat_in_flight.store(false, Ordering::Release);
    }
}

/// One ACM check of a connection: a heartbeat when the policy asks for one, a close when it
/// has been silent or idle too long. Writing and closing gracefully continue as tasks of their
/// own, so that one slow peer does not hold up the others.
fn check(conn: Connection) {
    let acm = conn.shared.config.acm;
    if conn.shared.state.is_closed() || !acm.is_enabled() {
        return;
    }
    let activity = &conn.shared.activity;
    let now = Duration::from_millis(activity.coarse_ms_since_epoch());
    let last_read = Duration::from_millis(activity.last_read_ms.load(Ordering::Relaxed));
    let last_write = Duration::from_millis(activity.last_write_ms.load(Ordering::Relaxed));
    // Silence: nothing heard from the peer. Idle: nothing sent or heard.
    let silent = now.saturating_sub(last_read);
    let idle = now.saturating_sub(last_read.max(last_write));
    let unwritten = now.saturating_sub(last_write);
    let dispatching = conn.dispatch_count() > 0;
    let outstanding = conn.pending_count() > 0;
    if let Some(inactivity) = conn.shared.config.inactivity_timeout {
        let quiet = now.saturating_sub(Duration::from_millis(activity.last_call_ms()));
        // A connection already closing is left to its close (one close per connection).
        if quiet >= inactivity
            && !conn.is_closed()
            && !dispatching
            && !outstanding
            && !activity.inactivity_check_off.load(Ordering::Relaxed)
            && conn.shared.oneways.is_empty()
        {
            tracing::debug!(target: "floe::network", "closing a connection inactive for {quiet:?}\n{}", conn.shared.description);
            tokio::spawn(async move { conn.close().await });
            return;
        }
    }
    if silent >= acm.timeout {
        let forceful = acm.close == AcmClose::OnIdleForceful
            || (acm.close != AcmClose::OnIdle && acm.close != AcmClose::Off && outstanding);
        if forceful {
            conn.close_forcefully(Error::ConnectionLost(format!("no activity for {:?} (ACM)", acm.timeout)));
            return;
        }
        if matches!(acm.close, AcmClose::OnIdle | AcmClose::OnInvocationAndIdle)
            && idle >= acm.timeout
            && !dispatching
            && !outstanding
        {
            tokio::spawn(async move { conn.close().await });
            return;
        }
    }
    // The sweeper ticks every quarter timeout, so a connection that wrote its last heartbeat
    // just after one tick has written nothing for a little less than a quarter at the next:
    // a sixteenth of slack (against a coarse clock and a late tick) keeps a heartbeat on every
    // tick instead of every other one.
    let due = unwritten + acm.timeout / 16 >= acm.timeout / 4;
    let send = match acm.heartbeat {
        AcmHeartbeat::Off => false,
        AcmHeartbeat::Always => true,
        AcmHeartbeat::OnDispatch => dispatching && due,
        AcmHeartbeat::OnIdle => due,
    };
    // A held adapter's connections stay silent, as with Ice. One heartbeat at a time: on a
    // peer that stops reading, a heartbeat waits for the writer, and a new one every tick
    // would pile up behind it.
    if send && !conn.is_held() && !activity.heartbeat_in_flight.swap(true, Ordering::AcqRel) {
        tokio::spawn(async move {
            let in_flight = HeartbeatInFlight(conn);
            let _ = in_flight.0.heartbeat().await;
        });
    }
}

#[cfg(test)]
mod sweeper_tests {
    use super::*;
    use crate::connection::ConnectionConfig;
    use crate::transport::TransportStream;

    fn live(config: &ConnectionConfig) -> usize {
        config.acm_sweeper.0.lock().expect("acm lock").live
    }

    #[test]
    fn a_clone_of_a_configuration_has_a_sweeper_of_its_own() {
        let config = ConnectionConfig::default();
        let clone = config.clone();
        assert!(!Arc::ptr_eq(&config.acm_sweeper.0, &clone.acm_sweeper.0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_that_close_at_once_leave_the_sweeper() {
        // The peer is gone before the connection starts: its reader closes it as soon as it
        // runs, possibly on the other worker while the connection is still being started.
        let config = Arc::new(ConnectionConfig::default());
        for _ in 0..300 {
            let (ours, peer) = tokio::io::duplex(1024);
            drop(peer);
            let conn = Connection::over_stream(TransportStream::from_io(ours, "gone"), config.clone(), None);
            tokio::time::timeout(Duration::from_secs(5), conn.wait_closed()).await.expect("closed");
        }
        assert_eq!(live(&config), 0, "closed connections are still watched");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn heartbeats_to_a_peer_that_does_not_read_do_not_pile_up() {
        // A heartbeat every 10 ms to a peer whose pipe holds 16 bytes and that never reads:
        // the second heartbeat waits for room, and every later tick must not add another.
        let acm =
            AcmConfig { timeout: Duration::from_millis(40), heartbeat: AcmHeartbeat::Always, close: AcmClose::Off };
        let config = Arc::new(ConnectionConfig { acm, ..ConnectionConfig::default() });
        let (ours, _peer) = tokio::io::duplex(16);
        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.num_alive_tasks();
        let conn = Connection::over_stream(TransportStream::from_io(ours, "deaf"), config, None);
        tokio::time::sleep(Duration::from_millis(400)).await;
        // The reader, the sweeper and at most one heartbeat (and a heartbeat just ending).
        let alive = metrics.num_alive_tasks() - before;
        assert!(alive <= 4, "{alive} tasks after 40 sweeps");
        conn.close_forcefully(Error::ConnectionLost("test".into()));
    }
}

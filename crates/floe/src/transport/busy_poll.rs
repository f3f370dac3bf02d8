//! Busy polling: a runtime thread that runs out of work first watches its busiest connections
//! for a few microseconds before it goes to sleep.
//!
//! Where waking a sleeping thread is expensive — on a virtual machine whose idle CPUs halt, a
//! wake-up costs tens of microseconds — most of a loopback round trip is that wake-up, on both
//! sides. A connection that has just exchanged a message usually hears from its peer again
//! within microseconds: the next request of a client in a loop, the reply of a server that
//! answers at once. So when a current-thread runtime that floe started finds no task to run,
//! it first asks the kernel, with non-blocking `poll(2)` calls, whether the connections whose
//! readers went waiting since the thread last slept have data, and wakes the reader of each
//! one that has. A reader woken that way reads from its socket at once instead of waiting for
//! the socket's epoll event, which on Linux can come several microseconds after the data is
//! readable (waiting for it would bring most of the sleep back).
//!
//! What it may cost is bounded:
//! - a spin lasts at most the budget (`Floe.Runtime.BusyPoll`, in microseconds; 0 turns
//!   busy polling off), and ends as soon as a watched connection has data or a task is
//!   scheduled on the runtime from another thread;
//! - only connections whose readers started waiting during the last few busy periods are
//!   watched ([`WATCH_PERIODS`], at most [`MAX_WATCHED`] connections), so idle connections
//!   cost nothing; a connection waited on for a reply while another was served (a dispatch
//!   that calls another server, a router forwarding a request) is among them, and one whose
//!   peer last sent only oneway requests or batches is not (`peer_not_waiting`);
//! - a busy period in which the thread wrote part of a large write (64 KiB or more: a large
//!   message, or many queued small ones) ends with a spin of at most [`LARGE_WRITE_BUDGET`]:
//!   its peer needs a CPU to read those bytes before it can answer, so a long spin would only
//!   take that CPU from it (a router forwarding a 500 kB request to a server on the same two
//!   CPUs);
//! - a spin that found nothing makes the thread skip the next 1, 2, 4, … up to 64 spins, and a
//!   spin that found data resets that, so a peer that answers slowly is soon waited for by
//!   sleeping alone;
//! - a spin starts only while the machine has a CPU to spare: when more threads of any process
//!   are runnable than there are CPUs (the kernel's count in `/proc/loadavg`, read at most once
//!   a millisecond per process), the thread sleeps at once, so a floe program does not spin
//!   while another program (the Ice client beside a floe server, a build) waits for a CPU;
//! - between two polls the thread yields its CPU (`sched_yield`) to any thread that wants it,
//!   and a yield after which another thread had run (it took 5 µs or more) ends the spin as
//!   one that found nothing: where more threads want the CPUs than there are, spinning soon
//!   gives way to sleeping. A spin that started while the machine had a CPU to spare rides out
//!   the first such yield and ends at the second: the thread that ran is most often the very
//!   peer this one waits for, woken on this CPU by the message it was sent, which answers in a
//!   few microseconds and sleeps again (a client, a router and a server on two CPUs); a thread
//!   that keeps wanting the CPU meets the second yield at once.
//!
//! Only current-thread runtimes busy-poll (a communicator with `Floe.Runtime.Threads=1`, or a
//! runtime built with [`install`]): a task woken here must run on this very thread.

use std::cell::RefCell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

/// The budget a communicator's own single-thread runtime spins for unless
/// `Floe.Runtime.BusyPoll` says otherwise: about twice what a sleep and wake-up cost on the
/// virtual machines floe is measured on.
pub const DEFAULT_BUDGET: Duration = Duration::from_micros(50);

/// The most connections one spin watches: those whose readers went waiting most recently.
pub const MAX_WATCHED: usize = 16;

/// How many busy periods (the work between two parks) a reader that went waiting is watched
/// for. Not only the last one: a thread that reads a request from one connection and then
/// waits for a reply on another (a dispatch that calls a server, a router forwarding, a
/// callback) must watch the second, whose reader went waiting in an earlier period.
pub const WATCH_PERIODS: u64 = 8;

/// A `sched_yield` that takes this long let another thread run on this CPU.
const CONTENDED: Duration = Duration::from_micros(5);

/// The most spins skipped after spins that found nothing.
const MAX_SKIPPED: u32 = 64;

/// The misses in a row that make the most spins skipped (`2^(MAX_MISSES-1) = MAX_SKIPPED`).
const MAX_MISSES: u32 = 7;

/// What one thread's spins came to (see [`Stats`]). Each thread counts in its own, written by
/// that thread alone and aligned to a cache line of its own, so that counting moves no cache
/// line between the CPUs of a process whose threads all busy-poll.
#[repr(align(128))]
struct Counters {
    spins: AtomicU64,
    found: AtomicU64,
    skipped: AtomicU64,
    contended: AtomicU64,
    machine_busy: AtomicU64,
}

impl Counters {
    const fn new() -> Self {
        Counters {
            spins: AtomicU64::new(0),
            found: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            machine_busy: AtomicU64::new(0),
        }
    }

    fn snapshot(&self) -> Stats {
        Stats {
            spins: self.spins.load(Ordering::Relaxed),
            found: self.found.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            contended: self.contended.load(Ordering::Relaxed),
            machine_busy: self.machine_busy.load(Ordering::Relaxed),
        }
    }

    /// Adds `counts` (those of a thread that ended).
    fn add(&self, counts: Stats) {
        self.spins.fetch_add(counts.spins, Ordering::Relaxed);
        self.found.fetch_add(counts.found, Ordering::Relaxed);
        self.skipped.fetch_add(counts.skipped, Ordering::Relaxed);
        self.contended.fetch_add(counts.contended, Ordering::Relaxed);
        self.machine_busy.fetch_add(counts.machine_busy, Ordering::Relaxed);
    }
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, other: Stats) {
        self.spins += other.spins;
        self.found += other.found;
        self.skipped += other.skipped;
        self.contended += other.contended;
        self.machine_busy += other.machine_busy;
    }
}

/// Counts one more in a counter only its own thread writes (a plain load and store: no locked
/// instruction).
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// The counters of the threads that busy-poll now.
static LIVE_COUNTERS: std::sync::Mutex<Vec<Arc<Counters>>> = std::sync::Mutex::new(Vec::new());

/// What the threads that have ended counted.
static RETIRED_COUNTERS: Counters = Counters::new();

/// How often a process reads the kernel's count of runnable threads, at most.
const RUNNABLE_CHECK_EVERY: Duration = Duration::from_millis(1);

/// What busy polling did in this process so far, over all of its threads: a way to see
/// whether the budget suits a program's traffic (most spins should find data).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Spins made.
    pub spins: u64,
    /// Spins that ended because a watched connection had data.
    pub found: u64,
    /// Spins skipped because recent ones found nothing.
    pub skipped: u64,
    /// Spins that ended because another thread wanted the CPU.
    pub contended: u64,
    /// Spins not made because more threads were runnable than there are CPUs.
    pub machine_busy: u64,
}

/// What busy polling did in this process so far.
pub fn stats() -> Stats {
    let mut total = Stats::default();
    // Under the lock: a thread that ends moves its counts to the retired ones under it too.
    let live = LIVE_COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
    total += RETIRED_COUNTERS.snapshot();
    for counters in live.iter() {
        total += counters.snapshot();
    }
    total
}

/// What a reader and the thread that watches its socket share: set when the socket was seen
/// readable by a spin, so that the reader reads without waiting for the epoll event.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    readable: AtomicBool,
}

impl Watch {
    /// Whether a spin found the socket readable since the last call (and forgets it).
    pub(crate) fn take_readable(&self) -> bool {
        // A plain load first: the usual answer is no, and a load costs less than a swap.
        self.readable.load(Ordering::Relaxed) && self.readable.swap(false, Ordering::Relaxed)
    }

    /// Marks the socket as seen readable, as a spin does.
    #[cfg(test)]
    pub(crate) fn mark_readable(&self) {
        self.readable.store(true, Ordering::Relaxed);
    }
}

/// A reader waiting for its socket.
struct Waiter {
    fd: RawFd,
    waker: Waker,
    watch: Arc<Watch>,
    /// The thread's busy period in which the reader last went waiting.
    period: u64,
}

/// When a thread may spin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sharing {
    /// Only while the machine has a CPU to spare (no more runnable threads than CPUs): the
    /// default, which does not spin while another thread or program waits for a CPU (by a
    /// count at most a millisecond old).
    #[default]
    SpareCpuOnly,
    /// Whatever else wants the CPUs (the yields within a spin still give way on this CPU): for
    /// a program that has CPUs of its own, e.g. isolated ones, where the machine-wide count of
    /// runnable threads says nothing about them.
    Always,
}

/// One runtime thread's busy-polling state.
struct ThreadState {
    /// How long a spin may last; zero until the thread's first park (and when turned off).
    budget: Duration,
    /// When the thread may spin.
    sharing: Sharing,
    /// The runtime's metrics, to see tasks scheduled from other threads.
    metrics: Option<tokio::runtime::RuntimeMetrics>,
    /// Readers that went waiting in the last [`WATCH_PERIODS`] busy periods.
    waiters: Vec<Waiter>,
    /// The current busy period: parks so far.
    period: u64,
    /// The `poll(2)` array, kept to reuse its memory.
    fds: Vec<libc::pollfd>,
    /// Spins in a row that found nothing.
    misses: u32,
    /// Spins still to skip.
    skip: u32,
    /// This thread's counts, made on its first park that counts.
    counters: Option<Arc<Counters>>,
}

impl ThreadState {
    /// This thread's counters, registered for [`stats`] on first use.
    fn counters(&mut self) -> &Counters {
        self.counters.get_or_insert_with(|| {
            let counters = Arc::new(Counters::new());
            LIVE_COUNTERS.lock().unwrap_or_else(|e| e.into_inner()).push(counters.clone());
            counters
        })
    }
}

/// A thread that ends leaves its counts to the retired ones.
impl Drop for ThreadState {
    fn drop(&mut self) {
        let Some(mine) = self.counters.take() else { return };
        let mut live = LIVE_COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|c| !Arc::ptr_eq(c, &mine));
        RETIRED_COUNTERS.add(mine.snapshot());
    }
}

thread_local! {
    static STATE: RefCell<ThreadState> = const {
        RefCell::new(ThreadState {
            budget: Duration::ZERO,
            sharing: Sharing::SpareCpuOnly,
            metrics: None,
            waiters: Vec::new(),
            period: 0,
            fds: Vec::new(),
            misses: 0,
            skip: 0,
            counters: None,
        })
    };
}

/// Makes a current-thread runtime busy-poll for up to `budget` before each sleep. floe's own
/// single-thread runtimes do this already; this is for a runtime a program builds itself and
/// makes communicators in. A multi-thread runtime must not be given this hook.
pub fn install(builder: &mut tokio::runtime::Builder, budget: Duration) -> &mut tokio::runtime::Builder {
    install_with(builder, budget, Sharing::default())
}

/// [`install`], spinning as `sharing` allows.
pub fn install_with(
    builder: &mut tokio::runtime::Builder,
    budget: Duration,
    sharing: Sharing,
) -> &mut tokio::runtime::Builder {
    builder.on_thread_park(move || before_park_with(budget, sharing))
}

/// A write this large or larger makes the spin that ends its busy period short
/// ([`LARGE_WRITE_BUDGET`]).
pub(crate) const LARGE_WRITE: usize = 64 * 1024;

/// The longest spin after a busy period in which the thread wrote part of a write of 64 KiB or
/// more, whatever the budget.
pub const LARGE_WRITE_BUDGET: Duration = Duration::from_micros(50);

thread_local! {
    /// Set when this thread wrote part of a large message in its current busy period.
    static WROTE_LARGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tells this thread that it wrote part of a write of [`LARGE_WRITE`] bytes or more in its
/// current busy period.
pub(crate) fn wrote_large() {
    WROTE_LARGE.with(|w| w.set(true));
}

thread_local! {
    /// Set by a connection's reader whose last messages were all oneway requests or batches:
    /// the next read on this thread that waits is not watched (see [`peer_not_waiting`]).
    static PEER_NOT_WAITING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tells the read that a connection's reader starts next on this thread whether its peer waits
/// for an answer. A peer that only sent oneway requests and batches waits for nothing, so the
/// read is not watched when it finds nothing: a stream of oneways is read when epoll reports
/// it, in larger pieces and without a thread polling the socket while the peer writes to it,
/// which made an Ice client's oneways 4–10% slower. Twoway requests, replies, everything
/// else, and a reply of the peer awaited on the connection keep the read watched.
pub(crate) fn peer_not_waiting(not_waiting: bool) {
    PEER_NOT_WAITING.with(|p| p.set(not_waiting));
}

/// Whether the read starting now may go unwatched ([`peer_not_waiting`]); forgets it, so that
/// it holds for one read only.
pub(crate) fn take_peer_not_waiting() -> bool {
    PEER_NOT_WAITING.with(|p| p.replace(false))
}

/// Called by a reader whose socket `fd` has nothing to read and that now waits with `waker`:
/// the next spin of this thread (if it busy-polls) watches the socket. `watch` is made on the
/// first call.
pub(crate) fn watch(fd: RawFd, watch: &mut Option<Arc<Watch>>, waker: &Waker) {
    STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        if s.budget.is_zero() {
            return;
        }
        let shared = watch.get_or_insert_with(Arc::default);
        let period = s.period;
        if let Some(w) = s.waiters.iter_mut().find(|w| w.fd == fd) {
            if !w.waker.will_wake(waker) {
                w.waker = waker.clone();
            }
            // The same descriptor with another reader: one closed and its number reused.
            if !Arc::ptr_eq(&w.watch, shared) {
                w.watch = shared.clone();
            }
            w.period = period;
        } else {
            let waiter = Waiter { fd, waker: waker.clone(), watch: shared.clone(), period };
            if s.waiters.len() < MAX_WATCHED {
                s.waiters.push(waiter);
            } else if let Some(oldest) = s.waiters.iter_mut().min_by_key(|w| w.period) {
                // Full: the reader that went waiting longest ago makes room.
                *oldest = waiter;
            }
        }
    });
}

/// [`before_park_with`] on the default sharing.
#[cfg(test)]
fn before_park(budget: Duration) {
    before_park_with(budget, Sharing::SpareCpuOnly)
}

/// The runtime's `on_thread_park` hook: spins (as `sharing` allows) for up to `budget` while
/// a watched socket has nothing to read, and wakes the readers of those that have.
fn before_park_with(budget: Duration, sharing: Sharing) {
    // Out of work: no more writes of the last batch are coming.
    super::coalesce::reset();
    STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        s.budget = budget;
        s.sharing = sharing;
        if s.metrics.is_none() {
            s.metrics = tokio::runtime::Handle::try_current().ok().map(|h| h.metrics());
        }
        spin(&mut s);
    });
}

/// After a spin that found nothing: one miss more, and the next `2^(misses-1)` spins (at most
/// [`MAX_SKIPPED`]) skipped.
fn back_off(misses: &mut u32, skip: &mut u32) {
    *misses = (*misses + 1).min(MAX_MISSES);
    *skip = (1u32 << (*misses - 1)).min(MAX_SKIPPED);
}

/// One spin over the waiting readers; wakes those whose sockets are readable. (Waking only
/// schedules their tasks, which run after the hook returns; nothing here is re-entered.)
fn spin(s: &mut ThreadState) {
    // The busy period that ends here; readers that went waiting in the last few are watched.
    let period = s.period;
    s.period += 1;
    s.waiters.retain(|w| period - w.period < WATCH_PERIODS);
    let wrote_large = WROTE_LARGE.with(|w| w.replace(false));
    if s.waiters.is_empty() || s.budget.is_zero() {
        return;
    }
    if s.skip > 0 {
        s.skip -= 1;
        bump(&s.counters().skipped);
        return;
    }
    if s.sharing == Sharing::SpareCpuOnly && !cpu_to_spare() {
        // Another thread waits for a CPU: sleep now rather than take its time.
        bump(&s.counters().machine_busy);
        return;
    }
    bump(&s.counters().spins);
    let ThreadState { budget, metrics, waiters, fds, misses, skip, counters, sharing, .. } = s;
    let counters = counters.as_deref().expect("made above");
    fds.clear();
    fds.extend(waiters.iter().map(|w| libc::pollfd { fd: w.fd, events: libc::POLLIN, revents: 0 }));
    let budget = if wrote_large { (*budget).min(LARGE_WRITE_BUDGET) } else { *budget };
    if budget.is_zero() {
        return;
    }
    let deadline = Instant::now() + budget;
    // Whether the first contended yield is ridden out (see the module's doc): a thread that
    // spins only with a CPU to spare has just found one.
    let mut ride_out = *sharing == Sharing::SpareCpuOnly || cpu_to_spare();
    loop {
        // SAFETY: `fds` is an initialised array of `fds.len()` pollfd structures that poll(2)
        // may write `revents` into; a zero timeout never blocks.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if n > 0 {
            // Readers of readable sockets are woken and forgotten (they are watched again when
            // they next wait); closed descriptors (POLLNVAL) are forgotten.
            let readable = libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLRDHUP;
            let mut found = false;
            let mut polled = fds.iter();
            waiters.retain(|w| {
                let revents = polled.next().map_or(0, |fd| fd.revents);
                if revents & readable != 0 {
                    w.watch.readable.store(true, Ordering::Relaxed);
                    w.waker.wake_by_ref();
                    found = true;
                }
                revents == 0
            });
            if found {
                *misses = 0;
                bump(&counters.found);
            }
            break;
        }
        if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
        if metrics.as_ref().is_some_and(|m| m.global_queue_depth() > 0) {
            // Work from another thread: run it now; the readers are still woken by epoll.
            break;
        }
        if Instant::now() >= deadline {
            back_off(misses, skip);
            break;
        }
        if yield_was_contended() {
            if std::mem::take(&mut ride_out) {
                // Most often the peer this thread waits for, which has run and is answering.
                continue;
            }
            // Another thread ran on this CPU meanwhile, again: the spin takes time it needs.
            // Sleep instead, and count a miss: spins that keep meeting other threads soon
            // give way to sleeping alone.
            back_off(misses, skip);
            bump(&counters.contended);
            break;
        }
    }
}

/// What this process knows of the machine's load: `/proc/loadavg` kept open, the CPUs this
/// process may use, and when (nanoseconds after `epoch`) the count was last read.
struct Load {
    loadavg: Option<std::fs::File>,
    cpus: usize,
    epoch: Instant,
    checked_at: AtomicU64,
    spare: AtomicBool,
}

static LOAD: OnceLock<Load> = OnceLock::new();

/// Whether the machine has a CPU to spare: no more runnable threads (this one included) than
/// CPUs, by the kernel's instantaneous count, read at most once per
/// [`RUNNABLE_CHECK_EVERY`] for the whole process. Where the count cannot be read, every spin
/// is allowed (the yields in the spin still give way to other threads).
fn cpu_to_spare() -> bool {
    #[cfg(test)]
    if let Some(forced) = tests::FORCED_SPARE.with(|f| f.get()) {
        return forced;
    }
    let load = LOAD.get_or_init(|| Load {
        loadavg: std::fs::File::open("/proc/loadavg").ok(),
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        epoch: Instant::now(),
        checked_at: AtomicU64::new(0),
        spare: AtomicBool::new(true),
    });
    let Some(file) = &load.loadavg else { return true };
    let now = load.epoch.elapsed().as_nanos() as u64;
    let last = load.checked_at.load(Ordering::Relaxed);
    // One thread refreshes; the others use the answer it last stored.
    if (last == 0 || now.saturating_sub(last) >= RUNNABLE_CHECK_EVERY.as_nanos() as u64)
        && load.checked_at.compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed).is_ok()
    {
        if let Some(runnable) = runnable_threads(file) {
            load.spare.store(runnable <= load.cpus, Ordering::Relaxed);
        }
    }
    load.spare.load(Ordering::Relaxed)
}

/// The kernel's count of runnable threads: the numerator of the fourth field of
/// `/proc/loadavg` (`0.50 0.40 0.30 3/245 4321`).
fn runnable_threads(file: &std::fs::File) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 128];
    let n = file.read_at(&mut buf, 0).ok()?;
    parse_runnable(&buf[..n])
}

/// The runnable count of a `/proc/loadavg` line.
fn parse_runnable(line: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(line).ok()?;
    let field = text.split_ascii_whitespace().nth(3)?;
    field.split_once('/')?.0.parse().ok()
}

/// Yields this thread's CPU; true when another thread ran meanwhile.
fn yield_was_contended() -> bool {
    #[cfg(test)]
    if let Some(answer) = tests::YIELDS.with(|y| y.borrow_mut().as_mut().map(|f| f())) {
        return answer;
    }
    let yielded_at = Instant::now();
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
    yielded_at.elapsed() >= CONTENDED
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    thread_local! {
        /// What `cpu_to_spare` answers on this thread, when set: the spin tests run beside
        /// other tests, which may keep every CPU busy.
        pub(super) static FORCED_SPARE: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
        /// What `yield_was_contended` does on this thread instead of yielding, when set: it
        /// plays another thread running during the yield.
        #[allow(clippy::type_complexity)]
        pub(super) static YIELDS: RefCell<Option<Box<dyn FnMut() -> bool>>> = const { RefCell::new(None) };
    }

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn state_with(budget: Duration) {
        FORCED_SPARE.with(|f| f.set(Some(true)));
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.budget = budget;
            s.waiters.clear();
            s.misses = 0;
            s.skip = 0;
        });
    }

    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        (a, b)
    }

    #[test]
    fn a_readable_socket_wakes_its_reader_and_marks_its_watch() {
        state_with(Duration::from_millis(50));
        let (mut a, b) = pair();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &waker);
        a.write_all(b"x").unwrap();
        let started = Instant::now();
        before_park(Duration::from_millis(50));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(started.elapsed() < Duration::from_millis(50), "the spin ends at the data");
        let shared = shared.expect("a watch is made on the first call");
        assert!(shared.take_readable());
        assert!(!shared.take_readable(), "taking forgets it");
        STATE.with(|s| assert!(s.borrow().waiters.is_empty(), "a spin forgets its waiters"));
    }

    #[test]
    fn a_spin_on_a_quiet_socket_ends_as_a_miss() {
        state_with(Duration::from_millis(2));
        let (_a, b) = pair();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &Waker::from(counter.clone()));
        let started = Instant::now();
        before_park(Duration::from_millis(2));
        assert!(started.elapsed() < Duration::from_secs(1), "a spin ends at its budget");
        STATE.with(|s| {
            let s = s.borrow();
            // At its budget, or earlier when another thread wanted this CPU.
            assert!(s.misses >= 1 && s.skip >= 1, "{} misses, {} to skip", s.misses, s.skip);
            assert_eq!(s.waiters.len(), 1, "a quiet socket stays watched for the next periods");
        });
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
        assert!(!shared.unwrap().take_readable());
    }

    #[test]
    fn a_period_that_wrote_a_large_message_spins_briefly_and_the_next_one_fully() {
        state_with(Duration::from_secs(2));
        WROTE_LARGE.with(|w| w.set(false));
        let (_a, b) = pair();
        let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &waker);
        wrote_large();
        let started = Instant::now();
        before_park(Duration::from_secs(2));
        // LARGE_WRITE_BUDGET (50 µs), with room for a descheduled test thread.
        assert!(started.elapsed() < Duration::from_millis(500), "a 2 s budget was cut short: {:?}", started.elapsed());
        assert!(!WROTE_LARGE.with(|w| w.get()), "the mark holds for one busy period");
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            assert_eq!(s.misses, 1, "a short spin that found nothing is a miss");
            s.skip = 0;
        });
        // The next period wrote nothing large: the spin may last its whole budget, and ends at
        // the data.
        let (mut a2, b2) = pair();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared2 = None;
        watch(b2.as_raw_fd(), &mut shared2, &Waker::from(counter.clone()));
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            a2.write_all(b"x").unwrap();
            a2
        });
        let contended = stats_of_this_thread_contended();
        before_park(Duration::from_secs(2));
        let _a2 = writer.join().unwrap();
        // Unless a contended yield ended the spin first (then epoll wakes the reader).
        if stats_of_this_thread_contended() == contended {
            assert_eq!(counter.0.load(Ordering::SeqCst), 1, "a full-budget spin saw data 5 ms in");
        }
    }

    /// Spins of this thread that ended because another thread wanted its CPU.
    fn stats_of_this_thread_contended() -> u64 {
        STATE.with(|s| s.borrow().counters.as_ref().map_or(0, |c| c.contended.load(Ordering::Relaxed)))
    }

    #[test]
    fn a_busy_machine_makes_no_spin() {
        state_with(Duration::from_millis(50));
        FORCED_SPARE.with(|f| f.set(Some(false)));
        let (mut a, b) = pair();
        a.write_all(b"x").unwrap();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &Waker::from(counter.clone()));
        let busy = stats().machine_busy;
        before_park(Duration::from_millis(50));
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "no spin, no wake-up: epoll wakes the reader");
        assert!(stats().machine_busy > busy);
        STATE.with(|s| {
            let s = s.borrow();
            assert_eq!(s.waiters.len(), 1, "the waiter stays for the next periods");
            assert_eq!((s.misses, s.skip), (0, 0), "declining is not a miss");
        });
    }

    #[test]
    fn the_runnable_count_is_read_from_loadavg() {
        assert_eq!(parse_runnable(b"0.50 0.40 0.30 3/245 4321\n"), Some(3));
        assert_eq!(parse_runnable(b"12.01 9.00 8.00 17/1024 99999\n"), Some(17));
        assert_eq!(parse_runnable(b"0.50 0.40 0.30\n"), None);
        assert_eq!(parse_runnable(b"0.50 0.40 0.30 x/245 1\n"), None);
        assert_eq!(parse_runnable(b"\xff\xfe"), None);
        // This very machine's file parses, and counts this thread.
        let file = std::fs::File::open("/proc/loadavg").expect("/proc/loadavg");
        assert!(runnable_threads(&file).is_some_and(|n| n >= 1));
    }

    #[test]
    fn more_runnable_threads_than_cpus_leave_no_cpu_to_spare() {
        // One spinning thread more than there are CPUs: the kernel counts them all runnable.
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let stop = AtomicBool::new(false);
        let seen_busy = std::thread::scope(|scope| {
            for _ in 0..=cpus {
                scope.spawn(|| {
                    let deadline = Instant::now() + Duration::from_secs(5);
                    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                        std::hint::spin_loop();
                    }
                });
            }
            let deadline = Instant::now() + Duration::from_secs(3);
            let mut seen = false;
            while Instant::now() < deadline {
                if !cpu_to_spare() {
                    seen = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            stop.store(true, Ordering::Relaxed);
            seen
        });
        assert!(seen_busy, "{} spinning threads on {cpus} CPUs left a CPU to spare", cpus + 1);
    }

    #[test]
    fn misses_in_a_row_skip_twice_as_many_spins_each_up_to_64() {
        let (mut misses, mut skip) = (0, 0);
        let mut seen = Vec::new();
        for _ in 0..8 {
            back_off(&mut misses, &mut skip);
            seen.push((misses, skip));
        }
        assert_eq!(seen, [(1, 1), (2, 2), (3, 4), (4, 8), (5, 16), (6, 32), (7, 64), (7, 64)]);
    }

    #[test]
    fn a_skipped_spin_watches_nothing_and_counts_down() {
        state_with(Duration::from_millis(50));
        STATE.with(|s| s.borrow_mut().skip = 3);
        let (mut a, b) = pair();
        a.write_all(b"x").unwrap();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &Waker::from(counter.clone()));
        let skipped = stats().skipped;
        before_park(Duration::from_millis(50));
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "a skipped spin wakes nobody");
        assert!(stats().skipped > skipped);
        STATE.with(|s| {
            let s = s.borrow();
            assert_eq!(s.skip, 2);
            assert_eq!(s.waiters.len(), 1, "the waiter stays for the next periods");
        });
    }

    #[test]
    fn the_counts_of_a_thread_that_ended_stay_in_the_process_stats() {
        let retired_before = RETIRED_COUNTERS.snapshot().skipped;
        let before = stats().skipped;
        let (counted_there, theirs) = std::thread::spawn(|| {
            state_with(Duration::from_millis(50));
            STATE.with(|s| s.borrow_mut().skip = 5);
            let (_a, b) = pair();
            let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
            let mut shared = None;
            watch(b.as_raw_fd(), &mut shared, &Waker::from(counter.clone()));
            for _ in 0..3 {
                before_park(Duration::from_millis(50));
            }
            STATE.with(|s| {
                let counters = s.borrow().counters.clone().expect("counted");
                (counters.skipped.load(Ordering::Relaxed), counters)
            })
        })
        .join()
        .unwrap();
        assert_eq!(counted_there, 3, "the thread counted its three skipped spins");
        assert!(
            !LIVE_COUNTERS.lock().unwrap().iter().any(|c| Arc::ptr_eq(c, &theirs)),
            "an ended thread's counters leave the live list"
        );
        // Other threads may end meanwhile and add theirs: at least these three were added.
        assert!(RETIRED_COUNTERS.snapshot().skipped >= retired_before + 3, "its counts were retired");
        assert!(stats().skipped >= before + 3, "and are still in the process's stats");
    }

    #[test]
    fn a_reader_that_went_waiting_in_an_earlier_period_is_still_watched() {
        // A thread serves a request on one connection and waits for a reply on another whose
        // reader went waiting before: the next spin watches that one too.
        state_with(Duration::from_millis(50));
        let (mut a, b) = pair();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &Waker::from(counter.clone()));
        STATE.with(|s| s.borrow_mut().skip = 1);
        before_park(Duration::from_millis(50)); // skipped: the waiter stays
        a.write_all(b"x").unwrap();
        before_park(Duration::from_millis(50));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "the earlier waiter was watched and woken");
        assert!(shared.unwrap().take_readable());
        STATE.with(|s| assert!(s.borrow().waiters.is_empty(), "a woken reader is forgotten until it waits again"));
    }

    #[test]
    fn a_waiter_is_forgotten_after_the_watch_periods() {
        state_with(Duration::from_millis(50));
        let (_a, b) = pair();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &Waker::from(counter.clone()));
        for _ in 0..WATCH_PERIODS {
            STATE.with(|s| s.borrow_mut().skip = 1);
            before_park(Duration::from_millis(50));
        }
        STATE.with(|s| assert_eq!(s.borrow().waiters.len(), 1, "watched for {WATCH_PERIODS} periods"));
        before_park(Duration::from_millis(50));
        STATE.with(|s| assert!(s.borrow().waiters.is_empty(), "forgotten after {WATCH_PERIODS} periods"));
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_full_watch_list_makes_room_for_the_newest_reader() {
        state_with(Duration::from_millis(50));
        let pairs: Vec<_> = (0..=MAX_WATCHED).map(|_| pair()).collect();
        let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
        let mut shared: Vec<Option<Arc<Watch>>> = vec![None; pairs.len()];
        for (k, (_, b)) in pairs.iter().enumerate() {
            watch(b.as_raw_fd(), &mut shared[k], &waker);
            if k == 0 {
                // The first goes waiting a period before the others.
                STATE.with(|s| s.borrow_mut().period += 1);
            }
        }
        STATE.with(|s| {
            let s = s.borrow();
            assert_eq!(s.waiters.len(), MAX_WATCHED);
            assert!(!s.waiters.iter().any(|w| w.fd == pairs[0].1.as_raw_fd()), "the oldest made room");
            assert!(s.waiters.iter().any(|w| w.fd == pairs[MAX_WATCHED].1.as_raw_fd()), "the newest is watched");
        });
    }

    #[test]
    fn a_spin_that_finds_data_resets_the_skipping() {
        state_with(Duration::from_millis(5));
        let (mut a, b) = pair();
        let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &waker);
        before_park(Duration::from_millis(5)); // miss: skip the next one
        STATE.with(|s| s.borrow_mut().skip = 0);
        a.write_all(b"x").unwrap();
        watch(b.as_raw_fd(), &mut shared, &waker);
        before_park(Duration::from_millis(5));
        STATE.with(|s| {
            let s = s.borrow();
            assert_eq!((s.misses, s.skip), (0, 0));
        });
    }

    /// The first CPU this process may run on.
    fn first_allowed_cpu() -> usize {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, which sched_getaffinity fills.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
            (0..libc::CPU_SETSIZE as usize).find(|&cpu| libc::CPU_ISSET(cpu, &set)).expect("a CPU")
        }
    }

    /// Runs `f` on a thread of its own pinned to `cpu`.
    fn pinned_to<T: Send>(cpu: usize, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and
                    // sched_setaffinity only read and write that set.
                    let pinned = unsafe {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
                    };
                    assert_eq!(pinned, 0, "pinned to CPU {cpu}");
                    f()
                })
                .join()
                .unwrap()
        })
    }

    #[test]
    fn a_spin_that_yields_to_another_thread_on_its_cpu_ends_as_a_miss() {
        let stop = AtomicBool::new(false);
        let cpu = first_allowed_cpu();
        std::thread::scope(|scope| {
            // A thread that wants the CPU for up to a second.
            scope.spawn(|| {
                pinned_to(cpu, || {
                    let started = Instant::now();
                    while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(1) {
                        std::hint::spin_loop();
                    }
                })
            });
            let (after, took) = pinned_to(cpu, || {
                state_with(Duration::from_millis(500));
                let (_a, b) = pair();
                let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
                let mut shared = None;
                watch(b.as_raw_fd(), &mut shared, &waker);
                let contended = stats_of_this_thread_contended();
                let started = Instant::now();
                before_park(Duration::from_millis(500));
                assert!(stats_of_this_thread_contended() > contended, "the spin counted as contended");
                (STATE.with(|s| (s.borrow().misses, s.borrow().skip)), started.elapsed())
            });
            stop.store(true, Ordering::Relaxed);
            assert_eq!(after, (1, 1), "a miss: the next spin is skipped");
            assert!(took < Duration::from_millis(500), "the spin ended at the second contended yield: {took:?}");
        });
    }

    /// What one spin played by [`spin_with_yields`] came to.
    struct Played {
        yields: usize,
        woken: usize,
        misses: u32,
        skip: u32,
        contended: u64,
        took: Duration,
    }

    /// One spin of `budget` over the receiving end of a socket pair, on a machine with a CPU to
    /// spare or not, each yield played by `on_yield` (given the sending end and the watched
    /// one; true: another thread ran meanwhile) instead of yielding.
    fn spin_with_yields(
        spare: bool,
        sharing: Sharing,
        budget: Duration,
        mut on_yield: impl FnMut(&std::net::TcpStream, &std::net::TcpStream) -> bool + 'static,
    ) -> Played {
        state_with(budget);
        FORCED_SPARE.with(|f| f.set(Some(spare)));
        let (a, b) = pair();
        let woken = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &waker);
        let yields = Arc::new(AtomicUsize::new(0));
        let counted = yields.clone();
        YIELDS.with(|y| {
            *y.borrow_mut() = Some(Box::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                on_yield(&a, &b)
            }))
        });
        let contended = stats_of_this_thread_contended();
        let started = Instant::now();
        before_park_with(budget, sharing);
        let took = started.elapsed();
        YIELDS.with(|y| y.borrow_mut().take());
        let (misses, skip) = STATE.with(|s| (s.borrow().misses, s.borrow().skip));
        Played {
            yields: yields.load(Ordering::SeqCst),
            woken: woken.0.load(Ordering::SeqCst),
            misses,
            skip,
            contended: stats_of_this_thread_contended() - contended,
            took,
        }
    }

    #[test]
    fn a_spin_rides_out_one_yield_to_a_peer_that_then_answers() {
        // The first yield lets the peer run (it took long), and the peer answers meanwhile:
        // the spin, started with a CPU to spare, goes on past that yield and finds the data.
        let mut answered = false;
        let played = spin_with_yields(true, Sharing::SpareCpuOnly, Duration::from_millis(500), move |a, b| {
            if std::mem::replace(&mut answered, true) {
                return false;
            }
            (&*a).write_all(b"x").unwrap();
            // Until the bytes are readable: the peer has answered before it sleeps.
            let mut fd = libc::pollfd { fd: b.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one initialised pollfd; poll writes only its revents.
            unsafe { libc::poll(&mut fd, 1, 1000) };
            true
        });
        assert_eq!((played.woken, played.misses), (1, 0), "the spin found the peer's answer");
        assert_eq!(played.yields, 1);
    }

    #[test]
    fn a_spin_without_a_cpu_to_spare_ends_at_the_first_contended_yield() {
        // A thread that spins whatever the load (floe-router's) on a machine with no CPU to
        // spare gives way at once: the thread that ran may be anyone's.
        let played = spin_with_yields(false, Sharing::Always, Duration::from_secs(2), |_, _| true);
        assert_eq!((played.yields, played.misses), (1, 1));
    }

    #[test]
    fn a_spin_regardless_of_load_with_a_cpu_to_spare_rides_out_one_yield() {
        // A thread that spins whatever the load (floe-router's), when the machine has a CPU
        // to spare, rides out the first contended yield as others do.
        let played = spin_with_yields(true, Sharing::Always, Duration::from_secs(2), |_, _| true);
        assert_eq!((played.yields, played.misses), (2, 1));
    }

    #[test]
    fn a_spin_that_meets_other_threads_twice_ends_as_a_miss() {
        // Every yield lets another thread run: the first is ridden out, the second ends the
        // spin as a miss (long before its budget), counted as contended.
        let played = spin_with_yields(true, Sharing::SpareCpuOnly, Duration::from_secs(2), |_, _| true);
        assert!(played.took < Duration::from_secs(1));
        assert_eq!((played.yields, played.misses, played.skip, played.contended), (2, 1, 1, 1));
    }

    #[test]
    fn a_thread_that_does_not_busy_poll_watches_nothing() {
        state_with(Duration::ZERO);
        let (_a, b) = pair();
        let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &waker);
        assert!(shared.is_none());
        STATE.with(|s| assert!(s.borrow().waiters.is_empty()));
    }

    #[test]
    fn a_reader_that_waits_again_is_watched_once_with_its_latest_waker() {
        state_with(Duration::from_millis(50));
        let (mut a, b) = pair();
        let first = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let second = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut shared = None;
        watch(b.as_raw_fd(), &mut shared, &Waker::from(first.clone()));
        watch(b.as_raw_fd(), &mut shared, &Waker::from(second.clone()));
        STATE.with(|s| assert_eq!(s.borrow().waiters.len(), 1));
        a.write_all(b"x").unwrap();
        before_park(Duration::from_millis(50));
        assert_eq!((first.0.load(Ordering::SeqCst), second.0.load(Ordering::SeqCst)), (0, 1));
    }
}

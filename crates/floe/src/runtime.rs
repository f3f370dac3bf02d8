//! The runtimes a communicator starts for itself when it is made outside any tokio runtime:
//! its own runtime (one thread, or tokio's multi-thread scheduler) and, beside a one-thread
//! runtime, the **connection runtimes** that serve the connections object adapters accept.
//!
//! A one-thread runtime busy-polls and wakes at less cost than a multi-thread one
//! (docs/adr/0003-hot-paths.md), but alone it uses one CPU: several busy clients queue for it.
//! So accepted connections are spread over up to `Floe.Runtime.ConnectionThreads` further
//! one-thread runtimes, each on a thread of its own. A runtime is started when a connection
//! arrives and every runtime started so far serves one already; otherwise the connection goes
//! to the runtime that serves the fewest. Each connection then stays on its runtime for life:
//! its reads, dispatches and replies happen on that one thread, so a client in a loop and the
//! thread serving it are woken as a pair, as with a thread per connection, and the kernel can
//! keep them on one CPU. (docs/adr/0009-connection-runtimes.md has the measurements.)
//!
//! The timers connections keep for long stretches (the idle buffer's, an incomplete message's,
//! the ACM sweep's) are not kept by these runtimes but by the process's **timer thread**
//! ([`off_runtime_timer`]): a runtime with a timer due sleeps in `epoll_wait` with a timeout,
//! which costs the kernel a timer armed and cancelled on every wait, once per message of a
//! busy connection; one without sleeps until its sockets wake it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::transport::busy_poll::{self, Sharing};

/// Callbacks run on every thread an instance's own runtime starts (`start`, first thing on
/// the new thread) and stops (`stop`, last thing on it): Ice's `InitializationData` thread
/// notification.
#[derive(Clone)]
pub(crate) struct ThreadHooks {
    pub(crate) start: Arc<dyn Fn() + Send + Sync>,
    pub(crate) stop: Arc<dyn Fn() + Send + Sync>,
}

/// How long destroying waits for the threads of the instance's own runtime (the blocking
/// work still running on them) before it gives up on them.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// The numbers of the runtimes instances start, to tell their threads apart.
static NEXT_RUNTIME: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The number of the instance runtime this thread belongs to (0: none).
    static RUNTIME_OF_THREAD: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The timer thread's runtime (`None` when it could not be started): a current-thread runtime
/// with a timer driver and nothing else, on a thread of its own (`floe-timer`), started the
/// first time a timer is made on one of floe's runtime threads and kept until the process ends.
/// It is shared by every instance and never stopped, so a timer made on it can be polled (or
/// dropped) at any time, even after its instance is destroyed. It runs no user code: a timer
/// that fires wakes the task waiting for it, which runs on its own runtime.
static TIMER_THREAD: OnceLock<Option<tokio::runtime::Handle>> = OnceLock::new();

fn timer_thread() -> Option<&'static tokio::runtime::Handle> {
    TIMER_THREAD
        .get_or_init(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().ok()?;
            let handle = rt.handle().clone();
            let started = std::thread::Builder::new()
                .name("floe-timer".into())
                .spawn(move || rt.block_on(std::future::pending::<()>()));
            match started {
                Ok(_) => Some(handle),
                Err(e) => {
                    tracing::warn!(target: "floe::communicator", "cannot start the timer thread: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Calls `make`, which makes tokio timers (`sleep`, `sleep_until`, `interval`), so that on one
/// of floe's own runtime threads they are kept by the process's timer thread, and elsewhere (a
/// runtime the program gave, a test's paused clock) by the current runtime, as usual.
///
/// For timers that stay due while a connection is busy, so that its runtime's waits have no
/// timeout (docs/adr/0009, "Timers off the connection runtimes"). When such a timer fires,
/// waking its task costs a wake-up from the timer thread, which is why short or per-message
/// timers stay on their runtime.
pub(crate) fn off_runtime_timer<T>(make: impl FnOnce() -> T) -> T {
    if RUNTIME_OF_THREAD.with(|r| r.get()) != 0 {
        if let Some(timers) = timer_thread() {
            let _entered = timers.enter();
            return make();
        }
    }
    make()
}

/// How the one-thread runtimes of an instance are made: busy polling and thread hooks.
#[derive(Clone)]
pub(crate) struct SingleThreadConfig {
    /// How long a runtime thread busy-polls before it sleeps (zero: never).
    pub(crate) busy_poll: Duration,
    /// When it may spin.
    pub(crate) sharing: Sharing,
    /// Run on each of its threads.
    pub(crate) hooks: Option<ThreadHooks>,
}

/// A current-thread runtime driven by a thread of its own. Dropping `stop` ends the thread's
/// `block_on`, after which the thread drops the runtime.
pub(crate) struct SingleThread {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl SingleThread {
    /// Stops the runtime and waits for its thread (and, for up to [`SHUTDOWN_WAIT`], its
    /// blocking work).
    fn stop_and_join(self) {
        drop(self.stop);
        let _ = self.thread.join();
    }
}

fn cannot(e: std::io::Error) -> Error {
    Error::Io(format!("cannot start runtime: {e}"))
}

/// Marks the calling thread as one of runtime `id`'s and runs the start hook.
fn on_start(id: u64, hooks: Option<&ThreadHooks>) {
    RUNTIME_OF_THREAD.with(|r| r.set(id));
    if let Some(h) = hooks {
        (h.start)();
    }
}

/// Makes `builder`'s own threads (workers, blocking pool) run the hooks.
fn install_hooks(builder: &mut tokio::runtime::Builder, id: u64, hooks: Option<&ThreadHooks>) {
    let start_hooks = hooks.cloned();
    builder.on_thread_start(move || on_start(id, start_hooks.as_ref()));
    if let Some(h) = hooks {
        let stop = h.stop.clone();
        builder.on_thread_stop(move || stop());
    }
}

/// Starts a current-thread runtime on a thread named `name`, as `config` says, counted as
/// one of runtime `id`'s threads.
fn start_single(config: &SingleThreadConfig, id: u64, name: &str) -> Result<(SingleThread, tokio::runtime::Handle)> {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    if !config.busy_poll.is_zero() {
        busy_poll::install_with(&mut builder, config.busy_poll, config.sharing);
    } else {
        // Without busy polling the write hints are still forgotten when the thread runs out of
        // work (`transport::coalesce`).
        builder.on_thread_park(crate::transport::coalesce::reset);
    }
    install_hooks(&mut builder, id, config.hooks.as_ref());
    let rt = builder.enable_all().build().map_err(cannot)?;
    let handle = rt.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread_hooks = config.hooks.clone();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            on_start(id, thread_hooks.as_ref());
            // Nothing is ever sent: the sender's drop ends the wait.
            rt.block_on(async move {
                let _ = stopped.await;
            });
            // Outside `block_on` this thread may wait for the blocking pool.
            rt.shutdown_timeout(SHUTDOWN_WAIT);
            if let Some(h) = thread_hooks {
                (h.stop)();
            }
        })
        .map_err(cannot)?;
    Ok((SingleThread { stop, thread }, handle))
}

/// A runtime the instance started itself (none when it was made inside a runtime).
pub(crate) enum OwnedRuntime {
    /// tokio's multi-thread scheduler, for two worker threads or more.
    Workers { rt: tokio::runtime::Runtime, id: u64 },
    /// tokio's current-thread scheduler driven by a thread of its own, for
    /// `Floe.Runtime.Threads=1`: the same work as a one-worker multi-thread runtime with less
    /// bookkeeping per wake-up (see docs/adr/0003-hot-paths.md), with the connection
    /// runtimes beside it.
    Single { single: SingleThread, connections: Arc<ConnectionRuntimes>, id: u64 },
}

impl OwnedRuntime {
    /// Starts a runtime with `threads` worker threads, and returns it with its handle. A
    /// single-thread runtime busy-polls as `config` says, and gets up to `connection_threads`
    /// connection runtimes made the same way. `config`'s hooks run on each of its threads.
    pub(crate) fn start(
        threads: usize,
        config: SingleThreadConfig,
        connection_threads: usize,
        connection_threads_connections: usize,
    ) -> Result<(OwnedRuntime, tokio::runtime::Handle)> {
        let id = NEXT_RUNTIME.fetch_add(1, Ordering::Relaxed);
        if threads > 1 {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(threads).thread_name("floe").enable_all();
            install_hooks(&mut builder, id, config.hooks.as_ref());
            let rt = builder.build().map_err(cannot)?;
            let handle = rt.handle().clone();
            return Ok((OwnedRuntime::Workers { rt, id }, handle));
        }
        let (single, handle) = start_single(&config, id, "floe")?;
        let connections = Arc::new(ConnectionRuntimes {
            max: connection_threads,
            max_connections: connection_threads_connections,
            config,
            id,
            main_load: Arc::default(),
            started: Mutex::new(Vec::new()),
        });
        Ok((OwnedRuntime::Single { single, connections, id }, handle))
    }

    /// The connection runtimes beside a one-thread runtime (none beside a multi-thread one,
    /// whose workers share every connection already).
    pub(crate) fn connection_runtimes(&self) -> Option<Arc<ConnectionRuntimes>> {
        match self {
            OwnedRuntime::Single { connections, .. } => Some(connections.clone()),
            OwnedRuntime::Workers { .. } => None,
        }
    }

    /// Stops the runtime, and its connection runtimes; `wait` is called (on a thread of its
    /// own) once their threads have ended, or once [`SHUTDOWN_WAIT`] has passed for the
    /// blocking ones. True when the calling thread is one of the runtime's own, which cannot
    /// end before it returns.
    pub(crate) fn stop(self, wait: impl FnOnce() + Send + 'static) -> bool {
        let own_id = match &self {
            OwnedRuntime::Workers { id, .. } | OwnedRuntime::Single { id, .. } => *id,
        };
        let on_own_thread = RUNTIME_OF_THREAD.with(|r| r.get()) == own_id;
        // Shutting a runtime down blocks, which tokio forbids on its threads and in async
        // code: a plain thread does it.
        let stopper = move || {
            match self {
                OwnedRuntime::Workers { rt, .. } => rt.shutdown_timeout(SHUTDOWN_WAIT),
                OwnedRuntime::Single { single, connections, .. } => {
                    single.stop_and_join();
                    connections.stop_all();
                }
            }
            wait();
        };
        if let Err(e) = std::thread::Builder::new().name("floe-stop".into()).spawn(stopper) {
            tracing::warn!(target: "floe::communicator", "cannot stop the runtime: {e}");
        }
        on_own_thread
    }

    /// Lets a multi-thread runtime go without waiting for it (a one-thread runtime and its
    /// connection runtimes stop by themselves once their stop senders are dropped).
    pub(crate) fn release(self) {
        if let OwnedRuntime::Workers { rt, .. } = self {
            rt.shutdown_background();
        }
    }
}

/// The one-thread runtimes that serve accepted connections beside an instance's own
/// one-thread runtime (`Floe.Runtime.ConnectionThreads`), started as connections arrive.
pub(crate) struct ConnectionRuntimes {
    /// The most runtimes started (0: connections stay on the instance's runtime).
    max: usize,
    /// The most connections they serve together; later ones go to the instance's runtime.
    max_connections: usize,
    /// How each is made.
    config: SingleThreadConfig,
    /// The instance runtime's number, which their threads share.
    id: u64,
    /// The accepted connections the instance's own runtime serves.
    main_load: Arc<AtomicUsize>,
    started: Mutex<Vec<ConnectionRuntime>>,
}

/// One connection runtime: its thread, its handle and how many connections it serves.
struct ConnectionRuntime {
    single: SingleThread,
    handle: tokio::runtime::Handle,
    load: Arc<AtomicUsize>,
}

/// A connection's place on a runtime: where to serve it, counted in that runtime's load until
/// this is dropped (when the connection closes).
pub(crate) struct RuntimeLease {
    /// The connection runtime to serve it on; `None` for the instance's own runtime, where
    /// connections are accepted.
    handle: Option<tokio::runtime::Handle>,
    load: Arc<AtomicUsize>,
}

impl RuntimeLease {
    /// The connection runtime to serve the connection on, or `None` to serve it on the
    /// instance's own runtime, where it was accepted.
    pub(crate) fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.handle.as_ref()
    }
}

impl Drop for RuntimeLease {
    fn drop(&mut self) {
        self.load.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for RuntimeLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeLease").field("load", &self.load.load(Ordering::Relaxed)).finish()
    }
}

impl ConnectionRuntimes {
    /// Where a newly accepted connection is to be served: the instance's own runtime while it
    /// serves no accepted connection (so that a server with one client, or a client with one
    /// callback connection, keeps everything on one thread), or once the connection runtimes
    /// serve `max_connections`; else a new connection runtime while every runtime serves one
    /// and fewer than the most are started; else the runtime serving the fewest. `None` when
    /// there are to be none.
    pub(crate) fn lease(&self) -> Option<RuntimeLease> {
        if self.max == 0 {
            return None;
        }
        let mut started = self.started.lock().expect("connection runtimes");
        let main = || {
            Some(RuntimeLease { handle: None, load: self.main_load.clone() }).inspect(|l| {
                l.load.fetch_add(1, Ordering::AcqRel);
            })
        };
        // Beyond the connections the connection runtimes take, the instance's runtime serves
        // the rest: many connections that each call now and then cost least on one thread,
        // which wakes once for the requests of many (docs/adr/0009).
        let off_main: usize = started.iter().map(|r| r.load.load(Ordering::Acquire)).sum();
        if off_main >= self.max_connections {
            return main();
        }
        // (index in `started`, or None for the instance's runtime; its load)
        let mut least = (None, self.main_load.load(Ordering::Acquire));
        for (i, r) in started.iter().enumerate() {
            let load = r.load.load(Ordering::Acquire);
            if load < least.1 {
                least = (Some(i), load);
            }
        }
        if least.1 > 0 && started.len() < self.max {
            match start_single(&self.config, self.id, "floe-conn") {
                Ok((single, handle)) => {
                    started.push(ConnectionRuntime { single, handle, load: Arc::default() });
                    least = (Some(started.len() - 1), 0);
                }
                Err(e) => tracing::warn!(target: "floe::communicator", "{e}"),
            }
        }
        let Some(i) = least.0 else { return main() };
        let chosen = &started[i];
        chosen.load.fetch_add(1, Ordering::AcqRel);
        Some(RuntimeLease { handle: Some(chosen.handle.clone()), load: chosen.load.clone() })
    }

    /// Stops every connection runtime and waits for its thread.
    fn stop_all(&self) {
        let started: Vec<_> = self.started.lock().expect("connection runtimes").drain(..).collect();
        for r in started {
            r.single.stop_and_join();
        }
    }
}

/// The default of `Floe.Runtime.ConnectionThreads`: two per CPU, so that a few busy clients
/// each get a thread (measured best on two CPUs with five clients; docs/adr/0009).
pub(crate) fn default_connection_threads() -> usize {
    2 * std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// How many connections the connection runtimes serve together by default: four each.
pub(crate) const DEFAULT_CONNECTIONS_PER_THREAD: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// On a thread of floe's own runtimes, a timer made through `off_runtime_timer` is kept by
    /// the timer thread: it fires on a runtime that has no timer driver of its own (where a
    /// timer made on the runtime itself would panic).
    #[test]
    fn timers_of_floe_threads_are_kept_by_the_timer_thread() {
        std::thread::spawn(|| {
            RUNTIME_OF_THREAD.with(|r| r.set(u64::MAX));
            let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
            rt.block_on(async {
                let started = std::time::Instant::now();
                off_runtime_timer(|| tokio::time::sleep(Duration::from_millis(20))).await;
                assert!(started.elapsed() >= Duration::from_millis(20));
                let mut tick = off_runtime_timer(|| tokio::time::interval(Duration::from_millis(5)));
                tick.tick().await;
                tick.tick().await;
            });
        })
        .join()
        .unwrap();
    }

    /// Elsewhere the current runtime keeps them, on its own clock: an hour passes at once on a
    /// paused one.
    #[tokio::test(start_paused = true)]
    async fn timers_of_other_threads_stay_on_their_runtime() {
        let started = std::time::Instant::now();
        let hour = off_runtime_timer(|| tokio::time::sleep(Duration::from_secs(3600)));
        // A sleep kept elsewhere would not follow this clock: the paused clock would jump to
        // the timeout instead, and the test fail rather than hang.
        let slept = tokio::time::timeout(Duration::from_secs(7200), hour).await;
        assert!(slept.is_ok(), "the hour's sleep did not follow the paused clock");
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}

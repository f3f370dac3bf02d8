//! Thread hooks (`CommunicatorBuilder::thread_hooks`): they run on every thread of the
//! communicator's own runtime, and after `destroy` each start has had its stop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::{Communicator, Properties};

/// Start and stop counts.
#[derive(Default)]
struct Counts {
    starts: AtomicUsize,
    stops: AtomicUsize,
}

impl Counts {
    fn starts(&self) -> usize {
        self.starts.load(Ordering::SeqCst)
    }
    fn stops(&self) -> usize {
        self.stops.load(Ordering::SeqCst)
    }
}

/// A communicator with `Floe.Runtime.Threads=threads` whose hooks count into the result.
fn communicator(threads: usize) -> (Communicator, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let props = Properties::new();
    props.set("Floe.Runtime.Threads", &threads.to_string());
    let (a, b) = (counts.clone(), counts.clone());
    let c = Communicator::builder()
        .properties(props)
        .thread_hooks(
            move || {
                a.starts.fetch_add(1, Ordering::SeqCst);
            },
            move || {
                b.stops.fetch_add(1, Ordering::SeqCst);
            },
        )
        .build()
        .expect("communicator");
    (c, counts)
}

/// Runs `n` blocking sleeps at once on the communicator's blocking pool, which starts a
/// thread for each.
fn blocking_sleeps(c: &Communicator, n: usize) {
    let handle = c.runtime_handle().clone();
    c.block_on(async move {
        let tasks: Vec<_> =
            (0..n).map(|_| handle.spawn_blocking(|| std::thread::sleep(Duration::from_millis(100)))).collect();
        for t in tasks {
            t.await.expect("blocking task");
        }
    });
}

fn check_flavour(threads: usize) {
    let (c, counts) = communicator(threads);
    blocking_sleeps(&c, 4);
    // Blocking-pool threads stay (idle) until the runtime stops.
    assert!(counts.starts() >= 4, "starts: {}", counts.starts());
    assert_eq!(counts.stops(), 0);
    c.destroy_blocking();
    // The runtime's own threads (workers, or the one thread) and the four blocking ones.
    assert!(counts.starts() >= threads + 4, "starts: {}", counts.starts());
    assert_eq!(counts.stops(), counts.starts());
}

#[test]
fn hooks_run_on_worker_and_blocking_threads() {
    check_flavour(2);
}

#[test]
fn hooks_run_on_the_single_thread_and_blocking_threads() {
    check_flavour(1);
}

/// Destroyed from async code on another runtime (as a servant of another communicator does),
/// destroy waits without blocking that runtime's thread.
#[tokio::test]
async fn destroy_awaited_on_another_runtime() {
    for threads in [1, 3] {
        let (c, counts) = std::thread::spawn(move || communicator(threads)).join().expect("thread");
        let handle = c.runtime_handle().clone();
        let tasks: Vec<_> =
            (0..3).map(|_| handle.spawn_blocking(|| std::thread::sleep(Duration::from_millis(50)))).collect();
        for t in tasks {
            t.await.expect("blocking task");
        }
        c.destroy().await;
        assert!(counts.starts() >= threads + 3, "starts: {}", counts.starts());
        assert_eq!(counts.stops(), counts.starts());
    }
}

/// Destroyed from a task of its own runtime, destroy cannot wait for that thread: the stops
/// follow soon after.
#[test]
fn destroy_on_its_own_runtime() {
    for threads in [1, 2] {
        let (c, counts) = communicator(threads);
        let c2 = c.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        c.runtime_handle().spawn(async move {
            c2.destroy().await;
            let _ = tx.send(());
        });
        // The task may be dropped at its end, the runtime shutting down.
        let _ = rx.recv_timeout(Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(15);
        // Every thread of the runtime starts (they were spawned when it was built) and stops.
        while (counts.starts() < threads || counts.stops() != counts.starts()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(counts.starts() >= threads);
        assert_eq!(counts.stops(), counts.starts());
    }
}

/// A communicator made inside a tokio runtime has no threads of its own: its hooks never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_own_runtime_no_hooks() {
    let (c, counts) = communicator(2);
    tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(10))).await.expect("blocking");
    c.destroy().await;
    assert_eq!(counts.starts(), 0);
    assert_eq!(counts.stops(), 0);
}

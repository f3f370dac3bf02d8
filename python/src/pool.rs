//! The threads that run Python servants, as Ice for Python's server thread pool does:
//! `Ice.ThreadPool.Server.Size` threads (1 by default), each with a Python thread state of its
//! own for its whole life, waiting for work without the GIL.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

/// Work for a dispatch thread: it runs with the GIL held.
pub type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// A pool of dispatch threads.
pub struct DispatchPool {
    jobs: Mutex<Sender<Job>>,
}

impl DispatchPool {
    /// Starts `threads` threads (at least one).
    pub fn new(threads: usize) -> Arc<DispatchPool> {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new().name(format!("floe-py-dispatch-{i}")).spawn(move || run(&rx));
            if let Err(e) = spawned {
                eprintln!("floe for Python: cannot start a dispatch thread: {e}");
            }
        }
        Arc::new(DispatchPool { jobs: Mutex::new(tx) })
    }

    /// Queues `job`; false when no thread is left to run it.
    pub fn submit(&self, job: Job) -> bool {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).send(job).is_ok()
    }
}

/// A dispatch thread: takes the next job without the GIL, runs it with the GIL.
fn run(rx: &Mutex<Receiver<Job>>) {
    Python::attach(|py| loop {
        let next = py.detach(|| rx.lock().unwrap_or_else(|e| e.into_inner()).recv());
        match next {
            Ok(job) => job(py),
            Err(_) => break,
        }
    });
}

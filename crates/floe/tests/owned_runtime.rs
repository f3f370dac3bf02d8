//! The runtime a communicator starts when it is made outside one: a current-thread runtime on
//! a thread of its own for `Floe.Runtime.Threads=1` (the default, as Ice's thread pools have
//! one thread), a multi-thread runtime for more; both serve and call, and dropping the last
//! handle on the communicator stops them.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, Properties};
use tokio::runtime::RuntimeFlavor;

/// Answers every request with the name of the thread that dispatched it.
struct ThreadName;

impl Dispatcher for ThreadName {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let name = std::thread::current().name().unwrap_or("").to_string();
        Box::pin(async move { request.current.ok(|e| e.write_str(&name)) })
    }
}

fn communicator(threads: usize) -> Communicator {
    let props = Properties::new();
    props.set("Floe.Runtime.Threads", &threads.to_string());
    Communicator::with_properties(props).unwrap()
}

/// Sends on its channel when dropped: a task holding one tells when its runtime dropped it.
struct SignalOnDrop(mpsc::Sender<()>);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A server and a client communicator with `threads` each, ten calls over one connection:
/// both runtimes must be of `flavor`, and calls must be dispatched on a `floe` thread — the
/// runtime's own, not the test thread that called `block_on`.
fn serve_and_call(threads: usize, flavor: RuntimeFlavor) {
    let server = communicator(threads);
    let client = communicator(threads);
    assert_eq!(server.runtime_handle().runtime_flavor(), flavor, "{threads} threads: server");
    assert_eq!(client.runtime_handle().runtime_flavor(), flavor, "{threads} threads: client");
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(ThreadName), Identity::new("t"));
    server.block_on(adapter.activate()).unwrap();
    let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("t")).to_string()).unwrap();
    for _ in 0..10 {
        let reply = client.block_on(proxy.invoke("name", OperationMode::Normal, None, |_| {})).unwrap();
        let name = reply.expect("a twoway reply").decode(|d| d.read_string()).unwrap();
        assert_eq!(name, "floe", "{threads} threads: dispatched on");
    }
    client.destroy_blocking();
    server.destroy_blocking();
}

/// The flavour and worker count of the runtime a communicator with `settings` starts.
fn runtime_of(settings: &[(&str, &str)]) -> (RuntimeFlavor, usize) {
    let props = Properties::new();
    for (name, value) in settings {
        props.set(name, value);
    }
    let communicator = Communicator::with_properties(props).unwrap();
    let handle = communicator.runtime_handle();
    let shape = (handle.runtime_flavor(), handle.metrics().num_workers());
    communicator.destroy_blocking();
    shape
}

#[test]
fn the_default_runtime_has_one_thread_and_ice_pool_sizes_or_floe_threads_change_it() {
    assert_eq!(runtime_of(&[]), (RuntimeFlavor::CurrentThread, 1));
    assert_eq!(runtime_of(&[("Ice.ThreadPool.Server.Size", "3")]), (RuntimeFlavor::MultiThread, 3));
    assert_eq!(
        runtime_of(&[("Ice.ThreadPool.Server.Size", "2"), ("Ice.ThreadPool.Server.SizeMax", "4")]),
        (RuntimeFlavor::MultiThread, 4)
    );
    assert_eq!(runtime_of(&[("Ice.ThreadPool.Client.Size", "2")]), (RuntimeFlavor::MultiThread, 2));
    assert_eq!(
        runtime_of(&[("Ice.ThreadPool.Server.Size", "4"), ("Floe.Runtime.Threads", "2")]),
        (RuntimeFlavor::MultiThread, 2)
    );
}

#[test]
fn one_thread_is_a_current_thread_runtime_on_a_floe_thread() {
    serve_and_call(1, RuntimeFlavor::CurrentThread);
}

#[test]
fn two_threads_are_a_multi_thread_runtime() {
    serve_and_call(2, RuntimeFlavor::MultiThread);
}

#[test]
fn dropping_the_communicator_stops_its_runtime() {
    for threads in [1, 2] {
        let c = communicator(threads);
        let (tx, rx) = mpsc::channel();
        let (started_tx, started_rx) = mpsc::channel();
        c.runtime_handle().spawn(async move {
            let _signal = SignalOnDrop(tx);
            let _ = started_tx.send(());
            std::future::pending::<()>().await;
        });
        started_rx.recv_timeout(Duration::from_secs(5)).expect("the task runs");
        assert!(rx.try_recv().is_err(), "{threads} threads: the task is still pending");
        drop(c);
        rx.recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{threads} threads: the runtime did not drop its tasks"));
    }
}

#[test]
fn a_communicator_dropped_on_its_own_runtime_thread_stops_it() {
    let c = communicator(1);
    let (tx, rx) = mpsc::channel();
    let handle = c.runtime_handle().clone();
    handle.spawn(async move {
        let _signal = SignalOnDrop(tx);
        // The last handle on the communicator goes away on the runtime's thread.
        drop(c);
        std::future::pending::<()>().await;
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("the runtime stops although dropped from its own thread");
}

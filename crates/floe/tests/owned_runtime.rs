//! The runtime a communicator starts when it is made outside one: a current-thread runtime on
//! a thread of its own for `Floe.Runtime.Threads=1` (the default, as Ice's thread pools have
//! one thread), with the connection runtimes that serve accepted connections beside it
//! (`Floe.Runtime.ConnectionThreads`), or a multi-thread runtime for more; both serve and call,
//! and dropping the last handle on the communicator stops them.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, Properties};
use tokio::runtime::RuntimeFlavor;

/// Answers every request with the name and id of the thread that dispatched it
/// (`name/ThreadId(n)`).
struct ThreadName;

impl Dispatcher for ThreadName {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let thread = std::thread::current();
        let name = format!("{}/{:?}", thread.name().unwrap_or(""), thread.id());
        Box::pin(async move { request.current.ok(|e| e.write_str(&name)) })
    }
}

fn communicator(threads: usize) -> Communicator {
    communicator_with(&[("Floe.Runtime.Threads", &threads.to_string())])
}

fn communicator_with(settings: &[(&str, &str)]) -> Communicator {
    let props = Properties::new();
    for (name, value) in settings {
        props.set(name, value);
    }
    Communicator::with_properties(props).unwrap()
}

/// The thread that dispatches a call made over a connection of `client`'s own to `adapter`'s
/// `t` (each client communicator opens a connection of its own).
fn dispatching_thread(client: &Communicator, adapter: &floe::ObjectAdapter) -> String {
    let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("t")).to_string()).unwrap();
    let reply = client.block_on(proxy.invoke("name", OperationMode::Normal, None, |_| {})).unwrap();
    reply.expect("a twoway reply").decode(|d| d.read_string()).unwrap().to_string()
}

/// Sends on its channel when dropped: a task holding one tells when its runtime dropped it.
struct SignalOnDrop(mpsc::Sender<()>);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A server and a client communicator with `threads` each, ten calls over one connection:
/// both runtimes must be of `flavor`, and calls must be dispatched on a thread named
/// `thread` — one of the runtime's own, not the test thread that called `block_on`.
fn serve_and_call(threads: usize, flavor: RuntimeFlavor, thread: &str) {
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
        assert_eq!(name.split('/').next(), Some(thread), "{threads} threads: dispatched on");
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
    serve_and_call(1, RuntimeFlavor::CurrentThread, "floe");
}

#[test]
fn two_threads_are_a_multi_thread_runtime() {
    serve_and_call(2, RuntimeFlavor::MultiThread, "floe");
}

#[test]
fn without_connection_threads_accepted_connections_are_served_on_the_runtime_thread() {
    let server = communicator_with(&[("Floe.Runtime.ConnectionThreads", "0")]);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(ThreadName), Identity::new("t"));
    server.block_on(adapter.activate()).unwrap();
    let main = server.block_on(server.runtime_handle().spawn(async { std::thread::current().id() })).unwrap();
    for _ in 0..3 {
        let client = communicator(1);
        let thread = dispatching_thread(&client, &adapter);
        assert_eq!(thread, format!("floe/{main:?}"));
        client.destroy_blocking();
    }
    server.destroy_blocking();
}

/// The first connection is served on the communicator's own thread; each next one gets a
/// connection runtime of its own while fewer than the most are started, then the runtime
/// serving the fewest; a runtime whose connection closed takes the next.
#[test]
fn accepted_connections_are_spread_over_at_most_the_connection_threads() {
    let server = communicator_with(&[("Floe.Runtime.ConnectionThreads", "2")]);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(ThreadName), Identity::new("t"));
    server.block_on(adapter.activate()).unwrap();
    let main = server.block_on(server.runtime_handle().spawn(async { std::thread::current().id() })).unwrap();
    let clients: Vec<Communicator> = (0..4).map(|_| communicator(1)).collect();
    let threads: Vec<String> = clients.iter().map(|c| dispatching_thread(c, &adapter)).collect();
    // The communicator's thread, two connection runtimes, then the communicator's thread again
    // (every runtime serves one: the first with the fewest takes it).
    assert_eq!(threads[0], format!("floe/{main:?}"), "{threads:?}");
    assert!(threads[1].starts_with("floe-conn/") && threads[2].starts_with("floe-conn/"), "{threads:?}");
    assert_ne!(threads[1], threads[2], "{threads:?}");
    assert_eq!(threads[3], threads[0], "{threads:?}");
    // Every call over a connection is served by its runtime's one thread.
    for (c, t) in clients.iter().zip(&threads) {
        for _ in 0..5 {
            assert_eq!(&dispatching_thread(c, &adapter), t);
        }
    }
    // The first two connections close: the first connection runtime serves none now, and takes
    // the next connection without a third runtime.
    let mut clients = clients.into_iter();
    clients.next().unwrap().destroy_blocking();
    clients.next().unwrap().destroy_blocking();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while adapter.connection_count() > 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let late = communicator(1);
    assert_eq!(dispatching_thread(&late, &adapter), threads[1]);
    late.destroy_blocking();
    for c in clients {
        c.destroy_blocking();
    }
    server.destroy_blocking();
}

/// `Ice.ThreadPool.Server.Size=1` given explicitly means one thread, as in Ice: every
/// accepted connection is served on it.
#[test]
fn an_ice_pool_size_of_one_serves_every_connection_on_the_one_thread() {
    let server = communicator_with(&[("Ice.ThreadPool.Server.Size", "1")]);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(ThreadName), Identity::new("t"));
    server.block_on(adapter.activate()).unwrap();
    let main = server.block_on(server.runtime_handle().spawn(async { std::thread::current().id() })).unwrap();
    let clients: Vec<Communicator> = (0..3).map(|_| communicator(1)).collect();
    for c in &clients {
        assert_eq!(dispatching_thread(c, &adapter), format!("floe/{main:?}"));
    }
    for c in clients {
        c.destroy_blocking();
    }
    server.destroy_blocking();
}

/// Once the connection runtimes serve `Floe.Runtime.ConnectionThreads.MaxConnections`
/// connections together, later ones are served on the communicator's thread: many
/// connections that call now and then cost least there.
#[test]
fn connections_beyond_the_connection_runtimes_share_are_served_on_the_runtime_thread() {
    let server = communicator_with(&[
        ("Floe.Runtime.ConnectionThreads", "4"),
        ("Floe.Runtime.ConnectionThreads.MaxConnections", "1"),
    ]);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(ThreadName), Identity::new("t"));
    server.block_on(adapter.activate()).unwrap();
    let main = server.block_on(server.runtime_handle().spawn(async { std::thread::current().id() })).unwrap();
    let main = format!("floe/{main:?}");
    let clients: Vec<Communicator> = (0..4).map(|_| communicator(1)).collect();
    let threads: Vec<String> = clients.iter().map(|c| dispatching_thread(c, &adapter)).collect();
    assert_eq!(threads[0], main, "{threads:?}");
    assert!(threads[1].starts_with("floe-conn/"), "{threads:?}");
    assert_eq!(threads[2], main, "{threads:?}");
    assert_eq!(threads[3], main, "{threads:?}");
    for c in clients {
        c.destroy_blocking();
    }
    server.destroy_blocking();
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
fn dropping_the_communicator_stops_its_connection_runtimes() {
    let server = communicator(1);
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(ThreadName), Identity::new("t"));
    server.block_on(adapter.activate()).unwrap();
    // The first connection is served on the communicator's thread, the second on a
    // connection runtime.
    let first = communicator(1);
    assert!(dispatching_thread(&first, &adapter).starts_with("floe/"));
    let client = communicator(1);
    // A task left pending on the connection runtime (spawned there by a dispatch).
    let (tx, rx) = mpsc::channel();
    let (started_tx, started_rx) = mpsc::channel::<String>();
    struct Spawner(std::sync::Mutex<Option<(mpsc::Sender<()>, mpsc::Sender<String>)>>);
    impl Dispatcher for Spawner {
        fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
            if let Some((tx, started_tx)) = self.0.lock().unwrap().take() {
                tokio::spawn(async move {
                    let _signal = SignalOnDrop(tx);
                    let _ = started_tx.send(std::thread::current().name().unwrap_or("").to_string());
                    std::future::pending::<()>().await;
                });
            }
            Box::pin(async move { request.current.ok(|_| {}) })
        }
    }
    adapter.add(Arc::new(Spawner(std::sync::Mutex::new(Some((tx, started_tx))))), Identity::new("s"));
    let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("s")).to_string()).unwrap();
    client.block_on(proxy.invoke("spawn", OperationMode::Normal, None, |_| {})).unwrap();
    let thread = started_rx.recv_timeout(Duration::from_secs(5)).expect("the task runs");
    assert_eq!(thread, "floe-conn");
    client.destroy_blocking();
    first.destroy_blocking();
    drop(adapter);
    server.destroy_blocking();
    drop(server);
    rx.recv_timeout(Duration::from_secs(5)).expect("the connection runtime did not drop its tasks");
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

/// A program's own defaults (`Communicator::from_args_with_defaults`) apply where neither the
/// command line nor a configuration file sets the property.
#[test]
fn program_defaults_give_way_to_the_command_line_and_config_files() {
    let defaults = [("Floe.Runtime.ConnectionThreads", "0")];
    let (c, rest) = Communicator::from_args_with_defaults(["prog", "--other"], &defaults).unwrap();
    assert_eq!(c.properties().get("Floe.Runtime.ConnectionThreads").as_deref(), Some("0"));
    assert_eq!(rest, ["prog", "--other"]);
    c.destroy_blocking();
    let (c, _) =
        Communicator::from_args_with_defaults(["prog", "--Floe.Runtime.ConnectionThreads=3"], &defaults).unwrap();
    assert_eq!(c.properties().get("Floe.Runtime.ConnectionThreads").as_deref(), Some("3"));
    c.destroy_blocking();
    let dir = std::env::temp_dir().join(format!("floe-defaults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config");
    std::fs::write(&file, "Floe.Runtime.ConnectionThreads = 5\n").unwrap();
    let arg = format!("--Ice.Config={}", file.display());
    let (c, _) = Communicator::from_args_with_defaults(["prog", arg.as_str()], &defaults).unwrap();
    assert_eq!(c.properties().get("Floe.Runtime.ConnectionThreads").as_deref(), Some("5"));
    c.destroy_blocking();
    let _ = std::fs::remove_dir_all(&dir);
}

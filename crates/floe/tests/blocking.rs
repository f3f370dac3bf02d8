//! Blocking calls (`Communicator::block_on`, and `Communicator::try_block_on`, the path
//! generated `_blocking` methods take) from every kind of thread: outside a runtime, on the workers of a
//! multi-thread runtime (`#[tokio::main]`'s kind), on `spawn_blocking` threads, and on the
//! thread of a current-thread runtime, where they fail with a typed error instead of panicking
//! or deadlocking.

use std::sync::Arc;

use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, ObjectPrx, Properties};

/// Answers every request with 7.
struct Seven;

impl Dispatcher for Seven {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move { request.current.ok(|e| e.write_i32(7)) })
    }
}

/// A server with its own runtime and a proxy for its object, made by a client communicator
/// that also runs its own runtime.
fn server_and_proxy() -> (Communicator, Communicator, ObjectPrx) {
    let props = Properties::new();
    props.set("Floe.Runtime.Threads", "1");
    let server = Communicator::with_properties(props).unwrap();
    let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Seven), Identity::new("seven"));
    server.block_on(adapter.activate()).unwrap();
    let client = Communicator::new().unwrap();
    let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("seven")).to_string()).unwrap();
    (server, client, proxy)
}

/// One call through the path generated `_blocking` methods take (`try_block_on` of the
/// proxy's communicator).
fn call_blocking(client: &Communicator, proxy: &ObjectPrx) -> floe::Result<i32> {
    client.try_block_on(async {
        let outcome = proxy.invoke("get", OperationMode::Normal, None, |_| {}).await?;
        outcome.expect("a twoway reply").decode(|d| d.read_i32())
    })?
}

#[test]
fn blocking_calls_work_outside_a_runtime() {
    let (server, client, proxy) = server_and_proxy();
    assert_eq!(call_blocking(&client, &proxy).unwrap(), 7);
    client.destroy_blocking();
    server.destroy_blocking();
}

#[test]
fn blocking_calls_work_on_the_workers_of_a_multi_thread_runtime() {
    let (server, client, proxy) = server_and_proxy();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // As in `#[tokio::main] async fn main() { … proxy.op_blocking() … }`.
    let got = rt.block_on(async {
        let from_task = tokio::spawn({
            let (client, proxy) = (client.clone(), proxy.clone());
            async move { call_blocking(&client, &proxy) }
        });
        (call_blocking(&client, &proxy), from_task.await.unwrap())
    });
    assert_eq!(got.0.unwrap(), 7);
    assert_eq!(got.1.unwrap(), 7);
    // And from spawn_blocking threads of that runtime.
    let (c, p) = (client.clone(), proxy.clone());
    let got = rt.block_on(async move { tokio::task::spawn_blocking(move || call_blocking(&c, &p)).await.unwrap() });
    assert_eq!(got.unwrap(), 7);
    drop(rt);
    client.destroy_blocking();
    server.destroy_blocking();
}

#[test]
fn a_blocking_call_on_a_current_thread_runtime_is_a_typed_error() {
    let (server, client, proxy) = server_and_proxy();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let got = rt.block_on(async { call_blocking(&client, &proxy) });
    assert!(matches!(got, Err(Error::BlockingInAsync(_))), "{got:?}");
    let direct = rt.block_on(async { client.try_block_on(async { 1 }) });
    assert!(matches!(direct, Err(Error::BlockingInAsync(_))), "{direct:?}");
    // The async form works there.
    let got = rt.block_on(async {
        let outcome = proxy.invoke("get", OperationMode::Normal, None, |_| {}).await?;
        outcome.expect("a twoway reply").decode(|d| d.read_i32())
    });
    assert_eq!(got.unwrap(), 7);
    drop(rt);
    client.destroy_blocking();
    server.destroy_blocking();
}

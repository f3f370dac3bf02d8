//! Batched oneway requests that fill several messages: every message stays within the
//! receiver's `Ice.MessageSizeMax` (both sides on their defaults), every request arrives once
//! and in order, and requests a dropped `BatchWriter` still held are flushed by its proxy.

use std::sync::{Arc, Mutex};

use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, ObjectPrx};

/// Records the `i32` of every `add` (and -2 once a `slow` has waited 200 ms); `count` answers
/// how many arrived.
#[derive(Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<i32>>>,
    connection: Mutex<Option<floe::Connection>>,
}

impl Dispatcher for Recorder {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let c = &request.current;
        *self.connection.lock().unwrap() = c.connection().cloned();
        if c.operation == "slow" {
            let seen = self.seen.clone();
            return Box::pin(async move {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                seen.lock().unwrap().push(-2);
                request.current.ok(|_| {})
            });
        }
        let response = match c.operation.as_str() {
            "add" => match request.plain_decoder().read_i32() {
                Ok(v) => {
                    self.seen.lock().unwrap().push(v);
                    c.ok(|_| {})
                }
                Err(e) => c.error(&e.into()),
            },
            "count" => {
                let n = self.seen.lock().unwrap().len() as i32;
                c.ok(|e| e.write_i32(n))
            }
            _ => c.operation_not_exist(),
        };
        Box::pin(std::future::ready(response))
    }
}

/// Padding that makes each request 41 bytes, so that no number of them adds up to exactly
/// the auto-flush size: a batch that reached it by including the request that crossed it
/// would be larger than the receiver accepts.
const PAD: [u8; 9] = [7; 9];

fn add(e: &mut floe::encoding::Encoder, v: i32) {
    e.write_i32(v);
    e.write_raw(&PAD);
}

/// A server on the default `Ice.MessageSizeMax` (1 MB), with a recorder at "r".
async fn server() -> (Communicator, Arc<Recorder>, ObjectPrx) {
    let c = Communicator::new().unwrap();
    let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
    let recorder = Arc::new(Recorder::default());
    a.add(recorder.clone(), Identity::new("r"));
    a.activate().await.unwrap();
    let proxy = a.create_proxy(Identity::new("r"));
    (c, recorder, proxy)
}

async fn count(p: &ObjectPrx) -> i32 {
    let o = p.invoke("count", OperationMode::Normal, None, |_| {}).await.unwrap().unwrap();
    o.decode(|d| d.read_i32()).unwrap()
}

/// 3 MB of requests at ~41 bytes each.
const N: i32 = 80_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn a_batch_oneway_proxy_flushes_full_batches_the_receiver_accepts() {
    runtime().block_on(async {
        let (server, recorder, target) = server().await;
        let client = Communicator::new().unwrap();
        let p = client.string_to_proxy(&target.to_string()).unwrap();
        let batch = p.ice_batch_oneway();
        for v in 0..N {
            batch.invoke("add", OperationMode::Normal, None, |e| add(e, v)).await.unwrap();
        }
        assert!(batch.batch_request_count() < N as usize, "auto-flushed on the way");
        batch.ice_flush_batch_requests().await.unwrap();
        assert_eq!(count(&p).await, N, "the connection survived every batch");
        assert_eq!(*recorder.seen.lock().unwrap(), (0..N).collect::<Vec<_>>());
        client.destroy().await;
        server.destroy().await;
    });
}

#[test]
fn a_batch_writer_keeps_full_messages_until_flushed() {
    runtime().block_on(async {
        let (server, recorder, target) = server().await;
        let client = Communicator::new().unwrap();
        let p = client.string_to_proxy(&target.to_string()).unwrap();
        let mut w = p.batch_writer();
        for v in 0..N {
            w.queue("add", OperationMode::Normal, |e| add(e, v));
        }
        assert!(w.needs_flush());
        assert_eq!(w.len(), N as usize);
        // Queuing did no I/O: nothing has arrived.
        assert_eq!(count(&p).await, 0);
        w.flush().await.unwrap();
        assert!(w.is_empty() && !w.needs_flush());
        assert_eq!(count(&p).await, N);
        assert_eq!(*recorder.seen.lock().unwrap(), (0..N).collect::<Vec<_>>());
        client.destroy().await;
        server.destroy().await;
    });
}

#[test]
fn requests_a_dropped_batch_writer_held_are_flushed_by_the_proxy_after_its_own() {
    runtime().block_on(async {
        let (server, recorder, target) = server().await;
        let client = Communicator::new().unwrap();
        let p = client.string_to_proxy(&target.to_string()).unwrap();
        let batch = p.ice_batch_oneway();
        batch.invoke("add", OperationMode::Normal, None, |e| add(e, -1)).await.unwrap();
        let mut w = batch.batch_writer();
        for v in 0..N {
            w.queue("add", OperationMode::Normal, |e| add(e, v));
        }
        drop(w);
        assert_eq!(batch.batch_request_count(), N as usize + 1);
        batch.ice_flush_batch_requests().await.unwrap();
        assert_eq!(batch.batch_request_count(), 0);
        assert_eq!(count(&p).await, N + 1);
        let expected: Vec<i32> = std::iter::once(-1).chain(0..N).collect();
        assert_eq!(*recorder.seen.lock().unwrap(), expected);
        client.destroy().await;
        server.destroy().await;
    });
}

#[test]
fn a_graceful_close_waits_for_a_batched_request_whose_dispatch_waits() {
    runtime().block_on(async {
        let (server, recorder, target) = server().await;
        let client = Communicator::new().unwrap();
        let p = client.string_to_proxy(&target.to_string()).unwrap();
        let mut w = p.batch_writer();
        w.queue("add", OperationMode::Normal, |e| add(e, 1));
        w.queue_empty("slow", OperationMode::Normal);
        w.queue("add", OperationMode::Normal, |e| add(e, 2));
        w.flush().await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while recorder.seen.lock().unwrap().len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the batch never arrived");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // The batch ran to its end while `slow` waits; the close must wait for `slow`.
        assert_eq!(*recorder.seen.lock().unwrap(), [1, 2]);
        let connection = recorder.connection.lock().unwrap().clone().expect("the server's connection");
        connection.close().await;
        assert_eq!(*recorder.seen.lock().unwrap(), [1, 2, -2], "closed before the dispatch finished");
        client.destroy().await;
        server.destroy().await;
    });
}

//! Twoway requests that arrive together (a batched twoway call, a pipelined client): the
//! replies of the requests read in one go are written together, and that must lose nothing —
//! every request gets its reply, with one dispatch at a time per connection too, and a
//! graceful close started by one of them still sends the replies of those dispatched before.

use std::sync::Arc;
use std::time::Duration;

use floe::connection::Compress;
use floe::encoding::{Decode, EncodingVersion};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, ReplyBody, RequestPrefix};
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, Properties};

/// `echo(n)` answers `n`; `last(n)` answers `n` and shuts the server's communicator down.
struct Echo(Communicator);

impl Dispatcher for Echo {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let communicator = self.0.clone();
        Box::pin(async move {
            let c = &request.current;
            let n = match request.plain_decoder().read_i32() {
                Ok(n) => n,
                Err(e) => return c.error(&e.into()),
            };
            match c.operation.as_str() {
                "echo" => c.ok(|e| e.write_i32(n)),
                "last" => {
                    communicator.shutdown();
                    c.ok(|e| e.write_i32(n))
                }
                _ => c.operation_not_exist(),
            }
        })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A server communicator with `properties`, serving `Echo` as "echo"; returns it and a proxy
/// string for the object.
async fn server(properties: Properties) -> (Communicator, String) {
    let communicator = Communicator::with_properties(properties).unwrap();
    let adapter = communicator.create_object_adapter_with_endpoints("Echo", "tcp -h 127.0.0.1 -p 0").unwrap();
    adapter.add(Arc::new(Echo(communicator.clone())), Identity::new("echo"));
    adapter.activate().await.unwrap();
    let proxy = adapter.create_proxy(Identity::new("echo")).to_string();
    (communicator, proxy)
}

async fn echo_all(proxy: &floe::ObjectPrx, operation: &str, n: i32) -> Vec<i32> {
    let outcomes = proxy
        .invoke_batch_twoway(
            operation,
            OperationMode::Normal,
            (0..n).map(|k| move |e: &mut floe::encoding::Encoder| e.write_i32(k)),
        )
        .await
        .expect("batched twoway call");
    outcomes.into_iter().map(|o| o.and_then(|o| o.decode(i32::decode)).expect("a reply")).collect()
}

#[test]
fn every_request_read_together_gets_its_reply() {
    runtime().block_on(async {
        for serialize in ["0", "1"] {
            // With Ice.ThreadPool.Server.Serialize=1 a connection dispatches one request at a
            // time: replies waiting to be written must not hold the next dispatch back.
            let p = Properties::new();
            p.set("Ice.ThreadPool.Server.Serialize", serialize);
            let (srv, proxy) = server(p).await;
            let client = Communicator::new().unwrap();
            let proxy = client.string_to_proxy(&proxy).unwrap();
            for n in [1, 10, 3000] {
                let got = tokio::time::timeout(Duration::from_secs(20), echo_all(&proxy, "echo", n))
                    .await
                    .unwrap_or_else(|_| panic!("{n} requests (serialize {serialize}) got no replies in time"));
                assert_eq!(got, (0..n).collect::<Vec<_>>(), "serialize {serialize}");
            }
            client.destroy().await;
            srv.destroy().await;
        }
    });
}

#[test]
fn a_graceful_close_sends_the_replies_of_requests_dispatched_before_it() {
    runtime().block_on(async {
        for _ in 0..5 {
            let (srv, proxy) = server(Properties::new()).await;
            let client = Communicator::new().unwrap();
            let proxy = client.string_to_proxy(&proxy).unwrap();
            // 2000 requests in one write; the last of them shuts the server down, which closes
            // the connection gracefully once every dispatch is over: each of them has a reply.
            let conn = proxy.ice_get_connection().await.unwrap();
            let mut msgs = Vec::new();
            for k in 0..2000 {
                let operation = if k == 1999 { "last" } else { "echo" };
                let prefix = RequestPrefix::new(&Identity::new("echo"), "", operation, OperationMode::Normal);
                msgs.push(encode_request(0, &prefix, &Default::default(), EncodingVersion::V1_1, |e| e.write_i32(k)));
            }
            let replies = tokio::time::timeout(Duration::from_secs(20), conn.invoke_pipelined(msgs, Compress::No))
                .await
                .expect("replies in time")
                .expect("the batch was sent");
            assert_eq!(replies.len(), 2000);
            for (k, r) in replies.into_iter().enumerate() {
                let reply = r.unwrap_or_else(|e| panic!("request {k} got no reply: {e}"));
                assert!(matches!(reply.body, ReplyBody::Ok { .. }), "request {k}: {:?}", reply.body);
            }
            srv.wait_for_shutdown().await;
            client.destroy().await;
            srv.destroy().await;
        }
    });
}

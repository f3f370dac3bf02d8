//! A connection on its own: two connections over an in-memory pipe, the serving one with a
//! closure as its request handler — no sockets, no object adapter, no communicator.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use floe::connection::{Compress, ConnectionConfig, RequestHandler};
use floe::encoding::{Context, Encoder, EncodingVersion};
use floe::protocol::request::{encode_request, RequestPrefix};
use floe::protocol::{OperationMode, Reply, ReplyBody, Request};
use floe::transport::TransportStream;
use floe::{Connection, DispatchFuture, Error, Identity, Response};

/// A client connection and a server connection joined by an in-memory pipe; the server's
/// requests go to `handler`.
fn pair(handler: Option<Arc<dyn RequestHandler>>) -> (Connection, Connection) {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let client = Connection::over_stream(TransportStream::from_io(a, "client"), ConnectionConfig::default(), None);
    let server = Connection::over_stream(TransportStream::from_io(b, "server"), ConnectionConfig::default(), handler);
    (client, server)
}

/// A request message for `operation` on `echo` with an int parameter.
fn request(operation: &str, value: i32) -> bytes::BytesMut {
    let prefix = RequestPrefix::new(&Identity::new("echo"), "", operation, OperationMode::Normal);
    encode_request(0, &prefix, &Context::new(), EncodingVersion::V1_1, |e| e.write_i32(value))
}

/// Answers each twoway request with its operation's name and parameter bytes; counts them.
fn echo_handler(seen: Arc<AtomicUsize>) -> Arc<dyn RequestHandler> {
    Arc::new(move |request: Request| -> DispatchFuture {
        seen.fetch_add(1, Ordering::SeqCst);
        let response = if request.request_id == 0 {
            Response::none()
        } else {
            let mut e = Encoder::new(EncodingVersion::V1_1);
            e.write_str(&request.operation);
            e.write_raw(&request.params);
            let payload = e.into_bytes();
            let body = ReplyBody::Ok { encoding: request.encoding, payload };
            Response::message(Reply { request_id: request.request_id, body }.encode())
        };
        Box::pin(std::future::ready(response))
    })
}

#[tokio::test]
async fn a_closure_serves_requests_over_an_in_memory_pipe() {
    let seen = Arc::new(AtomicUsize::new(0));
    let (client, server) = pair(Some(echo_handler(seen.clone())));
    for k in 0..10 {
        let reply = client.invoke_message(request("twice", k), Compress::No).await.unwrap();
        let ReplyBody::Ok { payload, .. } = reply.body else { panic!("{:?}", reply.body) };
        let mut d = floe::encoding::Decoder::new(payload, EncodingVersion::V1_1);
        assert_eq!(d.read_string().unwrap(), "twice");
        assert_eq!(d.read_i32().unwrap(), k);
    }
    // Oneway requests reach the handler too, in order with the twoway ones.
    for k in 0..5 {
        client.send_oneway_message(request("note", k), Compress::No).await.unwrap();
    }
    client.invoke_message(request("sync", 0), Compress::No).await.unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 16);
    assert_eq!(server.dispatch_count(), 0);
    assert_eq!(client.pending_count(), 0);
}

#[tokio::test]
async fn a_connection_without_a_handler_answers_object_not_exist() {
    let (client, _server) = pair(None);
    let reply = client.invoke_message(request("anything", 1), Compress::No).await.unwrap();
    assert!(matches!(reply.body, ReplyBody::ObjectNotExist(ref f) if f.operation == "anything"), "{:?}", reply.body);
}

#[tokio::test]
async fn a_handler_set_later_takes_the_next_requests() {
    let (client, server) = pair(None);
    let reply = client.invoke_message(request("before", 1), Compress::No).await.unwrap();
    assert!(matches!(reply.body, ReplyBody::ObjectNotExist(_)));
    let seen = Arc::new(AtomicUsize::new(0));
    server.set_handler(Some(echo_handler(seen.clone())));
    let reply = client.invoke_message(request("after", 2), Compress::No).await.unwrap();
    assert!(matches!(reply.body, ReplyBody::Ok { .. }), "{:?}", reply.body);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_graceful_close_reaches_both_sides_without_polling() {
    let (client, server) = pair(Some(echo_handler(Arc::new(AtomicUsize::new(0)))));
    client.invoke_message(request("x", 1), Compress::No).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), server.close()).await.expect("the graceful close completes");
    tokio::time::timeout(Duration::from_secs(5), client.wait_closed()).await.expect("the peer sees the close");
    assert!(client.is_closed() && server.is_closed());
    // A request on the closed connection fails with the reason: the peer closed gracefully.
    let err = client.invoke_message(request("late", 1), Compress::No).await.unwrap_err();
    assert!(matches!(err, Error::CloseConnection), "{err:?}");
}

#[tokio::test]
async fn a_forceful_close_fails_the_requests_waiting_for_replies() {
    // A handler that never completes: the request waits until the close.
    let handler: Arc<dyn RequestHandler> =
        Arc::new(|_: Request| -> DispatchFuture { Box::pin(std::future::pending::<Response>()) });
    let (client, _server) = pair(Some(handler));
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { client.invoke_message(request("forever", 1), Compress::No).await })
    };
    while client.pending_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    client.close_forcefully(Error::ConnectionLost("test".into()));
    let err = waiting.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(ref why) if why == "test"), "{err:?}");
    tokio::time::timeout(Duration::from_secs(5), client.wait_closed()).await.expect("closed and shut down");
}

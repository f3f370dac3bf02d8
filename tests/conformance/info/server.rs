//! Server for Ice's `Ice/info` suite: `test`, on a tcp and a udp endpoint (same port number),
//! describes the endpoint and the connection a request came on, as a context.

use floe::{Context, Current, Error, Identity};
use floe_conformance::generated::info::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct TestI;

fn connection(current: &Current) -> R<&floe::Connection> {
    current.connection().ok_or_else(|| Error::UnknownException("no connection".into()))
}

impl TestIntf for TestI {
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn get_endpoint_info_as_context(&self, current: &Current) -> R<Context> {
        // The endpoint an incoming connection came in on: the local address it was accepted
        // at, over tcp (type 1), with the default timeout and no compression.
        let local = connection(current)?.local_address().ok_or_else(|| Error::UnknownException("no address".into()))?;
        let mut ctx = Context::new();
        for (k, v) in [
            ("timeout", "60000".to_string()),
            ("compress", "false".into()),
            ("datagram", "false".into()),
            ("secure", "false".into()),
            ("type", "1".into()),
            ("host", local.ip().to_string()),
            ("port", local.port().to_string()),
        ] {
            ctx.insert(k.to_string(), v);
        }
        Ok(ctx)
    }
    async fn get_connection_info_as_context(&self, current: &Current) -> R<Context> {
        let c = connection(current)?;
        let (local, remote) = (c.local_address(), c.remote_address());
        let mut ctx = Context::new();
        let adapter = current.adapter().map(|a| a.name().to_string()).unwrap_or_default();
        ctx.insert("adapterName".into(), adapter);
        ctx.insert("incoming".into(), c.is_incoming().to_string());
        ctx.insert("localAddress".into(), local.map(|a| a.ip().to_string()).unwrap_or_default());
        ctx.insert("localPort".into(), local.map(|a| a.port().to_string()).unwrap_or_default());
        ctx.insert("remoteAddress".into(), remote.map(|a| a.ip().to_string()).unwrap_or_default());
        ctx.insert("remotePort".into(), remote.map(|a| a.port().to_string()).unwrap_or_default());
        // Over ws and wss, the upgrade request's header fields, as `ws.<name>`.
        for (name, value) in c.ws_headers() {
            ctx.insert(format!("ws.{name}"), value.clone());
        }
        Ok(ctx)
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("info", &[], |server| async move {
        let tcp = server.endpoint(0);
        // The same port number over udp, whatever the default protocol.
        let udp = match tcp.split_once(' ') {
            Some((_, rest)) => format!("udp {rest}"),
            None => tcp.clone(),
        };
        let endpoints = format!("{tcp}:{udp}");
        let endpoints = server.communicator.properties().get("TestAdapter.Endpoints").unwrap_or(endpoints);
        let adapter = server.communicator.create_object_adapter_with_endpoints("TestAdapter", &endpoints)?;
        adapter.add(TestIntfServer::new(TestI), Identity::new("test"));
        adapter.activate().await
    })
}

//! Server for Ice's `Ice/blobject` suite: a plain `Hello` servant. The suite's client puts a
//! Blobject router of its own (dynamic dispatch and `ice_invoke`, in Python) in front of it,
//! forwarding twoway and oneway requests, contexts and user exceptions to this server.

use std::time::Duration;

use floe::{Current, Identity};
use floe_conformance::generated::blobject::test::*;
use floe_conformance::TestServer;

struct HelloI;

impl Hello for HelloI {
    async fn say_hello(&self, delay: i32, _: &Current) -> floe::Result<()> {
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay as u64)).await;
        }
        Ok(())
    }
    async fn add(&self, s1: i32, s2: i32, _: &Current) -> floe::Result<i32> {
        Ok(s1.wrapping_add(s2))
    }
    async fn raise_ue(&self, _: &Current) -> floe::Result<()> {
        Err(floe::Error::user(UE {}))
    }
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("blobject", &[("Ice.Warn.Dispatch", "0")], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(HelloServer::new(HelloI), Identity::new("test"));
        adapter.activate().await
    })
}

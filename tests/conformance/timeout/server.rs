//! Server for Ice's `Ice/timeout` suite: `timeout` (op, sendData, sleep) and, on the second test
//! port, `controller`, which holds the test adapter (resuming it after the given milliseconds
//! unless negative) so that the client's sends block and its timeouts fire. Messages up to
//! 10,000 KB, sockets with a 50,000-byte receive buffer, as the suite's own server.

use std::time::Duration;

use floe::bytes::Bytes;
use floe::{Current, Identity, ObjectAdapter};
use floe_conformance::generated::timeout::test::*;
use floe_conformance::TestServer;

struct TimeoutI;

impl Timeout for TimeoutI {
    async fn op(&self, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn send_data(&self, _seq: Bytes, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn sleep(&self, ms: i32, _: &Current) -> floe::Result<()> {
        tokio::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
        Ok(())
    }
}

struct ControllerI {
    adapter: ObjectAdapter,
}

impl Controller for ControllerI {
    async fn hold_adapter(&self, to: i32, _: &Current) -> floe::Result<()> {
        self.adapter.hold();
        if to >= 0 {
            let adapter = self.adapter.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(to as u64)).await;
                let _ = adapter.activate().await;
            });
        }
        Ok(())
    }
    async fn resume_adapter(&self, _: &Current) -> floe::Result<()> {
        self.adapter.activate().await
    }
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    let defaults = [("Ice.Warn.Connections", "0"), ("Ice.MessageSizeMax", "10000"), ("Ice.TCP.RcvSize", "50000")];
    TestServer::main("timeout", &defaults, |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(TimeoutServer::new(TimeoutI), Identity::new("timeout"));
        adapter.activate().await?;
        let controller_adapter = server.adapter("ControllerAdapter", 1)?;
        controller_adapter.add(ControllerServer::new(ControllerI { adapter }), Identity::new("controller"));
        controller_adapter.activate().await
    })
}
